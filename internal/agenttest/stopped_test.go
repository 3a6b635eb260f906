package agenttest

import (
	"strings"
	"testing"
)

// Tack stopped in the middle of a session breaks nothing in the agent: its
// hooks and MCP server go quiet, the agent finishes its turn and exits 0.

func TestClaudeTackStopped(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	k := startTack(t, u, false)
	k.installHooks(t, u, "claude-code")
	args := []string{"--mcp-config", writeMCPConfig(t, u, "tack", k.URL+"/mcp", k.Token), "--allowedTools", "mcp__tack__todo_write,mcp__tack__todo_read"}
	m := NewAnthropic(t,
		Turn{Tools: []Call{{Name: "TodoWrite", Input: map[string]any{"todos": []any{
			map[string]any{"content": "Reproduce the failure", "status": "in_progress", "activeForm": "Reproducing the failure"},
		}}}}},
		Turn{Tools: []Call{{Name: "Bash", Input: map[string]any{"command": "echo scripted-tool-ran", "description": "Print a marker"}}},
			Before: func(Request) { k.Stop() }},
		Turn{Text: "Finished without Tack."},
	)
	r := u.claude(t, m, "Fix the flaky test.", args...)
	if r.Err != nil {
		t.Fatalf("claude with Tack stopped mid-run: %v", r.Err)
	}
	if !strings.Contains(string(r.Stdout), "Finished without Tack.") {
		t.Errorf("claude's output lacks the last answer")
	}
	if m.Left() != 0 {
		t.Errorf("%d turns of the script were never asked for", m.Left())
	}
}

func TestCodexTackStopped(t *testing.T) {
	requireAgent(t, codexBinary())
	t.Parallel()
	u := newUser(t)
	k := startTack(t, u, false)
	k.installHooks(t, u, "codex")
	more := codexMCP("tack", k.URL+"/mcp", k.Token)
	m := NewResponses(t,
		Turn{Tools: []Call{{Name: "update_plan", Input: map[string]any{"plan": []any{
			map[string]any{"step": "Reproduce the failure", "status": "in_progress"},
		}}}}},
		Turn{Tools: []Call{{Name: "exec_command", Input: map[string]any{"cmd": "echo scripted-tool-ran"}}},
			Before: func(Request) { k.Stop() }},
		Turn{Text: "Finished without Tack."},
	)
	u.writeCodexConfig(t, m, more)
	r := u.codex(t, "Fix the flaky test.", "--dangerously-bypass-hook-trust")
	if r.Err != nil {
		t.Fatalf("codex with Tack stopped mid-run: %v", r.Err)
	}
	if !strings.Contains(string(r.Stdout), "Finished without Tack.") {
		t.Errorf("codex's output lacks the last answer")
	}
	if m.Left() != 0 {
		t.Errorf("%d turns of the script were never asked for", m.Left())
	}
}
