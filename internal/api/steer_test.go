package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
)

// The people-steer-the-plan rules over real HTTP, on every store.
func TestSteer(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "Edit", run: testEdit},
		{name: "EditChecks", run: testEditChecks},
		{name: "EditRefusedOnEvents", run: testEditRefusedOnEvents},
		{name: "EditIdempotency", run: testEditIdempotency},
		{name: "ModelToldOfEdit", run: testModelToldOfEdit},
		{name: "ModelToldAfterRead", run: testModelToldAfterRead},
		{name: "EditStanding", run: testEditStanding},
		{name: "Reminder", run: testReminder},
		{name: "Timeline", run: testTimeline},
		{name: "TodoHistory", run: testTodoHistory},
	})
}

// editOK edits the list against base and returns the view it left.
func (b *bundle) editOK(id string, base int64, todos ...map[string]any) projection.Todos {
	b.t.Helper()
	if todos == nil {
		todos = []map[string]any{}
	}
	var td projection.Todos
	b.want(b.do("PUT", "/sessions/"+id+"/todos", map[string]any{"todos": todos, "baseVersion": base}), http.StatusOK, &td)
	return td
}

func (b *bundle) edit(id string, base int64, todos ...map[string]any) response {
	b.t.Helper()
	if todos == nil {
		todos = []map[string]any{}
	}
	return b.do("PUT", "/sessions/"+id+"/todos", map[string]any{"todos": todos, "baseVersion": base})
}

func (b *bundle) read(id string) toolAnswer {
	b.t.Helper()
	var a toolAnswer
	b.want(b.do("POST", "/sessions/"+id+"/tools/todo_read", map[string]any{}), http.StatusOK, &a)
	return a
}

func testEdit(t *testing.T, b *bundle) {
	id := b.openSession()
	b.writeOK(id, todo("read the code", "in_progress"), todo("fix it", "pending")) // version 2
	b.appendOK(id, turnEnd())
	// No open turn needed; the answer is the todos view, with its ETag.
	r := b.edit(id, 2, todo("read the code", "completed"), todo("fix it", "in_progress"), todo("ship", "pending"))
	var td projection.Todos
	b.want(r, http.StatusOK, &td)
	if td.Version != 4 || !td.Standing || td.Counts != (projection.Counts{Pending: 1, InProgress: 1, Completed: 1}) || td.SessionID != id {
		t.Errorf("view %+v", td)
	}
	if got := r.Header.Get("ETag"); got != `"v4-s1"` {
		t.Errorf("ETag %q", got)
	}
	if got := b.todos(id); fmt.Sprint(got) != fmt.Sprint(td) {
		t.Errorf("GET todos %+v, PUT answered %+v", got, td)
	}
	evs := b.events(id)
	last := evs[len(evs)-1]
	if last.Type != "todo/edit" || last.Turn != 0 || string(last.Data) !=
		`{"todos":[{"content":"read the code","status":"completed"},{"content":"fix it","status":"in_progress"},{"content":"ship","status":"pending"}],"by":"local"}` {
		t.Errorf("stored %+v %s", last, last.Data)
	}
	// Never on the surface.
	var msgs struct{ Messages []projection.Message }
	b.want(b.do("GET", "/sessions/"+id+"/messages", nil), http.StatusOK, &msgs)
	if len(msgs.Messages) != 0 {
		t.Errorf("messages %+v", msgs.Messages)
	}
	// A stale baseVersion names both versions; a newer one cannot come
	// from a read. Nothing is written.
	msg := b.wantError(b.edit(id, 2, todo("x", "pending")), http.StatusConflict, "conflict")
	if msg != "stale todo list: baseVersion 2 is older than the current version 4; read the list and write it again" {
		t.Errorf("stale: %q", msg)
	}
	msg = b.wantError(b.edit(id, 9, todo("x", "pending")), http.StatusUnprocessableEntity, "invalid")
	if msg != "invalid arguments: baseVersion 9 is newer than the current version 4" {
		t.Errorf("newer: %q", msg)
	}
	if n := len(b.events(id)); n != len(evs) {
		t.Errorf("rejected edits appended: %d events, want %d", n, len(evs))
	}
	// Clearing is an edit to the empty list.
	if td := b.editOK(id, 4); len(td.Todos) != 0 || td.Version != 5 {
		t.Errorf("cleared %+v", td)
	}
	// Unknown session.
	b.wantError(b.edit("ses_nope", 0), http.StatusNotFound, "not_found")
}

