package api_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestTodos covers the model's tools and the list's view (todos.go):
// todo_write's checks, texts and versions, todo_read, the view with its
// ETag and ACP form, and the standing plan. TestDialects runs the
// todo_write tests again through the agents' own tools; TestSteer covers a
// person's edits, the reminder and the list's history.
func TestTodos(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "TodosBeforeAnyWrite", run: testTodosBeforeAnyWrite},
		{name: "TodoWriteSuccess", run: testTodoWriteSuccess},
		{name: "TodoWriteErrors", run: testTodoWriteErrors},
		{name: "TodoWriteCheckOrder", run: testTodoWriteCheckOrder},
		{name: "TodoWriteNoOpenTurn", run: testTodoWriteNoOpenTurn},
		{name: "TodoWriteSizeLimits", run: testTodoWriteSizeLimits},
		{name: "BaseVersion", run: testBaseVersion},
		{name: "ParallelInProgressOff", run: testParallelOff},
		{name: "ParallelInProgressOn", cfg: projection.Config{AllowParallel: true}, run: testParallelOn},
		{name: "TodoRead", run: testTodoRead},
		{name: "IdempotencyTodoWrite", run: testIdempotencyTodoWrite},
		{name: "ETag", run: testETag},
		{name: "StandingPlan", run: testStandingPlan},
		{name: "ConcurrentTodoWrites", run: testConcurrentTodoWrites},
		{name: "ACP", run: testACP},
	})
}

