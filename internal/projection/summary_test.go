package projection_test

import (
	"encoding/json"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
)

// TestTurnEndReasonAndCurrentItem follows what a session list shows of a
// session: how its last turn ended (none while a turn is open or before
// any) and the item in progress of its current list.
func TestTurnEndReasonAndCurrentItem(t *testing.T) {
	var s projection.State
	steps := []struct {
		ev      projection.NewEvent
		reason  projection.EndReason
		current string // "" for none
	}{
		{ne("turn/start", `{}`), "", ""},
		{write("read", "in_progress", "fix", "pending"), "", "read"},
		{ne("turn/end", `{"reason":"interrupted"}`), projection.EndInterrupted, "read"},
		{ne("turn/start", `{}`), "", "read"}, // a new turn is open again
		{write("read", "completed", "fix", "in_progress"), "", "fix"},
		{ne("turn/end", `{"reason":"error"}`), projection.EndError, "fix"},
		{ne("turn/start", `{}`), "", "fix"},
		{write("read", "completed", "fix", "completed"), "", ""},
		{ne("turn/end", `{"reason":"completed"}`), projection.EndCompleted, ""},
	}
	for i, st := range steps {
		if _, err := s.Apply(st.ev, at(i+1), projection.Config{}, nil); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if s.Turn.EndReason != st.reason {
			t.Errorf("step %d (%s): end reason %q, want %q", i, st.ev.Type, s.Turn.EndReason, st.reason)
		}
		got := ""
		if c := projection.CurrentItem(s.Items); c != nil {
			got = *c
		}
		if got != st.current {
			t.Errorf("step %d (%s): current item %q, want %q", i, st.ev.Type, got, st.current)
		}
	}
}

// TestCurrentItemParallel: with several items in progress, the current one
// is the first in the list's order.
func TestCurrentItemParallel(t *testing.T) {
	s := openState(t)
	log(t, &s, projection.Config{AllowParallel: true}, write("a", "completed", "b", "in_progress", "c", "in_progress"))
	if c := projection.CurrentItem(s.Items); c == nil || *c != "b" {
		t.Fatalf("current item %v, want b", c)
	}
	if c := projection.CurrentItem(nil); c != nil {
		t.Fatalf("current item of no list %q, want nil", *c)
	}
}

// TestTurnJSON: the end reason is null while a turn is open and before any.
func TestTurnJSON(t *testing.T) {
	for _, tc := range []struct {
		turn projection.Turn
		want string
	}{
		{projection.Turn{}, `{"number":0,"open":false,"endReason":null}`},
		{projection.Turn{Number: 2, Open: true}, `{"number":2,"open":true,"endReason":null}`},
		{projection.Turn{Number: 2, EndReason: projection.EndInterrupted}, `{"number":2,"open":false,"endReason":"interrupted"}`},
	} {
		b, err := json.Marshal(tc.turn)
		if err != nil || string(b) != tc.want {
			t.Errorf("%+v: got %s (%v), want %s", tc.turn, b, err, tc.want)
		}
		var back projection.Turn
		if err := json.Unmarshal(b, &back); err != nil || back != tc.turn {
			t.Errorf("%s: decoded %+v (%v), want %+v", b, back, err, tc.turn)
		}
	}
}