func testEditChecks(t *testing.T, b *bundle) {
	id := b.newSession()
	for _, c := range []struct {
		body, want string
	}{
		{`{"todos":[{"content":"a","status":"pending","priority":1}],"baseVersion":0}`, "invalid todo: unexpected key `priority`; a todo has the keys `content`, `status` and any of `activeForm`, `blockedBy`, `owner`, `taskId` and `description`"},
		{`{"todos":[{"content":"  ","status":"pending"}],"baseVersion":0}`, "invalid todo: `content` must be a non-empty string"},
		{`{"todos":[{"content":"a","status":"done"}],"baseVersion":0}`, "invalid todo: `status` must be one of pending, in_progress, completed"},
		{`{"todos":[{"content":"a","status":"pending"},{"content":"a","status":"pending"}],"baseVersion":0}`, `invalid todos: duplicate content "a"`},
		{`{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}],"baseVersion":0}`, "invalid todos: at most one task may be in_progress, got 2"},
		{`{"todos":[{"content":"` + strings.Repeat("x", 1001) + `","status":"pending"}],"baseVersion":0}`, "invalid todo: `content` must be at most 1000 characters, got 1001"},
		{`{"todos":[]}`, "invalid edit: the body is missing `baseVersion`"},
		{`{"todos":[],"baseVersion":-1}`, "invalid edit: `baseVersion` must be a non-negative integer"},
		{`{"todos":{},"baseVersion":0}`, "invalid arguments: `todos` must be an array"},
	} {
		if msg := b.wantError(b.do("PUT", "/sessions/"+id+"/todos", c.body), http.StatusUnprocessableEntity, "invalid"); msg != c.want {
			t.Errorf("%.80s: %q, want %q", c.body, msg, c.want)
		}
	}
	if n := len(b.events(id)); n != 0 {
		t.Errorf("rejected edits appended %d events", n)
	}
}

func testEditRefusedOnEvents(t *testing.T, b *bundle) {
	id := b.openSession()
	msg := b.wantError(b.do("POST", "/sessions/"+id+"/events", map[string]any{"events": []any{
		ev("todo/edit", map[string]any{"todos": []any{todo("a", "pending")}, "by": "mallory"}),
	}}), http.StatusUnprocessableEntity, "invalid")
	if msg != "events[0]: todo/edit cannot be appended through /events; a person edits the list with PUT /sessions/{id}/todos" {
		t.Errorf("message %q", msg)
	}
	if n := len(b.events(id)); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
}

func testEditIdempotency(t *testing.T, b *bundle) {
	id := b.newSession()
	path := "/sessions/" + id + "/todos"
	body := `{"todos":[{"content":"a","status":"pending"}],"baseVersion":0}`
	first := b.do("PUT", path, body, "Idempotency-Key", "e-1")
	b.want(first, http.StatusOK, nil)
	again := b.do("PUT", path, body, "Idempotency-Key", "e-1")
	b.want(again, http.StatusOK, nil)
	if string(again.Body) != string(first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry answered %s, want %s", again.Body, first.Body)
	}
	b.wantError(b.do("PUT", path, `{"todos":[],"baseVersion":1}`, "Idempotency-Key", "e-1"), http.StatusUnprocessableEntity, "idempotency_mismatch")
	if n := len(b.events(id)); n != 1 {
		t.Errorf("%d events, want 1", n)
	}
}

