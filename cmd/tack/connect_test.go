package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConnectCommand runs `tack connect` and `tack disconnect` on a
// project, as a user would: twice changes nothing and says so.
func TestConnectCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := func(k string) string { return map[string]string{"HOME": filepath.Join(dir, "home")}[k] }
	connect := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), args, env, &out, io.Discard)
		return out.String(), err
	}
	out, err := connect("connect", "-agent", "codex", "-project", dir, "-server", "http://tack.test:8080", "-plan", "off")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(filepath.Join(dir, ".codex", "config.toml"))
	hooks, _ := os.ReadFile(filepath.Join(dir, ".codex", "hooks.json"))
	if !strings.Contains(out, "hooks.json: changed") || !strings.Contains(out, "config.toml: changed") ||
		!strings.Contains(string(raw), `url = "http://tack.test:8080/mcp"`) || !strings.Contains(string(hooks), " hook -agent codex -plan off -server http://tack.test:8080") {
		t.Errorf("connect said\n%s\nconfig.toml:\n%s\nhooks.json:\n%s", out, raw, hooks)
	}
	out, err = connect("connect", "-agent", "codex", "-project", dir, "-server", "http://tack.test:8080", "-plan", "off")
	if err != nil || strings.Count(out, "nothing changed") != 2 {
		t.Errorf("second connect: %v\n%s", err, out)
	}
	out, err = connect("disconnect", "-agent", "codex", "-project", dir)
	if raw, _ := os.ReadFile(filepath.Join(dir, ".codex", "config.toml")); err != nil || strings.Count(out, ": changed") != 2 || len(raw) != 0 {
		t.Errorf("disconnect: %v\n%s\nconfig.toml: %q", err, out, raw)
	}
	for _, args := range [][]string{{"connect", "-plan", "sometimes"}, {"connect", "-agent", "vim"}, {"connect", "extra"},
		{"connect", "-hooks", "sometimes"},
		{"connect", "-hooks", "http", "-agent", "codex", "-server", "http://127.0.0.1:8080"}, // codex takes no HTTP hooks
		{"connect", "-hooks", "http", "-server", "http://tack.test:8080"},                    // not this machine: it cannot read the transcripts
	} {
		if _, err := connect(args...); err == nil {
			t.Errorf("%v passed", args)
		}
	}
}
