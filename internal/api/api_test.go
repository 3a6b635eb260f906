package api_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

func TestAPI(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "Health", run: testHealth},
		{name: "CreateAndGetSession", run: testCreateAndGetSession},
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
		{name: "TurnRules", run: testTurnRules},
		{name: "BatchAtomicity", run: testBatchAtomicity},
		{name: "TodoWriteEventValidated", run: testTodoWriteEventValidated},
		{name: "ExpectedSeq", run: testExpectedSeq},
		{name: "IdempotencyEvents", run: testIdempotencyEvents},
		{name: "IdempotencyTodoWrite", run: testIdempotencyTodoWrite},
		{name: "ETag", run: testETag},
		{name: "StandingPlan", run: testStandingPlan},
		{name: "HistorySnapshot", run: testHistorySnapshot},
		{name: "EventsPaging", run: testEventsPaging},
		{name: "Messages", run: testMessages},
		{name: "SessionsList", run: testSessionsList},
		{name: "ConcurrentTodoWrites", run: testConcurrentTodoWrites},
		{name: "BadInput", run: testBadInput},
		{name: "UnknownSession", run: testUnknownSession},
		{name: "NULCharacters", run: testNULCharacters},
		{name: "OnAppend", run: testOnAppend},
	})
}

func testHealth(t *testing.T, b *bundle) {
	b.want(b.do("GET", "/healthz", nil), http.StatusOK, nil)
	b.want(b.do("GET", "/readyz", nil), http.StatusOK, nil)
}

