package agenttest

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/eventually"
)

// A plan as a person edits it mid-turn: the item only they added is how
// the tests find their edit in what the model is sent.
const personsItem = "Write the changelog entry"

// editPlan is a person's PUT /sessions/{id}/todos: the list as it stands,
// each item with what the agent's tools keep of it (a task's taskId, which
// its later calls name it by), plus personsItem.
func (k *tack) editPlan(t *testing.T, id string) {
	t.Helper()
	var cur struct {
		Version int64            `json:"version"`
		Todos   []map[string]any `json:"todos"`
	}
	k.do(t, http.MethodGet, "/sessions/"+id+"/todos", nil, &cur)
	var items []map[string]any
	for _, it := range cur.Todos {
		item := map[string]any{}
		for _, key := range []string{"content", "status", "activeForm", "blockedBy", "owner", "taskId", "description"} {
			if v, ok := it[key]; ok {
				item[key] = v
			}
		}
		items = append(items, item)
	}
	items = append(items, map[string]any{"content": personsItem, "status": "pending"})
	k.do(t, http.MethodPut, "/sessions/"+id+"/todos", map[string]any{"todos": items, "baseVersion": cur.Version}, nil)
}

// writeMCPConfig writes an --mcp-config file naming one streamable HTTP
// MCP server, with a bearer token when there is one.
func writeMCPConfig(t *testing.T, u user, name, url, token string) string {
	t.Helper()
	server := map[string]any{"type": "http", "url": url}
	if token != "" {
		server["headers"] = map[string]string{"Authorization": "Bearer " + token}
	}
	cfg, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{name: server}})
	path := filepath.Join(u.Home, name+"-mcp.json")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestClaudeInTack runs one Claude Code session with Tack's hooks installed
// and its MCP server configured: a plan with the agent's todo tool
// (TodoWrite, or the task tools), a person's edit while the model is
// thinking, a Bash call, the plan finished through Tack's MCP todo_write,
// the turn's end.
func TestClaudeInTack(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	t.Run("TodoWrite", func(t *testing.T) {
		t.Parallel()
		claudeInTack(t, false, false, Turn{Text: "I'll plan this first.", Tools: []Call{{Name: "TodoWrite", Input: map[string]any{"todos": []any{
			map[string]any{"content": "Reproduce the failure", "status": "in_progress", "activeForm": "Reproducing the failure"},
			map[string]any{"content": "Fix the race", "status": "pending", "activeForm": "Fixing the race"},
		}}}}}, []string{"Reproduce the failure:in_progress", "Fix the race:pending"})
	})
	// The task tools, and Tack in -auth token.
	t.Run("tasks", func(t *testing.T) {
		t.Parallel()
		claudeInTack(t, true, true, Turn{Text: "I'll plan this first.", Tools: []Call{
			{Name: "TaskCreate", Input: map[string]any{"subject": "Reproduce the failure", "description": "Run it until it fails", "activeForm": "Reproducing the failure"}},
			{Name: "TaskCreate", Input: map[string]any{"subject": "Fix the race", "description": "Lock the map", "activeForm": "Fixing the race"}},
		}}, []string{"Reproduce the failure:pending", "Fix the race:pending"})
	})
}

// claudeInTack runs the session whose first turn writes the plan, which
// Tack then holds as planned (content:status); with tokens, Tack runs in
// -auth token and the hooks and MCP use the agent's token.
func claudeInTack(t *testing.T, tasks, tokens bool, plan Turn, planned []string) {
	u := newUser(t)
	u.ClaudeTasks = tasks
	k := startTack(t, u, tokens)
	k.installHooks(t, u, "claude-code")
	f := k.watch(t)
	// Tack's MCP URL names no session: each call lands in the hooks'
	// session by the tool_use_id its PreToolUse hook told of.

	var live session
	turns := []Turn{
		plan,
		{Tools: []Call{{Name: "Bash", Input: map[string]any{"command": "echo scripted-tool-ran", "description": "Print a marker"}}},
			// The agent waits on the model: the session is live and
			// working, and a person edits its plan now.
			Before: func(Request) {
				var ok bool
				if live, ok = k.sessionOf(t, u, "claude-code"); !ok {
					t.Errorf("no Tack session for Claude Code mid-turn")
					return
				}
				k.editPlan(t, live.ID)
			}},
	}
	// The model finishes the plan through Tack's MCP server.
	turns = append(turns, Turn{Tools: []Call{{Name: "mcp__tack__todo_write", Input: map[string]any{"todos": finished}}}})
	turns = append(turns, Turn{Text: "All done: the race is fixed."})
	m := NewAnthropic(t, turns...)

	args := []string{
		"--mcp-config", writeMCPConfig(t, u, "tack", k.URL+"/mcp", k.Token),
		"--allowedTools", "mcp__tack__todo_write,mcp__tack__todo_read"}
	r := u.claude(t, m, "The login test fails one run in ten: fix it.", args...)
	s, ok := checkLived(t, k, u, f, "claude-code", r, m, live)
	if !ok {
		return
	}
	checkEvents(t, k.events(t, s.ID), []string{plan.Tools[0].Name, "Bash", "mcp__tack__todo_write"})
	checkPlan(t, k, s.ID, planned, true)
}