func testTodosBeforeAnyWrite(t *testing.T, b *bundle) {
	id := b.newSession()
	r := b.do("GET", "/sessions/"+id+"/todos", nil)
	b.want(r, http.StatusOK, nil)
	var raw map[string]json.RawMessage
	_ = json.Unmarshal(r.Body, &raw)
	for k, want := range map[string]string{"version": "0", "todos": "[]", "updatedAt": "null", "standing": "false", "sessionId": `"` + id + `"`} {
		if got := string(raw[k]); got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
}

func testTodoWriteSuccess(t *testing.T, b *bundle) {
	id := b.openSession()
	a := b.writeOK(id, todo("  read the code ", "completed"), todo("write the test", "in_progress"), todo("ship", "pending"))
	if want := "Updated todo list: 1 pending, 1 in progress, 1 completed."; a.Content != want || a.IsError {
		t.Errorf("answer %+v, want %q", a, want)
	}
	if a.Version == nil || *a.Version != 2 {
		t.Fatalf("version %v, want 2", a.Version)
	}
	if a.Result.Counts != (projection.Counts{Pending: 1, InProgress: 1, Completed: 1}) {
		t.Errorf("counts %+v", a.Result.Counts)
	}
	td := b.todos(id)
	if !reflect.DeepEqual(td.Todos, a.Result.Todos) || td.Version != 2 || !td.Standing {
		t.Errorf("GET todos %+v, tool result %+v", td, a.Result)
	}
	if got := td.Todos[0]; got.Content != "read the code" || got.ID != projection.ItemID("read the code") {
		t.Errorf("first item %+v: content is stored trimmed, id derived from it", got)
	}
	evs := b.events(id)
	if len(evs) != 2 || evs[1].Type != "todo/write" || evs[1].Turn != 1 {
		t.Fatalf("log %+v", evs)
	}
	want := `{"todos":[{"content":"read the code","status":"completed"},{"content":"write the test","status":"in_progress"},{"content":"ship","status":"pending"}]}`
	if b.tool == "TodoWrite" { // Claude Code's activeForm (inDialect's) is kept
		want = strings.ReplaceAll(want, `"}`, `","activeForm":"Working on it"}`)
	}
	if got := string(evs[1].Data); got != want {
		t.Errorf("stored data %s, want %s", got, want)
	}
	// An empty list is a valid write.
	a = b.writeOK(id)
	if a.Content != "Updated todo list: 0 pending, 0 in progress, 0 completed." || len(a.Result.Todos) != 0 {
		t.Errorf("empty write %+v", a)
	}
}

func testTodoWriteErrors(t *testing.T, b *bundle) {
	id := b.openSession()
	b.writeOK(id, todo("a", "pending"))
	const (
		keys    = "Error: invalid todo: each todo must be an object with exactly the keys `content` and `status`"
		content = "Error: invalid todo: `content` must be a non-empty string"
		status  = "Error: invalid todo: `status` must be one of pending, in_progress, completed"
	)
	b.checkRejected(id, []toolCase{
		{"extra key", `{"todos":[{"content":"a","status":"pending","id":"x"}]}`, 422, "Error: invalid todo: unexpected key `id`; a todo has exactly the keys `content` and `status`"},
		{"activeForm", `{"todos":[{"content":"a","status":"pending","activeForm":"doing a"}]}`, 422, "Error: invalid todo: unexpected key `activeForm`; a todo has exactly the keys `content` and `status`"},
		{"item a string", `{"todos":["a"]}`, 422, keys},
		{"item null", `{"todos":[null]}`, 422, keys},
		{"content empty", `{"todos":[{"content":"","status":"pending"}]}`, 422, content},
		{"content blank", `{"todos":[{"content":" \t\n","status":"pending"}]}`, 422, content},
		{"content missing", `{"todos":[{"status":"pending"}]}`, 422, content},
		{"content a number", `{"todos":[{"content":5,"status":"pending"}]}`, 422, content},
		{"status unknown", `{"todos":[{"content":"a","status":"done"}]}`, 422, status},
		{"status missing", `{"todos":[{"content":"a"}]}`, 422, status},
		{"status wrong case", `{"todos":[{"content":"a","status":"Pending"}]}`, 422, status},
		{"duplicate", `{"todos":[{"content":"a","status":"pending"},{"content":"a","status":"completed"}]}`, 422, `Error: invalid todos: duplicate content "a"`},
		{"duplicate after trimming", `{"todos":[{"content":"b","status":"pending"},{"content":" b ","status":"completed"}]}`, 422, `Error: invalid todos: duplicate content "b"`},
		{"two in progress", `{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`, 422, "Error: invalid todos: at most one task may be in_progress, got 2"},
		{"three in progress", `{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"},{"content":"c","status":"in_progress"}]}`, 422, "Error: invalid todos: at most one task may be in_progress, got 3"},
		{"todos missing", `{}`, 422, "Error: invalid arguments: `todos` must be an array"},
		{"todos null", `{"todos":null}`, 422, "Error: invalid arguments: `todos` must be an array"},
		{"todos an object", `{"todos":{"content":"a"}}`, 422, "Error: invalid arguments: `todos` must be an array"},
		{"unknown argument", `{"todos":[],"priority":1}`, 422, "Error: invalid arguments: the input has an unexpected key `priority`"},
		{"malformed JSON", `{"todos":[`, 422, "Error: invalid arguments: the input must be a JSON object"},
		{"trailing data", `{"todos":[]} {}`, 422, "Error: invalid arguments: the input must be a JSON object"},
		{"not an object", `[]`, 422, "Error: invalid arguments: the input must be a JSON object"},
		{"negative baseVersion", `{"todos":[],"baseVersion":-1}`, 422, "Error: invalid arguments: `baseVersion` must be a non-negative integer"},
		{"string baseVersion", `{"todos":[],"baseVersion":"2"}`, 422, "Error: invalid arguments: `baseVersion` must be a non-negative integer"},
	})
}

func testTodoWriteCheckOrder(t *testing.T, b *bundle) {
	id := b.openSession()
	b.writeOK(id, todo("a", "pending")) // version 2
	many := func(n int, extra ...string) string {
		items := extra
		for i := range n {
			items = append(items, fmt.Sprintf(`{"content":"t%d","status":"pending"}`, i))
		}
		return `{"todos":[` + strings.Join(items, ",") + `]}`
	}
	long := strings.Repeat("x", 1001)
	b.checkRejected(id, []toolCase{
		// Each check runs over the whole list before the next begins, so a
		// later item failing an earlier check wins over an earlier item
		// failing a later one.
		{"key beats content", `{"todos":[{"content":"","status":"pending"},{"content":"b","status":"pending","x":1}]}`, 422, "Error: invalid todo: unexpected key `x`; a todo has exactly the keys `content` and `status`"},
		{"content beats status", `{"todos":[{"content":"a","status":"nope"},{"content":"","status":"pending"}]}`, 422, "Error: invalid todo: `content` must be a non-empty string"},
		{"status beats duplicate", `{"todos":[{"content":"a","status":"pending"},{"content":"a","status":"pending"},{"content":"c","status":"nope"}]}`, 422, "Error: invalid todo: `status` must be one of pending, in_progress, completed"},
		{"duplicate beats in progress", `{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"},{"content":"a","status":"pending"}]}`, 422, `Error: invalid todos: duplicate content "a"`},
		{"in progress beats size", many(201, `{"content":"p","status":"in_progress"}`, `{"content":"q","status":"in_progress"}`), 422, "Error: invalid todos: at most one task may be in_progress, got 2"},
		{"duplicate beats length", `{"todos":[{"content":"` + long + `","status":"pending"},{"content":"a","status":"pending"},{"content":"a","status":"pending"}]}`, 422, `Error: invalid todos: duplicate content "a"`},
		{"size beats stale", `{"baseVersion":1,"todos":[{"content":"` + long + `","status":"pending"}]}`, 422, "Error: invalid todo: `content` must be at most 1000 characters, got 1001"},
		{"status beats stale", `{"baseVersion":1,"todos":[{"content":"a","status":"nope"}]}`, 422, "Error: invalid todo: `status` must be one of pending, in_progress, completed"},
	})
}

func testTodoWriteNoOpenTurn(t *testing.T, b *bundle) {
	const owning = "Error: todo_write requires an owning agent session"
	fresh := b.newSession()
	closed := b.openSession()
	b.appendOK(closed, turnEnd())
	for _, id := range []string{fresh, closed} {
		b.checkRejected(id, []toolCase{
			{"valid list", `{"todos":[{"content":"a","status":"pending"}]}`, 409, owning},
			{"empty list", `{"todos":[]}`, 409, owning},
			// Check 6 comes after 1–5 and before 7.
			{"duplicate beats turn", `{"todos":[{"content":"a","status":"pending"},{"content":"a","status":"pending"}]}`, 422, `Error: invalid todos: duplicate content "a"`},
			{"turn beats length", `{"todos":[{"content":"` + strings.Repeat("y", 1001) + `","status":"pending"}]}`, 409, owning},
		})
	}
}

func testTodoWriteSizeLimits(t *testing.T, b *bundle) {
	id := b.openSession()
	items := make([]map[string]any, 201)
	for i := range items {
		items[i] = todo(fmt.Sprintf("task %d", i), "pending")
	}
	body, _ := json.Marshal(map[string]any{"todos": items})
	b.checkRejected(id, []toolCase{
		{"201 items", string(body), 422, "Error: invalid todos: at most 200 items allowed, got 201"},
		{"1001 characters", `{"todos":[{"content":"` + strings.Repeat("é", 1001) + `","status":"pending"}]}`, 422, "Error: invalid todo: `content` must be at most 1000 characters, got 1001"},
	})
	// The limits themselves are allowed; characters, not bytes, count.
	a := b.writeOK(id, items[:200]...)
	if len(a.Result.Todos) != 200 {
		t.Errorf("wrote %d items, want 200", len(a.Result.Todos))
	}
	b.writeOK(id, todo(strings.Repeat("é", 1000), "pending"))
}

func testBaseVersion(t *testing.T, b *bundle) {
	id := b.openSession()
	write := func(base int64) response {
		return b.do("POST", "/sessions/"+id+"/tools/todo_write", map[string]any{"baseVersion": base, "todos": []any{todo("a", "pending")}})
	}
	b.want(write(0), http.StatusOK, nil) // version 2
	var a toolAnswer
	b.want(write(2), http.StatusOK, &a)
	if *a.Version != 3 {
		t.Fatalf("version %d, want 3", *a.Version)
	}
	b.checkRejected(id, []toolCase{
		{"stale", `{"baseVersion":2,"todos":[{"content":"b","status":"pending"}]}`, 409, "Error: stale todo list: baseVersion 2 is older than the current version 3; read the list and write it again"},
		{"zero is stale too", `{"baseVersion":0,"todos":[]}`, 409, "Error: stale todo list: baseVersion 0 is older than the current version 3; read the list and write it again"},
		{"from the future", `{"baseVersion":9,"todos":[]}`, 422, "Error: invalid arguments: baseVersion 9 is newer than the current version 3"},
	})
	b.want(b.do("POST", "/sessions/"+id+"/tools/todo_write", `{"baseVersion":null,"todos":[]}`), http.StatusOK, nil)
}

func testParallelOff(t *testing.T, b *bundle) {
	id := b.openSession()
	b.checkRejected(id, []toolCase{{"two", `{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`, 422, "Error: invalid todos: at most one task may be in_progress, got 2"}})
}

func testParallelOn(t *testing.T, b *bundle) {
	id := b.openSession()
	a := b.writeOK(id, todo("a", "in_progress"), todo("b", "in_progress"), todo("c", "pending"))
	if a.Content != "Updated todo list: 1 pending, 2 in progress, 0 completed." {
		t.Errorf("answer %q", a.Content)
	}
	// The other checks still hold.
	b.checkRejected(id, []toolCase{{"duplicate", `{"todos":[{"content":"a","status":"in_progress"},{"content":"a","status":"in_progress"}]}`, 422, `Error: invalid todos: duplicate content "a"`}})
}

func testTodoRead(t *testing.T, b *bundle) {
	id := b.openSession()
	read := func(body any) toolAnswer {
		var a toolAnswer
		b.want(b.do("POST", "/sessions/"+id+"/tools/todo_read", body), http.StatusOK, &a)
		return a
	}
	if a := read(map[string]any{}); a.Content != "Todo list: 0 pending, 0 in progress, 0 completed." || *a.Version != 0 || len(a.Result.Todos) != 0 {
		t.Errorf("empty read %+v", a)
	}
	b.writeOK(id, todo("read the code", "completed"), todo("fix the bug", "in_progress"), todo("run <the> suite & ship", "pending"))
	want := "Todo list: 1 pending, 1 in progress, 1 completed.\n[x] read the code\n[>] fix the bug\n[ ] run <the> suite & ship"
	for _, body := range []any{map[string]any{}, nil} {
		a := read(body)
		if a.Content != want || *a.Version != 2 || a.IsError {
			t.Errorf("read %q (version %d), want %q", a.Content, *a.Version, want)
		}
	}
	// todo_read answers the current list even after a new turn ends the plan.
	b.appendOK(id, turnEnd(), turnStart())
	if a := read(map[string]any{}); a.Content != want {
		t.Errorf("after a new turn: %q", a.Content)
	}
	r := b.do("POST", "/sessions/"+id+"/tools/todo_read", `{"all":true}`)
	var a toolAnswer
	b.want(r, http.StatusUnprocessableEntity, &a)
	if a.Content != "Error: invalid arguments: the input has an unexpected key `all`" || !a.IsError {
		t.Errorf("rejected read %+v", a)
	}
}

func testIdempotencyTodoWrite(t *testing.T, b *bundle) {
	id := b.openSession()
	path := "/sessions/" + id + "/tools/todo_write"
	body := `{"todos":[{"content":"a","status":"in_progress"}]}`
	first := b.do("POST", path, body, "Idempotency-Key", "w-1")
	b.want(first, http.StatusOK, nil)
	b.writeOK(id, todo("a", "completed")) // the list moves on meanwhile
	again := b.do("POST", path, body, "Idempotency-Key", "w-1")
	b.want(again, http.StatusOK, nil)
	if string(again.Body) != string(first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry answered %s, want %s", again.Body, first.Body)
	}
	if td := b.todos(id); td.Version != 3 || td.Todos[0].Status != "completed" {
		t.Errorf("retry changed the list: %+v", td)
	}
	var e apiError
	b.want(b.do("POST", path, `{"todos":[]}`, "Idempotency-Key", "w-1"), 422, &e)
	if e.Error.Code != "idempotency_mismatch" {
		t.Errorf("error %+v", e)
	}
	if evs := b.events(id); len(evs) != 3 {
		t.Errorf("%d events, want 3", len(evs))
	}
}

func testETag(t *testing.T, b *bundle) {
	id := b.openSession()
	path := "/sessions/" + id + "/todos"
	get := func(inm string) response {
		if inm == "" {
			return b.do("GET", path, nil)
		}
		return b.do("GET", path, nil, "If-None-Match", inm)
	}
	r0 := get("")
	b.want(r0, http.StatusOK, nil)
	e0 := r0.Header.Get("ETag")
	for _, inm := range []string{e0, "W/" + e0, `"other", ` + e0, "*"} {
		if r := get(inm); r.Status != http.StatusNotModified || len(r.Body) != 0 || r.Header.Get("ETag") != e0 {
			t.Errorf("If-None-Match %s: %d %q", inm, r.Status, r.Body)
		}
	}
	b.want(get(`"v99-s1"`), http.StatusOK, nil)

	b.writeOK(id, todo("a", "pending"))
	r1 := get(e0)
	b.want(r1, http.StatusOK, nil)
	e1 := r1.Header.Get("ETag")
	if e1 == e0 {
		t.Fatalf("ETag %s did not change after a write", e1)
	}
	// Events that leave the view alone leave the ETag alone.
	b.appendOK(id, userMsg("x"), turnEnd())
	if r := get(e1); r.Status != http.StatusNotModified {
		t.Errorf("after a message and turn/end: %d", r.Status)
	}
	// A turn/start that ends the standing plan changes the view.
	b.appendOK(id, turnStart())
	r2 := get(e1)
	b.want(r2, http.StatusOK, nil)
	e2 := r2.Header.Get("ETag")
	if e2 == e1 || e2 == e0 {
		t.Errorf("ETag %s after turn/start, before %s", e2, e1)
	}
	// A turn/start with no plan standing changes nothing.
	b.appendOK(id, turnEnd(), turnStart())
	if r := get(e2); r.Status != http.StatusNotModified {
		t.Errorf("after a turn/start with no plan: %d", r.Status)
	}
}

func testStandingPlan(t *testing.T, b *bundle) {
	id := b.openSession()
	snapshot := func() projection.Snapshot {
		var h struct{ Snapshot *projection.Snapshot }
		b.want(b.do("GET", "/sessions/"+id+"/history", nil), http.StatusOK, &h)
		return *h.Snapshot
	}
	if td, sn := b.todos(id), snapshot(); td.Standing || sn.Standing || len(sn.Todos) != 0 {
		t.Errorf("before a write: %+v %+v", td, sn)
	}
	w := b.writeOK(id, todo("a", "in_progress"))
	plan := w.Result.Todos
	if td, sn := b.todos(id), snapshot(); !td.Standing || !sn.Standing || !reflect.DeepEqual(sn.Todos, plan) {
		t.Errorf("after a write: %+v %+v", td, sn)
	}
	// Ending the turn leaves the plan standing.
	b.appendOK(id, turnEnd())
	if td, sn := b.todos(id), snapshot(); !td.Standing || !reflect.DeepEqual(sn.Todos, plan) || sn.Turn.Open {
		t.Errorf("after turn/end: %+v %+v", td, sn)
	}
	// A new turn that has not written a list shows no plan strip, though the
	// current list is still the last one written.
	before := b.todos(id)
	started := b.appendOK(id, turnStart(), userMsg("next"))[0]
	td, sn := b.todos(id), snapshot()
	if td.Standing || sn.Standing || len(sn.Todos) != 0 || sn.TodosVersion != w.versionOr(t) {
		t.Errorf("after turn/start: %+v %+v", td, sn)
	}
	if !reflect.DeepEqual(td.Todos, plan) || td.Version != before.Version || *td.UpdatedAt != started.At {
		t.Errorf("the current list stays, updated when the turn started (%v): %+v, before %+v", started.At, td, before)
	}
	// Writing in the new turn makes a plan stand again.
	b.writeOK(id, todo("a", "completed"))
	if td, sn := b.todos(id), snapshot(); !td.Standing || !sn.Standing || len(sn.Todos) != 1 || sn.Turn != (projection.Turn{Number: 2, Open: true}) {
		t.Errorf("after a write in turn 2: %+v %+v", td, sn)
	}
}

func testConcurrentTodoWrites(t *testing.T, b *bundle) {
	id := b.openSession()
	const n = 50
	answers := make([]toolAnswer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body := fmt.Sprintf(`{"todos":[{"content":"writer %d","status":"in_progress"},{"content":"shared","status":"pending"}]}`, i)
			r := b.do("POST", "/sessions/"+id+"/tools/todo_write", body)
			if r.Status != http.StatusOK || json.Unmarshal(r.Body, &answers[i]) != nil {
				t.Errorf("writer %d: %d %s", i, r.Status, r.Body)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	versions := map[int64]int{}
	last := 0
	for i, a := range answers {
		v := a.versionOr(t)
		if _, dup := versions[v]; dup {
			t.Errorf("version %d given twice", v)
		}
		versions[v] = i
		if v > answers[last].versionOr(t) {
			last = i
		}
	}
	evs := b.events(id)
	if len(evs) != n+1 {
		t.Fatalf("%d events, want %d", len(evs), n+1)
	}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("seq %d at position %d: not gapless", e.Seq, i)
		}
		if _, ok := versions[e.Seq]; i > 0 && !ok {
			t.Errorf("event %d was not any writer's version", e.Seq)
		}
	}
	td := b.todos(id)
	if td.Version != n+1 || !reflect.DeepEqual(td.Todos, answers[last].Result.Todos) {
		t.Errorf("final list %+v (version %d), want writer %d's %+v", td.Todos, td.Version, last, answers[last].Result.Todos)
	}
}

func testACP(t *testing.T, b *bundle) {
	id := b.openSession()
	r := b.do("GET", "/sessions/"+id+"/todos?format=acp", nil)
	b.want(r, http.StatusOK, nil)
	if got, want := string(r.Body), `{"sessionUpdate":"plan","entries":[]}`+"\n"; got != want {
		t.Errorf("empty plan %s, want %s", got, want)
	}
	b.writeOK(id, todo("read <the> code", "completed"), todo("fix it", "in_progress"), todo("ship", "pending"))
	r = b.do("GET", "/sessions/"+id+"/todos?format=acp", nil)
	b.want(r, http.StatusOK, nil)
	want := `{"sessionUpdate":"plan","entries":[{"content":"read <the> code","priority":"medium","status":"completed"},{"content":"fix it","priority":"medium","status":"in_progress"},{"content":"ship","priority":"medium","status":"pending"}]}` + "\n"
	if string(r.Body) != want {
		t.Errorf("plan %s\nwant %s", r.Body, want)
	}
	etag := r.Header.Get("ETag")
	if plain := b.do("GET", "/sessions/"+id+"/todos", nil).Header.Get("ETag"); etag == "" || etag == plain {
		t.Errorf("ACP ETag %q must differ from the view's %q", etag, plain)
	}
	b.want(b.do("GET", "/sessions/"+id+"/todos?format=acp", nil, "If-None-Match", etag), http.StatusNotModified, nil)
	b.wantError(b.do("GET", "/sessions/"+id+"/todos?format=xml", nil), http.StatusBadRequest, "invalid")
}

// TestDialects runs every todo_write test of checks, texts, statuses and
// versions again through Claude Code's TodoWrite and codex's update_plan,
// with each call's arguments put in the agent's shape: the answers must be
// todo_write's, in the agent's names for its keys.
func TestDialects(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"TodoWrite", "update_plan"} {
		t.Run(tool, func(t *testing.T) {
			t.Parallel()
			in := func(run func(*testing.T, *bundle)) func(*testing.T, *bundle) {
				return func(t *testing.T, b *bundle) { b.tool = tool; run(t, b) }
			}
			runSuite(t, []suite{
				{name: "Success", run: in(testTodoWriteSuccess)},
				{name: "Errors", run: in(testTodoWriteErrors)},
				{name: "CheckOrder", run: in(testTodoWriteCheckOrder)},
				{name: "NoOpenTurn", run: in(testTodoWriteNoOpenTurn)},
				{name: "SizeLimits", run: in(testTodoWriteSizeLimits)},
				{name: "BaseVersion", run: in(testBaseVersion)},
				{name: "ParallelInProgressOff", run: in(testParallelOff)},
				{name: "ParallelInProgressOn", cfg: projection.Config{AllowParallel: true}, run: in(testParallelOn)},
				{name: "OwnKeys", run: in(testDialectOwnKeys)},
			})
		})
	}
}

