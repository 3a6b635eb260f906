package main

import (
	"bytes"
	"context"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/storetest"
)

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// start runs Tack on port 0 and returns its address and a stop function
// that waits for a clean shutdown.
func start(t *testing.T, getenv func(string) string, out *syncBuffer) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, []string{"-addr", "127.0.0.1:0"}, getenv, out, ready) }()
	select {
	case addr := <-ready:
		return addr, func() error { cancel(); return <-errc }
	case err := <-errc:
		cancel()
		t.Fatalf("run: %v\n%s", err, out)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("server did not start\n%s", out)
	}
	return "", nil
}

// TestTwoInstancesStartTogether starts two servers on one fresh schema at
// once: goose's session lock makes them take turns migrating, and both serve.
func TestTwoInstancesStartTogether(t *testing.T) {
	t.Parallel()
	getenv := env(map[string]string{"DATABASE_URL": storetest.SchemaURL(t)})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out syncBuffer
			addr, stop := start(t, getenv, &out)
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("readyz = %d, want 200", resp.StatusCode)
			}
			if err := stop(); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			if !strings.Contains(out.String(), "tack started") {
				t.Errorf("no start line in log:\n%s", out.String())
			}
		}()
	}
	wg.Wait()
}

func TestStartLineRedactsPassword(t *testing.T) {
	t.Parallel()
	url := storetest.SchemaURL(t)
	withPassword := strings.Replace(url, "postgres://postgres@", "postgres://postgres:s3cret@", 1)
	var out syncBuffer
	_, stop := start(t, env(map[string]string{"DATABASE_URL": withPassword}), &out)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "s3cret") {
		t.Fatalf("password printed:\n%s", out.String())
	}
}

func TestConfigRejectsNonLoopbackAddress(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:8080", "192.0.2.1:80", ":8080", "nonsense"} {
		_, err := parseConfig([]string{"-addr", addr}, env(map[string]string{"DATABASE_URL": "postgres://x"}), &bytes.Buffer{})
		if err == nil {
			t.Errorf("addr %q accepted, want an error", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:8080"} {
		if _, err := parseConfig([]string{"-addr", addr}, env(map[string]string{"DATABASE_URL": "postgres://x"}), &bytes.Buffer{}); err != nil {
			t.Errorf("addr %q: %v", addr, err)
		}
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	t.Parallel()
	c, err := parseConfig(nil, env(map[string]string{
		"DATABASE_URL": "postgres://x", "TACK_ADDR": "127.0.0.1:9999", "TACK_MAX_CONNS": "7", "TACK_PARALLEL_IN_PROGRESS": "true",
		"TACK_ALLOWED_ORIGINS": "app.example.com, *.example.org", "TACK_DEMO": "true",
	}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := config{Addr: "127.0.0.1:9999", DatabaseURL: "postgres://x", MaxConns: 7, ParallelInProgress: true,
		AllowedOrigins: []string{"app.example.com", "*.example.org"}, Demo: true}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v, want %+v", c, want)
	}
}

// TestDemoPlaysIntoTheServer starts Tack with TACK_DEMO: it prints the URL of
// the session it plays, which the UI serves and the API knows.
func TestDemoPlaysIntoTheServer(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	addr, stop := start(t, env(map[string]string{"DATABASE_URL": storetest.SchemaURL(t), "TACK_DEMO": "1"}), &out)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	prefix := "demo: watch the agent at http://" + addr + "/s/"
	var id string
	for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); {
		if _, rest, ok := strings.Cut(out.String(), prefix); ok {
			id, _, _ = strings.Cut(rest, "\n")
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if id == "" {
		t.Fatalf("no demo URL printed:\n%s", out.String())
	}
	for _, path := range []string{"/s/" + id, "/sessions/" + id} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", path, resp.StatusCode)
		}
	}
}
