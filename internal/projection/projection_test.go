package projection_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var t0 = projection.NewTime(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))

// at is the i-th second after t0.
func at(i int) projection.Time { return projection.NewTime(t0.Add(time.Duration(i) * time.Second)) }

func ne(typ, data string) projection.NewEvent {
	return projection.NewEvent{Type: typ, Data: json.RawMessage(data)}
}

// log applies events one by one, failing the test on any rejection; the
// i-th event is stamped at(i).
func log(t *testing.T, s *projection.State, cfg projection.Config, events ...projection.NewEvent) []projection.Event {
	t.Helper()
	var out []projection.Event
	for _, e := range events {
		ev, err := s.Apply(e, at(int(s.LastSeq)+1), cfg, nil)
		if err != nil {
			t.Fatalf("apply %s %s: %v", e.Type, e.Data, err)
		}
		out = append(out, ev)
	}
	return out
}

func openState(t *testing.T) projection.State {
	var s projection.State
	log(t, &s, projection.Config{}, ne("turn/start", `{}`))
	return s
}

func write(items ...string) projection.NewEvent {
	var parts []string
	for i := 0; i+1 < len(items); i += 2 {
		parts = append(parts, fmt.Sprintf(`{"content":%q,"status":%q}`, items[i], items[i+1]))
	}
	return ne("todo/write", `{"todos":[`+strings.Join(parts, ",")+`]}`)
}

