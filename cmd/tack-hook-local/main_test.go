package main

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/hook/front"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestLinksNoHTTP: the local hook links neither net/http nor TLS, whose
// initialisation would cost every hook what the binary exists to save.
func TestLinksNoHTTP(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch {
		case pkg == "net/http", pkg == "crypto/tls", strings.HasPrefix(pkg, "github.com/tack-dev/tack/internal/") && pkg != "github.com/tack-dev/tack/internal/hook/front":
			t.Errorf("tack-hook-local links %s", pkg)
		}
	}
}

// TestBinary runs tack-hook-local as an agent does, tack-hook beside it,
// both built for the test, against a real Tack: the first hook is tack-hook's
// (the server has not yet said it reads this user's transcripts), which
// learns that it does; the next asks the server to read, on the quick
// path. A server away gets nothing printed, exit 0; a flag tack hook
// refuses is refused by tack-hook, exit 2.
func TestBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, pkg := range []string{".", "../tack-hook"} {
		build := exec.Command("go", "build", "-o", dir+string(filepath.Separator), pkg)
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	tack := api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler()
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(front.ReadHeader) == front.ReadAsk {
			asked.Add(1)
		}
		tack.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cache := t.TempDir()
	transcript := filepath.Join(t.TempDir(), "s1.jsonl")
	line := `{"type":"user","sessionId":"s1","uuid":"u1","promptId":"p1","cwd":"/w","timestamp":"2026-01-02T10:00:00Z","message":{"role":"user","content":"Go"}}` + "\n"
	if err := os.WriteFile(transcript, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(payload string, args ...string) (string, string, error) {
		cmd := exec.Command(filepath.Join(dir, "tack-hook-local"), args...)
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache, "TACK_SERVER="+srv.URL)
		cmd.Stdin = strings.NewReader(payload)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		return out.String(), errOut.String(), err
	}
	prompt := `{"session_id":"s1","hook_event_name":"UserPromptSubmit","prompt_id":"p1","prompt":"Go","cwd":"/w","transcript_path":"` + transcript + `"}`
	for i, want := range []int32{0, 1} {
		if out, errOut, err := run(prompt); err != nil || strings.TrimSpace(out) != "{}" {
			t.Fatalf("hook %d: printed %q, %q, %v", i+1, out, errOut, err)
		}
		if got := asked.Load(); got != want {
			t.Errorf("after hook %d: %d hooks asked the server to read, want %d", i+1, got, want)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	if out, errOut, err := run(prompt, "-server", down); err != nil || out != "" || errOut != "" {
		t.Errorf("a server away: printed %q, %q, %v", out, errOut, err)
	}
	var exit *exec.ExitError
	if _, errOut, err := run(prompt, "-agent", "vim"); !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(errOut, "tack-hook:") {
		t.Errorf("-agent vim: %q, %v; want tack-hook's refusal, exit 2", errOut, err)
	}
}
