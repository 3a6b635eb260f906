package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store/sqlite"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestNoRouteEscapesTheGuard walks every route of the server as run wires
// it (REST, live sockets, UI) and sends each what a hostile page can: a
// rebound Host, a text/plain or form body, a cross-site Origin. Every one
// must be refused with the JSON error shape before its handler runs.
func TestNoRouteEscapesTheGuard(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "tack.db"), projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := config{PublicURL: "https://tack.example.com", AllowedHosts: []string{"proxy.internal"}}
	hub := live.New(st, live.Options{})
	reg, err := newRegistry(st, hub)
	if err != nil {
		t.Fatal(err)
	}
	h := newHandler(cfg, "127.0.0.1:8080", st, hub, hub.OnAppend, slog.New(slog.DiscardHandler), api.AuthOptions{}, reg)

	var routes []string
	chains := map[string][]string{}
	err = chi.Walk(h.(chi.Routes), func(method, route string, _ http.Handler, mws ...func(http.Handler) http.Handler) error {
		routes = append(routes, method+" "+route)
		chains[method+" "+route] = middlewareNames(mws)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(routes)
	want := []string{
		"DELETE /mcp", "DELETE /me/sign-ins/{id}", "DELETE /tokens/{id}", "GET /", "GET /healthz", "GET /live", "GET /login", "GET /mcp", "GET /me",
		"GET /me/sign-ins", "GET /metrics", "GET /principals", "GET /readyz", "GET /s/{id}", "GET /sessions", "GET /sessions/{id}",
		"GET /sessions/{id}/events", "GET /sessions/{id}/history", "GET /sessions/{id}/live",
		"GET /sessions/{id}/messages", "GET /sessions/{id}/todos", "GET /sessions/{id}/todos/history",
		"GET /sessions/{id}/todos/reminder", "GET /settings", "GET /static/*", "GET /tokens",
		"PATCH /sessions/{id}", "POST /hooks/claude-code", "POST /hooks/codex", "POST /login",
		"POST /logout", "POST /mcp", "POST /sessions", "POST /sessions/{id}/events",
		"POST /sessions/{id}/tools/TaskCreate", "POST /sessions/{id}/tools/TaskGet",
		"POST /sessions/{id}/tools/TaskList", "POST /sessions/{id}/tools/TaskUpdate",
		"POST /sessions/{id}/tools/TodoWrite", "POST /sessions/{id}/tools/todo_read",
		"POST /sessions/{id}/tools/todo_write", "POST /sessions/{id}/tools/update_plan", "POST /tokens",
		"PUT /sessions/{id}/agent-status", "PUT /sessions/{id}/todos",
	}
	if !slices.Equal(routes, want) {
		t.Errorf("routes:\n%s\nwant:\n%s", strings.Join(routes, "\n"), strings.Join(want, "\n"))
	}

	checkOneChain(t, chains)

	param := regexp.MustCompile(`\{[^}]+\}|\*`)
	for _, route := range routes {
		method, pattern, _ := strings.Cut(route, " ")
		path := param.ReplaceAllString(pattern, "x")
		type probe struct {
			name   string
			host   string
			hdr    map[string]string
			status int
			code   string
		}
		probes := []probe{
			{"rebound host", "evil.example:8080", nil, 403, "forbidden"},
			{"loopback on another port", "127.0.0.1:9999", nil, 403, "forbidden"},
		}
		for _, m := range []string{method, "HEAD"} {
			if m == "HEAD" && method != "GET" {
				continue
			}
			for _, p := range probes {
				checkRefused(t, h, m, path, p.host, p.hdr, p.status, p.code)
			}
		}
		if method == "POST" {
			for _, p := range []probe{
				{"text/plain", "127.0.0.1:8080", map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type"},
				{"form", "localhost:8080", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type"},
				{"cross-site", "127.0.0.1:8080", map[string]string{"Content-Type": "application/json", "Sec-Fetch-Site": "cross-site"}, 403, "forbidden"},
				{"other origin", "127.0.0.1:8080", map[string]string{"Content-Type": "application/json", "Origin": "http://evil.example"}, 403, "forbidden"},
				{"public name, other origin", "tack.example.com", map[string]string{"Content-Type": "application/json", "Origin": "https://evil.example"}, 403, "forbidden"},
			} {
				checkRefused(t, h, method, path, p.host, p.hdr, p.status, p.code)
			}
		}
	}
	// What Tack serves: loopback on its port, the public URL's host and the
	// allowed hosts.
	for _, host := range []string{"127.0.0.1:8080", "localhost:8080", "[::1]:8080", "tack.example.com", "proxy.internal", "proxy.internal:1234"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/healthz", nil)
		req.Host = host
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Errorf("Host %s: %d %s", host, rec.Code, rec.Body)
		}
	}
}

// checkOneChain holds the sockets to the chain of the REST routes: a
// session's socket passes every middleware a session's REST route passes up
// to sessionID (its id and owner), the feed every one up to authenticate's
// and the limiter's, and neither the per-request bounds (readBody,
// deadline), which a socket outlives.
func checkOneChain(t *testing.T, chains map[string][]string) {
	t.Helper()
	socket, feed := chains["GET /sessions/{id}/live"], chains["GET /live"]
	if len(socket) == 0 || socket[len(socket)-1] != "sessionID" {
		t.Fatalf("GET /sessions/{id}/live passes %v, want a chain ending in sessionID", socket)
	}
	for route, chain := range chains {
		if !strings.Contains(route, " /sessions/{id}") || route == "GET /sessions/{id}/live" {
			continue
		}
		if len(chain) < len(socket) || !slices.Equal(chain[:len(socket)], socket) || !slices.Equal(chain[len(socket):], []string{"readBody", "deadline"}) {
			t.Errorf("%s passes %v, want the socket's %v, then readBody and deadline", route, chain, socket)
		}
	}
	list := chains["GET /sessions"]
	if want := list[:len(list)-2]; !slices.Equal(feed, want) || !slices.Contains(feed, "authenticate") {
		t.Errorf("GET /live passes %v, want GET /sessions's %v without readBody and deadline", feed, list)
	}
}

// middlewareNames are the names of the middleware methods in mws, in order:
// "(*Server).sessionID-fm" is "sessionID".
func middlewareNames(mws []func(http.Handler) http.Handler) []string {
	var names []string
	for _, mw := range mws {
		name := runtime.FuncForPC(reflect.ValueOf(mw).Pointer()).Name()
		name = strings.TrimSuffix(name[strings.LastIndex(name, ".")+1:], "-fm")
		names = append(names, name)
	}
	return names
}

func checkRefused(t *testing.T, h http.Handler, method, path, host string, hdr map[string]string, status int, code string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader("title=x"))
	req.Host = host
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var e struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	if method == "HEAD" {
		if rec.Code != status {
			t.Errorf("%s %s Host %s %v: %d, want %d", method, path, host, hdr, rec.Code, status)
		}
		return
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &e); rec.Code != status || err != nil || e.Error.Code != code ||
		rec.Header().Get("Content-Type") != "application/json" {
		t.Errorf("%s %s Host %s %v: %d %q %s, want %d %s", method, path, host, hdr, rec.Code, rec.Header().Get("Content-Type"), rec.Body, status, code)
	}
}

// TestIdleConnectionsAreClosed holds keep-alive connections open after one
// request each: the server must close them after its idle time-out, not
// keep them for as long as the client likes.
func TestIdleConnectionsAreClosed(t *testing.T) {
	t.Parallel()
	var out storetest.LogBuffer
	addr, stop := start(t, env(map[string]string{"TACK_DATA_DIR": t.TempDir()}), &out)
	defer func() { _ = stop() }()
	const n = 50
	conns := make([]net.Conn, n)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		conns[i] = c
	}
	start := time.Now()
	for _, c := range conns {
		_ = c.SetReadDeadline(start.Add(idleTimeout + 5*time.Second))
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Fatalf("idle connection after %v: %v, want EOF", time.Since(start), err)
		}
	}
	if d := time.Since(start); d > idleTimeout+2*time.Second {
		t.Errorf("idle connections closed after %v", d)
	}
}