func TestTodoWriteChecks(t *testing.T) {
	const (
		keys    = "invalid todo: each todo must be an object with exactly the keys `content` and `status`"
		content = "invalid todo: `content` must be a non-empty string"
		status  = "invalid todo: `status` must be one of pending, in_progress, completed"
		owning  = "todo_write requires an owning agent session"
		oneLine = "invalid todo: `content` must be one line without control characters"
	)
	many := func(n int, first ...string) string {
		items := first
		for i := range n {
			items = append(items, fmt.Sprintf(`{"content":"t%d","status":"pending"}`, i))
		}
		return `{"todos":[` + strings.Join(items, ",") + `]}`
	}
	long := strings.Repeat("é", 1001)
	tests := []struct {
		name     string
		data     string
		closed   bool
		parallel bool
		base     *int64
		code     projection.Code
		msg      string
	}{
		{name: "extra key", data: `{"todos":[{"content":"a","status":"pending","id":"1"}]}`, code: "invalid", msg: "invalid todo: unexpected key `id`; a todo has the keys `content`, `status` and any of `activeForm`, `blockedBy`, `owner`, `taskId` and `description`"},
		{name: "not an object", data: `{"todos":[1]}`, code: "invalid", msg: keys},
		// The list is decoded in one pass when it is an array of objects,
		// and item by item otherwise: both give the same answers.
		{name: "null item", data: `{"todos":[{"content":"a","status":"pending"},null]}`, code: "invalid", msg: keys},
		{name: "object after non-object", data: `{"todos":["a",{"content":"","status":"pending"}]}`, code: "invalid", msg: keys},
		{name: "todos an object", data: `{"todos":{"content":"a","status":"pending"}}`, code: "invalid", msg: "invalid arguments: `todos` must be an array"},
		{name: "todos null", data: `{"todos":null}`, code: "invalid", msg: "invalid arguments: `todos` must be an array"},
		{name: "content a number", data: `{"todos":[{"content":1,"status":"pending"}]}`, code: "invalid", msg: content},
		{name: "status a number", data: `{"todos":[{"content":"a","status":1}]}`, code: "invalid", msg: status},
		{name: "escaped status", data: `{"todos":[{"content":"a","status":"pend\u0069ng"}]}`},
		{name: "escaped blank content", data: `{"todos":[{"content":"\t\n","status":"pending"}]}`, code: "invalid", msg: content},
		{name: "empty content", data: `{"todos":[{"content":"","status":"pending"}]}`, code: "invalid", msg: content},
		{name: "blank content", data: `{"todos":[{"content":"  ","status":"pending"}]}`, code: "invalid", msg: content},
		{name: "content null", data: `{"todos":[{"content":null,"status":"pending"}]}`, code: "invalid", msg: content},
		{name: "bad status", data: `{"todos":[{"content":"a","status":"blocked"}]}`, code: "invalid", msg: status},
		{name: "duplicate", data: `{"todos":[{"content":"a","status":"pending"},{"content":"a ","status":"completed"}]}`, code: "invalid", msg: `invalid todos: duplicate content "a"`},
		{name: "two in progress", data: `{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`, code: "invalid", msg: "invalid todos: at most one task may be in_progress, got 2"},
		{name: "two in progress allowed", data: `{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`, parallel: true},
		{name: "no open turn", data: `{"todos":[]}`, closed: true, code: "conflict", msg: owning},
		{name: "201 items", data: many(201), code: "invalid", msg: "invalid todos: at most 200 items allowed, got 201"},
		{name: "200 items", data: many(200)},
		{name: "1001 characters", data: `{"todos":[{"content":"` + long + `","status":"pending"}]}`, code: "invalid", msg: "invalid todo: `content` must be at most 1000 characters, got 1001"},
		{name: "1000 characters", data: `{"todos":[{"content":"` + long[2:] + `","status":"pending"}]}`},
		// Content made only of invisible characters (zero-width spaces and
		// joiners, word joiners, BOMs, variation selectors) is blank.
		{name: "zero-width content", data: `{"todos":[{"content":"\u200b\u200c\u200d\ufeff","status":"pending"}]}`, code: "invalid", msg: content},
		{name: "invisible and spaces", data: `{"todos":[{"content":" \u2060\u00a0\ufe0f\u3164 ","status":"pending"}]}`, code: "invalid", msg: content},
		{name: "zero-width inside words", data: `{"todos":[{"content":"a\u200db","status":"pending"}]}`},
		// Content is stored in NFC: the same text in another Unicode form is
		// the same item.
		{name: "duplicate in NFD", data: `{"todos":[{"content":"caf\u00e9","status":"pending"},{"content":"cafe\u0301","status":"completed"}]}`, code: "invalid", msg: `invalid todos: duplicate content "café"`},
		// A line break or other control character inside content would forge
		// lines of todo_read's text.
		{name: "newline inside", data: `{"todos":[{"content":"a\n[x] forged","status":"pending"}]}`, code: "invalid", msg: oneLine},
		{name: "carriage return inside", data: `{"todos":[{"content":"a\rb","status":"pending"}]}`, code: "invalid", msg: oneLine},
		{name: "tab inside", data: `{"todos":[{"content":"a\tb","status":"pending"}]}`, code: "invalid", msg: oneLine},
		{name: "C1 control inside", data: `{"todos":[{"content":"a\u0085b","status":"pending"}]}`, code: "invalid", msg: oneLine},
		{name: "line separator inside", data: `{"todos":[{"content":"a\u2028b","status":"pending"}]}`, code: "invalid", msg: oneLine},
		{name: "paragraph separator inside", data: `{"todos":[{"content":"a\u2029b","status":"pending"}]}`, code: "invalid", msg: oneLine},
		{name: "newlines at the ends", data: `{"todos":[{"content":"\n a \r\n","status":"pending"}]}`},
		{name: "NUL", data: `{"todos":[{"content":"a\u0000","status":"pending"}]}`, code: "invalid", msg: "invalid todo: `content` must not contain NUL characters"},
		{name: "stale", data: `{"todos":[]}`, base: ptr(1), code: "conflict", msg: "stale todo list: baseVersion 1 is older than the current version 2; read the list and write it again"},
		{name: "future", data: `{"todos":[]}`, base: ptr(3), code: "invalid", msg: "invalid arguments: baseVersion 3 is newer than the current version 2"},
		{name: "current base", data: `{"todos":[]}`, base: ptr(2)},
		// Order: each check runs over the whole list before the next.
		{name: "key before content", data: `{"todos":[{"content":"","status":"pending"},{"content":"b","status":"pending","x":1}]}`, code: "invalid", msg: "invalid todo: unexpected key `x`; a todo has the keys `content`, `status` and any of `activeForm`, `blockedBy`, `owner`, `taskId` and `description`"},
		{name: "content before status", data: `{"todos":[{"content":"a","status":"x"},{"content":" ","status":"pending"}]}`, code: "invalid", msg: content},
		{name: "status before duplicate", data: `{"todos":[{"content":"a","status":"pending"},{"content":"a","status":"pending"},{"content":"b","status":"x"}]}`, code: "invalid", msg: status},
		{name: "duplicate before in progress", data: `{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"},{"content":"b","status":"pending"}]}`, code: "invalid", msg: `invalid todos: duplicate content "b"`},
		{name: "in progress before turn", data: `{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`, closed: true, code: "invalid", msg: "invalid todos: at most one task may be in_progress, got 2"},
		{name: "turn before size", data: many(201), closed: true, code: "conflict", msg: owning},
		{name: "size before stale", data: many(201), base: ptr(0), code: "invalid", msg: "invalid todos: at most 200 items allowed, got 201"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := openState(t)
			log(t, &s, projection.Config{}, write("first", "pending")) // version 2
			if tc.closed {
				log(t, &s, projection.Config{}, ne("turn/end", `{"reason":"completed"}`))
			}
			before := s
			_, err := s.Apply(ne("todo/write", tc.data), at(9), projection.Config{AllowParallel: tc.parallel}, tc.base)
			if tc.msg == "" {
				if err != nil {
					t.Fatalf("rejected: %v", err)
				}
				return
			}
			pe, ok := err.(*projection.Error)
			if !ok || pe.Code != tc.code || pe.Message != tc.msg {
				t.Fatalf("error %#v, want %s %q", err, tc.code, tc.msg)
			}
			if !reflect.DeepEqual(s, before) {
				t.Errorf("a rejected write changed the state")
			}
		})
	}
}

