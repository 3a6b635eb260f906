package projection_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
)

// edit is a person's edit of the list against version base.
func edit(t *testing.T, s *projection.State, base int64, by string, items ...string) (projection.Event, error) {
	t.Helper()
	var parts []string
	for i := 0; i+1 < len(items); i += 2 {
		b, _ := json.Marshal(map[string]string{"content": items[i], "status": items[i+1]})
		parts = append(parts, string(b))
	}
	ev, v, err := projection.ParseTodoEditArgs(json.RawMessage(`{"todos":[`+strings.Join(parts, ",")+`],"baseVersion":`+itoa(base)+`}`), by)
	if err != nil {
		t.Fatalf("ParseTodoEditArgs: %v", err)
	}
	return s.Apply(ev, at(int(s.LastSeq)+1), projection.Config{}, &v)
}

func itoa(v int64) string { b, _ := json.Marshal(v); return string(b) }

// toolWrite is the model's todo_write through the tool's argument parser.
func toolWrite(s *projection.State, args string) (projection.Event, error) {
	ev, base, err := projection.ParseTodoWriteArgs(json.RawMessage(args))
	if err != nil {
		return projection.Event{}, err
	}
	return s.Apply(ev, at(int(s.LastSeq)+1), projection.Config{}, base)
}

func TestTodoEdit(t *testing.T) {
	var s projection.State
	// No open turn needed; the same checks as todo_write, same texts.
	ev, err := edit(t, &s, 0, "ana", "a", "pending", "b", "in_progress")
	if err != nil {
		t.Fatal(err)
	}
	if ev.Type != "todo/edit" || ev.Turn != 0 || string(ev.Data) != `{"todos":[{"content":"a","status":"pending"},{"content":"b","status":"in_progress"}],"by":"ana"}` {
		t.Fatalf("stored %+v %s", ev, ev.Data)
	}
	if s.Version != 1 || !s.Standing || s.LastEdit != 1 || s.EditedBy != "ana" || s.Seen != 0 {
		t.Fatalf("state %+v", s)
	}
	for _, c := range []struct {
		items []string
		want  string
	}{
		{[]string{" ", "pending"}, "invalid todo: `content` must be a non-empty string"},
		{[]string{"a", "done"}, "invalid todo: `status` must be one of pending, in_progress, completed"},
		{[]string{"a", "pending", "a", "completed"}, `invalid todos: duplicate content "a"`},
		{[]string{"a", "in_progress", "b", "in_progress"}, "invalid todos: at most one task may be in_progress, got 2"},
		{[]string{strings.Repeat("x", 1001), "pending"}, "invalid todo: `content` must be at most 1000 characters, got 1001"},
	} {
		before := s
		_, err := edit(t, &s, 1, "ana", c.items...)
		var pe *projection.Error
		if !errors.As(err, &pe) || pe.Message != c.want || pe.Code != projection.CodeInvalid {
			t.Errorf("edit %v: %v, want %q", c.items, err, c.want)
		}
		if !reflect.DeepEqual(s, before) {
			t.Errorf("a rejected edit changed the state")
		}
	}
	_, err = edit(t, &s, 0, "ana", "a", "pending")
	if err == nil || err.Error() != "stale todo list: baseVersion 0 is older than the current version 1; read the list and write it again" {
		t.Errorf("stale edit: %v", err)
	}
	// Not through /events: a todo/edit of any shape from outside is refused.
	_, err = s.Apply(ne("todo/edit", `{"todos":[],"by":"x"}`), at(9), projection.Config{}, nil)
	if err == nil || !strings.Contains(err.Error(), "todo/edit cannot be appended through /events") {
		t.Errorf("todo/edit through Apply of a plain event: %v", err)
	}
	// The body: exactly todos and baseVersion, a baseVersion required.
	for raw, want := range map[string]string{
		`{"todos":[]}`:                       "invalid edit: the body is missing `baseVersion`",
		`{"todos":[],"baseVersion":-1}`:      "invalid edit: `baseVersion` must be a non-negative integer",
		`{"todos":[],"baseVersion":null}`:    "invalid edit: `baseVersion` must be a non-negative integer",
		`{"todos":[],"baseVersion":1,"x":1}`: "invalid edit: the body has an unexpected key `x`",
	} {
		if _, _, err := projection.ParseTodoEditArgs(json.RawMessage(raw), "ana"); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", raw, err, want)
		}
	}
}

