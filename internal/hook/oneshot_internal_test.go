package hook

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestOneShot: a request to a server on this machine goes on a connection
// of its own, its answer read whole, chunked or not, and the connection
// closed with the body; a request whose context ends is given up, its
// connection closed, whatever the server does.
func TestOneShot(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/echo":
			w.Header().Set("X-Got", r.Header.Get("X-Sent"))
			w.Write(body)
		case "/chunked":
			for range 3 {
				w.Write([]byte(strings.Repeat("x", 10)))
				w.(http.Flusher).Flush()
			}
		case "/slow":
			<-release
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	c := localClient(srv.URL)
	if _, ok := c.Transport.(oneShot); !ok {
		t.Fatalf("a server on loopback: transport %T, want oneShot", c.Transport)
	}
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/echo", strings.NewReader(`{"a":1}`))
	req.Header.Set("X-Sent", "yes")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != `{"a":1}` || resp.Header.Get("X-Got") != "yes" {
		t.Errorf("echo: %q, X-Got %q", body, resp.Header.Get("X-Got"))
	}
	resp, err = c.Get(srv.URL + "/chunked")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(body) != 30 {
		t.Errorf("chunked: %d bytes, want 30", len(body))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	req, _ = http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/slow", nil)
	if _, err := c.Do(req); err == nil {
		t.Error("a request past its deadline was answered")
	}
	for _, s := range []string{"https://127.0.0.1:1", "http://tack.example.com", "http://10.0.0.1:8080"} {
		if c := localClient(s); c != http.DefaultClient {
			t.Errorf("%s: transport %T, want net/http's own", s, c.Transport)
		}
	}
}