func ptr(v int64) *int64 { return &v }

func tp(t projection.Time) *projection.Time { return &t }

// TestTodoContentNFC: content in any Unicode form is stored in NFC, so the
// same text keeps one id and one updatedAt whichever form the model sends.
func TestTodoContentNFC(t *testing.T) {
	s := openState(t)
	log(t, &s, projection.Config{}, ne("todo/write", `{"todos":[{"content":"cafe\u0301","status":"pending"}]}`))
	log(t, &s, projection.Config{}, ne("todo/write", `{"todos":[{"content":"caf\u00e9","status":"pending"}]}`))
	it := s.Items[0]
	if it.Content != "caf\u00e9" || it.ID != projection.ItemID("caf\u00e9") {
		t.Fatalf("item %+q, want content %+q with its id", it, "caf\u00e9")
	}
	if it.UpdatedAt != at(2) {
		t.Fatalf("updatedAt %v, want %v: the second write is the same item in the same status", it.UpdatedAt, at(2))
	}
}

func TestItemsDerivedFields(t *testing.T) {
	s := openState(t)
	log(t, &s, projection.Config{}, write("a", "pending", "b", "pending")) // seq 2, at(2)
	first := s.Todos("s")
	if first.Todos[0].ID != projection.ItemID("a") || first.Todos[0].ID == first.Todos[1].ID {
		t.Errorf("ids %+v", first.Todos)
	}
	log(t, &s, projection.Config{}, ne("message/user", `{"text":"x"}`), write("a", "pending", "b", "in_progress", "c", "pending")) // seq 4, at(4)
	got := s.Todos("s")
	want := []projection.Item{
		{ID: projection.ItemID("a"), Content: "a", Status: "pending", UpdatedAt: at(2), CreatedAt: at(2)},
		{ID: projection.ItemID("b"), Content: "b", Status: "in_progress", UpdatedAt: at(4), CreatedAt: at(2), StartedAt: tp(at(4))},
		{ID: projection.ItemID("c"), Content: "c", Status: "pending", UpdatedAt: at(4), CreatedAt: at(4)},
	}
	if !reflect.DeepEqual(got.Todos, want) {
		t.Errorf("items\n%+v\nwant\n%+v", got.Todos, want)
	}
	// Dropped, then written again: it appears anew.
	log(t, &s, projection.Config{}, write("b", "in_progress"), write("a", "pending", "b", "in_progress"))
	got = s.Todos("s")
	if got.Todos[0].UpdatedAt != at(6) || got.Todos[1].UpdatedAt != at(4) || got.Todos[0].ID != projection.ItemID("a") {
		t.Errorf("items %+v", got.Todos)
	}
	if got.Version != 6 || got.Counts != (projection.Counts{Pending: 1, InProgress: 1}) || *got.UpdatedAt != at(6) {
		t.Errorf("view %+v", got)
	}
	// The id is the content's SHA-256, so it is known ahead of any write.
	if got := projection.ItemID("a"); got != "t_ca978112ca1bbdca" || got == projection.ItemID("a ") {
		t.Errorf("ItemID(%q) = %q, want t_ca978112ca1bbdca and distinct from another content's", "a", got)
	}
}

