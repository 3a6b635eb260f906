package api_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
)

// Claude Code's task tools over real HTTP, on every store: Claude Code's
// own texts, each change a list write (versions, history, ACP), a task
// named by nothing a 404 with Claude Code's text, a retry answered as first.
func TestTaskTools(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "Texts", cfg: projection.Config{AllowParallel: true}, run: testTaskTexts},
		{name: "NotFoundAndInvalid", run: testTaskErrors},
		{name: "Retry", run: testTaskRetry},
	})
}

// task calls a task tool and returns its answer, checking its status.
func (b *bundle) task(id, tool, args string, status int) toolAnswer {
	b.t.Helper()
	var a toolAnswer
	b.want(b.do("POST", "/sessions/"+id+"/tools/"+tool, args), status, &a)
	return a
}

func testTaskTexts(t *testing.T, b *bundle) {
	id := b.openSession()
	steps := []struct{ tool, args, text string }{
		{"TaskList", `{}`, "No tasks found"},
		{"TaskCreate", `{"subject":"Parse","description":"Bytes in.","activeForm":"Parsing"}`, "Task #1 created successfully: Parse"},
		{"TaskCreate", `{"subject":"Test","description":"Tables."}`, "Task #2 created successfully: Test"},
		{"TaskUpdate", `{"taskId":"2","addBlockedBy":["1"]}`, "Updated task #2 blockedBy"},
		{"TaskUpdate", `{"taskId":"1","status":"in_progress","owner":"lead"}`, "Updated task #1 owner, status"},
		{"TaskGet", `{"taskId":"2"}`, "Task #2: Test\nStatus: pending\nDescription: Tables.\nBlocked by: #1"},
		{"TaskList", `{}`, "#1 [in_progress] Parse (lead)\n#2 [pending] Test [blocked by #1]"},
		{"TaskUpdate", `{"taskId":"1","status":"in_progress"}`, "Updated task #1 "},
	}
	var last toolAnswer
	for _, st := range steps {
		last = b.task(id, st.tool, st.args, http.StatusOK)
		if last.IsError || last.Content != st.text || last.Version == nil || last.Result == nil {
			t.Fatalf("%s %s: %+v, want %q", st.tool, st.args, last, st.text)
		}
	}
	// Four writes: two creates and two updates (the last changed nothing).
	if *last.Version != 5 {
		t.Fatalf("version %d, want 5", *last.Version)
	}
	td := b.todos(id)
	one, two := projection.TaskItemID("1"), projection.TaskItemID("2")
	if len(td.Todos) != 2 || td.Todos[0].ID != one || td.Todos[0].ActiveForm != "Parsing" || td.Todos[0].Owner != "lead" ||
		td.Todos[1].TaskID != "2" || len(td.Todos[1].BlockedBy) != 1 || td.Todos[1].BlockedBy[0] != one || td.Todos[1].Description != "Tables." {
		t.Fatalf("todos %+v", td.Todos)
	}
	var acp projection.ACPPlan
	b.want(b.do("GET", "/sessions/"+id+"/todos?format=acp", nil), http.StatusOK, &acp)
	if m := acp.Entries[1].Meta; m == nil || m.ID != two || m.TaskID != "2" || len(m.BlockedBy) != 1 {
		t.Fatalf("acp %+v", acp)
	}
	var h struct{ Versions []projection.Version }
	b.want(b.do("GET", "/sessions/"+id+"/todos/history", nil), http.StatusOK, &h)
	if len(h.Versions) != 4 || h.Versions[0].Todos[0].Owner != "lead" || h.Versions[3].Changes[0].ID != one {
		t.Fatalf("history %+v", h.Versions)
	}
	// A person's edit keeps the agent's fields and ids.
	edit := map[string]any{"baseVersion": 5, "todos": []any{
		map[string]any{"content": "Parse", "status": "completed", "taskId": "1", "owner": "lead"},
		map[string]any{"content": "Test, renamed", "status": "pending", "taskId": "2", "blockedBy": []string{one}},
	}}
	var edited projection.Todos
	b.want(b.do("PUT", "/sessions/"+id+"/todos", edit), http.StatusOK, &edited)
	if edited.Todos[1].ID != two || edited.Todos[1].CreatedAt != td.Todos[1].CreatedAt {
		t.Fatalf("edited %+v: the task lost its id", edited.Todos)
	}
	if a := b.task(id, "TaskList", `{}`, http.StatusOK); a.Content != "#1 [completed] Parse (lead)\n#2 [pending] Test, renamed" {
		t.Fatalf("after the edit: %q", a.Content)
	}
}

func testTaskErrors(t *testing.T, b *bundle) {
	id := b.openSession()
	for _, tool := range []string{"TaskGet", "TaskUpdate"} {
		if a := b.task(id, tool, `{"taskId":"7"}`, http.StatusNotFound); !a.IsError || a.Content != projection.TaskNotFound {
			t.Fatalf("%s of no task: %+v", tool, a)
		}
	}
	if a := b.task(id, "TaskCreate", `{"subject":"a"}`, http.StatusUnprocessableEntity); a.Content != "Error: invalid arguments: the input is missing `description`" {
		t.Fatalf("no description: %+v", a)
	}
	if a := b.task(id, "TaskCreate", `{"subject":" ","description":""}`, http.StatusUnprocessableEntity); a.Content != "Error: invalid todo: `subject` must be a non-empty string" {
		t.Fatalf("blank subject: %+v", a)
	}
	// Two in progress in a session that allows one: the list's own check.
	b.task(id, "TaskCreate", `{"subject":"a","description":""}`, http.StatusOK)
	b.task(id, "TaskCreate", `{"subject":"b","description":""}`, http.StatusOK)
	b.task(id, "TaskUpdate", `{"taskId":"1","status":"in_progress"}`, http.StatusOK)
	if a := b.task(id, "TaskUpdate", `{"taskId":"2","status":"in_progress"}`, http.StatusUnprocessableEntity); a.Content != "Error: invalid todos: at most one task may be in_progress, got 2" {
		t.Fatalf("two in progress: %+v", a)
	}
	// No open turn: the change needs one, as every list write of the model.
	b.appendOK(id, turnEnd())
	if a := b.task(id, "TaskCreate", `{"subject":"c","description":""}`, http.StatusConflict); a.Content != "Error: todo_write requires an owning agent session" {
		t.Fatalf("no open turn: %+v", a)
	}
	if got := b.session(id).LastSeq; got != 5 {
		t.Fatalf("lastSeq %d: a rejected call wrote", got)
	}
}

func testTaskRetry(t *testing.T, b *bundle) {
	id := b.openSession()
	b.task(id, "TaskCreate", `{"subject":"a","description":""}`, http.StatusOK)
	send := func() toolAnswer {
		var a toolAnswer
		r := b.do("POST", "/sessions/"+id+"/tools/TaskCreate", `{"subject":"b","description":""}`, "Idempotency-Key", "k1")
		b.want(r, http.StatusOK, &a)
		return a
	}
	first, again := send(), send()
	if first.Content != "Task #2 created successfully: b" || again.Content != first.Content || *again.Version != *first.Version {
		t.Fatalf("first %+v, retry %+v", first, again)
	}
	if got := b.todos(id); len(got.Todos) != 2 {
		t.Fatalf("a retry wrote again: %+v", got.Todos)
	}
	raw, _ := json.Marshal(again.Result.Todos)
	if want, _ := json.Marshal(first.Result.Todos); string(raw) != string(want) {
		t.Fatalf("retry's list %s, want %s", raw, want)
	}
}
