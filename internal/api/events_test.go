package api_test

import (
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// TestEvents covers the log's routes (events.go): appends with their turn
// rules, expectedSeq and Idempotency-Key, and the reads forwards, backwards
// and of the messages, each page bounded.
func TestEvents(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "TurnRules", run: testTurnRules},
		{name: "BatchAtomicity", run: testBatchAtomicity},
		{name: "TodoWriteEventValidated", run: testTodoWriteEventValidated},
		{name: "ExpectedSeq", run: testExpectedSeq},
		{name: "IdempotencyEvents", run: testIdempotencyEvents},
		{name: "HistorySnapshot", run: testHistorySnapshot},
		{name: "EventsPaging", run: testEventsPaging},
		{name: "Messages", run: testMessages},
		{name: "PagesBoundedByBytes", run: testPagesBoundedByBytes},
		{name: "MessagesPaging", run: testMessagesPaging},
		{name: "MessagesBadParams", run: testMessagesBadParams},
	})
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
		{"empty message id", ev("message/assistant", map[string]any{"text": "x", "messageId": " "}), 422, "events[2]: message/assistant: `messageId` must be a non-empty string"},
		{"long message id", ev("message/assistant", map[string]any{"text": "x", "messageId": strings.Repeat("m", 257)}), 422, "events[2]: message/assistant: `messageId` is longer than the limit of 256 bytes"},
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

type messagesPage struct {
	Messages  []projection.Message
	HasMore   bool
	NextAfter *int64
}

// dataBefore is the data of all the events but the last: under the budget
// in every page, which stops once it passes the budget.
func dataBefore(events []projection.Event) int {
	n := 0
	for _, e := range events[:max(len(events)-1, 0)] {
		n += len(e.Data)
	}
	return n
}

// testPagesBoundedByBytes reads a session of several MiB through /events,
// /history and /messages: every page stays within the byte budget plus one
// event, and the pages together are the whole log and the whole surface.
func testPagesBoundedByBytes(t *testing.T, b *bundle) {
	id := b.openSession()
	const size = 120 << 10
	for r := 0; r < 8; r++ {
		call := fmt.Sprintf("c%d", r)
		b.appendOK(id,
			userMsg(strings.Repeat("u", size)),
			ev("message/assistant", map[string]any{"text": strings.Repeat("a", size),
				"toolCalls": []any{map[string]any{"id": call, "name": "run", "args": map[string]any{}}}}),
			ev("tool/result", map[string]any{"callId": call, "name": "run", "isError": false, "content": strings.Repeat("r", size)}),
		)
	}
	all := b.events(id)

	var forwards []projection.Event
	pages := 0
	for after := int64(0); ; pages++ {
		var p page
		b.want(b.do("GET", fmt.Sprintf("/sessions/%s/events?after=%d&limit=1000", id, after), nil), http.StatusOK, &p)
		if len(p.Events) == 0 || dataBefore(p.Events) >= store.MaxPageBytes {
			t.Fatalf("events after %d: %d events, %d bytes before the last", after, len(p.Events), dataBefore(p.Events))
		}
		forwards = append(forwards, p.Events...)
		if !p.HasMore {
			break
		}
		after = p.Events[len(p.Events)-1].Seq
	}
	if pages < 2 || !reflect.DeepEqual(forwards, all) {
		t.Errorf("%d pages forwards: %v, the log %v", pages+1, seqs(forwards), seqs(all))
	}

	var backwards []projection.Event
	for q := "?limit=1000"; ; {
		var p page
		b.want(b.do("GET", "/sessions/"+id+"/history"+q, nil), http.StatusOK, &p)
		n := 0
		for _, e := range p.Events[1:] {
			n += len(e.Data)
		}
		if n >= store.MaxPageBytes {
			t.Fatalf("history%s: %d events, %d bytes after the oldest", q, len(p.Events), n)
		}
		backwards = append(append([]projection.Event{}, p.Events...), backwards...)
		if !p.HasMore {
			break
		}
		q = fmt.Sprintf("?limit=1000&before=%d", p.Events[0].Seq)
	}
	if !reflect.DeepEqual(backwards, all) {
		t.Errorf("pages backwards %v, the log %v", seqs(backwards), seqs(all))
	}

	var surface []projection.Event
	for _, e := range all {
		if projection.Surface(e.Type) {
			surface = append(surface, e)
		}
	}
	var msgs []projection.Message
	at := 0
	for after := int64(0); ; {
		var p messagesPage
		q := fmt.Sprintf("?after=%d", after)
		if after == 0 {
			q = "" // the default first page
		}
		b.want(b.do("GET", "/sessions/"+id+"/messages"+q, nil), http.StatusOK, &p)
		if len(p.Messages) == 0 || at+len(p.Messages) > len(surface) || p.NextAfter == nil {
			t.Fatalf("messages after %d: %d messages (nextAfter %v)", after, len(p.Messages), p.NextAfter)
		}
		events := surface[at : at+len(p.Messages)]
		at += len(p.Messages)
		if dataBefore(events) >= store.MaxPageBytes || *p.NextAfter != events[len(events)-1].Seq {
			t.Errorf("messages after %d: %d messages of %d bytes before the last, nextAfter %d", after, len(events), dataBefore(events), *p.NextAfter)
		}
		msgs = append(msgs, p.Messages...)
		if !p.HasMore {
			break
		}
		after = *p.NextAfter
	}
	if want := projection.DeriveMessages(all); !reflect.DeepEqual(msgs, want) {
		t.Errorf("pages of messages: %d messages, the surface %d", len(msgs), len(want))
	}
}