func TestStandingPlan(t *testing.T) {
	var s projection.State
	if v := s.Todos("s"); v.Version != 0 || v.Todos == nil || len(v.Todos) != 0 || v.UpdatedAt != nil || v.Standing {
		t.Errorf("empty view %+v", v)
	}
	if sn := s.Snapshot(); sn.Todos == nil || sn.Standing || sn.TodosVersion != 0 {
		t.Errorf("empty snapshot %+v", sn)
	}
	cfg := projection.Config{}
	steps := []struct {
		ev       projection.NewEvent
		changed  bool
		standing bool
		plan     int // items in the snapshot
	}{
		{ne("turn/start", `{}`), false, false, 0},
		{write("a", "in_progress", "b", "pending"), true, true, 2},
		{ne("message/user", `{"text":"x"}`), false, true, 2},
		{ne("turn/end", `{"reason":"interrupted"}`), false, true, 2},
		{ne("message/user", `{"text":"y"}`), false, true, 2},
		{ne("turn/start", `{}`), true, false, 0}, // ends the standing plan
		{ne("turn/end", `{"reason":"error"}`), false, false, 0},
		{ne("turn/start", `{}`), false, false, 0}, // nothing stood
		{write("a", "completed"), true, true, 1},
	}
	for i, st := range steps {
		prev := s
		ev, err := s.Apply(st.ev, at(i+1), cfg, nil)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := projection.TodosChanged(prev, ev); got != st.changed {
			t.Errorf("step %d (%s): TodosChanged %v, want %v", i, ev.Type, got, st.changed)
		}
		sn := s.Snapshot()
		if s.Standing != st.standing || sn.Standing != st.standing || len(sn.Todos) != st.plan || sn.LastSeq != ev.Seq {
			t.Errorf("step %d (%s): standing %v, snapshot %+v", i, ev.Type, s.Standing, sn)
		}
		if st.changed && *s.UpdatedAt != at(i+1) {
			t.Errorf("step %d: view updatedAt %v, want %v", i, s.UpdatedAt, at(i+1))
		}
		if !st.changed && !reflect.DeepEqual(prev.UpdatedAt, s.UpdatedAt) {
			t.Errorf("step %d: view updatedAt moved without a change", i)
		}
	}
	// The current list outlives the plan strip: after step 5 it was still a, b.
	if v := s.Todos("s"); v.Version != 9 || len(v.Todos) != 1 || s.Turn != (projection.Turn{Number: 3, Open: true}) {
		t.Errorf("final view %+v turn %+v", v, s.Turn)
	}
}

