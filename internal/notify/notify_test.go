package notify_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/notify"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// TestDetect reads the moments of appends as the store answers them.
func TestDetect(t *testing.T) {
	t.Parallel()
	now := projection.NewTime(time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC))
	ev := func(seq int64, typ, data string) projection.Event {
		return projection.Event{Seq: seq, Type: typ, Data: json.RawMessage(data), At: now}
	}
	done := &projection.Todos{Todos: []projection.Item{{Content: "a", Status: projection.StatusCompleted}}}
	open := &projection.Todos{Todos: []projection.Item{{Content: "a", Status: projection.StatusInProgress}}}
	for _, tc := range []struct {
		name string
		res  store.AppendResult
		want []notify.Kind
	}{
		{"a turn completes", store.AppendResult{Events: []projection.Event{ev(3, "turn/end", `{"reason":"completed"}`)}}, []notify.Kind{notify.TurnEnded}},
		{"a turn fails", store.AppendResult{Events: []projection.Event{ev(3, "turn/end", `{"reason":"error"}`)}}, []notify.Kind{notify.TurnFailed}},
		{"a list write completes the plan", store.AppendResult{Events: []projection.Event{ev(4, "todo/write", `{}`)}, TodosChanged: true, Todos: done}, []notify.Kind{notify.PlanCompleted}},
		{"a list write leaves it open", store.AppendResult{Events: []projection.Event{ev(4, "todo/write", `{}`)}, TodosChanged: true, Todos: open}, nil},
		{"a turn start under a completed plan", store.AppendResult{Events: []projection.Event{ev(5, "turn/start", `{}`)}, TodosChanged: true, Todos: done}, nil},
		{"the agent waits on its person", store.AppendResult{Events: []projection.Event{ev(6, "message/assistant", `{"text":"May I?"}`)},
			Session: store.Session{State: projection.StateNeedsYou, StateSince: now}}, []notify.Kind{notify.NeedsYou}},
		{"it waited already", store.AppendResult{Events: []projection.Event{ev(6, "message/assistant", `{}`)},
			Session: store.Session{State: projection.StateNeedsYou, StateSince: projection.NewTime(now.Add(-time.Minute))}}, nil},
		{"a hook's notice that the agent waits", store.AppendResult{Session: store.Session{State: projection.StateNeedsYou, StateSince: now, LastSeq: 9}}, []notify.Kind{notify.NeedsYou}},
		{"a session made", store.AppendResult{Session: store.Session{State: projection.StateIdle, StateSince: now}}, nil},
		{"a goal met", store.AppendResult{Events: []projection.Event{ev(7, "message/assistant", `{"text":"","toolCalls":[{"id":"c","name":"update_goal","args":{"status":"complete"}}]}`)},
			Session: store.Session{Goal: &projection.Goal{Text: "x", Status: projection.GoalMet}}}, []notify.Kind{notify.GoalEnded}},
		{"a goal cleared", store.AppendResult{Events: []projection.Event{ev(7, "message/user", `{"text":"/goal clear"}`)},
			Session: store.Session{Goal: &projection.Goal{Text: "x", Status: projection.GoalCleared}}}, []notify.Kind{notify.GoalEnded}},
		{"an ended goal, another event", store.AppendResult{Events: []projection.Event{ev(8, "message/user", `{"text":"more"}`)},
			Session: store.Session{Goal: &projection.Goal{Text: "x", Status: projection.GoalMet}}}, nil},
		{"a goal set", store.AppendResult{Events: []projection.Event{ev(7, "message/user", `{"text":"/goal x"}`)},
			Session: store.Session{Goal: &projection.Goal{Text: "x", Status: projection.GoalActive}}}, nil},
		{"a replay tells nothing", store.AppendResult{Events: []projection.Event{ev(3, "turn/end", `{}`)}, Replayed: true}, nil},
	} {
		var got []notify.Kind
		for _, m := range notify.Detect(tc.res) {
			got = append(got, m.Kind)
		}
		if len(got) != len(tc.want) || len(got) > 0 && got[0] != tc.want[0] {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
