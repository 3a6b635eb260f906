package projection_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

// checkApply applies data of typ to a state with an open turn (closed when
// closed is set) and checks the outcome: accepted with the stored data
// want, or rejected with code and msg.
func checkApply(t *testing.T, typ, data string, closed bool, want, code, msg string) {
	t.Helper()
	s := openState(t)
	if closed {
		log(t, &s, projection.Config{}, ne("turn/end", `{"reason":"completed"}`))
	}
	before := s
	ev, err := s.Apply(ne(typ, data), at(9), projection.Config{}, nil)
	if msg != "" {
		pe, ok := err.(*projection.Error)
		if !ok || string(pe.Code) != code || pe.Message != msg {
			t.Fatalf("%s %s: error %#v, want %s %q", typ, data, err, code, msg)
		}
		if !reflect.DeepEqual(s, before) {
			t.Fatalf("a rejected %s changed the state", typ)
		}
		return
	}
	if err != nil || string(ev.Data) != want {
		t.Fatalf("%s %s: stored %s, %v; want %s", typ, data, ev.Data, err, want)
	}
}

func TestHarnessLines(t *testing.T) {
	const kinds = "message/user: `kind` must be one of task-notification, command, interrupted, ide-context, compact-summary, context, other"
	tests := []struct{ name, data, want, code, msg string }{
		{name: "prompt", data: `{"text":"fix it"}`, want: `{"text":"fix it"}`},
		{name: "task notification", data: `{"text":"Background task b6fdbf0 failed","source":"harness","kind":"task-notification"}`,
			want: `{"text":"Background task b6fdbf0 failed","source":"harness","kind":"task-notification"}`},
		{name: "interrupted", data: `{"text":"[Request interrupted by user]","source":"harness","kind":"interrupted"}`,
			want: `{"text":"[Request interrupted by user]","source":"harness","kind":"interrupted"}`},
		{name: "every kind is one", data: `{"text":"x","source":"harness","kind":"compact-summary"}`, want: `{"text":"x","source":"harness","kind":"compact-summary"}`},
		{name: "outside a turn", data: `{"text":"/compact","source":"harness","kind":"command"}`, want: `{"text":"/compact","source":"harness","kind":"command"}`},
		{name: "harness without kind", data: `{"text":"x","source":"harness"}`, code: "invalid", msg: "message/user: a harness line needs a `kind`"},
		{name: "kind without source", data: `{"text":"x","kind":"command"}`, code: "invalid", msg: "message/user: `kind` goes only with `source` \"harness\""},
		{name: "unknown kind", data: `{"text":"x","source":"harness","kind":"notice"}`, code: "invalid", msg: kinds},
		{name: "unknown source", data: `{"text":"x","source":"person"}`, code: "invalid", msg: "message/user: `source` must be \"harness\", \"agent\" or absent (a person's prompt)"},
		{name: "a subagent's task", data: `{"text":"find the loader","source":"agent"}`, want: `{"text":"find the loader","source":"agent"}`},
		{name: "agent with kind", data: `{"text":"x","source":"agent","kind":"other"}`, code: "invalid", msg: "message/user: `kind` goes only with `source` \"harness\""},
		{name: "source not a string", data: `{"text":"x","source":1,"kind":"other"}`, code: "invalid", msg: "message/user: `source` must be a string"},
		{name: "other key", data: `{"text":"x","role":"user"}`, code: "invalid", msg: "message/user data has an unexpected key `role`"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkApply(t, "message/user", tc.data, tc.name == "outside a turn", tc.want, tc.code, tc.msg)
		})
	}
	// On the surface, marked: the model saw it.
	s := openState(t)
	evs := log(t, &s, projection.Config{}, ne("message/user", `{"text":"hi"}`),
		ne("message/user", `{"text":"[Request interrupted by user]","source":"harness","kind":"interrupted"}`))
	msgs := projection.DeriveMessages(evs)
	if len(msgs) != 2 || msgs[0].Source != "" || msgs[0].Kind != "" || msgs[1].Source != "harness" || msgs[1].Kind != "interrupted" {
		t.Fatalf("surface %+v", msgs)
	}
	b, _ := json.Marshal(msgs)
	if want := `[{"role":"user","text":"hi"},{"role":"user","text":"[Request interrupted by user]","source":"harness","kind":"interrupted"}]`; string(b) != want {
		t.Fatalf("surface %s, want %s", b, want)
	}
}