func TestEventRules(t *testing.T) {
	tests := []struct {
		name string
		open bool
		ev   projection.NewEvent
		code projection.Code
		msg  string
	}{
		{"unknown type", true, ne("note", `{}`), "invalid", `unknown event type "note"`},
		{"missing type", true, ne("", `{}`), "invalid", "event `type` is missing"},
		{"turn/start data", false, ne("turn/start", `{"x":1}`), "invalid", "turn/start data has an unexpected key `x`"},
		{"turn/start while open", true, ne("turn/start", ``), "conflict", "turn/start: turn 1 is still open"},
		{"turn/end none open", false, ne("turn/end", `{"reason":"completed"}`), "conflict", "turn/end: no turn is open"},
		{"turn/end reason", true, ne("turn/end", `{"reason":"done"}`), "invalid", "turn/end: `reason` must be one of completed, interrupted, error"},
		{"user text type", false, ne("message/user", `{"text":1}`), "invalid", "message/user: `text` must be a string"},
		{"user text null", false, ne("message/user", `{"text":null}`), "invalid", "message/user: `text` must be a string"},
		{"user data array", false, ne("message/user", `[]`), "invalid", "message/user data must be a JSON object"},
		{"assistant closed", false, ne("message/assistant", `{"text":""}`), "conflict", "message/assistant needs an open turn"},
		{"assistant calls", true, ne("message/assistant", `{"text":"","toolCalls":{}}`), "invalid", "message/assistant: `toolCalls` must be an array"},
		{"assistant call id", true, ne("message/assistant", `{"text":"","toolCalls":[{"id":" ","name":"x"}]}`), "invalid", "message/assistant toolCalls[0]: `id` must be a non-empty string"},
		{"assistant call key", true, ne("message/assistant", `{"text":"","toolCalls":[{"id":"1","name":"x","type":"function"}]}`), "invalid", "message/assistant toolCalls[0] has an unexpected key `type`"},
		{"assistant call key twice", true, ne("message/assistant", `{"text":"","toolCalls":[{"id":"1","id":"2","name":"x"}]}`), "invalid", "message/assistant data has the key `id` twice at /toolCalls/0"},
		{"args NUL", true, ne("message/assistant", `{"text":"","toolCalls":[{"id":"1","name":"x","args":{"a":["\u0000"]}}]}`), "invalid", "message/assistant toolCalls[0]: `args` must not contain NUL characters"},
		{"args NUL key", true, ne("message/assistant", `{"text":"","toolCalls":[{"id":"1","name":"x","args":{"\u0000":1}}]}`), "invalid", "message/assistant toolCalls[0]: `args` must not contain NUL characters"},
		{"args lone high surrogate", true, ne("message/assistant", `{"text":"","toolCalls":[{"id":"1","name":"x","args":"\ud83dx"}]}`), "invalid", "message/assistant data must be valid UTF-8, without lone surrogate escapes at /toolCalls/0/args"},
		{"args lone low surrogate", true, ne("message/assistant", `{"text":"","toolCalls":[{"id":"1","name":"x","args":"\ude00"}]}`), "invalid", "message/assistant data must be valid UTF-8, without lone surrogate escapes at /toolCalls/0/args"},
		{"args reversed pair", true, ne("message/assistant", `{"text":"","toolCalls":[{"id":"1","name":"x","args":"\ude00\ud83d"}]}`), "invalid", "message/assistant data must be valid UTF-8, without lone surrogate escapes at /toolCalls/0/args"},
		{"args huge exponent", true, ne("message/assistant", `{"text":"","toolCalls":[{"id":"1","name":"x","args":{"n":[1e131072]}}]}`), "invalid", "message/assistant toolCalls[0]: `args` must not contain numbers longer than 100 characters or with an exponent beyond ±1000"},
		{"args tiny exponent", true, ne("message/assistant", `{"text":"","toolCalls":[{"id":"1","name":"x","args":-1E-16384}]}`), "invalid", "message/assistant toolCalls[0]: `args` must not contain numbers longer than 100 characters or with an exponent beyond ±1000"},
		{"args long number", true, ne("message/assistant", `{"text":"","toolCalls":[{"id":"1","name":"x","args":0.`+strings.Repeat("0", 100)+`1}]}`), "invalid", "message/assistant toolCalls[0]: `args` must not contain numbers longer than 100 characters or with an exponent beyond ±1000"},
		{"args not UTF-8", true, ne("message/assistant", "{\"text\":\"\",\"toolCalls\":[{\"id\":\"1\",\"name\":\"x\",\"args\":\"\xff\"}]}"), "invalid", "message/assistant data must be valid UTF-8, without lone surrogate escapes at /toolCalls/0/args"},
		{"tool result closed", false, ne("tool/result", `{"callId":"1","name":"x","isError":false,"content":""}`), "conflict", "tool/result needs an open turn"},
		{"tool result missing", true, ne("tool/result", `{"callId":"1","name":"x","content":""}`), "invalid", "tool/result data is missing `isError`"},
		{"todo/write data", true, ne("todo/write", `{"todos":[],"v":1}`), "invalid", "todo/write data has an unexpected key `v`"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s projection.State
			if tc.open {
				s = openState(t)
			}
			before := s
			_, err := s.Apply(tc.ev, at(5), projection.Config{}, nil)
			pe, ok := err.(*projection.Error)
			if !ok || pe.Code != tc.code || pe.Message != tc.msg {
				t.Fatalf("error %#v, want %s %q", err, tc.code, tc.msg)
			}
			if !reflect.DeepEqual(s, before) {
				t.Error("a rejected event changed the state")
			}
		})
	}
}

