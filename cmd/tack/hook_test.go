package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestHookCommand runs `tack hook` as an agent does: the payload on stdin,
// the answer on stdout, and nothing at all, exit 0, when Tack is away. Not
// parallel: it sets stdin.
func TestHookCommand(t *testing.T) {
	srv := httptest.NewServer(api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler())
	t.Cleanup(srv.Close)
	env := func(string) string { return "" }
	hookRun := func(payload string, args ...string) (string, error) {
		stdin = strings.NewReader(payload)
		defer func() { stdin = os.Stdin }()
		var out bytes.Buffer
		err := run(context.Background(), append([]string{"hook"}, args...), env, &out, io.Discard)
		return out.String(), err
	}
	got, err := hookRun(`{"session_id":"c1","hook_event_name":"UserPromptSubmit","prompt_id":"p1","prompt":"Go"}`, "-server", srv.URL)
	if err != nil || strings.TrimSpace(got) != "{}" {
		t.Errorf("answer %q, %v", got, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	for _, args := range [][]string{{"-server", down}, {"-server", srv.URL, "-agent", "codex", "-timeout", "1ns"}} {
		if got, err := hookRun(`{"session_id":"c1","hook_event_name":"Stop"}`, args...); err != nil || got != "" {
			t.Errorf("%v: printed %q, %v; want nothing", args, got, err)
		}
	}
	if got, err := hookRun(`not json`, "-server", srv.URL); err != nil || got != "" {
		t.Errorf("a refused hook printed %q, %v", got, err)
	}
	if _, err := hookRun(`{}`, "-agent", "vim"); err == nil {
		t.Error("an unknown agent passed")
	}
	if _, err := hookRun(`{}`, "-plan", "never"); err == nil {
		t.Error("an unknown plan mode passed")
	}

	// install, twice, then uninstall, on a project's settings.
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"hook", "install", "-project", dir, "-server", srv.URL}, env, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	raw, _ := os.ReadFile(filepath.Join(dir, ".claude", "settings.json"))
	if !strings.Contains(out.String(), "changed") || !strings.Contains(string(raw), exe+" hook -agent claude-code -plan auto -server "+srv.URL) {
		t.Errorf("install said %q; settings %s", out.String(), raw)
	}
	out.Reset()
	if err := run(context.Background(), []string{"hook", "install", "-project", dir, "-server", srv.URL}, env, &out, io.Discard); err != nil || !strings.Contains(out.String(), "nothing changed") {
		t.Errorf("second install: %q %v", out.String(), err)
	}
	out.Reset()
	if err := run(context.Background(), []string{"hook", "uninstall", "-project", dir}, env, &out, io.Discard); err != nil || !strings.Contains(out.String(), "changed") {
		t.Errorf("uninstall: %q %v", out.String(), err)
	}
}
