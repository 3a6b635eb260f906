package hook

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/tack-dev/tack/internal/procstat"
)

// TodoTools says whether the agent that runs this hook offers its model a
// list tool of its own: "native" or "none". A hook's payload does not say
// (Claude Code's SessionStart names no model), so it is read from the
// agent's process, whose child the hook is: its environment and its
// command line (Linux's /proc; elsewhere the environment alone).
//
// Claude Code offers TodoWrite or its task tools on models before
// claude-opus-4-8 and whenever CLAUDE_CODE_ENABLE_TODO_TOOLS=1; its newest
// models, its default, have none. codex offers update_plan only when its
// config enables [tools.update_plan].
func TodoTools(agent string, env func(string) string) string {
	cmdline := ancestorsArgs(4)
	if agent == "codex" {
		home := env("CODEX_HOME")
		if home == "" {
			if h, err := os.UserHomeDir(); err == nil {
				home = filepath.Join(h, ".codex")
			}
		}
		cfg, _ := os.ReadFile(filepath.Join(home, "config.toml"))
		if updatePlanOn.Match(cfg) || strings.Contains(cmdline, "tools.update_plan.enabled=true") {
			return "native"
		}
		return "none"
	}
	if env("CLAUDE_CODE_ENABLE_TODO_TOOLS") == "1" {
		return "native"
	}
	model := env("ANTHROPIC_MODEL")
	if m := modelFlag.FindStringSubmatch(cmdline); m != nil {
		model = m[1]
	}
	if ModelHasTodoTools(model) {
		return "native"
	}
	return "none"
}

var (
	updatePlanOn = regexp.MustCompile(`(?m)^\[tools\.update_plan\]\s*\n(?:[^\[].*\n)*?\s*enabled\s*=\s*true`)
	modelFlag    = regexp.MustCompile(`(?:^|\x00)--model(?:=|\x00)([^\x00]+)`)
	modelVersion = regexp.MustCompile(`(?:^|-)(\d+)(?:-(\d)(?:-|$))?`)
)

// ModelHasTodoTools reports whether Claude Code offers a list tool on a
// model: those before claude-opus-4-8 (claude-3-5-sonnet, claude-sonnet-4-5,
// …); the newer ones and the aliases (which name the newest) have none.
func ModelHasTodoTools(model string) bool {
	name := strings.TrimPrefix(strings.ToLower(model), "claude-")
	for _, family := range []string{"opus-", "sonnet-", "haiku-"} {
		name = strings.Replace(name, family, "", 1)
	}
	m := modelVersion.FindStringSubmatch(name)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major < 4 || (major == 4 && minor < 8)
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
