package api_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestSlowUpload sends bodies slowly over a raw connection. The store
// deadline starts once the body is in, so an upload slower than it but
// within the body time-out is served; one past the body time-out is 408.
// Neither is ever "the database is unavailable".
func TestSlowUpload(t *testing.T) {
	t.Parallel()
	st := storetest.SQLite(t, projection.Config{})
	srv := httptest.NewServer(api.New(st, api.Options{RequestTimeout: 300 * time.Millisecond, BodyTimeout: 1500 * time.Millisecond}).Handler())
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")

	send := func(body string, parts int, pause time.Duration, declared int) (int, string) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c, "POST /sessions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", addr, declared)
		step := (len(body) + parts - 1) / parts
		for i := 0; i < len(body); i += step {
			time.Sleep(pause)
			if _, err := c.Write([]byte(body[i:min(i+step, len(body))])); err != nil {
				break // the server gave up on the body
			}
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		return resp.StatusCode, b.String()
	}

	body := `{"title":"a slow upload"}`
	// 5 parts 150 ms apart: 750 ms, past the 300 ms store deadline.
	if status, resp := send(body, 5, 150*time.Millisecond, len(body)); status != http.StatusCreated {
		t.Errorf("slow upload within the body time-out: %d %s", status, resp)
	}
	// A body that never completes.
	start := time.Now()
	status, resp := send(body[:5], 1, 0, len(body))
	if status != http.StatusRequestTimeout || !strings.Contains(resp, `"request_timeout"`) {
		t.Errorf("stalled upload: %d %s", status, resp)
	}
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("stalled upload answered after %v", d)
	}
}

// TestWriteTimeout has a client that never reads: the response write gives
// up after the write time-out instead of holding the handler.
func TestWriteTimeout(t *testing.T) {
	t.Parallel()
	done := make(chan error, 1)
	// A handler that writes 256 MiB, routed as the router routes any
	// handler it is given: as the metrics.
	big := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 1<<20)
		for range 256 {
			if _, err := w.Write(chunk); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	})
	h := api.New(nil, api.Options{WriteTimeout: 300 * time.Millisecond, Metrics: big}).Handler()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "GET /metrics HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("256 MiB written to a client that reads nothing")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the handler was still writing after 5 s")
	}
}