func TestModelToldOfEdits(t *testing.T) {
	s := openState(t)
	if _, err := toolWrite(&s, `{"todos":[{"content":"a","status":"in_progress"}]}`); err != nil {
		t.Fatal(err)
	}
	if s.Seen != 2 {
		t.Fatalf("seen %d after the model's write, want 2", s.Seen)
	}
	if _, err := edit(t, &s, 2, "ana", "a", "completed", "b", "pending"); err != nil {
		t.Fatal(err)
	}
	before := s
	_, err := toolWrite(&s, `{"todos":[{"content":"a","status":"completed"}]}`)
	var pe *projection.Error
	if !errors.As(err, &pe) || pe.Code != projection.CodeConflict || pe.Shown != 3 {
		t.Fatalf("write after an unseen edit: %#v", err)
	}
	want := "the todo list was changed by ana since you last read it (version 2 → 3). It is now:\n[x] a\n[ ] b\nWrite the list again with their changes."
	if pe.Message != want {
		t.Errorf("text\n%s\nwant\n%s", pe.Message, want)
	}
	if !reflect.DeepEqual(s, before) {
		t.Fatal("the rejection changed the state")
	}
	// Told before a stale baseVersion: the text shows the list.
	if _, err := toolWrite(&s, `{"todos":[],"baseVersion":2}`); err == nil || err.(*projection.Error).Shown != 3 {
		t.Errorf("stale write after an unseen edit: %v", err)
	}
	// The rejection showed the list: marked seen, the next write passes.
	s.MarkSeen(pe.Shown)
	if _, err := toolWrite(&s, `{"todos":[{"content":"a","status":"completed"}]}`); err != nil {
		t.Fatalf("write after the rejection: %v", err)
	}
	// A todo/write from /events (an import, a transcript) is not held to it.
	if _, err := edit(t, &s, 4, "ana", "z", "pending"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(write("y", "pending"), at(6), projection.Config{}, nil); err != nil {
		t.Errorf("todo/write event after an edit: %v", err)
	}
}

func TestTimeline(t *testing.T) {
	s := openState(t)
	log(t, &s, projection.Config{}, write("a", "pending", "b", "pending"))        // 2
	log(t, &s, projection.Config{}, write("a", "in_progress", "b", "pending"))    // 3
	log(t, &s, projection.Config{}, write("a", "pending", "b", "pending"))        // 4: back to pending
	log(t, &s, projection.Config{}, write("a", "completed", "b2", "in_progress")) // 5: b renamed
	log(t, &s, projection.Config{}, write("b2", "in_progress"))                   // 6: a removed
	log(t, &s, projection.Config{}, write("a", "completed", "b2", "completed"))   // 7: a re-added
	got := s.Items
	want := []projection.Item{
		{ID: projection.ItemID("a"), Content: "a", Status: "completed", UpdatedAt: at(7), CreatedAt: at(7), CompletedAt: tp(at(7))},
		{ID: projection.ItemID("b2"), Content: "b2", Status: "completed", UpdatedAt: at(7), CreatedAt: at(5), StartedAt: tp(at(5)), CompletedAt: tp(at(7))},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("items\n%+v\nwant\n%+v", got, want)
	}
	h := projection.ReplayHistory(mustLog(t))
	if len(h) != 6 {
		t.Fatalf("history %d versions", len(h))
	}
}

// mustLog is a log with status changes, a rename and a removal, replayed
// for its history.
func mustLog(t *testing.T) []projection.Event {
	var s projection.State
	evs := log(t, &s, projection.Config{}, ne("turn/start", `{}`),
		write("a", "pending", "b", "pending"), write("a", "in_progress", "b", "pending"),
		write("a", "pending", "b", "pending"), write("a", "completed", "b2", "in_progress"),
		write("b2", "in_progress"), write("a", "completed", "b2", "completed"))
	return evs
}

func TestChangesAndHistory(t *testing.T) {
	h := projection.ReplayHistory(mustLog(t))
	str := func(s string) *string { return &s }
	// Version 5: a pending → completed, b2 added in_progress, b removed.
	v := h[3]
	want := []projection.Change{
		{ID: projection.ItemID("a"), Content: "a", From: str("pending"), To: str("completed")},
		{ID: projection.ItemID("b2"), Content: "b2", To: str("in_progress")},
		{ID: projection.ItemID("b"), Content: "b", From: str("pending")},
	}
	if v.Version != 5 || v.By != "agent" || v.At != at(5) || !reflect.DeepEqual(v.Changes, want) {
		t.Errorf("version 5 %+v\nwant changes %+v", v, want)
	}
	if len(h[0].Changes) != 2 || h[0].Changes[0].From != nil {
		t.Errorf("first version's changes %+v", h[0].Changes)
	}
}

func TestReminder(t *testing.T) {
	s := openState(t)
	r := s.Reminder(3, false)
	if r.Due || r.Reason != nil || r.Text != "<system-reminder>\nYour todo list (version 0):\nKeep it current with todo_write: mark each item completed as soon as it is done.\n</system-reminder>" {
		t.Errorf("empty list: %+v", r)
	}
	log(t, &s, projection.Config{}, write("a", "in_progress", "b", "pending"))
	msg := ne("message/assistant", `{"text":"step"}`)
	log(t, &s, projection.Config{}, msg, msg)
	if r := s.Reminder(3, false); r.Due {
		t.Errorf("due after 2 steps: %+v", r)
	}
	log(t, &s, projection.Config{}, msg)
	r = s.Reminder(3, false)
	if !r.Due || *r.Reason != "stale" || r.Text != "<system-reminder>\nYour todo list (version 2):\n[>] a\n[ ] b\nKeep it current with todo_write: mark each item completed as soon as it is done.\n</system-reminder>" {
		t.Errorf("after 3 steps: %+v", r)
	}
	if r := s.Reminder(4, false); r.Due {
		t.Errorf("due with -reminder-after 4: %+v", r)
	}
	// Nothing open: not stale however many steps.
	log(t, &s, projection.Config{}, write("a", "completed"), msg, msg, msg, msg)
	if r := s.Reminder(3, false); r.Due {
		t.Errorf("all done, due: %+v", r)
	}
	if r := s.Reminder(3, true); !r.Due || *r.Reason != "requested" {
		t.Errorf("requested: %+v", r)
	}
	if _, err := edit(t, &s, s.Version, "ana", "a", "completed", "c", "pending"); err != nil {
		t.Fatal(err)
	}
	r = s.Reminder(3, true)
	if !r.Due || *r.Reason != "edited" || !strings.HasPrefix(r.Text, "<system-reminder>\nYour todo list (version 11), changed by ana:\n[x] a\n[ ] c\n") {
		t.Errorf("edited: %+v", r)
	}
	s.MarkSeen(s.Version)
	if r := s.Reminder(3, false); r.Due {
		t.Errorf("due after seen: %+v", r)
	}
}

// TestStepsAreMessages: the events of one message of the model, written
// apart (data.messageId), are one step, also with its other events and a
// list write between them; the stale reminder counts messages, and so
// does a replay of the log.
func TestStepsAreMessages(t *testing.T) {
	var (
		s   projection.State
		all []projection.Event
	)
	step := func(events ...projection.NewEvent) { all = append(all, log(t, &s, projection.Config{}, events...)...) }
	step(ne("turn/start", `{}`), write("a", "in_progress"))
	block := func(id string) projection.NewEvent {
		return ne("message/assistant", `{"text":"","toolCalls":[{"id":"`+id+`","name":"Bash"}],"messageId":"msg_`+id[:1]+`"}`)
	}
	// Message a: three blocks, a result between; message b: two blocks,
	// the second after a list write.
	step(block("a1"), block("a2"),
		ne("tool/result", `{"callId":"a1","name":"Bash","isError":false,"content":""}`), block("a3"), block("b1"))
	if s.Steps != 2 || s.StepMessage != "msg_b" {
		t.Errorf("two messages: steps %d (%q), want 2", s.Steps, s.StepMessage)
	}
	step(write("a", "completed", "b", "in_progress"), block("b2"))
	if s.Steps != 0 {
		t.Errorf("a block of the message before the list write: steps %d, want 0", s.Steps)
	}
	step(block("c1"), block("c2"), block("d1"), ne("message/assistant", `{"text":"no id"}`))
	if r := s.Reminder(3, false); !r.Due {
		t.Errorf("three messages since the write (%d steps): the reminder is not due", s.Steps)
	}
	if got := projection.Replay(all); got.Steps != s.Steps || got.StepMessage != s.StepMessage {
		t.Errorf("replayed: steps %d (%q), want %d (%q)", got.Steps, got.StepMessage, s.Steps, s.StepMessage)
	}
	if _, err := s.Apply(ne("message/assistant", `{"text":"","messageId":""}`), at(int(s.LastSeq)+1), projection.Config{}, nil); err == nil {
		t.Error("an empty messageId: accepted")
	}
}

// TestRewordKeepsTheError: a dialect's rewording names its keys and
// changes nothing else of the error, the version it showed included.
func TestRewordKeepsTheError(t *testing.T) {
	d, _ := projection.DialectOf("update_plan")
	in := &projection.Error{Code: projection.CodeConflict, Shown: 7, Message: "`todos`: `content` must be a string"}
	out, ok := d.Reword(in).(*projection.Error)
	want := projection.Error{Code: projection.CodeConflict, Shown: 7, Message: "`plan`: `step` must be a string"}
	if !ok || *out != want {
		t.Fatalf("Reword(%+v) = %+v, want %+v", *in, out, want)
	}
}
