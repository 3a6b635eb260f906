package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

func keyed(ne projection.NewEvent, keys ...string) projection.NewEvent {
	ne.Keys = keys
	return ne
}

// testEventKeys: an event that reaches Tack twice, under a key
// it carried the first time, is stored once, whichever way came first and
// whatever else the batch holds; the batch's other events are stored.
func testEventKeys(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		id := newSession(t, st).ID
		// The hook's turn opens first.
		first := mustAppend(t, st, id, keyed(evTurnStart, "turn:p1"), keyed(userMsg("Fix it"), "prompt:p1"))
		if len(first.Events) != 2 || len(first.Held) != 0 {
			t.Fatalf("first append stored %d, held %d", len(first.Events), len(first.Held))
		}
		// Twice more: the session is warm in any cache now.
		for i := range 2 {
			// The transcript's lines for the same turn, with one more event.
			res := mustAppend(t, st, id, keyed(evTurnStart, "turn:p1", "line:a/0"), keyed(userMsg("Fix it"), "prompt:p1", "line:a/1"),
				keyed(ev(projection.TypeMessageAssistant, `{"text":"On it"}`), "line:b/0"))
			stored := len(res.Events)
			if len(res.Held) != 2+i || res.Held[0].Seq != 1 || res.Held[1].Seq != 2 || res.Held[1].Type != projection.TypeMessageUser {
				t.Fatalf("held %+v, want the log's events 1 and 2 (and 3 the second time)", res.Held)
			}
			if got := len(allEvents(t, st, id)); got != 3 || stored != 1-i {
				t.Fatalf("log holds %d events after storing %d, want 3", got, stored)
			}
		}
		// A batch whose events share a key stores the first.
		res := mustAppend(t, st, id, keyed(ev(projection.TypeMessageAssistant, `{"text":"a"}`), "x"), keyed(ev(projection.TypeMessageAssistant, `{"text":"b"}`), "y", "x"))
		if len(res.Events) != 1 || res.Session.LastSeq != 4 {
			t.Fatalf("stored %d, lastSeq %d; want 1, 4", len(res.Events), res.Session.LastSeq)
		}
		// All held: nothing stored, an expectedSeq still checked.
		res = mustAppend(t, st, id, keyed(ev(projection.TypeMessageAssistant, `{"text":"a"}`), "x"))
		if len(res.Events) != 0 || len(res.Held) != 1 || res.Held[0].Seq != 4 || res.Session.LastSeq != 4 {
			t.Fatalf("all held: %+v", res)
		}
		stale := int64(1)
		if _, err := st.Append(context.Background(), id, store.AppendRequest{ExpectedSeq: &stale,
			Events: []projection.NewEvent{keyed(ev(projection.TypeMessageAssistant, `{"text":"a"}`), "x")}}); err == nil {
			t.Fatal("a stale expectedSeq passed a held batch")
		}
		// Keys are held per session.
		other := newSession(t, st).ID
		if res := mustAppend(t, st, other, keyed(evTurnStart, "turn:p1")); len(res.Events) != 1 {
			t.Fatalf("another session's key held: %+v", res)
		}
		// A key out of bounds is refused.
		if _, err := st.Append(context.Background(), id, store.AppendRequest{Events: []projection.NewEvent{keyed(evTurnEnd, "")}}); err == nil {
			t.Fatal("an empty key passed")
		}
	})
}

