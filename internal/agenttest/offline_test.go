package agenttest

import (
	"strings"
	"testing"
)

// TestClaudeOffline proves the harness alone: Claude Code runs a one-turn
// scripted session against the model server and prints its answer.
func TestClaudeOffline(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	m := NewAnthropic(t, Turn{Text: "Hello from the script."})
	u := newUser(t)
	r := u.claude(t, m, "Say hello.")
	if r.Err != nil {
		t.Fatalf("claude: %v", r.Err)
	}
	for i, req := range m.Requests() {
		t.Logf("request %d: %s %s scripted=%v %d bytes, tools %v", i, req.Method, req.Path, req.Scripted, len(req.Body), req.ToolNames())
	}
	if !strings.Contains(string(r.Stdout), "Hello from the script.") {
		t.Errorf("claude's output lacks the scripted answer")
	}
	if m.Left() != 0 {
		t.Errorf("%d turns of the script were never asked for", m.Left())
	}
}

// TestCodexOffline proves the harness alone for codex.
func TestCodexOffline(t *testing.T) {
	requireAgent(t, codexBinary())
	t.Parallel()
	m := NewResponses(t, Turn{Text: "Hello from the script."})
	u := newUser(t)
	u.writeCodexConfig(t, m, "")
	r := u.codex(t, "Say hello.")
	if r.Err != nil {
		t.Fatalf("codex: %v", r.Err)
	}
	for i, req := range m.Requests() {
		t.Logf("request %d: %s %s scripted=%v %d bytes, tools %v", i, req.Method, req.Path, req.Scripted, len(req.Body), req.ToolNames())
	}
	if !strings.Contains(string(r.Stdout), "Hello from the script.") {
		t.Errorf("codex's output lacks the scripted answer")
	}
	if m.Left() != 0 {
		t.Errorf("%d turns of the script were never asked for", m.Left())
	}
}
