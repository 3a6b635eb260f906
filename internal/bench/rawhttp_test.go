package bench

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRawClient drives Write's hand-written client against a real
// net/http server: calls share one kept-alive connection, a wrong status is
// an error carrying the answer's body, and an answer that closes the
// connection makes the next call dial again.
func TestRawClient(t *testing.T) {
	t.Parallel()
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			_, _ = w.Write([]byte(`{"ok":true}`))
		case "/close":
			w.Header().Set("Connection", "close")
			_, _ = w.Write([]byte(`{}`))
		default:
			http.Error(w, `{"error":"nope"}`, http.StatusUnprocessableEntity)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	addr := srv.Listener.Addr().String()
	c := &rawClient{addr: addr}
	defer c.close()
	ok := rawRequest(addr, "/ok", []byte(`{"todos":[]}`))
	for range 3 {
		if err := c.do(t.Context(), ok, http.StatusOK); err != nil {
			t.Fatal(err)
		}
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("3 calls took %d connections, want 1", got)
	}
	err := c.do(t.Context(), rawRequest(addr, "/bad", nil), http.StatusOK)
	if err == nil || !strings.Contains(err.Error(), "status 422, want 200") || !strings.Contains(err.Error(), "nope") {
		t.Errorf("a 422: error %v, want the status and the body", err)
	}
	for _, path := range []string{"/close", "/ok"} {
		if err := c.do(t.Context(), rawRequest(addr, path, nil), http.StatusOK); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	// The 422 and the close each ended a connection: 3 in all.
	if got := conns.Load(); got != 3 {
		t.Errorf("connections %d, want 3", got)
	}
}
