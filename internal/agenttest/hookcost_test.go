package agenttest

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkClaudeToolCalls is what Tack's hooks cost a real agent per tool
// call: Claude Code (the pinned CLI, --dangerously-skip-permissions, a
// scripted model) runs a session of calls Bash calls with no hooks, and
// with Tack's hooks installed as `tack hook install` installs them
// (command hooks: tack-hook-local, against a real Tack on SQLite; with
// TACK_AGENTTEST_BIN naming a folder of binaries without it, tack-hook),
// and as `-hooks http` does (Claude Code's HTTP hooks, the command hook
// for SessionStart). It reports the session's wall time per call; the
// difference between the two is the hooks'.
//
//	go test ./internal/agenttest -run '^$' -bench ClaudeToolCalls -benchtime 3x
func BenchmarkClaudeToolCalls(b *testing.B) {
	requireAgent(b, claudeBinary())
	const calls = 10
	for _, form := range []string{"no hooks", "command", "command, hook syncs", "http"} {
		b.Run(form, func(b *testing.B) {
			var took time.Duration
			for b.Loop() {
				b.StopTimer()
				u := newUser(b)
				switch form {
				case "command":
					startTack(b, u, false).installHooks(b, u, "claude-code")
				case "command, hook syncs":
					// As with a server elsewhere: each hook process syncs the
					// transcript itself, and is tack-hook (installed when
					// tack-hook-local does not lie beside tack; here that
					// would hand each hook on to it).
					serve(b, u, "-data-dir", b.TempDir(), "-no-transcript-reads").installHooksWith(b, u, hookOnlyTack(b), "claude-code")
				case "http":
					startTack(b, u, false).installHooks(b, u, "claude-code", "-hooks", "http")
				}
				turns := make([]Turn, 0, calls+1)
				for i := range calls {
					turns = append(turns, bashStep(fmt.Sprint(i)))
				}
				m := NewAnthropic(b, append(turns, Turn{Text: "Done."})...)
				b.StartTimer()
				r := u.claude(b, m, "Run the steps.")
				if r.Err != nil {
					b.Fatalf("claude: %v", r.Err)
				}
				if m.Left() != 0 {
					b.Fatalf("%d turns of the script were never asked for", m.Left())
				}
				took += r.Took
			}
			b.ReportMetric(float64(took.Milliseconds())/float64(b.N*calls), "ms/call")
		})
	}
}