// testDialectOwnKeys checks what only the agents' shapes have: the keys
// accepted and kept (activeForm) or dropped, codex's inProgress, and the other agent's keys
// rejected by name.
func testDialectOwnKeys(t *testing.T, b *bundle) {
	id := b.openSession()
	var body, other string
	switch b.tool {
	case "TodoWrite":
		body = `{"todos":[{"content":"run the tests","status":"in_progress","activeForm":"Running the tests"},{"content":"ship","status":"pending","activeForm":"Shipping"}]}`
		other = `{"plan":[{"step":"a","status":"pending"}]}`
	case "update_plan":
		body = `{"explanation":"tests first","plan":[{"step":"run the tests","status":"inProgress"},{"step":"ship","status":"pending"}]}`
		other = `{"todos":[{"content":"a","status":"pending"}]}`
	}
	var a toolAnswer
	b.want(b.do("POST", b.toolPath(id), body), http.StatusOK, &a)
	if a.Content != "Updated todo list: 1 pending, 1 in progress, 0 completed." || *a.Version != 2 {
		t.Errorf("answer %+v", a)
	}
	evs := b.events(id)
	want := `{"todos":[{"content":"run the tests","status":"in_progress"},{"content":"ship","status":"pending"}]}`
	if b.tool == "TodoWrite" {
		want = `{"todos":[{"content":"run the tests","status":"in_progress","activeForm":"Running the tests"},{"content":"ship","status":"pending","activeForm":"Shipping"}]}`
	}
	if got := string(evs[len(evs)-1].Data); got != want {
		t.Errorf("stored %s, want %s: the log keeps content, status and activeForm alone", got, want)
	}
	if b.tool == "TodoWrite" {
		if td := b.todos(id); td.Todos[0].ActiveForm != "Running the tests" || td.Todos[1].ActiveForm != "Shipping" {
			t.Errorf("todos %+v: activeForm not kept on the items", td.Todos)
		}
	}
	// Sent as is (not through inDialect): the other agent's shape is refused.
	key := map[string]string{"TodoWrite": "plan", "update_plan": "todos"}[b.tool]
	b.want(b.do("POST", b.toolPath(id), other), http.StatusUnprocessableEntity, &a)
	if want := "Error: invalid arguments: the input has an unexpected key `" + key + "`"; !a.IsError || a.Content != want {
		t.Errorf("other shape answered %+v, want %q", a, want)
	}
	if got := b.session(id).LastSeq; got != 2 {
		t.Errorf("a rejected call moved lastSeq to %d", got)
	}
}