// testNeedsYou: a session waits on a person from SetNeedsYou
// until its next event, and says what for while it does.
func testNeedsYou(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		id := newSession(t, st).ID
		mustAppend(t, st, id, evTurnStart)
		since := projection.NewTime(time.Now().Add(time.Millisecond))
		first := projection.NeedsYou{Kind: projection.NeedsPlan, Message: "Step one"}
		if err := st.SetNeedsYou(ctx, id, since, first); err != nil {
			t.Fatal(err)
		}
		// A later prompt replaces the reason.
		need := projection.NeedsYou{Kind: projection.NeedsPermission, Message: "Claude needs your permission to use Bash", Tool: "Bash", Input: "rm -rf build ✓"}
		if err := st.SetNeedsYou(ctx, id, since, need); err != nil {
			t.Fatal(err)
		}
		s, err := st.Session(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if s.State != projection.StateNeedsYou || !s.StateSince.Equal(since.Time) {
			t.Fatalf("state %s since %s, want needs_you since %s", s.State, s.StateSince, since)
		}
		if s.NeedsYou == nil || *s.NeedsYou != need {
			t.Fatalf("needsYou %+v, want %+v", s.NeedsYou, need)
		}
		list, _, err := st.Sessions(ctx, 10, "")
		if err != nil || len(list) != 1 || list[0].State != projection.StateNeedsYou || list[0].NeedsYou == nil || *list[0].NeedsYou != need {
			t.Fatalf("list %+v %v", list, err)
		}
		res := mustAppend(t, st, id, userMsg("go on"))
		if res.Session.State != projection.StateWorking || res.Session.NeedsYou != nil {
			t.Errorf("append answered state %s (needsYou %+v), want working", res.Session.State, res.Session.NeedsYou)
		}
		if s, _ = st.Session(ctx, id); s.State != projection.StateWorking || s.NeedsYou != nil {
			t.Errorf("after the next event: %s (needsYou %+v), want working", s.State, s.NeedsYou)
		}
		if err := st.SetNeedsYou(ctx, "ses_missing", since, need); err != store.ErrNotFound {
			t.Errorf("missing session: %v", err)
		}
	})
}

// testHooked: a session made by a hook is hooked; one made
// otherwise is not until SetHooked, and stays so on every read.
func testHooked(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		made, _, err := st.CreateSession(ctx, store.NewSession{ExternalKey: "claude-code:h1", Hooked: true})
		if err != nil || !made.Hooked {
			t.Fatalf("made by a hook: %+v %v", made, err)
		}
		imported := newSession(t, st)
		if imported.Hooked {
			t.Fatalf("made by an import: %+v", imported)
		}
		if err := st.SetHooked(ctx, imported.ID); err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{made.ID, imported.ID} {
			if s, err := st.Session(ctx, id); err != nil || !s.Hooked {
				t.Fatalf("read back: %+v %v", s, err)
			}
		}
		if err := st.SetHooked(ctx, "ses_missing"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an unknown session: %v", err)
		}
	})
}

// testGoal: a session's goal follows its log, append by append,
// is in the append's answer and on every read, and a batch that leaves it
// as it stands stores nothing of it.
func testGoal(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		id := newSession(t, st).ID
		goalOf := func() *projection.Goal {
			t.Helper()
			s, err := st.Session(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return s.Goal
		}
		if g := goalOf(); g != nil {
			t.Fatalf("a new session's goal: %+v", g)
		}
		res := mustAppend(t, st, id, evTurnStart, userMsg("/goal  All tests pass "))
		if g := res.Session.Goal; g == nil || g.Text != "All tests pass" || g.Status != projection.GoalActive || g.By != projection.GoalByUser || !g.SetAt.Equal(res.Events[1].At.Time) {
			t.Fatalf("the append's answer: %+v", g)
		}
		mustAppend(t, st, id, userMsg("carry on"), ev(projection.TypeMessageAssistant, `{"text":"","toolCalls":[{"id":"c1","name":"get_goal","args":{}}]}`))
		if g := goalOf(); g == nil || g.Text != "All tests pass" || g.Status != projection.GoalActive {
			t.Fatalf("after other events: %+v", g)
		}
		res = mustAppend(t, st, id, ev(projection.TypeMessageAssistant, `{"text":"","toolCalls":[{"id":"c2","name":"update_goal","args":{"status":"complete"}}]}`))
		if g := goalOf(); g == nil || g.Status != projection.GoalMet || res.Session.Goal.Status != projection.GoalMet {
			t.Fatalf("met: %+v", g)
		}
		mustAppend(t, st, id, userMsg("/goal clear"))
		if g := goalOf(); g == nil || g.Status != projection.GoalCleared || g.Text != "All tests pass" {
			t.Fatalf("cleared: %+v", g)
		}
	})
}
