package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// testNeedsYouEndsWithTheNextEvent: the event appended right
// after a wait is marked ends it, even in the mark's own millisecond (a
// tool's result as its permission is granted); the events the log held
// when the mark was set (the question's own call) do not.
func testNeedsYouEndsWithTheNextEvent(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		id := newSession(t, st).ID
		mustAppend(t, st, id, evTurnStart)
		need := projection.NeedsYou{Kind: projection.NeedsPermission, Message: "Claude needs your permission to use Bash", Tool: "Bash"}
		for round := range 100 {
			if err := st.SetNeedsYou(ctx, id, store.Now(), need); err != nil {
				t.Fatal(err)
			}
			s, err := st.Session(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if s.State != projection.StateNeedsYou {
				t.Fatalf("round %d: state %s after the mark, want needs_you", round, s.State)
			}
			res := mustAppend(t, st, id, ev(projection.TypeMessageAssistant, `{"text":"ran it"}`))
			if s, err = st.Session(ctx, id); err != nil {
				t.Fatal(err)
			}
			if s.State != projection.StateWorking || s.NeedsYou != nil || res.Session.State != projection.StateWorking {
				t.Fatalf("round %d: state %s (append answered %s) after the next event in the mark's millisecond (%v, %v), want working",
					round, s.State, res.Session.State, s.StateSince, res.Events[0].At)
			}
		}
	})
}

// testAgentStatus: what the agent's registry says decides
// working or idle while no event is newer: busy is working past
// idle-after, idle is idle with a turn open; a newer event decides again,
// an older one (a transcript line read late) does not; an older status
// is kept out.
func testAgentStatus(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		now := time.Now()
		ago := func(d time.Duration) projection.Time { return projection.NewTime(now.Add(-d)) }
		check := func(what string, s store.Session, state string, since projection.Time) {
			t.Helper()
			if s.State != state || !s.StateSince.Equal(since.Time) {
				t.Fatalf("%s: state %s since %s, want %s since %s", what, s.State, s.StateSince, state, since)
			}
		}
		id := newSession(t, st).ID
		started := ago(10 * time.Minute)
		turn := evTurnStart
		turn.At = &started
		mustAppend(t, st, id, turn)
		get := func() store.Session {
			t.Helper()
			s, err := st.Session(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		check("a turn quiet past idle-after", get(), projection.StateIdle, started)

		busy := ago(time.Minute)
		s, err := st.SetAgentStatus(ctx, id, projection.AgentStatus{Status: projection.AgentBusy, At: busy})
		if err != nil {
			t.Fatal(err)
		}
		check("busy answered", s, projection.StateWorking, started)
		check("busy read", get(), projection.StateWorking, started)
		list, _, err := st.FindSessions(ctx, store.SessionQuery{Limit: 10})
		if err != nil || len(list) != 1 {
			t.Fatalf("list %+v %v", list, err)
		}
		check("busy listed", list[0], projection.StateWorking, started)

		idle := ago(30 * time.Second)
		if s, err = st.SetAgentStatus(ctx, id, projection.AgentStatus{Status: projection.AgentIdle, At: idle}); err != nil {
			t.Fatal(err)
		}
		check("idle with the turn open", s, projection.StateIdle, idle)
		if s, err = st.SetAgentStatus(ctx, id, projection.AgentStatus{Status: projection.AgentBusy, At: ago(45 * time.Second)}); err != nil {
			t.Fatal(err)
		}
		check("an older status", s, projection.StateIdle, idle)

		// A transcript line from before the status, read late: the status
		// still decides, in the append's answer and after it.
		line := ev(projection.TypeMessageAssistant, `{"text":"done"}`)
		before := ago(40 * time.Second)
		line.At = &before
		res := mustAppend(t, st, id, line)
		check("an older event's append", res.Session, projection.StateIdle, idle)
		check("after an older event", get(), projection.StateIdle, idle)

		// A newer event decides from the log.
		res = mustAppend(t, st, id, userMsg("and one more thing"))
		check("a newer event's append", res.Session, projection.StateWorking, started)
		check("after a newer event", get(), projection.StateWorking, started)

		// Busy without an open turn (a shell command) is working since the status.
		mustAppend(t, st, id, evTurnEnd)
		shell := projection.NewTime(time.Now().Add(time.Second))
		if s, err = st.SetAgentStatus(ctx, id, projection.AgentStatus{Status: projection.AgentBusy, At: shell}); err != nil {
			t.Fatal(err)
		}
		check("busy with no turn", s, projection.StateWorking, shell)

		// A session/end ends it, whatever the registry said last.
		end := mustAppend(t, st, id, ev(projection.TypeSessionEnd, `{}`))
		check("ended", get(), projection.StateEnded, end.Events[0].At)

		if _, err := st.SetAgentStatus(ctx, "ses_missing", projection.AgentStatus{Status: projection.AgentIdle, At: idle}); err != store.ErrNotFound {
			t.Errorf("missing session: %v", err)
		}
	})
}