func testCreateAndGetSession(t *testing.T, b *bundle) {
	var s store.Session
	r := b.do("POST", "/sessions", map[string]any{"title": "  Fix the build  "})
	b.want(r, http.StatusCreated, &s)
	if s.Title != "Fix the build" || s.LastSeq != 0 || s.Turn != (projection.Turn{}) {
		t.Fatalf("created %+v", s)
	}
	if got, want := r.Header.Get("Location"), "/sessions/"+s.ID; got != want {
		t.Errorf("Location %q, want %q", got, want)
	}
	if got := b.session(s.ID); !reflect.DeepEqual(got, s) {
		t.Errorf("GET %+v, want %+v", got, s)
	}
	var u store.Session
	b.want(b.do("POST", "/sessions", nil), http.StatusCreated, &u)
	if u.Title != "Untitled session" {
		t.Errorf("default title %q", u.Title)
	}
	b.want(b.do("POST", "/sessions", `{"title":null}`), http.StatusCreated, &u)
	// A title that shows nothing (blank, or only invisible characters) is
	// no title.
	for _, blank := range []string{`""`, `"   "`, `"\t\n"`, `"\u200b\u2060 "`} {
		var v store.Session
		b.want(b.do("POST", "/sessions", `{"title":`+blank+`}`), http.StatusCreated, &v)
		if v.Title != "Untitled session" {
			t.Errorf("title %s stored as %q, want the default", blank, v.Title)
		}
	}
	msg := b.wantError(b.do("POST", "/sessions", map[string]any{"title": strings.Repeat("é", 201)}), http.StatusUnprocessableEntity, "invalid")
	if want := "`title` must be at most 200 characters, got 201"; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	b.want(b.do("POST", "/sessions", map[string]any{"title": strings.Repeat("é", 200)}), http.StatusCreated, nil)

	// The session follows its log: lastSeq, turn and the todo counts.
	b.appendOK(s.ID, turnStart())
	b.writeOK(s.ID, todo("a", "pending"), todo("b", "in_progress"))
	got := b.session(s.ID)
	if got.LastSeq != 2 || got.Turn != (projection.Turn{Number: 1, Open: true}) ||
		got.TodoCounts != (projection.Counts{Pending: 1, InProgress: 1}) || got.UpdatedAt.Before(s.UpdatedAt.Time) {
		t.Errorf("after writes: %+v", got)
	}
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

// toolCase is a todo_write call and the answer it must get.
type toolCase struct {
	name   string
	body   string
	status int
	text   string
}

// checkRejected runs each case, in b.tool's shape, on session id and checks
// that nothing was written by any of them.
func (b *bundle) checkRejected(id string, cases []toolCase) {
	b.t.Helper()
	var inShape []toolCase
	for _, tc := range cases {
		if b.tool == "TodoWrite" && strings.Contains(tc.body, "activeForm") {
			continue // TodoWrite's own key, accepted there (TestDialects)
		}
		tc.body, tc.text = b.inDialect(tc.body), b.textInDialect(tc.text)
		inShape = append(inShape, tc)
	}
	b.checkRejectedAsIs(id, inShape)
}

// checkRejectedAsIs is checkRejected with each case's body sent as it is,
// already in b.tool's shape.
func (b *bundle) checkRejectedAsIs(id string, cases []toolCase) {
	b.t.Helper()
	before, beforeTodos := b.session(id), b.todos(id)
	for _, tc := range cases {
		b.t.Run(tc.name, func(t *testing.T) {
			var a toolAnswer
			r := b.do("POST", b.toolPath(id), tc.body)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			_ = json.Unmarshal(r.Body, &a)
			if !a.IsError || a.Content != tc.text || a.Result != nil || a.Version != nil {
				t.Errorf("answer %s\nwant content %q", r.Body, tc.text)
			}
		})
	}
	if after := b.session(id); after.LastSeq != before.LastSeq {
		b.t.Errorf("rejected calls moved lastSeq %d -> %d", before.LastSeq, after.LastSeq)
	}
	if after := b.todos(id); !reflect.DeepEqual(after, beforeTodos) {
		b.t.Errorf("rejected calls changed the todos: %+v -> %+v", beforeTodos, after)
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

func testTurnRules(t *testing.T, b *bundle) {
	id := b.newSession()
	cases := []struct {
		event  map[string]any
		status int
		msg    string
	}{
		{turnEnd(), 409, "events[0]: turn/end: no turn is open"},
		{ev("message/assistant", map[string]any{"text": "hi"}), 409, "events[0]: message/assistant needs an open turn"},
		{ev("tool/result", map[string]any{"callId": "c", "name": "n", "isError": false, "content": ""}), 409, "events[0]: tool/result needs an open turn"},
		{ev("todo/write", map[string]any{"todos": []any{}}), 409, "events[0]: todo_write requires an owning agent session"},
	}
	for _, c := range cases {
		code := "invalid"
		if c.status == 409 {
			code = "conflict"
		}
		msg := b.wantError(b.do("POST", "/sessions/"+id+"/events", map[string]any{"events": []any{c.event}}), c.status, code)
		if msg != c.msg {
			t.Errorf("message %q, want %q", msg, c.msg)
		}
	}
	// A user message may come outside a turn; it belongs to turn 0.
	evs := b.appendOK(id, userMsg("hello"), turnStart(), userMsg("go"), turnEnd(), turnStart())
	for i, want := range []int{0, 1, 1, 1, 2} {
		if evs[i].Turn != want || evs[i].Seq != int64(i+1) {
			t.Errorf("event %d: seq %d turn %d, want turn %d", i, evs[i].Seq, evs[i].Turn, want)
		}
	}
	msg := b.wantError(b.do("POST", "/sessions/"+id+"/events", map[string]any{"events": []any{turnStart()}}), 409, "conflict")
	if msg != "events[0]: turn/start: turn 2 is still open" {
		t.Errorf("message %q", msg)
	}
	if s := b.session(id); s.LastSeq != 5 || s.Turn != (projection.Turn{Number: 2, Open: true}) {
		t.Errorf("session %+v", s)
	}
}

func testBatchAtomicity(t *testing.T, b *bundle) {
	id := b.newSession()
	b.appendOK(id, userMsg("before"))
	cases := []struct {
		name   string
		bad    any
		status int
		msg    string
	}{
		{"unknown type", ev("message/system", map[string]any{"text": "x"}), 422, `events[2]: unknown event type "message/system"`},
		{"missing type", map[string]any{"data": map[string]any{}}, 422, "events[2]: event `type` is missing"},
		{"data not an object", ev("message/user", "hello"), 422, "events[2]: message/user data must be a JSON object"},
		{"data missing a key", ev("message/user", map[string]any{}), 422, "events[2]: message/user data is missing `text`"},
		{"data with an extra key", ev("message/user", map[string]any{"text": "x", "lang": "en"}), 422, "events[2]: message/user data has an unexpected key `lang`"},
		{"wrong type in data", ev("tool/result", map[string]any{"callId": "c", "name": "n", "isError": "no", "content": ""}), 422, "events[2]: tool/result: `isError` must be a boolean"},
		{"bad reason", ev("turn/end", map[string]any{"reason": "bored"}), 422, "events[2]: turn/end: `reason` must be one of completed, interrupted, error"},
		{"rule broken", turnStart(), 409, "events[2]: turn/start: turn 1 is still open"},
		{"bad todo list", ev("todo/write", map[string]any{"todos": []any{todo("a", "pending"), todo("a", "pending")}}), 422, `events[2]: invalid todos: duplicate content "a"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code := map[int]string{409: "conflict", 422: "invalid"}[c.status]
			batch := []any{turnStart(), ev("todo/write", map[string]any{"todos": []any{todo("x", "pending")}}), c.bad, userMsg("after")}
			msg := b.wantError(b.do("POST", "/sessions/"+id+"/events", map[string]any{"events": batch}), c.status, code)
			if msg != c.msg {
				t.Errorf("message %q, want %q", msg, c.msg)
			}
		})
	}
	if evs := b.events(id); len(evs) != 1 {
		t.Errorf("rejected batches wrote: %+v", evs)
	}
	if s, td := b.session(id), b.todos(id); s.LastSeq != 1 || s.Turn.Number != 0 || td.Version != 0 {
		t.Errorf("after rejected batches: %+v %+v", s, td)
	}
}

func testTodoWriteEventValidated(t *testing.T, b *bundle) {
	id := b.openSession()
	// Through /events, todo/write runs the tool's checks, in the tool's order.
	msg := b.wantError(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"todo/write","data":{"todos":[{"content":"a","status":"x"},{"content":" ","status":"pending"}]}}]}`), 422, "invalid")
	if msg != "events[0]: invalid todo: `content` must be a non-empty string" {
		t.Errorf("message %q", msg)
	}
	msg = b.wantError(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"todo/write","data":{"todos":[{"content":"a","status":"pending","priority":"high"}]}}]}`), 422, "invalid")
	if msg != "events[0]: invalid todo: unexpected key `priority`; a todo has the keys `content`, `status` and any of `activeForm`, `blockedBy`, `owner`, `taskId` and `description`" {
		t.Errorf("message %q", msg)
	}
	evs := b.appendOK(id, ev("todo/write", map[string]any{"todos": []any{todo(" a ", "pending")}}))
	if td := b.todos(id); td.Version != evs[0].Seq || td.Todos[0].Content != "a" {
		t.Errorf("todos %+v", td)
	}
}

func testExpectedSeq(t *testing.T, b *bundle) {
	id := b.newSession()
	post := func(expected int64, events ...any) response {
		return b.do("POST", "/sessions/"+id+"/events", map[string]any{"expectedSeq": expected, "events": events})
	}
	b.want(post(0, userMsg("a"), userMsg("b")), http.StatusCreated, nil)
	msg := b.wantError(post(1, userMsg("c")), http.StatusConflict, "conflict")
	if msg != "expectedSeq 1 does not match the log's last seq 2" {
		t.Errorf("message %q", msg)
	}
	b.wantError(post(3, userMsg("c")), http.StatusConflict, "conflict")
	if s := b.session(id); s.LastSeq != 2 {
		t.Errorf("lastSeq %d after rejected appends, want 2", s.LastSeq)
	}
	var out struct{ Events []projection.Event }
	b.want(post(2, userMsg("c")), http.StatusCreated, &out)
	if out.Events[0].Seq != 3 {
		t.Errorf("seq %d, want 3", out.Events[0].Seq)
	}
	b.wantError(post(-1, userMsg("d")), http.StatusUnprocessableEntity, "invalid")
}

func testIdempotencyEvents(t *testing.T, b *bundle) {
	id := b.newSession()
	body := `{"events":[{"type":"message/user","data":{"text":"once"}},{"type":"turn/start"}]}`
	path := "/sessions/" + id + "/events"
	first := b.do("POST", path, body, "Idempotency-Key", "k-1")
	b.want(first, http.StatusCreated, nil)
	if first.Header.Get("Idempotent-Replayed") != "" {
		t.Error("first answer marked as replayed")
	}
	again := b.do("POST", path, body, "Idempotency-Key", "k-1")
	b.want(again, http.StatusCreated, nil)
	if string(again.Body) != string(first.Body) || again.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry answered %s (replayed %q), want %s", again.Body, again.Header.Get("Idempotent-Replayed"), first.Body)
	}
	if s := b.session(id); s.LastSeq != 2 {
		t.Errorf("retry appended: lastSeq %d", s.LastSeq)
	}
	// The key is bound to the request it first came with.
	msg := b.wantError(b.do("POST", path, `{"events":[{"type":"message/user","data":{"text":"other"}}]}`, "Idempotency-Key", "k-1"), 422, "idempotency_mismatch")
	if msg != "idempotency key was already used with a different request" {
		t.Errorf("message %q", msg)
	}
	// A retry of an expectedSeq append is still a replay, not a conflict.
	cas := `{"expectedSeq":2,"events":[{"type":"message/user","data":{"text":"cas"}}]}`
	b.want(b.do("POST", path, cas, "Idempotency-Key", "k-2"), http.StatusCreated, nil)
	b.want(b.do("POST", path, cas, "Idempotency-Key", "k-2"), http.StatusCreated, nil)
	// A rejected request stores nothing under its key.
	b.wantError(b.do("POST", path, `{"events":[{"type":"turn/start"}]}`, "Idempotency-Key", "k-3"), 409, "conflict")
	b.want(b.do("POST", path, `{"events":[{"type":"turn/end","data":{"reason":"completed"}}]}`, "Idempotency-Key", "k-3"), http.StatusCreated, nil)
	if s := b.session(id); s.LastSeq != 4 {
		t.Errorf("lastSeq %d, want 4", s.LastSeq)
	}
	b.wantError(b.do("POST", path, body, "Idempotency-Key", "has space"), 400, "invalid")
	b.wantError(b.do("POST", path, body, "Idempotency-Key", strings.Repeat("k", 256)), 400, "invalid")
	b.want(b.do("POST", path, `{"events":[{"type":"message/user","data":{"text":"long key"}}]}`, "Idempotency-Key", strings.Repeat("k", 255)), http.StatusCreated, nil)
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

func (a toolAnswer) versionOr(t *testing.T) int64 {
	t.Helper()
	if a.Version == nil {
		t.Fatal("no version")
	}
	return *a.Version
}

type page struct {
	Events   []projection.Event
	HasMore  bool
	Snapshot *projection.Snapshot
}

func seqs(evs []projection.Event) []int64 {
	out := []int64{}
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func testHistorySnapshot(t *testing.T, b *bundle) {
	id := b.openSession()
	w := b.writeOK(id, todo("plan far back", "in_progress"), todo("then this", "pending"))
	msgs := make([]map[string]any, 40)
	for i := range msgs {
		msgs[i] = userMsg(fmt.Sprint("m", i))
	}
	b.appendOK(id, msgs...) // seqs 3..42
	get := func(q string) page {
		var p page
		b.want(b.do("GET", "/sessions/"+id+"/history"+q, nil), http.StatusOK, &p)
		return p
	}
	tail := get("?limit=2")
	if got := seqs(tail.Events); !slices.Equal(got, []int64{41, 42}) || !tail.HasMore {
		t.Errorf("tail %v hasMore %v", got, tail.HasMore)
	}
	want := projection.Snapshot{LastSeq: 42, Turn: projection.Turn{Number: 1, Open: true}, Todos: w.Result.Todos, TodosVersion: 2, Standing: true}
	if tail.Snapshot == nil || !reflect.DeepEqual(*tail.Snapshot, want) {
		t.Errorf("snapshot %+v, want %+v", tail.Snapshot, want)
	}
	older := get("?limit=2&before=41")
	if got := seqs(older.Events); !slices.Equal(got, []int64{39, 40}) || !older.HasMore || older.Snapshot != nil {
		t.Errorf("older page %v hasMore %v snapshot %v", got, older.HasMore, older.Snapshot)
	}
	first := get("?limit=5&before=3")
	if got := seqs(first.Events); !slices.Equal(got, []int64{1, 2}) || first.HasMore || first.Snapshot != nil {
		t.Errorf("first page %v hasMore %v", got, first.HasMore)
	}
	exact := get("?limit=2&before=3")
	if exact.HasMore {
		t.Error("page ending at seq 1 says hasMore")
	}
	beyond := get("?limit=3&before=1000")
	if got := seqs(beyond.Events); !slices.Equal(got, []int64{40, 41, 42}) || beyond.Snapshot != nil {
		t.Errorf("before beyond the end: %v", got)
	}
	if none := get("?before=1"); len(none.Events) != 0 || none.HasMore {
		t.Errorf("before=1: %+v", none)
	}
	// Walking back from the tail visits every event once.
	var all []int64
	p := get("?limit=7")
	for {
		all = append(seqs(p.Events), all...)
		if !p.HasMore {
			break
		}
		p = get(fmt.Sprintf("?limit=7&before=%d", p.Events[0].Seq))
	}
	if len(all) != 42 || all[0] != 1 || all[41] != 42 {
		t.Errorf("walked %v", all)
	}
	full := get("")
	if len(full.Events) != 42 || full.HasMore {
		t.Errorf("default limit page: %d events, hasMore %v", len(full.Events), full.HasMore)
	}
}

func testEventsPaging(t *testing.T, b *bundle) {
	id := b.newSession()
	msgs := make([]map[string]any, 25)
	for i := range msgs {
		msgs[i] = userMsg(fmt.Sprint(i))
	}
	stored := b.appendOK(id, msgs...)
	get := func(q string) page {
		var p page
		b.want(b.do("GET", "/sessions/"+id+"/events"+q, nil), http.StatusOK, &p)
		return p
	}
	var walked []projection.Event
	after := int64(0)
	for {
		p := get(fmt.Sprintf("?after=%d&limit=10", after))
		walked = append(walked, p.Events...)
		if !p.HasMore {
			break
		}
		after = p.Events[len(p.Events)-1].Seq
	}
	if !reflect.DeepEqual(walked, stored) {
		t.Errorf("paged forwards %v, stored %v", seqs(walked), seqs(stored))
	}
	if p := get("?after=15&limit=10"); !slices.Equal(seqs(p.Events), []int64{16, 17, 18, 19, 20, 21, 22, 23, 24, 25}) || p.HasMore {
		t.Errorf("exact last page: %v %v", seqs(p.Events), p.HasMore)
	}
	if p := get("?after=25"); len(p.Events) != 0 || p.HasMore {
		t.Errorf("after the end: %+v", p)
	}
	if p := get("?after=99999"); len(p.Events) != 0 || p.HasMore {
		t.Errorf("far after the end: %+v", p)
	}
}

func testMessages(t *testing.T, b *bundle) {
	id := b.newSession()
	b.appendOK(id,
		userMsg("make a plan"),
		turnStart(),
		ev("message/assistant", map[string]any{"text": "planning", "toolCalls": []any{map[string]any{"id": "c1", "name": "todo_write", "args": map[string]any{"todos": []any{todo("a", "pending")}}}}}),
	)
	b.writeOK(id, todo("a", "pending"))
	b.appendOK(id,
		ev("tool/result", map[string]any{"callId": "c1", "name": "todo_write", "isError": false, "content": "Updated todo list: 1 pending, 0 in progress, 0 completed."}),
		ev("message/assistant", map[string]any{"text": "done", "toolCalls": nil}),
		turnEnd(),
	)
	get := func() response {
		r := b.do("GET", "/sessions/"+id+"/messages", nil)
		b.want(r, http.StatusOK, nil)
		return r
	}
	before := get()
	want := `{"hasMore":false,"messages":[{"role":"user","text":"make a plan"},{"role":"assistant","text":"planning","toolCalls":[{"id":"c1","name":"todo_write","args":{"todos":[{"content":"a","status":"pending"}]}}]},{"role":"tool","text":"Updated todo list: 1 pending, 0 in progress, 0 completed.","toolCallId":"c1","name":"todo_write","isError":false},{"role":"assistant","text":"done"}],"nextAfter":6}` + "\n"
	if string(before.Body) != want {
		t.Errorf("messages\n%s\nwant\n%s", before.Body, want)
	}
	// A todo/write never changes the surface.
	b.appendOK(id, turnStart())
	b.writeOK(id, todo("a", "completed"), todo("b", "in_progress"))
	b.appendOK(id, ev("todo/write", map[string]any{"todos": []any{}}), turnEnd())
	if after := get(); string(after.Body) != string(before.Body) {
		t.Errorf("todo/write changed the messages:\n%s", after.Body)
	}
}

func testSessionsList(t *testing.T, b *bundle) {
	var ids []string
	for range 7 {
		ids = append(ids, b.newSession())
	}
	// Activity moves a session to the front.
	b.appendOK(ids[2], userMsg("bump"))
	list := func(q string) (out struct {
		Sessions   []store.Session
		NextCursor *string
	}) {
		b.want(b.do("GET", "/sessions"+q, nil), http.StatusOK, &out)
		return out
	}
	all := list("")
	if len(all.Sessions) != 7 || all.NextCursor != nil {
		t.Fatalf("list %+v", all)
	}
	// The bumped session comes first, unless another shares its millisecond.
	for _, s := range all.Sessions {
		if s.ID == ids[2] {
			break
		}
		if !s.UpdatedAt.Equal(b.session(ids[2]).UpdatedAt.Time) {
			t.Errorf("session %s listed before the most active %s", s.ID, ids[2])
		}
	}
	for i := 1; i < len(all.Sessions); i++ {
		p, c := all.Sessions[i-1], all.Sessions[i]
		if p.UpdatedAt.Before(c.UpdatedAt.Time) || (p.UpdatedAt.Equal(c.UpdatedAt.Time) && p.ID < c.ID) {
			t.Errorf("not newest activity first: %s %v before %s %v", p.ID, p.UpdatedAt, c.ID, c.UpdatedAt)
		}
	}
	var walked []store.Session
	q := "?limit=3"
	pages := 0
	for {
		p := list(q)
		pages++
		walked = append(walked, p.Sessions...)
		if p.NextCursor == nil {
			break
		}
		q = "?limit=3&cursor=" + *p.NextCursor
	}
	if pages != 3 || !reflect.DeepEqual(walked, all.Sessions) {
		t.Errorf("paged in %d pages: %v", pages, walked)
	}
	if p := list("?limit=7"); p.NextCursor != nil {
		t.Error("an exact last page has a nextCursor")
	}
	for _, bad := range []string{"!!!", base64.RawURLEncoding.EncodeToString([]byte("abc")), base64.RawURLEncoding.EncodeToString([]byte("12:")),
		base64.RawURLEncoding.EncodeToString([]byte("9223372036854775807:x")), base64.RawURLEncoding.EncodeToString([]byte("-9223372036854775808:x")),
		base64.RawURLEncoding.EncodeToString([]byte("1:\x00")), base64.RawURLEncoding.EncodeToString([]byte("1:\xff"))} {
		msg := b.wantError(b.do("GET", "/sessions?cursor="+bad, nil), 400, "invalid")
		if msg != "`cursor` is not a cursor this server issued" {
			t.Errorf("cursor %q: %q", bad, msg)
		}
	}
	for _, q := range []string{"?limit=0", "?limit=201", "?limit=x", "?limit=1.5", "?limit=-1"} {
		msg := b.wantError(b.do("GET", "/sessions"+q, nil), 400, "invalid")
		if msg != "`limit` must be an integer from 1 to 200" {
			t.Errorf("%s: %q", q, msg)
		}
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

func testBadInput(t *testing.T, b *bundle) {
	id := b.openSession()
	ev := "/sessions/" + id + "/events"
	huge := `{"events":[{"type":"message/user","data":{"text":"` + strings.Repeat("x", api.MaxBodyBytes) + `"}}]}`
	cases := []struct {
		method, path, body string
		status             int
		code, msg          string
	}{
		{"POST", ev, `{"events":[`, 400, "invalid", "malformed JSON: unexpected end of input"},
		{"POST", ev, `{"events":[}`, 400, "invalid", "malformed JSON at byte 11: invalid character '}' at start of value"},
		{"POST", ev, ``, 400, "invalid", "request body must be a JSON object"},
		{"POST", ev, `[]`, 400, "invalid", "request body must be a JSON object"},
		{"POST", ev, `"events"`, 400, "invalid", "request body must be a JSON object"},
		{"POST", ev, `{"events":{}}`, 400, "invalid", "`events` must be an array"},
		{"POST", ev, `{"events":[],"expectedSeq":"1"}`, 400, "invalid", "`expectedSeq` must be an integer"},
		{"POST", ev, `{"events":[],"expectedSeq":1.5}`, 400, "invalid", "`expectedSeq` must be an integer"},
		{"POST", ev, `{"events":[{"type":1}]}`, 400, "invalid", "`events.type` must be a string"},
		{"POST", ev, `{"events":[],"extra":1}`, 400, "invalid", `unknown field "extra"`},
		{"POST", ev, `{"events":[{"type":"turn/end","data":{"reason":"completed"},"seq":9}]}`, 400, "invalid", `unknown field "seq"`},
		{"POST", ev, `{"events":[{"type":"message/user","data":{"text":"a"}}]} {}`, 400, "invalid", "request body must hold exactly one JSON object"},
		{"POST", ev, `{"events":[{"type":"message/user","data":{"text":"a"}}]}x`, 400, "invalid", "request body must hold exactly one JSON object"},
		{"POST", ev, `{"events":[]}`, 422, "invalid", "`events` must hold at least one event"},
		{"POST", ev, `{"events":null}`, 422, "invalid", "`events` must hold at least one event"},
		{"POST", ev, `{"events":[` + strings.Repeat(`{"type":"message/user","data":{"text":""}},`, 1000) + `{"type":"message/user","data":{"text":""}}]}`, 413, "too_large", "at most 1000 events per batch, got 1001"},
		{"POST", ev, huge, 413, "too_large", "request body is larger than the limit of 4194304 bytes"},
		{"POST", "/sessions/" + id + "/tools/todo_write", huge, 413, "too_large", "request body is larger than the limit of 4194304 bytes"},
		{"POST", "/sessions", huge, 413, "too_large", "request body is larger than the limit of 4194304 bytes"},
		{"POST", "/sessions", `{"title":5}`, 400, "invalid", "`title` must be a string"},
		{"POST", "/sessions", `{"name":"x"}`, 400, "invalid", `unknown field "name"`},
		{"POST", "/sessions", `{"title":"a"}{}`, 400, "invalid", "request body must hold exactly one JSON object"},
		{"GET", ev + "?after=-1", "", 400, "invalid", "`after` must be an integer from 0 to 9223372036854775807"},
		{"GET", ev + "?after=x", "", 400, "invalid", "`after` must be an integer from 0 to 9223372036854775807"},
		{"GET", ev + "?after=99999999999999999999", "", 400, "invalid", "`after` must be an integer from 0 to 9223372036854775807"},
		{"GET", ev + "?limit=0", "", 400, "invalid", "`limit` must be an integer from 1 to 1000"},
		{"GET", ev + "?limit=1001", "", 400, "invalid", "`limit` must be an integer from 1 to 1000"},
		{"GET", "/sessions/" + id + "/history?before=0", "", 400, "invalid", "`before` must be an integer from 1 to 9223372036854775807"},
		{"GET", "/sessions/" + id + "/history?before=-5", "", 400, "invalid", "`before` must be an integer from 1 to 9223372036854775807"},
		{"GET", "/sessions/" + id + "/history?limit=abc", "", 400, "invalid", "`limit` must be an integer from 1 to 1000"},
		{"DELETE", "/sessions/" + id + "/todos", "", 405, "method_not_allowed", "DELETE is not allowed on /sessions/" + id + "/todos"},
		{"GET", "/nowhere", "", 404, "not_found", "no route for GET /nowhere"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path+" "+trunc(c.body), func(t *testing.T) {
			var body any
			if c.body != "" {
				body = c.body
			}
			msg := b.wantError(b.do(c.method, c.path, body), c.status, c.code)
			if msg != c.msg {
				t.Errorf("message %q, want %q", msg, c.msg)
			}
		})
	}
	if s := b.session(id); s.LastSeq != 1 {
		t.Errorf("bad requests wrote: lastSeq %d", s.LastSeq)
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

func testUnknownSession(t *testing.T, b *bundle) {
	for _, id := range []string{"ses_nope", strings.Repeat("x", 65), "%00", "%FF", "a%20b", "ses_%E2%80%8B"} {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "", ""},
			{"POST", "/events", `{"events":[{"type":"turn/start"}]}`},
			{"GET", "/events", ""},
			{"GET", "/history", ""},
			{"GET", "/history?before=5", ""},
			{"GET", "/messages", ""},
			{"GET", "/todos", ""},
			{"POST", "/tools/todo_write", `{"todos":[]}`},
			{"POST", "/tools/todo_read", `{}`},
		} {
			var body any
			if c.body != "" {
				body = c.body
			}
			if msg := b.wantError(b.do(c.method, "/sessions/"+id+c.path, body), 404, "not_found"); msg != "session not found" {
				t.Errorf("%s %s: %q", c.method, c.path, msg)
			}
		}
	}
}

// testNULCharacters sends what Postgres cannot hold (NUL, bytes that are not
// UTF-8, lone surrogates, numbers beyond numeric). They are refused as
// invalid input, never a 500.
func testNULCharacters(t *testing.T, b *bundle) {
	id := b.openSession()
	b.wantError(b.do("POST", "/sessions", `{"title":"a\u0000b"}`), 422, "invalid")
	for _, body := range []string{
		`{"events":[{"type":"message/user","data":{"text":"a\u0000b"}}]}`,
		`{"events":[{"type":"message/assistant","data":{"text":"ok","toolCalls":[{"id":"c\u0000","name":"n"}]}}]}`,
		`{"events":[{"type":"message/assistant","data":{"text":"ok","toolCalls":[{"id":"c","name":"n","args":{"k":"\u0000"}}]}}]}`,
		`{"events":[{"type":"tool/result","data":{"callId":"c","name":"n","isError":false,"content":"\u0000"}}]}`,
		`{"events":[{"type":"todo/write","data":{"todos":[{"content":"a\u0000","status":"pending"}]}}]}`,
	} {
		b.wantError(b.do("POST", "/sessions/"+id+"/events", body), 422, "invalid")
	}
	// Bytes that are not UTF-8 and lone surrogate escapes are refused in
	// tool call args as in every other string (TestStrictBodies).
	msg := b.wantError(b.do("POST", "/sessions/"+id+"/events", []byte("{\"events\":[{\"type\":\"message/assistant\",\"data\":{\"text\":\"x\",\"toolCalls\":[{\"id\":\"a\",\"name\":\"b\",\"args\":{\"k\":\"\xff\"}}]}}]}")), 400, "invalid")
	if msg != "text must be valid UTF-8, without lone surrogate escapes at /events/0/data/toolCalls/0/args/k" {
		t.Errorf("message %q", msg)
	}
	b.wantError(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"message/assistant","data":{"text":"x","toolCalls":[{"id":"a","name":"b","args":"\ud800"}]}}]}`, "Idempotency-Key", "s"), 400, "invalid")
	// A number Postgres numeric cannot hold, likewise.
	b.wantError(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"message/assistant","data":{"text":"x","toolCalls":[{"id":"a","name":"b","args":{"n":1e200000}}]}}]}`, "Idempotency-Key", "n"), 422, "invalid")
	var a toolAnswer
	b.want(b.do("POST", "/sessions/"+id+"/tools/todo_write", `{"todos":[{"content":"a\u0000b","status":"pending"}]}`), 422, &a)
	if a.Content != "Error: invalid todo: `content` must not contain NUL characters" {
		t.Errorf("answer %q", a.Content)
	}
	// The same strings with the escape itself escaped are ordinary text, as
	// is a surrogate pair.
	b.appendOK(id, ev("message/user", map[string]any{"text": `a\u0000b`}))
	b.want(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"message/assistant","data":{"text":"\\ud800","toolCalls":[{"id":"a","name":"b","args":"\\ud800\ud83d\ude00"}]}}]}`, "Idempotency-Key", "t"), http.StatusCreated, nil)
	b.want(b.do("POST", "/sessions/"+id+"/tools/todo_write", `{"todos":[{"content":"\\udc00","status":"pending"}]}`, "Idempotency-Key", "u"), http.StatusOK, nil)
	if s := b.session(id); s.LastSeq != 4 {
		t.Errorf("lastSeq %d, want 4", s.LastSeq)
	}
}