func testModelToldOfEdit(t *testing.T, b *bundle) {
	id := b.openSession()
	b.writeOK(id, todo("read the code", "in_progress"), todo("fix it", "pending")) // 2, seen 2
	b.editOK(id, 2, todo("read the code", "completed"), todo("fix it", "in_progress"), todo("add a test", "pending"))
	before := len(b.events(id))
	var a toolAnswer
	b.want(b.do("POST", "/sessions/"+id+"/tools/todo_write", map[string]any{"todos": []any{todo("read the code", "completed"), todo("fix it", "in_progress")}}),
		http.StatusConflict, &a)
	want := "Error: the todo list was changed by local since you last read it (version 2 → 3). It is now:\n" +
		"[x] read the code\n[>] fix it\n[ ] add a test\nWrite the list again with their changes."
	if !a.IsError || a.Content != want {
		t.Errorf("answer %+v\nwant %q", a, want)
	}
	if n := len(b.events(id)); n != before {
		t.Errorf("the rejection appended: %d events, want %d", n, before)
	}
	// The rejection showed the list: the next write goes through.
	if a := b.writeOK(id, todo("read the code", "completed"), todo("fix it", "completed"), todo("add a test", "in_progress")); *a.Version != 4 {
		t.Errorf("next write %+v", a)
	}
	// And again for the next edit: the same through a fresh rejection.
	b.editOK(id, 4, todo("ship", "pending"))
	b.want(b.do("POST", "/sessions/"+id+"/tools/todo_write", map[string]any{"todos": []any{}}), http.StatusConflict, &a)
	if !strings.HasPrefix(a.Content, "Error: the todo list was changed by local since you last read it (version 4 → 5). It is now:\n[ ] ship\n") {
		t.Errorf("second rejection %q", a.Content)
	}
}

func testModelToldAfterRead(t *testing.T, b *bundle) {
	id := b.openSession()
	b.writeOK(id, todo("a", "pending"))
	b.editOK(id, 2, todo("a", "completed"))
	if a := b.read(id); *a.Version != 3 {
		t.Fatalf("read %+v", a)
	}
	if a := b.writeOK(id, todo("a", "completed"), todo("b", "pending")); *a.Version != 4 {
		t.Errorf("write after todo_read %+v", a)
	}
	// A harness that never writes through the tool first: the model never
	// saw the edit, so its first write is told.
	id2 := b.openSession()
	b.editOK(id2, 0, todo("x", "pending"))
	var a toolAnswer
	b.want(b.do("POST", "/sessions/"+id2+"/tools/todo_write", map[string]any{"todos": []any{}}), http.StatusConflict, &a)
	if a.Content != "Error: the todo list was changed by local since you last read it (version 0 → 2). It is now:\n[ ] x\nWrite the list again with their changes." {
		t.Errorf("first write %q", a.Content)
	}
}

func testEditStanding(t *testing.T, b *bundle) {
	id := b.openSession()
	b.writeOK(id, todo("a", "in_progress"))
	b.appendOK(id, turnEnd())
	// An edit between turns stands, as a write does, until the next turn.
	if td := b.editOK(id, 2, todo("a", "completed"), todo("b", "pending")); !td.Standing {
		t.Errorf("edit between turns: %+v", td)
	}
	var h struct{ Snapshot projection.Snapshot }
	b.want(b.do("GET", "/sessions/"+id+"/history?limit=1", nil), http.StatusOK, &h)
	if !h.Snapshot.Standing || len(h.Snapshot.Todos) != 2 || h.Snapshot.TodosVersion != 4 || h.Snapshot.Todos[1].CreatedAt.IsZero() {
		t.Errorf("snapshot %+v", h.Snapshot)
	}
	b.appendOK(id, turnStart())
	if td := b.todos(id); td.Standing || td.Version != 4 {
		t.Errorf("after turn/start %+v", td)
	}
	// An edit inside the new turn, before the model writes: it stands.
	if td := b.editOK(id, 4, todo("b", "pending")); !td.Standing {
		t.Errorf("edit in a turn %+v", td)
	}
}

