package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/storetest"
)

// TestSubcommandsRun builds the tool and runs each subcommand briefly on the
// test database, as docs/performance.md runs them at length: a benchmark
// that nothing runs breaks without anyone noticing. Each must exit 0 and
// print its figure.
func TestSubcommandsRun(t *testing.T) {
	t.Parallel()
	url := storetest.URL(t) // the database answers (under CI=true, or the test fails)
	dir := t.TempDir()
	tool, server, cli, hook := filepath.Join(dir, "tackbench"), filepath.Join(dir, "tack-server"), filepath.Join(dir, "tack"), filepath.Join(dir, "tack-hook")
	local := filepath.Join(dir, "tack-hook-local") // beside tack-hook, where the hooks bench finds it
	for bin, pkg := range map[string]string{tool: ".", server: "../server", cli: "../tack", hook: "../tack-hook", local: "../tack-hook-local"} {
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"write", "-clients", "2", "-sessions", "4", "-duration", "1s", "-warmup", "200ms", "-rounds", "1"},
			`(?s)postgres backends, tack: +\d+\.\d of \d+ active on average \(max \d+\).*median ratio tack/pgbench: \d`},
		{[]string{"live", "latency", "-subscribers", "20", "-rate", "20", "-duration", "1s", "-clients-process"},
			`(?m)^\s+20\s+\d`},
		{[]string{"live", "throughput", "-writers", "2", "-duration", "500ms", "-rounds", "1"},
			`ratio of means \d`},
		{[]string{"restart", "-events", "8", "-event-bytes", "65536", "-readers", "2", "-rounds", "1", "-warm", "1", "-hogs", "1"},
			`all rounds: first reads p50 \d+ ms`},
		{[]string{"hooks", "-tack", cli, "-tack-hook", hook, "-server-bin", server, "-agents", "1", "-duration", "300ms", "-rounds", "1"},
			`(?m)^postgres store:\n.*\n\s+1 floor .*\n\s+1 hook 1\s+[1-9].*\n\s+1 hook 2\s+[1-9]`},
		{[]string{"live", "idle", "-server-bin", server, "-conns", "50", "-settle", "100ms"},
			`KiB per idle subscriber`},
		// The browser's half needs node and web/e2e's packages, which the
		// test command installs, and Debian's chromium.
		{[]string{"fleet", "-store", "postgres", "-server", server, "-tack", cli, "-hook", local, "-board-script", "../../web/e2e/bench/board.js",
			"-agents", "2", "-ended", "120", "-every", "300ms", "-warmup", "500ms", "-window", "1s", "-paints", "1", "-browsers", "1"},
			`(?s)board first paint.*rows p50 \d.*window 1s: [1-9]\d* hooks.*, 0 failed.*per agent-minute.*board main thread, a browser following the fleet: \d`},
	} {
		t.Run(strings.Join(c.args[:2], " "), func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command(tool, c.args...)
			cmd.Env = append(os.Environ(), "DATABASE_URL="+url)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("tackbench %v: %v\n%s", c.args, err, out)
			}
			if !regexp.MustCompile(c.want).Match(out) {
				t.Fatalf("tackbench %v printed no %q:\n%s", c.args, c.want, out)
			}
		})
	}
}