// testMessagesPaging pins the shape of small pages: after, limit, hasMore
// and nextAfter, and a call kept with its result.
func testMessagesPaging(t *testing.T, b *bundle) {
	id := b.newSession()
	b.appendOK(id,
		userMsg("go"), // 1
		turnStart(),   // 2
		ev("message/assistant", map[string]any{"text": "calling", "toolCalls": []any{map[string]any{"id": "c1", "name": "run", "args": map[string]any{}}}}), // 3
		ev("tool/result", map[string]any{"callId": "c1", "name": "run", "isError": false, "content": "ok"}),                                                 // 4
		ev("message/assistant", map[string]any{"text": "done"}),                                                                                             // 5
		turnEnd(), // 6
	)
	get := func(q string) string {
		r := b.do("GET", "/sessions/"+id+"/messages"+q, nil)
		b.want(r, http.StatusOK, nil)
		return strings.TrimSpace(string(r.Body))
	}
	const (
		user   = `{"role":"user","text":"go"}`
		call   = `{"role":"assistant","text":"calling","toolCalls":[{"id":"c1","name":"run","args":{}}]}`
		result = `{"role":"tool","text":"ok","toolCallId":"c1","name":"run","isError":false}`
		done   = `{"role":"assistant","text":"done"}`
	)
	cases := map[string]string{
		"":                 `{"hasMore":false,"messages":[` + user + `,` + call + `,` + result + `,` + done + `],"nextAfter":5}`,
		"?limit=1":         `{"hasMore":true,"messages":[` + user + `],"nextAfter":1}`,
		"?limit=2":         `{"hasMore":true,"messages":[` + user + `],"nextAfter":1}`,
		"?after=1&limit=1": `{"hasMore":true,"messages":[` + call + `,` + result + `],"nextAfter":4}`,
		"?after=4&limit=1": `{"hasMore":false,"messages":[` + done + `],"nextAfter":5}`,
		"?after=5":         `{"hasMore":false,"messages":[],"nextAfter":5}`,
		"?after=99":        `{"hasMore":false,"messages":[],"nextAfter":99}`,
	}
	for q, want := range cases {
		if got := get(q); got != want {
			t.Errorf("messages%s\n%s\nwant\n%s", q, got, want)
		}
	}
}

func testMessagesBadParams(t *testing.T, b *bundle) {
	path := "/sessions/" + b.newSession() + "/messages"
	cases := map[string]string{
		"?after=-1":   "`after` must be an integer from 0 to 9223372036854775807",
		"?after=x":    "`after` must be an integer from 0 to 9223372036854775807",
		"?limit=0":    "`limit` must be an integer from 1 to 1000",
		"?limit=1001": "`limit` must be an integer from 1 to 1000",
		"?limit=1.5":  "`limit` must be an integer from 1 to 1000",
	}
	for q, want := range cases {
		if msg := b.wantError(b.do("GET", path+q, nil), http.StatusBadRequest, "invalid"); msg != want {
			t.Errorf("messages%s: %q, want %q", q, msg, want)
		}
	}
	b.wantError(b.do("GET", "/sessions/ses_nosuch/messages?after=3&limit=5", nil), http.StatusNotFound, "not_found")
}