func TestSessionEnd(t *testing.T) {
	for _, tc := range []struct {
		name, data, want, code, msg string
		closed                      bool
	}{
		{name: "empty", data: `{}`, want: `{}`},
		{name: "no data", data: ``, want: `{}`},
		{name: "reason", data: `{"reason":"prompt_input_exit"}`, want: `{"reason":"prompt_input_exit"}`},
		{name: "no open turn", data: `{}`, want: `{}`, closed: true},
		{name: "reason not a string", data: `{"reason":1}`, code: "invalid", msg: "session/end: `reason` must be a string"},
		{name: "other key", data: `{"at":"x"}`, code: "invalid", msg: "session/end data has an unexpected key `at`"},
	} {
		t.Run(tc.name, func(t *testing.T) { checkApply(t, "session/end", tc.data, tc.closed, tc.want, tc.code, tc.msg) })
	}
	// It closes no turn; a later event resumes the session.
	s := openState(t)
	evs := log(t, &s, projection.Config{}, ne("session/end", `{}`))
	if !s.Turn.Open || s.EndedAt == nil || *s.EndedAt != evs[0].At || evs[0].Turn != 1 {
		t.Fatalf("after session/end: %+v, event %+v", s, evs[0])
	}
	if st, since := projection.SessionState(s.Activity(), at(10), 0, t0); st != projection.StateEnded || since != evs[0].At {
		t.Fatalf("state %s since %v", st, since)
	}
	log(t, &s, projection.Config{}, ne("turn/end", `{"reason":"completed"}`))
	if s.EndedAt != nil {
		t.Fatalf("an event after session/end left it ended")
	}
}

func TestEventAt(t *testing.T) {
	received := at(0)
	jan := projection.NewTime(time.Date(2026, 1, 5, 10, 0, 0, 123_000_000, time.UTC))
	for _, tc := range []struct {
		name string
		raw  string
		want *projection.Time
		msg  string
	}{
		{name: "absent", raw: ``},
		{name: "null", raw: `null`},
		{name: "utc", raw: `"2026-01-05T10:00:00.123Z"`, want: &jan},
		{name: "offset, nanoseconds", raw: `"2026-01-05T11:00:00.123456789+01:00"`, want: &jan},
		{name: "no zone", raw: `"2026-01-05T10:00:00"`, msg: "event `at` must be an RFC 3339 time, got \"2026-01-05T10:00:00\""},
		{name: "a number", raw: `1767607200`, msg: "event `at` must be an RFC 3339 time"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := projection.ParseAt(json.RawMessage(tc.raw))
			if tc.msg != "" {
				if pe, ok := err.(*projection.Error); !ok || pe.Code != projection.CodeInvalid || pe.Message != tc.msg {
					t.Fatalf("error %#v, want %q", err, tc.msg)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseAt %s = %v, %v", tc.raw, got, err)
			}
		})
	}
	for _, tc := range []struct {
		name string
		at   projection.Time
		ok   bool
	}{
		{"long past", jan, true},
		{"at receipt", received, true},
		{"five minutes ahead", projection.NewTime(received.Add(5 * time.Minute)), true},
		{"a millisecond more", projection.NewTime(received.Add(5*time.Minute + time.Millisecond)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.at
			err := projection.CheckAt(&a, received)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckAt(%v) = %v, want ok %v", a, err, tc.ok)
			}
			if err != nil {
				if pe := err.(*projection.Error); pe.Code != projection.CodeInvalid ||
					pe.Message != "event `at` 2026-11-30T09:05:00.001Z is more than 5m0s after its receipt (2026-11-30T09:00:00.000Z)" {
					t.Fatalf("error %#v", pe)
				}
			}
		})
	}
	// Apply stores the agent's time as at and the receipt as receivedAt;
	// timelines and the session's activity run on at.
	s := openState(t)
	before := s
	future := projection.NewTime(received.Add(time.Hour))
	if _, err := s.Apply(projection.NewEvent{Type: "turn/end", Data: json.RawMessage(`{"reason":"completed"}`), At: &future}, received, projection.Config{}, nil); err == nil || !reflect.DeepEqual(s, before) {
		t.Fatalf("an at an hour ahead: %v, state changed %v", err, !reflect.DeepEqual(s, before))
	}
	ev, err := s.Apply(projection.NewEvent{Type: "todo/write", Data: json.RawMessage(`{"todos":[{"content":"a","status":"in_progress"}]}`), At: &jan}, received, projection.Config{}, nil)
	if err != nil || ev.At != jan || ev.ReceivedAt == nil || *ev.ReceivedAt != received {
		t.Fatalf("stored %+v, %v", ev, err)
	}
	if it := s.Items[0]; it.CreatedAt != jan || *it.StartedAt != jan || *s.UpdatedAt != jan || *s.LastAt != jan {
		t.Fatalf("item %+v, state %+v: not on the agent's time", it, s)
	}
	b, _ := json.Marshal(ev)
	if want := `{"seq":2,"type":"todo/write","turn":1,"at":"2026-01-05T10:00:00.123Z","receivedAt":"2026-11-30T09:00:00.000Z","data":{"todos":[{"content":"a","status":"in_progress"}]}}`; string(b) != want {
		t.Fatalf("event %s, want %s", b, want)
	}
	plain, _ := s.Apply(ne("message/user", `{"text":"x"}`), received, projection.Config{}, nil)
	if b, _ := json.Marshal(plain); string(b) != `{"seq":3,"type":"message/user","turn":1,"at":"2026-11-30T09:00:00.000Z","data":{"text":"x"}}` {
		t.Fatalf("an event without at: %s", b)
	}
}