func testReminder(t *testing.T, b *bundle) {
	id := b.openSession()
	get := func(q string) projection.Reminder {
		t.Helper()
		var r projection.Reminder
		b.want(b.do("GET", "/sessions/"+id+"/todos/reminder"+q, nil), http.StatusOK, &r)
		return r
	}
	reason := func(r projection.Reminder) string {
		if r.Reason == nil {
			return "null"
		}
		return *r.Reason
	}
	if r := get(""); r.Due || r.Reason != nil {
		t.Errorf("empty session: %+v", r)
	}
	b.writeOK(id, todo("read the code", "in_progress"), todo("fix it", "pending"))
	step := ev("message/assistant", map[string]any{"text": "working"})
	b.appendOK(id, step, step)
	if r := get(""); r.Due {
		t.Errorf("after 2 steps: %+v", r)
	}
	b.appendOK(id, step)
	r := get("")
	want := "<system-reminder>\nYour todo list (version 2):\n[>] read the code\n[ ] fix it\n" +
		"Keep it current with todo_write: mark each item completed as soon as it is done.\n</system-reminder>"
	if !r.Due || reason(r) != "stale" || r.Text != want {
		t.Errorf("after 3 steps: %+v\nwant %q", r, want)
	}
	// A list write resets the count.
	b.writeOK(id, todo("read the code", "completed"), todo("fix it", "in_progress"))
	if r := get(""); r.Due {
		t.Errorf("after a write: %+v", r)
	}
	// Requested outright.
	if r := get("?reason=compaction"); !r.Due || reason(r) != "requested" || !strings.Contains(r.Text, "(version 6):\n[x] read the code\n[>] fix it\n") {
		t.Errorf("compaction: %+v", r)
	}
	// Edited since the model saw it: named in the text, until seen.
	b.editOK(id, 6, todo("read the code", "completed"), todo("fix it", "completed"))
	r = get("")
	want = "<system-reminder>\nYour todo list (version 7), changed by local:\n[x] read the code\n[x] fix it\n" +
		"Keep it current with todo_write: mark each item completed as soon as it is done.\n</system-reminder>"
	if !r.Due || reason(r) != "edited" || r.Text != want {
		t.Errorf("edited: %+v\nwant %q", r, want)
	}
	if r := get(""); !r.Due {
		t.Errorf("reading the reminder marked it seen: %+v", r)
	}
	b.read(id)
	if r := get(""); r.Due {
		t.Errorf("after todo_read: %+v", r)
	}
	// Nothing open: never stale, however many steps.
	b.appendOK(id, step, step, step, step)
	if r := get(""); r.Due || reason(r) != "null" {
		t.Errorf("all completed: %+v", r)
	}
	b.wantError(b.do("GET", "/sessions/"+id+"/todos/reminder?reason=boredom", nil), http.StatusBadRequest, "invalid")
	b.wantError(b.do("GET", "/sessions/ses_nope/todos/reminder", nil), http.StatusNotFound, "not_found")
}

func testTimeline(t *testing.T, b *bundle) {
	id := b.openSession()
	item := func(items []projection.Item, content string) projection.Item {
		for _, it := range items {
			if it.Content == content {
				return it
			}
		}
		t.Fatalf("no %q in %+v", content, items)
		return projection.Item{}
	}
	w1 := b.writeOK(id, todo("a", "pending"), todo("b", "pending")) // 2
	a1 := item(w1.Result.Todos, "a")
	if a1.CreatedAt != a1.UpdatedAt || a1.StartedAt != nil || a1.CompletedAt != nil {
		t.Errorf("new item %+v", a1)
	}
	w2 := b.writeOK(id, todo("a", "in_progress"), todo("b", "pending")) // 3
	a2 := item(w2.Result.Todos, "a")
	if a2.CreatedAt != a1.CreatedAt || a2.StartedAt == nil || *a2.StartedAt != a2.UpdatedAt {
		t.Errorf("started %+v", a2)
	}
	// A person completes it: the timeline moves with edits too.
	e := b.editOK(id, 3, todo("a", "completed"), todo("b renamed", "pending")) // 4
	a3, b3 := item(e.Todos, "a"), item(e.Todos, "b renamed")
	if a3.CreatedAt != a1.CreatedAt || *a3.StartedAt != *a2.StartedAt || a3.CompletedAt == nil || *a3.CompletedAt != a3.UpdatedAt {
		t.Errorf("completed %+v", a3)
	}
	// A rename is a new item.
	if b3.ID != projection.ItemID("b renamed") || b3.CreatedAt != a3.UpdatedAt {
		t.Errorf("renamed %+v", b3)
	}
	b.read(id)
	b.writeOK(id, todo("b renamed", "pending")) // 5: a removed
	w := b.writeOK(id, todo("b renamed", "pending"), todo("a", "pending"))
	a4 := item(w.Result.Todos, "a")
	if a4.CreatedAt == a1.CreatedAt || a4.StartedAt != nil || a4.CompletedAt != nil || a4.CreatedAt != a4.UpdatedAt {
		t.Errorf("re-added %+v: a new run of the item", a4)
	}
	// Every view carries the fields: GET /todos, todo_read, the snapshot.
	if got := item(b.todos(id).Todos, "a"); !reflect.DeepEqual(got, a4) {
		t.Errorf("GET todos %+v, want %+v", got, a4)
	}
	if got := item(b.read(id).Result.Todos, "a"); !reflect.DeepEqual(got, a4) {
		t.Errorf("todo_read %+v", got)
	}
	var h struct{ Snapshot projection.Snapshot }
	b.want(b.do("GET", "/sessions/"+id+"/history", nil), http.StatusOK, &h)
	if got := item(h.Snapshot.Todos, "a"); !reflect.DeepEqual(got, a4) {
		t.Errorf("snapshot %+v", got)
	}
	// On the wire: null until it happens.
	r := b.do("GET", "/sessions/"+id+"/todos", nil)
	if !strings.Contains(string(r.Body), `"startedAt":null,"completedAt":null`) {
		t.Errorf("wire %s", r.Body)
	}
}

