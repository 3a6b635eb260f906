package agenttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// `tack connect` alone, then the agent as its user runs it: no
// --mcp-config, no --allowedTools, no MCP table of the test's own. The
// agent finds Tack's MCP server where connect put it (at the user's
// settings, or the project's), offers its tools to the model, runs the
// model's todo_write without asking, and the call lands, by the hooks
// connect put in, in the agent's Tack session.

// connect runs `tack connect` for the agent as the user would, with their
// HOME (and CODEX_HOME), in their project, pointing at this Tack.
func (k *tack) connect(t *testing.T, u user, agent string, args ...string) {
	t.Helper()
	k.connectWith(t, u, binary(t, "tack"), agent, args...)
}

// connectWith is connect by the tack binary at tackPath, which installs
// the hook binaries that lie beside it.
func (k *tack) connectWith(t *testing.T, u user, tackPath, agent string, args ...string) {
	t.Helper()
	args = append([]string{"connect", "-agent", agent, "-server", k.URL, "-token", k.Token}, args...)
	cmd := exec.Command(tackPath, args...)
	cmd.Dir = u.Project
	cmd.Env = u.env("CODEX_HOME=" + u.CodexHome)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tack %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("tack %s:\n%s", strings.Join(args, " "), out)
}

// checkConnected asserts the one session of the agent in the user's
// project holds the model's plan, which the model was told was written.
func checkConnected(t *testing.T, k *tack, u user, agent string, reqs []Request) {
	t.Helper()
	s, ok := k.sessionOf(t, u, agent)
	if !ok {
		t.Fatalf("no Tack session for %s: the hooks did not reach Tack", agent)
	}
	checkMCPWrite(t, k, s.ID, reqs)
}

// scopes are where connect writes: the user's settings, or the project's.
var scopes = []struct {
	name    string
	project bool
}{{"user", false}, {"project", true}}

func TestClaudeConnect(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	for _, scope := range scopes {
		t.Run(scope.name, func(t *testing.T) {
			t.Parallel()
			u := newUser(t)
			// Claude Code asks before any tool the settings do not allow:
			// in -p mode, it refuses.
			u.ClaudeAsks = true
			k := startTack(t, u, true)
			var args []string
			if scope.project {
				// Claude Code applies a project's permissions only in a
				// folder the user trusted (an interactive claude asks
				// once); this user has.
				state := `{"projects": {` + strconv.Quote(u.Project) + `: {"hasTrustDialogAccepted": true}}}`
				if err := os.WriteFile(filepath.Join(u.Home, ".claude.json"), []byte(state), 0o600); err != nil {
					t.Fatal(err)
				}
				args = []string{"-project", u.Project}
			}
			k.connect(t, u, "claude-code", args...)

			m := NewAnthropic(t,
				Turn{Tools: []Call{{Name: "mcp__tack__todo_write", Input: mcpPlan}}},
				Turn{Text: "Planned."},
			)
			if r := u.claude(t, m, "Plan it."); r.Err != nil {
				t.Fatalf("claude: %v", r.Err)
			}
			reqs := m.Scripted()
			if len(reqs) > 0 && !slices.Contains(reqs[0].ToolNames(), "mcp__tack__todo_write") {
				t.Errorf("the model was not offered mcp__tack__todo_write; its tools: %v", reqs[0].ToolNames())
			}
			checkConnected(t, k, u, "claude-code", reqs)

			// Claude Code's own view of its MCP servers (a session of its
			// own, hence after the check of the one above).
			r := start(t, u.Project, u.env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_TMPDIR="+u.Tmp),
				claudeBinary(), "mcp", "get", "tack")
			want := "Scope: User config"
			if scope.project {
				want = "Scope: Project config"
			}
			if out := string(r.Stdout); r.Err != nil || !strings.Contains(out, want) || !strings.Contains(out, "URL: "+k.URL+"/mcp") || !strings.Contains(out, "Type: http") {
				t.Errorf("claude mcp get tack: %v\n%s", r.Err, out)
			}
		})
	}
}

func TestCodexConnect(t *testing.T) {
	requireAgent(t, codexBinary())
	t.Parallel()
	for _, scope := range scopes {
		t.Run(scope.name, func(t *testing.T) {
			t.Parallel()
			u := newUser(t)
			k := startTack(t, u, true)
			m := NewResponses(t,
				Turn{Tools: []Call{{Namespace: "mcp__tack", Name: "todo_write", Input: mcpPlan}}},
				Turn{Text: "Planned."},
			)
			var more string
			var args []string
			if scope.project {
				// codex reads a project's .codex/config.toml only once
				// the user has trusted the project.
				more = "\n[projects." + tomlQuote(u.Project) + "]\ntrust_level = \"trusted\"\n"
				args = []string{"-project", u.Project}
			}
			u.writeCodexConfig(t, m, more)
			k.connect(t, u, "codex", args...)

			r := start(t, u.Project, u.codexEnv(), codexBinary(), "mcp", "list")
			if out := string(r.Stdout); r.Err != nil || !strings.Contains(out, k.URL+"/mcp") {
				t.Errorf("codex mcp list: %v\n%s", r.Err, out)
			}
			if r := u.codex(t, "Plan it.", "--dangerously-bypass-hook-trust"); r.Err != nil {
				t.Fatalf("codex: %v", r.Err)
			}
			// codex defers MCP tools: the model is told of the namespace,
			// and calls into it.
			reqs := m.Scripted()
			if len(reqs) > 0 && !reqs[0].Contains("- mcp__tack: ") {
				t.Errorf("the model was not told of the mcp__tack tools")
			}
			checkConnected(t, k, u, "codex", reqs)
		})
	}
}

// tomlQuote is s as a TOML basic string (a path: no control characters).
func tomlQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
