package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/tack-dev/tack/web"
)

func get(t *testing.T, srv *httptest.Server, path string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// Both pages are the one document, which loads nothing from elsewhere; its
// assets carry the build's version and are cached for good under it.
func TestHandlerServesPagesAndAssets(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(web.Handler())
	t.Cleanup(srv.Close)

	_, list := get(t, srv, "/")
	resp, session := get(t, srv, "/s/ses_abc")
	if list != session {
		t.Error("/ and /s/{id} serve different documents")
	}
	if got := resp.Header.Get("Content-Type"); got != "text/html; charset=utf-8" {
		t.Errorf("Content-Type = %q", got)
	}
	if got := resp.Header.Get("Cache-Control"); got != "no-cache" {
		t.Errorf("page Cache-Control = %q, want no-cache", got)
	}
	host := strings.TrimPrefix(srv.URL, "http://")
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") || !strings.Contains(csp, "ws://"+host+" ") {
		t.Errorf("Content-Security-Policy = %q", csp)
	}
	m := regexp.MustCompile(`src="(/static/([0-9a-f]+)/app\.js)"`).FindStringSubmatch(session)
	if m == nil {
		t.Fatalf("no versioned app.js in the page:\n%s", session)
	}
	if strings.Contains(session, "http://") || strings.Contains(session, "https://") {
		t.Error("the page refers to another origin")
	}

	resp, body := get(t, srv, m[1])
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/javascript") {
		t.Errorf("app.js: %d %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	if !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
		t.Errorf("app.js Cache-Control = %q, want immutable", resp.Header.Get("Cache-Control"))
	}
	if !strings.Contains(body, "import") {
		t.Error("app.js is not the module")
	}
	// A page from before an upgrade still gets its assets, revalidated.
	resp, _ = get(t, srv, "/static/000000000000/style.css")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Errorf("old version: %d %q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}
	for _, path := range []string{"/static/" + m[2] + "/nope.js", "/static/" + m[2] + "/index.html", "/s/a/b"} {
		if resp, _ := get(t, srv, path); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, resp.StatusCode)
		}
	}
}

// TestPagesPreloadTheirModules: each page names, as modulepreload links,
// exactly the modules its entry scripts reach by static imports (found here
// by following the served files), so the browser asks for the whole graph
// at once; every link is served.
func TestPagesPreloadTheirModules(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(web.Handler())
	t.Cleanup(srv.Close)
	imports := regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^'";]*?(?:from\s+)?['"](\.\.?/[^'"]+)['"]`)
	for _, page := range []string{"/", "/login", "/settings"} {
		_, doc := get(t, srv, page)
		preloads := map[string]bool{}
		for _, m := range regexp.MustCompile(`<link rel="modulepreload" href="([^"]+)">`).FindAllStringSubmatch(doc, -1) {
			preloads[m[1]] = true
		}
		reached := map[string]bool{}
		var follow func(u string)
		follow = func(u string) {
			if reached[u] {
				return
			}
			reached[u] = true
			resp, body := get(t, srv, u)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("%s: %s = %d", page, u, resp.StatusCode)
				return
			}
			for _, m := range imports.FindAllStringSubmatch(body, -1) {
				follow(path.Join(path.Dir(u), m[1]))
			}
		}
		entries := regexp.MustCompile(`<script type="module" src="([^"]+)">`).FindAllStringSubmatch(doc, -1)
		if len(entries) == 0 {
			t.Fatalf("%s has no module", page)
		}
		for _, m := range entries {
			follow(m[1])
			delete(reached, m[1])
		}
		for _, m := range entries {
			delete(reached, m[1])
		}
		for u := range reached {
			if !preloads[u] {
				t.Errorf("%s does not preload %s, which its scripts import", page, u)
			}
		}
		for u := range preloads {
			if !reached[u] {
				t.Errorf("%s preloads %s, which none of its scripts imports", page, u)
			}
		}
		if page == "/" && len(preloads) < 20 {
			t.Errorf("/ preloads %d modules, want the board's whole graph", len(preloads))
		}
	}
}