func TestSessionState(t *testing.T) {
	p := func(i int) *projection.Time { v := at(i); return &v }
	idle := 5 * time.Minute
	for _, tc := range []struct {
		name  string
		a     projection.Activity
		now   projection.Time
		state string
		since projection.Time
	}{
		{"new session", projection.Activity{}, at(10), projection.StateIdle, t0},
		{"turn open, recent", projection.Activity{LastAt: p(100), TurnOpen: true, TurnStartedAt: p(50)}, at(300), projection.StateWorking, at(50)},
		{"turn open, at the edge", projection.Activity{LastAt: p(100), TurnOpen: true, TurnStartedAt: p(50)}, at(400), projection.StateWorking, at(50)},
		{"turn open, quiet past idle-after", projection.Activity{LastAt: p(100), TurnOpen: true, TurnStartedAt: p(50)}, at(401), projection.StateIdle, at(100)},
		{"no open turn", projection.Activity{LastAt: p(100)}, at(101), projection.StateIdle, at(100)},
		{"waiting on a person", projection.Activity{LastAt: p(100), LastSeq: 4, TurnOpen: true, TurnStartedAt: p(50), NeedsYouSince: p(100), NeedsYouSeq: 4}, at(5000), projection.StateNeedsYou, at(100)},
		{"answered since", projection.Activity{LastAt: p(120), LastSeq: 5, TurnOpen: true, TurnStartedAt: p(50), NeedsYouSince: p(100), NeedsYouSeq: 4}, at(130), projection.StateWorking, at(50)},
		// An event appended after the mark ends it even in its millisecond.
		{"answered in the same millisecond", projection.Activity{LastAt: p(100), LastSeq: 5, TurnOpen: true, TurnStartedAt: p(50), NeedsYouSince: p(100), NeedsYouSeq: 4}, at(101), projection.StateWorking, at(50)},
		{"ended", projection.Activity{LastAt: p(100), LastSeq: 4, TurnOpen: true, EndedAt: p(100), NeedsYouSince: p(100), NeedsYouSeq: 4}, at(101), projection.StateEnded, at(100)},
		// The agent's registry decides working and idle while no event is newer.
		{"busy past idle-after", projection.Activity{LastAt: p(100), LastSeq: 4, TurnOpen: true, TurnStartedAt: p(50), Agent: &projection.AgentStatus{Status: projection.AgentBusy, At: at(100)}}, at(5000), projection.StateWorking, at(50)},
		{"busy without a turn", projection.Activity{LastAt: p(100), LastSeq: 4, Agent: &projection.AgentStatus{Status: projection.AgentBusy, At: at(110)}}, at(120), projection.StateWorking, at(110)},
		{"idle with a turn open", projection.Activity{LastAt: p(100), LastSeq: 4, TurnOpen: true, TurnStartedAt: p(50), Agent: &projection.AgentStatus{Status: projection.AgentIdle, At: at(110)}}, at(120), projection.StateIdle, at(110)},
		{"an event newer than the status", projection.Activity{LastAt: p(120), LastSeq: 5, TurnOpen: true, TurnStartedAt: p(120), Agent: &projection.AgentStatus{Status: projection.AgentIdle, At: at(110)}}, at(130), projection.StateWorking, at(120)},
		{"waiting over busy", projection.Activity{LastAt: p(100), LastSeq: 4, TurnOpen: true, TurnStartedAt: p(50), NeedsYouSince: p(105), NeedsYouSeq: 4, Agent: &projection.AgentStatus{Status: projection.AgentBusy, At: at(110)}}, at(120), projection.StateNeedsYou, at(105)},
		{"ended over busy", projection.Activity{LastAt: p(100), LastSeq: 4, EndedAt: p(100), Agent: &projection.AgentStatus{Status: projection.AgentBusy, At: at(110)}}, at(120), projection.StateEnded, at(100)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if st, since := projection.SessionState(tc.a, tc.now, idle, t0); st != tc.state || since != tc.since {
				t.Fatalf("SessionState = %s since %v, want %s since %v", st, since, tc.state, tc.since)
			}
		})
	}
	// From the log: a turn open and acting, then ended.
	s := openState(t)
	log(t, &s, projection.Config{}, ne("message/user", `{"text":"go"}`))
	if st, since := projection.SessionState(s.Activity(), at(3), 0, t0); st != projection.StateWorking || since != at(1) {
		t.Fatalf("state %s since %v", st, since)
	}
	log(t, &s, projection.Config{}, ne("turn/end", `{"reason":"completed"}`))
	if st, since := projection.SessionState(s.Activity(), at(4), 0, t0); st != projection.StateIdle || since != at(3) {
		t.Fatalf("state %s since %v", st, since)
	}
}