func TestArgsKeptAsSent(t *testing.T) {
	s := openState(t)
	// Escapes that only look like NUL or surrogates, and a proper pair, pass.
	args := `{"path":"C:\\u0000","emoji":"\ud83d\ude00","quote":"\"\\\"","n":1.50,"big":1e1000,"e":"1e99999"}`
	ev := log(t, &s, projection.Config{}, ne("message/assistant", `{"text":"","toolCalls":[{"id":"1","name":"x","args":`+args+`}]}`))[0]
	msg := projection.DeriveMessages([]projection.Event{ev})[0]
	if got := string(msg.ToolCalls[0].Args); got != args {
		t.Errorf("args %s, want %s as sent", got, args)
	}
}

func TestTexts(t *testing.T) {
	if got, want := projection.WriteText(projection.Counts{Pending: 3, InProgress: 1, Completed: 12}), "Updated todo list: 3 pending, 1 in progress, 12 completed."; got != want {
		t.Errorf("WriteText %q, want %q", got, want)
	}
	if got, want := projection.ReadText(nil), "Todo list: 0 pending, 0 in progress, 0 completed."; got != want {
		t.Errorf("ReadText(nil) %q, want %q", got, want)
	}
	items := []projection.Item{{Content: "done", Status: "completed"}, {Content: "doing <it>", Status: "in_progress"}, {Content: "next", Status: "pending"}, {Content: "later", Status: "pending"}}
	want := "Todo list: 2 pending, 1 in progress, 1 completed.\n[x] done\n[>] doing <it>\n[ ] next\n[ ] later"
	if got := projection.ReadText(items); got != want {
		t.Errorf("ReadText\n%s\nwant\n%s", got, want)
	}
}

func TestParseToolArgs(t *testing.T) {
	ev, base, err := projection.ParseTodoWriteArgs(json.RawMessage(`{"baseVersion":4,"todos":[{"content":"a","status":"pending"}]}`))
	if err != nil || *base != 4 || ev.Type != projection.TypeTodoWrite || string(ev.Data) != `{"todos":[{"content":"a","status":"pending"}]}` {
		t.Errorf("parsed %s %s %v %v", ev.Type, ev.Data, base, err)
	}
	for raw, want := range map[string]string{
		``:                               "invalid arguments: `todos` must be an array",
		`{"todos":[],"x":1}`:             "invalid arguments: the input has an unexpected key `x`",
		`{"todos":[],"baseVersion":1.5}`: "invalid arguments: `baseVersion` must be a non-negative integer",
		`nope`:                           "invalid arguments: the input must be a JSON object",
	} {
		if _, _, err := projection.ParseTodoWriteArgs(json.RawMessage(raw)); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
	if err := projection.ParseTodoReadArgs(nil); err != nil {
		t.Errorf("empty todo_read args: %v", err)
	}
	if err := projection.ParseTodoReadArgs(json.RawMessage(`{"x":1}`)); err == nil {
		t.Error("todo_read accepted an argument")
	}
}

func TestTimeJSON(t *testing.T) {
	tm := projection.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 678912345, time.FixedZone("x", 3600)))
	b, _ := json.Marshal(tm)
	if string(b) != `"2026-01-02T02:04:05.678Z"` {
		t.Errorf("marshal %s", b)
	}
	var back projection.Time
	if err := json.Unmarshal(b, &back); err != nil || back != tm {
		t.Errorf("round trip %v %v", back, err)
	}
}

// script is a small agent session: turns, messages, tool calls and todo
// writes, the surface of which is golden.
func script() []projection.NewEvent {
	return []projection.NewEvent{
		ne("message/user", `{"text":"Fix the flaky test."}`),
		ne("turn/start", `{}`),
		ne("message/assistant", `{"text":"I'll plan first.","toolCalls":[{"id":"call_1","name":"todo_write","args":{"todos":[{"content":"Reproduce","status":"in_progress"},{"content":"Fix","status":"pending"}]}}]}`),
		write("Reproduce", "in_progress", "Fix", "pending"),
		ne("tool/result", `{"callId":"call_1","name":"todo_write","isError":false,"content":"Updated todo list: 1 pending, 1 in progress, 0 completed."}`),
		ne("message/assistant", `{"text":"Running it.","toolCalls":[{"id":"call_2","name":"bash","args":{"cmd":"go test ./..."}}]}`),
		ne("tool/result", `{"callId":"call_2","name":"bash","isError":true,"content":"exit status 1"}`),
		ne("message/assistant", `{"text":"Reproduced.","toolCalls":[]}`),
		write("Reproduce", "completed", "Fix", "in_progress"),
		ne("turn/end", `{"reason":"completed"}`),
		ne("message/user", `{"text":"Carry on."}`),
		ne("turn/start", `{}`),
		ne("message/assistant", `{"text":"Done."}`),
		ne("turn/end", `{"reason":"interrupted"}`),
	}
}

