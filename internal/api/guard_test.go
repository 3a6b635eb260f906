package api_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestHostAndCSRF checks the guard every route passes through: a Host the
// server does not serve is refused (DNS rebinding), and an unsafe request
// needs the JSON content type and must not come from another origin (CSRF).
func TestHostAndCSRF(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.SQLite(t, projection.Config{}), api.Options{})
	u, _ := url.Parse(b.url)
	port := u.Port()
	id := b.newSession()

	// The Host header of a rebound name is refused on every route.
	for _, c := range []struct{ method, path string }{
		{"GET", "/sessions"}, {"GET", "/sessions/" + id + "/todos"}, {"GET", "/healthz"},
		{"POST", "/sessions"}, {"GET", "/nowhere"},
	} {
		for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1.evil.example:" + port, "localhost.:" + port} {
			msg := b.wantError(b.do(c.method, c.path, "{}", "Host", host), http.StatusForbidden, "forbidden")
			if !strings.Contains(msg, "Host") {
				t.Errorf("%s %s Host %s: message %q", c.method, c.path, host, msg)
			}
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port} {
		b.want(b.do("GET", "/sessions", nil, "Host", host), http.StatusOK, nil)
	}

	// Unsafe methods need Content-Type: application/json.
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "", "application/jsonx"} {
		r := b.do("POST", "/sessions", "{}", "Content-Type", ct)
		if ct == "" {
			r = b.doRaw("POST", "/sessions", "{}")
		}
		b.wantError(r, http.StatusUnsupportedMediaType, "unsupported_media_type")
	}
	b.want(b.do("POST", "/sessions", "{}", "Content-Type", "application/json; charset=utf-8"), http.StatusCreated, nil)
	b.want(b.do("POST", "/sessions", "{}", "Content-Type", "Application/JSON"), http.StatusCreated, nil)

	// Another origin, or a browser saying cross-site, is refused; the page's
	// own origin and clients that send no Origin are served.
	for _, hdr := range [][]string{
		{"Origin", "http://evil.example"},
		{"Origin", "http://localhost:1"},
		{"Origin", "null"},
		{"Sec-Fetch-Site", "cross-site"},
		{"Sec-Fetch-Site", "same-site"},
	} {
		b.wantError(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"turn/start"}]}`, hdr...), http.StatusForbidden, "forbidden")
		b.wantError(b.do("POST", "/sessions/"+id+"/tools/todo_read", `{}`, hdr...), http.StatusForbidden, "forbidden")
	}
	if s := b.session(id); s.LastSeq != 0 {
		t.Errorf("refused requests wrote: lastSeq %d", s.LastSeq)
	}
	b.want(b.do("POST", "/sessions", "{}", "Origin", b.url), http.StatusCreated, nil)
	b.want(b.do("POST", "/sessions", "{}", "Sec-Fetch-Site", "same-origin", "Origin", b.url), http.StatusCreated, nil)
	b.want(b.do("POST", "/sessions", "{}", "Sec-Fetch-Site", "none"), http.StatusCreated, nil)
	// Reads from another origin are the browser's to withhold; they are served.
	b.want(b.do("GET", "/sessions", nil, "Origin", "http://evil.example"), http.StatusOK, nil)
}

// TestAllowedHosts checks Options.Hosts and Options.TrustedOrigins: a name
// behind a proxy is served, with or without a port, and its origin may write.
func TestAllowedHosts(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.SQLite(t, projection.Config{}), api.Options{
		Hosts:          []string{"tack.example.com", "other.example:9000"},
		TrustedOrigins: []string{"https://tack.example.com"},
	})
	b.want(b.do("GET", "/sessions", nil, "Host", "tack.example.com"), http.StatusOK, nil)
	b.want(b.do("GET", "/sessions", nil, "Host", "tack.example.com:443"), http.StatusOK, nil)
	b.want(b.do("GET", "/sessions", nil, "Host", "other.example:9000"), http.StatusOK, nil)
	b.wantError(b.do("GET", "/sessions", nil, "Host", "other.example:9001"), http.StatusForbidden, "forbidden")
	// Loopback is served only when listed.
	b.wantError(b.do("GET", "/sessions", nil), http.StatusForbidden, "forbidden")
	b.want(b.do("POST", "/sessions", "{}", "Host", "tack.example.com", "Origin", "https://tack.example.com", "Sec-Fetch-Site", "same-site"), http.StatusCreated, nil)
	b.wantError(b.do("POST", "/sessions", "{}", "Host", "tack.example.com", "Origin", "https://evil.example"), http.StatusForbidden, "forbidden")
}

// TestMethodsAndHead checks that a 405 names the allowed methods and that
// HEAD is served wherever GET is.
func TestMethodsAndHead(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.SQLite(t, projection.Config{}), api.Options{})
	id := b.newSession()
	for path, allow := range map[string]string{
		"/sessions/" + id + "/todos":            "GET, HEAD, PUT",
		"/sessions/" + id + "/tools/todo_write": "POST",
		"/sessions":                             "GET, HEAD, POST",
		"/healthz":                              "GET, HEAD",
	} {
		r := b.do("DELETE", path, nil)
		b.wantError(r, http.StatusMethodNotAllowed, "method_not_allowed")
		if got := strings.Join(r.Header.Values("Allow"), ", "); got != allow {
			t.Errorf("DELETE %s: Allow %q, want %q", path, got, allow)
		}
	}
	for _, path := range []string{"/healthz", "/sessions", "/sessions/" + id, "/sessions/" + id + "/todos", "/sessions/" + id + "/events"} {
		r := b.do("HEAD", path, nil)
		if r.Status != http.StatusOK || len(r.Body) != 0 || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("HEAD %s: %d %q, body %q", path, r.Status, r.Header.Get("Content-Type"), r.Body)
		}
	}
	if r := b.do("HEAD", "/sessions/nope/todos", nil); r.Status != http.StatusNotFound {
		t.Errorf("HEAD of an unknown session: %d", r.Status)
	}
	r := b.do("DELETE", "/sessions/"+id, nil)
	b.wantError(r, http.StatusMethodNotAllowed, "method_not_allowed")
	if got := r.Header.Get("Allow"); got != "GET, HEAD, PATCH" {
		t.Errorf("DELETE /sessions/{id}: Allow %q", got)
	}
}