// textInDialect is todo_write's answer text in b.tool's names.
func (b *bundle) textInDialect(text string) string {
	const keys = "a todo has exactly the keys `content` and `status`"
	switch b.tool {
	case "TodoWrite":
		if strings.Contains(text, "unexpected key") {
			text = strings.ReplaceAll(text, keys, "a todo has exactly the keys `content`, `status` and `activeForm`")
		}
	case "update_plan":
		text = strings.ReplaceAll(text, "`todos`", "`plan`")
		text = strings.ReplaceAll(text, "`content`", "`step`")
	}
	return text
}

// TestDialectStrictBodies holds the agents' shapes to todo_write's decoding
// rule inside their items too: a key given twice in an item, or text that
// is not valid UTF-8 (invalid bytes, a lone surrogate escape) anywhere in
// the body, dropped keys included, is rejected with todo_write's text and
// writes nothing. The translation decodes and re-encodes every item, which
// would keep one of two keys and turn bad text into U+FFFD, so the bodies
// are sent as they are, not through inDialect (whose encoding/json would do
// the same).
func TestDialectStrictBodies(t *testing.T) {
	t.Parallel()
	const (
		badText = "Error: invalid arguments: the input must be valid UTF-8, without lone surrogate escapes at "
		twice   = "Error: invalid arguments: the input has the key "
	)
	cases := map[string][]toolCase{
		"TodoWrite": {
			{"content twice", `{"todos":[{"content":"a","content":"b","status":"pending","activeForm":"A"}]}`, 422, twice + "`content` twice at /todos/0"},
			{"status twice", `{"todos":[{"content":"a","status":"completed","status":"pending","activeForm":"A"}]}`, 422, twice + "`status` twice at /todos/0"},
			{"activeForm twice", `{"todos":[{"content":"a","status":"pending","activeForm":"A","activeForm":"B"}]}`, 422, twice + "`activeForm` twice at /todos/0"},
			{"key twice in the second item", `{"todos":[{"content":"a","status":"pending","activeForm":"A"},{"content":"b","status":"pending","status":"pending","activeForm":"B"}]}`, 422, twice + "`status` twice at /todos/1"},
			{"lone surrogate in content", `{"todos":[{"content":"\ud800","status":"pending","activeForm":"A"}]}`, 422, badText + "/todos/0/content"},
			{"invalid bytes in content", "{\"todos\":[{\"content\":\"a\xffb\",\"status\":\"pending\",\"activeForm\":\"A\"}]}", 422, badText + "/todos/0/content"},
			{"lone surrogate in activeForm", `{"todos":[{"content":"a","status":"pending","activeForm":"\udc00"}]}`, 422, badText + "/todos/0/activeForm"},
			{"invalid bytes in an item key", "{\"todos\":[{\"content\":\"a\",\"status\":\"pending\",\"active\xffForm\":\"A\"}]}", 422, badText + "/todos/0"},
		},
		"update_plan": {
			{"step twice", `{"plan":[{"step":"a","step":"b","status":"pending"}]}`, 422, twice + "`step` twice at /plan/0"},
			{"status twice", `{"plan":[{"step":"a","status":"inProgress","status":"pending"}]}`, 422, twice + "`status` twice at /plan/0"},
			{"key twice in the second item", `{"plan":[{"step":"a","status":"pending"},{"step":"b","step":"c","status":"pending"}]}`, 422, twice + "`step` twice at /plan/1"},
			{"explanation twice", `{"explanation":"x","explanation":"y","plan":[]}`, 422, twice + "`explanation` twice"},
			{"lone surrogate in step", `{"plan":[{"step":"\udfff","status":"pending"}]}`, 422, badText + "/plan/0/step"},
			{"invalid bytes in step", "{\"plan\":[{\"step\":\"a\xffb\",\"status\":\"pending\"}]}", 422, badText + "/plan/0/step"},
			{"lone surrogate in explanation", `{"explanation":"\ud800","plan":[]}`, 422, badText + "/explanation"},
			{"invalid bytes in status", "{\"plan\":[{\"step\":\"a\",\"status\":\"in\xffProgress\"}]}", 422, badText + "/plan/0/status"},
		},
	}
	valid := map[string]string{
		"TodoWrite":   `{"todos":[{"content":"ship \ud83d\ude00","status":"in_progress","activeForm":"Shipping"}]}`,
		"update_plan": `{"explanation":"\ud83d\ude00","plan":[{"step":"ship \ud83d\ude00","status":"inProgress"}]}`,
	}
	for _, f := range storetest.Factories {
		for _, tool := range []string{"TodoWrite", "update_plan"} {
			t.Run(f.Name+"/"+tool, func(t *testing.T) {
				t.Parallel()
				b := setup(t, f.Open(t, projection.Config{}), api.Options{})
				b.tool = tool
				id := b.openSession()
				b.writeOK(id, todo("keep me", "pending"))
				b.checkRejectedAsIs(id, cases[tool])
				// A surrogate pair is text: the shape still takes it.
				var a toolAnswer
				b.want(b.do("POST", b.toolPath(id), []byte(valid[tool])), http.StatusOK, &a)
				if got := b.todos(id).Todos; len(got) != 1 || got[0].Content != "ship \U0001F600" {
					t.Errorf("valid body stored %+v", got)
				}
			})
		}
	}
}

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