func TestPlanLifetime(t *testing.T) {
	for _, tc := range []struct {
		lifetime string
		standing bool
	}{{"", false}, {projection.PlanTurn, false}, {projection.PlanSession, true}} {
		t.Run("lifetime "+tc.lifetime, func(t *testing.T) {
			cfg := projection.Config{PlanLifetime: tc.lifetime}
			var s projection.State
			evs := log(t, &s, cfg, ne("turn/start", `{}`), write("a", "in_progress"), ne("turn/end", `{"reason":"completed"}`))
			prev := s
			evs = append(evs, log(t, &s, cfg, ne("turn/start", `{}`))...)
			if s.Standing != tc.standing || s.Snapshot().Standing != tc.standing || len(s.Snapshot().Todos) != map[bool]int{false: 0, true: 1}[tc.standing] {
				t.Fatalf("after a new turn: standing %v, snapshot %+v", s.Standing, s.Snapshot())
			}
			if changed := cfg.TodosChanged(prev, evs[len(evs)-1]); changed == tc.standing {
				t.Fatalf("TodosChanged %v for a plan that stands %v", changed, tc.standing)
			}
			if got := cfg.Replay(evs); !reflect.DeepEqual(got, s) {
				t.Fatalf("Replay %+v, incremental %+v", got, s)
			}
		})
	}
}

// TestLateEvents: a line of a turn the log has ended (a transcript read
// after a hook's Stop) joins that turn, opens none, and leaves an ended
// session ended; without Late it needs an open turn; a replay agrees.
func TestLateEvents(t *testing.T) {
	var s projection.State
	events := log(t, &s, projection.Config{}, ne("turn/start", `{}`), ne("turn/end", `{"reason":"completed"}`), ne("session/end", `{}`))
	if _, err := s.Apply(ne("message/assistant", `{"text":"late"}`), at(9), projection.Config{}, nil); err == nil {
		t.Fatal("an assistant message with no open turn was taken")
	}
	for _, typ := range []string{"message/assistant", "tool/result", "todo/write"} {
		data := map[string]string{"message/assistant": `{"text":"late"}`, "tool/result": `{"callId":"c","name":"Bash","isError":false,"content":"ok"}`,
			"todo/write": `{"todos":[{"content":"a","status":"pending"}]}`}[typ]
		ev := ne(typ, data)
		ev.Late = true
		got := log(t, &s, projection.Config{}, ev)
		events = append(events, got...)
		if got[0].Turn != 1 {
			t.Errorf("late %s stored in turn %d, want 1", typ, got[0].Turn)
		}
	}
	if s.Turn.Open || s.Turn.Number != 1 || s.EndedAt == nil || len(s.Items) != 1 {
		t.Errorf("state after the late lines %+v: want turn 1 closed, the session ended, the list written", s)
	}
	if r := projection.Replay(events); r.EndedAt == nil || r.Turn != s.Turn || r.Version != s.Version || r.Steps != s.Steps {
		t.Errorf("replay %+v differs from %+v", r, s)
	}
	var fresh projection.State
	late := ne("message/assistant", `{"text":"no turn yet"}`)
	late.Late = true
	if _, err := fresh.Apply(late, at(1), projection.Config{}, nil); err == nil {
		t.Error("a late event was taken by a log that never had a turn")
	}
}