func TestDeriveMessagesGolden(t *testing.T) {
	var s projection.State
	events := log(t, &s, projection.Config{}, script()...)
	msgs := projection.DeriveMessages(events)
	got, err := json.MarshalIndent(msgs, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "messages.golden")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("DeriveMessages differs from %s (run with -update to accept):\n%s", path, got)
	}
	// Without the todo/writes and turn bookkeeping the surface is the same.
	var surface []projection.Event
	for _, ev := range events {
		if projection.Surface(ev.Type) {
			surface = append(surface, ev)
		}
	}
	if !reflect.DeepEqual(projection.DeriveMessages(surface), msgs) {
		t.Error("the surface depends on non-surface events")
	}
	if m := projection.DeriveMessages(nil); m == nil || len(m) != 0 {
		t.Errorf("empty log: %#v", m)
	}
}

func TestReplayEqualsIncremental(t *testing.T) {
	var s projection.State
	events := log(t, &s, projection.Config{}, script()...)
	for i := range events {
		var inc projection.State
		log(t, &inc, projection.Config{}, script()[:i+1]...)
		if got := projection.Replay(events[:i+1]); !reflect.DeepEqual(got, inc) {
			t.Fatalf("after %d events: replay %+v, incremental %+v", i+1, got, inc)
		}
	}
}

// TestTodoWriteStoredData checks that the stored data of a todo/write is the
// canonical encoding of the decoded list, whatever escapes the model sent,
// and that ParseTodoWriteArgs keeps the list as sent. Text that is not
// UTF-8 is refused, never rewritten to U+FFFD.
func TestTodoWriteStoredData(t *testing.T) {
	for _, bad := range []string{"{\"todos\":[{\"content\":\"a\xff\",\"status\":\"pending\"}]}", `{"todos":[{"content":"\ud800","status":"pending"}]}`} {
		if _, _, err := projection.ParseTodoWriteArgs(json.RawMessage(bad)); err == nil {
			t.Errorf("ParseTodoWriteArgs(%q) accepted", bad)
		}
	}
	args := "{\"todos\":[{\"content\":\" caf\\u00e9 \\\"<b>\\\" \\ud83d\\ude00 \",\"status\":\"pending\"}],\"baseVersion\":null}"
	parsed, base, err := projection.ParseTodoWriteArgs(json.RawMessage(args))
	if err != nil || base != nil {
		t.Fatalf("ParseTodoWriteArgs: %v, base %v", err, base)
	}
	// Parsed by the tool, or sent as data through POST /events: the same.
	for _, in := range []projection.NewEvent{parsed, {Type: projection.TypeTodoWrite, Data: parsed.Data}} {
		s := openState(t)
		ev, err := s.Apply(in, at(1), projection.Config{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(map[string]any{"todos": []map[string]string{{"content": "café \"<b>\" \U0001F600", "status": "pending"}}})
		if !bytes.Equal(ev.Data, want) {
			t.Errorf("stored data:\n got %s\nwant %s", ev.Data, want)
		}
		if got := s.Items[0].Content; got != "café \"<b>\" \U0001F600" {
			t.Errorf("content %q", got)
		}
	}
}

// TestTimeUnmarshal checks the plain and the escaped forms of a time.
func TestTimeUnmarshal(t *testing.T) {
	for _, raw := range []string{`"2026-01-02T03:04:05.678Z"`, `"2026-01-02T03:04:05.678\u005a"`, `"2026-01-02T04:04:05.678+01:00"`} {
		var got projection.Time
		if err := json.Unmarshal([]byte(raw), &got); err != nil {
			t.Fatalf("%s: %v", raw, err)
		}
		if want := time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC); !got.Equal(want) {
			t.Errorf("%s: got %v, want %v", raw, got, want)
		}
	}
	var bad projection.Time
	if err := json.Unmarshal([]byte(`"yesterday"`), &bad); err == nil {
		t.Error(`"yesterday" decoded`)
	}
}
