package agenttest

import (
	"testing"
)

// codexMCP is the config.toml table naming a streamable HTTP MCP server,
// its tools approved (approval_policy = "never" would refuse them
// otherwise), with a bearer token when there is one.
func codexMCP(name, url, token string) string {
	cfg := `
[mcp_servers.` + name + `]
url = "` + url + `"
default_tools_approval_mode = "approve"
`
	if token != "" {
		cfg += `http_headers = { Authorization = "Bearer ` + token + `" }
`
	}
	return cfg
}

// TestCodexInTack runs one codex session with Tack's hooks installed: a
// plan with update_plan, a person's edit while the model is thinking, a
// shell call, the plan finished through Tack's MCP todo_write, the turn's
// end. Tack runs in -auth token: the hooks and MCP use the agent's token.
// The MCP URL names no session: the call lands in the hooks' session by
// the threadId codex gives it.
func TestCodexInTack(t *testing.T) {
	requireAgent(t, codexBinary())
	t.Parallel()
	u := newUser(t)
	k := startTack(t, u, true)
	k.installHooks(t, u, "codex")
	f := k.watch(t)

	var live session
	m := NewResponses(t,
		Turn{Text: "I'll plan this first.", Tools: []Call{{Name: "update_plan", Input: map[string]any{"plan": []any{
			map[string]any{"step": "Reproduce the failure", "status": "in_progress"},
			map[string]any{"step": "Fix the race", "status": "pending"},
		}}}}},
		Turn{Tools: []Call{{Name: "exec_command", Input: map[string]any{"cmd": "echo scripted-tool-ran"}}},
			Before: func(Request) {
				var ok bool
				if live, ok = k.sessionOf(t, u, "codex"); !ok {
					t.Errorf("no Tack session for codex mid-turn")
					return
				}
				k.editPlan(t, live.ID)
			}},
		Turn{Tools: []Call{{Namespace: "mcp__tack", Name: "todo_write", Input: map[string]any{"todos": finished}}}},
		Turn{Text: "All done: the race is fixed."},
	)
	u.writeCodexConfig(t, m, codexMCP("tack", k.URL+"/mcp", k.Token))

	r := u.codex(t, "The login test fails one run in ten: fix it.", "--dangerously-bypass-hook-trust")
	s, ok := checkLived(t, k, u, f, "codex", r, m, live)
	if !ok {
		return
	}
	// The calls as the rollout names them (codex's hooks name exec_command
	// Bash): the live session reads as the import of its rollout.
	checkEvents(t, k.events(t, s.ID), []string{"update_plan", "exec_command", "mcp__tack__todo_write"})
	checkPlan(t, k, s.ID, []string{"Reproduce the failure:in_progress", "Fix the race:pending"}, true)
}
