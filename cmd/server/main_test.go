package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/storetest"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// start runs Tack on port 0 and returns its address and a stop function
// that waits for a clean shutdown.
func start(t *testing.T, getenv func(string) string, out *storetest.LogBuffer) (string, func() error) {
	t.Helper()
	return startWith(t, []string{"-addr", "127.0.0.1:0"}, getenv, out)
}

// startWith is start with the command line args.
func startWith(t *testing.T, args []string, getenv func(string) string, out *storetest.LogBuffer) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, args, getenv, out, ready) }()
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
			var out storetest.LogBuffer
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

// TestSQLiteWithoutDatabaseURL starts Tack with no DATABASE_URL: it creates
// the data directory and an SQLite database in it, says so on start, keeps
// what it stored across a restart, and refuses a second process meanwhile.
func TestSQLiteWithoutDatabaseURL(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data", "tack")
	getenv := env(map[string]string{"TACK_DATA_DIR": dir})
	var out storetest.LogBuffer
	addr, stop := start(t, getenv, &out)
	if want := "store=sqlite database=" + filepath.Join(dir, "tack.db"); !strings.Contains(out.String(), want) {
		t.Errorf("start line does not say %q:\n%s", want, out.String())
	}
	resp, err := http.Post("http://"+addr+"/sessions", "application/json", strings.NewReader(`{"title":"kept"}`))
	if err != nil {
		t.Fatal(err)
	}
	var sess struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create session: %d %v", resp.StatusCode, err)
	}

	err = run(context.Background(), []string{"-addr", "127.0.0.1:0"}, getenv, &bytes.Buffer{}, nil)
	if err == nil || !strings.Contains(err.Error(), "held by another Tack process") {
		t.Fatalf("second process on the same data directory: got %v, want a refusal", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	addr, stop = start(t, getenv, &storetest.LogBuffer{})
	defer stop()
	resp, err = http.Get("http://" + addr + "/sessions/" + sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("session after restart: %d, want 200", resp.StatusCode)
	}
}

// TestDemoPlaysIntoTheServer starts Tack with TACK_DEMO: it prints the URL of
// the session it plays, which the UI serves and the API knows.
func TestDemoPlaysIntoTheServer(t *testing.T) {
	t.Parallel()
	var out storetest.LogBuffer
	addr, stop := start(t, env(map[string]string{"DATABASE_URL": storetest.SchemaURL(t), "TACK_DEMO": "1"}), &out)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	prefix := "demo: watch the agent at http://" + addr + "/s/"
	var id string
	eventually.True(t, 10*time.Second, "demo URL printed", func() bool {
		if _, rest, ok := strings.Cut(out.String(), prefix); ok {
			id, _, _ = strings.Cut(rest, "\n")
		}
		return id != ""
	}, out.String)
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

// TestLogLevel: at the default level every request has its log line; at
// -log-level warn none has.
func TestLogLevel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args     []string
		requests bool
	}{
		{nil, true},
		{[]string{"-log-level", "warn"}, false},
	} {
		var out storetest.LogBuffer
		addr, stop := startWith(t, append([]string{"-addr", "127.0.0.1:0"}, c.args...),
			env(map[string]string{"DATABASE_URL": storetest.SchemaURL(t)}), &out)
		resp, err := http.Get("http://" + addr + "/sessions")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "msg=request"); got != c.requests {
			t.Errorf("%v: request lines logged %v, want %v:\n%s", c.args, got, c.requests, out.String())
		}
	}
}

// TestHelpExitsCleanly runs -h the way main does: usage is printed, the
// exit status is 0 and no "flag: help requested" error follows it.
func TestHelpExitsCleanly(t *testing.T) {
	t.Parallel()
	var out storetest.LogBuffer
	if code := runMain(t.Context(), []string{"-h"}, env(nil), &out); code != 0 {
		t.Errorf("exit status %d, want 0", code)
	}
	if s := out.String(); !strings.Contains(s, "-public-url") || strings.Contains(s, "help requested") {
		t.Errorf("output:\n%s", s)
	}
}
