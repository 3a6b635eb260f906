package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// The conformance of what an agent's session carries: its own times, its
// state, its plan lifetime, its agent fields and its children.

func at(t time.Time) *projection.Time {
	v := projection.NewTime(t)
	return &v
}

func withAt(e projection.NewEvent, when time.Time) projection.NewEvent {
	e.At = at(when)
	return e
}

func append1(t *testing.T, st store.Store, id string, events ...projection.NewEvent) store.AppendResult {
	t.Helper()
	res, err := st.Append(context.Background(), id, store.AppendRequest{Events: events})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// An event's own time is its at, the receipt its receivedAt, on every
// read; the session's updatedAt and the list's order follow the agent's
// time, so a January session sorts as January.
func testAgentTimes(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		jan := time.Date(2025, 1, 14, 10, 30, 0, 123_000_000, time.UTC)
		old := newSession(t, st)
		fresh := newSession(t, st)
		append1(t, st, fresh.ID, evTurnStart)
		res := append1(t, st, old.ID, withAt(evTurnStart, jan), withAt(userMsg("fix it"), jan.Add(time.Second)), userMsg("no own time"))
		if got := res.Events[0]; !got.At.Equal(jan) || got.ReceivedAt == nil || got.ReceivedAt.Sub(jan) < time.Hour {
			t.Fatalf("answered %+v, want at %v and the receipt as receivedAt", got, jan)
		}
		if res.Events[2].ReceivedAt != nil {
			t.Fatalf("an event without its own time has receivedAt %v, want none", res.Events[2].ReceivedAt)
		}
		events, _, err := st.Events(ctx, old.ID, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		h, err := st.History(ctx, old.ID, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, read := range [][]projection.Event{events, h.Events} {
			for i, e := range read {
				if want := res.Events[i]; !e.At.Equal(want.At.Time) || !equalTimes(e.ReceivedAt, want.ReceivedAt) {
					t.Fatalf("event %d read back at %v received %v, answered at %v received %v", e.Seq, e.At, e.ReceivedAt, want.At, want.ReceivedAt)
				}
			}
		}
		sess, err := st.Session(ctx, old.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !sess.UpdatedAt.Equal(res.Events[2].At.Time) || !res.Session.UpdatedAt.Equal(sess.UpdatedAt.Time) {
			t.Fatalf("updatedAt %v (answered %v), want the last event's at %v", sess.UpdatedAt, res.Session.UpdatedAt, res.Events[2].At)
		}
		// Only January events: the session sorts below the fresh one.
		jan2 := newSession(t, st)
		append1(t, st, jan2.ID, withAt(evTurnStart, jan), withAt(evTurnEnd, jan.Add(time.Minute)))
		list, _, err := st.Sessions(ctx, 10, "")
		if err != nil {
			t.Fatal(err)
		}
		if i, j := indexOf(list, jan2.ID), indexOf(list, fresh.ID); i < j {
			t.Fatalf("the January session lists at %d, before today's at %d", i, j)
		}
		if got := list[indexOf(list, jan2.ID)]; !got.UpdatedAt.Equal(jan.Add(time.Minute)) || got.State != projection.StateIdle {
			t.Fatalf("January session updatedAt %v state %s, want %v idle", got.UpdatedAt, got.State, jan.Add(time.Minute))
		}
	})
}

func equalTimes(a, b *projection.Time) bool {
	return (a == nil) == (b == nil) && (a == nil || a.Equal(b.Time))
}

func indexOf(list []store.Session, id string) int {
	return slices.IndexFunc(list, func(s store.Session) bool { return s.ID == id })
}

// A session is working while its turn moves, idle once the turn ended or
// went quiet, ended after a session/end, and working again when a resumed
// session appends; each since the moment the log says.
func testSessionState(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s := newSession(t, st)
		if s.State != projection.StateIdle || !s.StateSince.Equal(s.CreatedAt.Time) {
			t.Fatalf("new session %s since %v, want idle since its creation", s.State, s.StateSince)
		}
		res := append1(t, st, s.ID, evTurnStart, userMsg("go"))
		if res.Session.State != projection.StateWorking || !res.Session.StateSince.Equal(res.Events[0].At.Time) {
			t.Fatalf("after turn/start: %s since %v, want working since %v", res.Session.State, res.Session.StateSince, res.Events[0].At)
		}
		ended := append1(t, st, s.ID, evTurnEnd, ev(projection.TypeSessionEnd, `{"reason":"exit"}`))
		got, err := st.Session(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State != projection.StateEnded || !got.StateSince.Equal(ended.Events[1].At.Time) || ended.Session.State != projection.StateEnded {
			t.Fatalf("after session/end: %s since %v (answered %s), want ended since %v", got.State, got.StateSince, ended.Session.State, ended.Events[1].At)
		}
		resumed := append1(t, st, s.ID, evTurnStart)
		if got, _ := st.Session(ctx, s.ID); got.State != projection.StateWorking || resumed.Session.State != projection.StateWorking {
			t.Fatalf("resumed: %s (answered %s), want working", got.State, resumed.Session.State)
		}
		// A turn whose latest event is older than the idle time is idle.
		quiet := newSession(t, st)
		last := time.Now().Add(-time.Hour)
		append1(t, st, quiet.ID, withAt(evTurnStart, last.Add(-time.Minute)), withAt(userMsg("go"), last))
		if got, _ := st.Session(ctx, quiet.ID); got.State != projection.StateIdle || !got.StateSince.Equal(projection.NewTime(last).Time) {
			t.Fatalf("quiet turn: %s since %v, want idle since %v", got.State, got.StateSince, last)
		}
	})
}

// A session's agent fields are kept as given, and find-or-create by an
// external key answers the session as it is; a session of plan lifetime
// "session" keeps its plan standing across prompts.
func testAgentSession(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		ns := store.NewSession{Title: "agent", Agent: "claude-code", Cwd: "/home/ana/tack", PlanLifetime: projection.PlanSession, ExternalKey: "cc:1"}
		s, created, err := st.CreateSession(ctx, ns)
		if err != nil || !created {
			t.Fatal(created, err)
		}
		if *s.Agent != "claude-code" || *s.Cwd != "/home/ana/tack" || s.ParentID != nil || s.PlanLifetime != projection.PlanSession {
			t.Fatalf("created %+v", s)
		}
		again, created, err := st.CreateSession(ctx, store.NewSession{Title: "other", Agent: "codex", ExternalKey: "cc:1"})
		if err != nil || created || again.ID != s.ID || *again.Agent != "claude-code" || again.PlanLifetime != projection.PlanSession {
			t.Fatalf("found %+v (created %v, %v), want the first as it is", again, created, err)
		}
		plain := newSession(t, st)
		if plain.Agent != nil || plain.Cwd != nil || plain.PlanLifetime != projection.PlanTurn {
			t.Fatalf("plain session %+v, want no agent fields and plan lifetime turn", plain)
		}
		for _, id := range []string{s.ID, plain.ID} {
			append1(t, st, id, evTurnStart, writeTodos("a", projection.StatusInProgress), evTurnEnd)
			res := append1(t, st, id, evTurnStart)
			todos, err := st.Todos(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			h, err := st.History(ctx, id, 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			if want := id == s.ID; todos.Standing != want || h.Snapshot.Standing != want || res.TodosChanged == want {
				t.Fatalf("session %s: after the next prompt standing %v (snapshot %v, changed %v), want %v", id, todos.Standing, h.Snapshot.Standing, res.TodosChanged, want)
			}
		}
	})
}

// Children are listed by their parent, in the list's order, paged and
// searched like the list; a parent must be a session of the same owner,
// and a child refused is not made.
func testChildren(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		parent := newSession(t, st)
		var kids []string
		for _, title := range []string{"explore a", "explore b", "review"} {
			c, _, err := st.CreateSession(ctx, store.NewSession{Title: title, ParentID: parent.ID})
			if err != nil {
				t.Fatal(err)
			}
			if c.ParentID == nil || *c.ParentID != parent.ID {
				t.Fatalf("child %+v, want parentId %s", c, parent.ID)
			}
			kids = append(kids, c.ID)
		}
		newSession(t, st) // not a child
		var got []string
		for cursor := ""; ; {
			page, next, err := st.FindSessions(ctx, store.SessionQuery{Parent: parent.ID, Limit: 2, Cursor: cursor})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range page {
				got = append(got, s.ID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		// In the list's order: the whole list's, keeping the children.
		all, _, err := st.Sessions(ctx, 100, "")
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		for _, s := range all {
			if slices.Contains(kids, s.ID) {
				want = append(want, s.ID)
			}
		}
		if !slices.Equal(got, want) || len(got) != len(kids) {
			t.Fatalf("children %v, want %v", got, want)
		}
		found, _, err := st.FindSessions(ctx, store.SessionQuery{Parent: parent.ID, Title: "explore", Limit: 10})
		if err != nil || len(found) != 2 {
			t.Fatalf("children titled explore: %d (%v), want 2", len(found), err)
		}
		if list, _, _ := st.FindSessions(ctx, store.SessionQuery{Parent: kids[0], Limit: 10}); len(list) != 0 {
			t.Fatalf("a childless session lists %d children", len(list))
		}
		before, _, _ := st.Sessions(ctx, 100, "")
		for _, ns := range []store.NewSession{
			{Title: "stray", ParentID: "ses_missing"},
			{Title: "stray", ParentID: parent.ID, Owner: "prn_other"},
			{Title: "stray", ParentID: parent.ID, Owner: "prn_other", ExternalKey: "k"},
		} {
			if _, _, err := st.CreateSession(ctx, ns); !errors.Is(err, store.ErrNoParent) {
				t.Fatalf("parent %q for owner %q: %v, want ErrNoParent", ns.ParentID, ns.Owner, err)
			}
		}
		after, _, _ := st.Sessions(ctx, 100, "")
		if len(after) != len(before) {
			t.Fatalf("%d sessions after refused children, %d before", len(after), len(before))
		}
	})
}
