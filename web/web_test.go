package web_test

import (
	"io"
	"net/http"
	"net/http/httptest"
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
