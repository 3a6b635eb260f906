package agenttest

import (
	"net/http"
	"strings"
	"testing"
)

// Tack's own MCP server with each real agent, no hooks: the session is
// named on the server's URL (?session=ID), a turn is open in it, and the
// model's todo_write lands there and answers the model with Tack's text.

// namedSession makes a session with an open turn and the MCP URL naming it.
func (k *tack) namedSession(t *testing.T, agent string) (id, url string) {
	t.Helper()
	var s session
	k.do(t, http.MethodPost, "/sessions", map[string]any{"title": "MCP alone", "agent": agent}, &s)
	k.do(t, http.MethodPost, "/sessions/"+s.ID+"/events", map[string]any{"events": []any{
		map[string]any{"type": "turn/start", "data": map[string]any{}},
	}}, nil)
	return s.ID, k.URL + "/mcp?session=" + s.ID
}

func checkMCPWrite(t *testing.T, k *tack, id string, reqs []Request) {
	t.Helper()
	if len(reqs) != 2 {
		t.Fatalf("%d requests to the model, want 2", len(reqs))
	}
	// /mcp answers with todo_write's text alone (of structuredContent both
	// agents would give the model that instead, Test*MCPContract): the
	// model reads exactly what the REST tool answers.
	given := strings.Join(reqs[1].ToolResults(), " ")
	if want := "Updated todo list: 1 pending, 1 in progress, 0 completed."; !strings.Contains(given, want) {
		t.Errorf("the model's next request lacks todo_write's answer (%s); its tool results: %q", want, given)
	}
	var cur todos
	k.do(t, http.MethodGet, "/sessions/"+id+"/todos", nil, &cur)
	if len(cur.Todos) != 2 || cur.Todos[0].Content != "Reproduce the failure" || cur.Todos[0].Status != "in_progress" {
		t.Errorf("the session's list %+v, want the model's", cur.Todos)
	}
}

var mcpPlan = map[string]any{"todos": []any{
	map[string]any{"content": "Reproduce the failure", "status": "in_progress"},
	map[string]any{"content": "Fix the race", "status": "pending"},
}}

func TestClaudeMCPNamedSession(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	k := startTack(t, u, true)
	id, url := k.namedSession(t, "claude-code")
	m := NewAnthropic(t,
		Turn{Tools: []Call{{Name: "mcp__tack__todo_write", Input: mcpPlan}}},
		Turn{Text: "Planned."},
	)
	r := u.claude(t, m, "Plan it.", "--mcp-config", writeMCPConfig(t, u, "tack", url, k.Token), "--allowedTools", "mcp__tack__todo_write")
	if r.Err != nil {
		t.Fatalf("claude: %v", r.Err)
	}
	checkMCPWrite(t, k, id, m.Scripted())
}

func TestCodexMCPNamedSession(t *testing.T) {
	requireAgent(t, codexBinary())
	t.Parallel()
	u := newUser(t)
	k := startTack(t, u, true)
	id, url := k.namedSession(t, "codex")
	m := NewResponses(t,
		Turn{Tools: []Call{{Namespace: "mcp__tack", Name: "todo_write", Input: mcpPlan}}},
		Turn{Text: "Planned."},
	)
	u.writeCodexConfig(t, m, codexMCP("tack", url, k.Token))
	if r := u.codex(t, "Plan it."); r.Err != nil {
		t.Fatalf("codex: %v", r.Err)
	}
	checkMCPWrite(t, k, id, m.Scripted())
}