func testTodoHistory(t *testing.T, b *bundle) {
	id := b.openSession()
	type page struct {
		Versions []projection.Version `json:"versions"`
		HasMore  bool                 `json:"hasMore"`
	}
	get := func(q string) page {
		t.Helper()
		var p page
		b.want(b.do("GET", "/sessions/"+id+"/todos/history"+q, nil), http.StatusOK, &p)
		return p
	}
	if p := get(""); len(p.Versions) != 0 || p.HasMore || string(b.do("GET", "/sessions/"+id+"/todos/history", nil).Body) != "{\"hasMore\":false,\"versions\":[]}\n" {
		t.Errorf("empty %+v", p)
	}
	b.writeOK(id, todo("a", "pending"), todo("b", "pending"))       // 2
	b.writeOK(id, todo("a", "in_progress"), todo("b", "pending"))   // 3
	b.editOK(id, 3, todo("a", "completed"), todo("c", "pending"))   // 4
	b.appendOK(id, userMsg("thanks"))                               // 5
	b.read(id)                                                      //
	b.writeOK(id, todo("a", "completed"), todo("c", "in_progress")) // 6
	p := get("?limit=2")
	if len(p.Versions) != 2 || !p.HasMore || p.Versions[0].Version != 6 || p.Versions[1].Version != 4 {
		t.Fatalf("first page %+v", p)
	}
	v4 := p.Versions[1]
	raw, _ := json.Marshal(v4.Changes)
	if v4.By != "local" || len(v4.Todos) != 2 || string(raw) !=
		`[{"id":"`+projection.ItemID("a")+`","content":"a","from":"in_progress","to":"completed"},`+
			`{"id":"`+projection.ItemID("c")+`","content":"c","from":null,"to":"pending"},`+
			`{"id":"`+projection.ItemID("b")+`","content":"b","from":"pending","to":null}]` {
		t.Errorf("version 4 %+v changes %s", v4, raw)
	}
	if p.Versions[0].By != "agent" {
		t.Errorf("version 6 by %q", p.Versions[0].By)
	}
	p = get("?limit=2&before=4")
	if len(p.Versions) != 2 || p.HasMore || p.Versions[0].Version != 3 || p.Versions[1].Version != 2 || len(p.Versions[1].Changes) != 2 {
		t.Errorf("second page %+v", p)
	}
	for _, q := range []string{"?limit=0", "?limit=101", "?before=0", "?before=x"} {
		b.wantError(b.do("GET", "/sessions/"+id+"/todos/history"+q, nil), http.StatusBadRequest, "invalid")
	}
	b.wantError(b.do("GET", "/sessions/ses_nope/todos/history", nil), http.StatusNotFound, "not_found")
}