// testOnAppend checks the hook the live hub hangs on: called once for every
// committed write, with what it stored, again for an idempotent replay (its
// first answer may have been lost before anyone was told of the commit),
// and never for a rejected request.
func testOnAppend(t *testing.T, b *bundle) {
	type call struct {
		id  string
		res store.AppendResult
	}
	var (
		mu    sync.Mutex
		calls []call
	)
	b = setup(t, b.store, api.Options{OnAppend: func(id string, res store.AppendResult) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, call{id, res})
	}})
	take := func() []call {
		mu.Lock()
		defer mu.Unlock()
		out := calls
		calls = nil
		return out
	}
	id := b.newSession()
	if c := take(); len(c) != 1 || c[0].id != id || c[0].res.Session.ID != id || len(c[0].res.Events) != 0 {
		t.Fatalf("on create: %+v", c)
	}
	b.want(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"turn/start"},{"type":"message/user","data":{"text":"hi"}}]}`, "Idempotency-Key", "a"), http.StatusCreated, nil)
	c := take()
	if len(c) != 1 || len(c[0].res.Events) != 2 || c[0].res.Session.LastSeq != 2 || c[0].res.TodosChanged {
		t.Fatalf("on append: %+v", c)
	}
	b.want(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"turn/start"},{"type":"message/user","data":{"text":"hi"}}]}`, "Idempotency-Key", "a"), http.StatusCreated, nil)
	if c := take(); len(c) != 1 || !c[0].res.Replayed || len(c[0].res.Events) != 2 || c[0].res.Session.LastSeq != 2 {
		t.Fatalf("on replay: %+v", c)
	}
	b.wantError(b.do("POST", "/sessions/"+id+"/events", `{"events":[{"type":"turn/start"}]}`), 409, "conflict")
	b.want(b.do("POST", "/sessions/"+id+"/tools/todo_write", `{"todos":[{"content":"a","status":"pending"},{"content":"a","status":"pending"}]}`), 422, nil)
	if c := take(); len(c) != 0 {
		t.Fatalf("called for a rejection: %+v", c)
	}
	w := b.writeOK(id, todo("a", "pending"))
	c = take()
	if len(c) != 1 || !c[0].res.TodosChanged || c[0].res.Todos == nil || c[0].res.Todos.Version != *w.Version || c[0].res.Session.TodoCounts.Pending != 1 {
		t.Fatalf("on todo_write: %+v", c)
	}
	b.appendOK(id, turnEnd(), turnStart())
	c = take()
	if len(c) != 1 || !c[0].res.TodosChanged || c[0].res.Todos == nil || c[0].res.Todos.Standing {
		t.Fatalf("on a turn/start that ends the plan: %+v", c)
	}
	if !reflect.DeepEqual(*c[0].res.Todos, b.todos(id)) {
		t.Errorf("hook saw %+v, GET todos %+v", *c[0].res.Todos, b.todos(id))
	}
}

