package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestHook runs tack-hook as an agent does: the payload on stdin, the
// answer on stdout, and nothing at all, exit 0, when Tack is away.
func TestHook(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler())
	t.Cleanup(srv.Close)
	env := func(k string) string {
		if k == "TACK_SERVER" {
			return srv.URL
		}
		return ""
	}
	hookRun := func(payload string, args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), args, env, strings.NewReader(payload), &out, io.Discard)
		return out.String(), err
	}
	if got, err := hookRun(`{"session_id":"c1","hook_event_name":"UserPromptSubmit","prompt_id":"p1","prompt":"Go"}`); err != nil || strings.TrimSpace(got) != "{}" {
		t.Errorf("answer %q, %v", got, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	for _, args := range [][]string{{"-server", down}, {"-agent", "codex", "-timeout", "1ns"}} {
		if got, err := hookRun(`{"session_id":"c1","hook_event_name":"Stop"}`, args...); err != nil || got != "" {
			t.Errorf("%v: printed %q, %v; want nothing", args, got, err)
		}
	}
	if got, err := hookRun(`not json`); err != nil || got != "" {
		t.Errorf("a refused hook printed %q, %v", got, err)
	}
	for _, args := range [][]string{{"-agent", "vim"}, {"-plan", "never"}, {"install"}} {
		if _, err := hookRun(`{}`, args...); err == nil {
			t.Errorf("%v passed", args)
		}
	}
}

// TestLinksNoStore: the hook's binary links neither a database driver nor
// the MCP SDK nor the metrics library, whose initialisation would cost
// every hook what tack-hook exists to save.
func TestLinksNoStore(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, heavy := range []string{"modernc.org/sqlite", "github.com/jackc/pgx", "github.com/modelcontextprotocol", "github.com/prometheus", "github.com/tack-dev/tack/internal/store"} {
			if strings.HasPrefix(pkg, heavy) {
				t.Errorf("tack-hook links %s", pkg)
			}
		}
	}
}
