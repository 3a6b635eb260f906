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

// TestClaudeTaskTools checks the task tools as Tack's routes mirror them:
// offered with their schemas, and answering with the texts Tack gives.
func TestClaudeTaskTools(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	m := NewAnthropic(t,
		Turn{Tools: []Call{
			{Name: "TaskCreate", Input: map[string]any{"subject": "Reproduce the failure", "description": "Run it until it fails", "activeForm": "Reproducing the failure"}},
			{Name: "TaskCreate", Input: map[string]any{"subject": "Fix the race", "description": "Lock the map"}},
		}},
		Turn{Tools: []Call{{Name: "TaskUpdate", Input: map[string]any{"taskId": "2", "addBlockedBy": []string{"1"}}}}},
		Turn{Text: "Planned."},
	)
	u := newUser(t)
	u.ClaudeTasks = true
	if r := u.claude(t, m, "Plan it."); r.Err != nil {
		t.Fatalf("claude: %v", r.Err)
	}
	reqs := m.Scripted()
	if len(reqs) != 3 {
		t.Fatalf("%d requests to the model, want 3", len(reqs))
	}
	names := strings.Join(reqs[0].ToolNames(), " ")
	for _, want := range []string{"TaskCreate", "TaskUpdate", "TaskList", "TaskGet"} {
		if !strings.Contains(names, want) {
			t.Errorf("tools offered %s, lack %s", names, want)
		}
	}
	if strings.Contains(names, "TodoWrite") {
		t.Errorf("tools offered %s, both TodoWrite and the task tools", names)
	}
	for i, want := range map[int]string{
		1: "Task #1 created successfully: Reproduce the failure",
		2: "Updated task #2 blockedBy",
	} {
		if !reqs[i].Contains(want) {
			t.Errorf("request %d lacks the tool result %q", i, want)
		}
	}
}

// TestCodexCompaction runs codex past its auto-compaction limit: its
// compaction request is answered with a summary, not a turn of the script,
// and the session goes on to its end.
func TestCodexCompaction(t *testing.T) {
	requireAgent(t, codexBinary())
	t.Parallel()
	m := NewResponses(t,
		Turn{Tools: []Call{{Name: "exec_command", Input: map[string]any{"cmd": "echo hi"}}}, Tokens: 900_000},
		Turn{Text: "Done after compacting."},
	)
	u := newUser(t)
	u.writeCodexConfig(t, m, "model_auto_compact_token_limit = 1000\n")
	r := u.codex(t, "Say hi.")
	if r.Err != nil {
		t.Fatalf("codex: %v", r.Err)
	}
	var compactions int
	for i, req := range m.Requests() {
		t.Logf("request %d: %s %s scripted=%v", i, req.Method, req.Path, req.Scripted)
		if !req.Scripted {
			compactions++
		}
	}
	if compactions == 0 {
		t.Errorf("codex sent no compaction request")
	}
	if !strings.Contains(string(r.Stdout), "Done after compacting.") || m.Left() != 0 {
		t.Errorf("codex did not finish the script after compacting")
	}
}