// TestUnreachableDatabase serves the API over a pool that points at a closed
// port: readiness and every request fail fast with 503 and the JSON error.
func TestUnreachableDatabase(t *testing.T) {
	t.Parallel()
	pc, err := store.PoolConfig("postgres://postgres@127.0.0.1:1/test?sslmode=disable", 4)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), pc)
	if err != nil {
		t.Fatal(err)
	}
	st := store.NewPostgres(pool, projection.Config{})
	t.Cleanup(st.Close)
	b := setup(t, st, api.Options{})
	b.want(b.do("GET", "/healthz", nil), http.StatusOK, nil)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/readyz", ""},
		{"POST", "/sessions", `{}`},
		{"GET", "/sessions", ""},
		{"GET", "/sessions/ses_x", ""},
		{"POST", "/sessions/ses_x/events", `{"events":[{"type":"turn/start"}]}`},
		{"GET", "/sessions/ses_x/events", ""},
		{"GET", "/sessions/ses_x/history", ""},
		{"GET", "/sessions/ses_x/messages", ""},
		{"GET", "/sessions/ses_x/todos", ""},
		{"POST", "/sessions/ses_x/tools/todo_write", `{"todos":[]}`},
		{"POST", "/sessions/ses_x/tools/todo_read", `{}`},
	} {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := b.do(c.method, c.path, body)
		b.wantError(r, http.StatusServiceUnavailable, "unavailable")
		if r.Header.Get("Retry-After") == "" {
			t.Errorf("%s %s: no Retry-After", c.method, c.path)
		}
	}
}