// finished is the plan as the model finishes it through MCP todo_write:
// every item done, the person's too.
var finished = []any{
	map[string]any{"content": "Reproduce the failure", "status": "completed"},
	map[string]any{"content": "Fix the race", "status": "completed"},
	map[string]any{"content": personsItem, "status": "completed"},
}

// checkEditReached asserts that the person's edit, made while the model
// was answering request edit-1 (0-based), is in request edit and in none
// before it.
func checkEditReached(t *testing.T, reqs []Request, edit int) {
	t.Helper()
	if len(reqs) <= edit {
		t.Fatalf("%d requests to the model, want more than %d", len(reqs), edit)
	}
	for i, req := range reqs[:edit] {
		if req.Contains(personsItem) {
			t.Errorf("request %d already holds the person's edit", i)
		}
	}
	if !reqs[edit].Contains(personsItem) {
		t.Errorf("the model's next request (%d) after the person's edit does not hold it", edit)
	}
}

// checkEvents asserts the session's log: a turn that started and ended,
// the tool calls named with a result each, every event timed.
func checkEvents(t *testing.T, evs []event, tools []string) {
	t.Helper()
	called := map[string]string{} // call id -> name
	results := map[string]bool{}
	types := map[string]int{}
	for _, e := range evs {
		types[e.Type]++
		if e.At == "" {
			t.Errorf("event %d (%s) has no time", e.Seq, e.Type)
		}
		var d struct {
			ToolCalls []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"toolCalls"`
			CallID string `json:"callId"`
		}
		_ = json.Unmarshal(e.Data, &d)
		for _, c := range d.ToolCalls {
			called[c.ID] = c.Name
		}
		if e.Type == "tool/result" {
			results[d.CallID] = true
		}
	}
	for _, typ := range []string{"turn/start", "turn/end", "session/end"} {
		if types[typ] == 0 {
			t.Errorf("no %s in the session's log (%v)", typ, types)
		}
	}
	for _, name := range tools {
		found := false
		for id, n := range called {
			if n == name {
				found = true
				if !results[id] {
					t.Errorf("tool call %s (%s) has no result in the log", id, name)
				}
			}
		}
		if !found {
			t.Errorf("no %s call in the session's log (calls %v)", name, called)
		}
	}
}

// checkPlan asserts the session's list: the agent's plan with the person's
// item, finished by the MCP todo_write when the model made one.
func checkPlan(t *testing.T, k *tack, id string, planned []string, mcp bool) {
	t.Helper()
	var cur todos
	k.do(t, http.MethodGet, "/sessions/"+id+"/todos", nil, &cur)
	var got []string
	for _, it := range cur.Todos {
		got = append(got, it.Content+":"+it.Status)
	}
	want := append(append([]string(nil), planned...), personsItem+":pending")
	if mcp {
		want = []string{"Reproduce the failure:completed", "Fix the race:completed", personsItem + ":completed"}
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("plan %v, want %v", got, want)
	}
}

// newUUID is a random (version 4) UUID, as Claude Code's session ids are.
func newUUID(t *testing.T) string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// scripted is a scripted model server, as checkLived reads it.
type scripted interface {
	Left() int
	Scripted() []Request
}

// checkLived holds a Test*InTack run r of agent, scripted by m, to what a
// person watching sees: the agent finished with its last answer, every
// turn of the script was asked for, the person's edit (made while live was
// read) reached the model's next request, the session was working mid-turn
// and went working, idle, ended on the live feed f, its turn closed. It
// returns the session, and false when the run already failed.
func checkLived(t *testing.T, k *tack, u user, f *feed, agent string, r run, m scripted, live session) (session, bool) {
	t.Helper()
	if r.Err != nil {
		t.Fatalf("%s: %v", agent, r.Err)
	}
	if !strings.Contains(string(r.Stdout), "All done: the race is fixed.") {
		t.Errorf("%s's output lacks the last answer", agent)
	}
	if m.Left() != 0 {
		t.Errorf("%d turns of the script were never asked for", m.Left())
	}
	checkEditReached(t, m.Scripted(), 2)
	if t.Failed() {
		return session{}, false
	}
	s, ok := k.sessionOf(t, u, agent)
	if !ok {
		t.Fatalf("no Tack session for %s", agent)
	}
	if live.State != "working" {
		t.Errorf("mid-turn the session was %q, want working", live.State)
	}
	eventually.True(t, 10*time.Second, "end of the session", func() bool {
		s, _ = k.sessionOf(t, u, agent)
		return s.State == "ended"
	}, func() string { return "its state: " + s.State })
	if got, want := f.States(s.ID), []string{"working", "idle", "ended"}; !inOrder(got, want) {
		t.Errorf("live states %v, want %v in that order", got, want)
	}
	if s.Turn.Number < 1 || s.Turn.Open {
		t.Errorf("turn %+v, want one turn, closed", s.Turn)
	}
	return s, true
}
