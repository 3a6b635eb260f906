package hook

import (
	"os"
	"strconv"
	"strings"

	"github.com/tack-dev/tack/internal/procstat"
	"github.com/tack-dev/tack/internal/transcript"
)

// TodoTools says whether the agent that runs this hook offers its model a
// list tool of its own: "native" or "none". A hook's payload does not say
// (Claude Code's SessionStart names no model), so it is read from the
// agent's process, whose child the hook is: its environment and its
// command line (Linux's /proc; elsewhere the environment alone), as the
// agent's transcript.Agent.NativeTodoTools reads them.
func TodoTools(agent string, env func(string) string) string {
	cmdline := ancestorsArgs(4)
	if a := transcript.Lookup(agent); a != nil && a.NativeTodoTools != nil && a.NativeTodoTools(env, cmdline) {
		return "native"
	}
	return "none"
}

// ancestorsArgs is the command lines of this process's parent and its
// ancestors up to n, NUL-separated, "" where /proc is not there.
func ancestorsArgs(n int) string {
	var b strings.Builder
	pid := os.Getppid()
	for range n {
		if pid <= 1 {
			break
		}
		raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil {
			break
		}
		b.Write(raw)
		b.WriteByte(0)
		stat, err := procstat.Read(pid)
		if err != nil {
			break
		}
		pid = int(stat.Int(4)) // the parent's
	}
	return b.String()
}