// TestSilentDatabase serves the API over a Postgres whose connections go
// silent (storetest.Proxy.Stall, as in a network partition): a request on a
// pooled connection that never answers gives up at Options.RequestTimeout
// with 503, where without the deadline it would wait as long as the client.
func TestSilentDatabase(t *testing.T) {
	t.Parallel()
	url, proxy := storetest.ProxiedSchemaURL(t)
	pc, err := store.PoolConfig(url, 1) // one connection: every request gets the stalled one
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenPostgres(context.Background(), pc, projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	b := setup(t, st, api.Options{RequestTimeout: 500 * time.Millisecond})
	b.client.Timeout = 5 * time.Second // a hang fails the test rather than stalling it
	var s store.Session
	b.want(b.do("POST", "/sessions", `{}`), http.StatusCreated, &s)

	proxy.Stall()
	b.wantError(b.do("GET", "/sessions/"+s.ID+"/todos", nil), http.StatusServiceUnavailable, "unavailable")
	b.wantError(b.do("POST", "/sessions/"+s.ID+"/events", `{"events":[{"type":"turn/start"}]}`), http.StatusServiceUnavailable, "unavailable")
	proxy.Restore()
	b.want(b.do("POST", "/sessions/"+s.ID+"/events", `{"events":[{"type":"turn/start"}]}`), http.StatusCreated, nil)
}
