package store_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
	"github.com/tack-dev/tack/migrations"
)

// TestConformanceNeedsYouEndsWithTheNextEvent: the event appended right
// after a wait is marked ends it, even in the mark's own millisecond (a
// tool's result as its permission is granted); the events the log held
// when the mark was set (the question's own call) do not.
func TestConformanceNeedsYouEndsWithTheNextEvent(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
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

// TestConformanceAgentStatus: what the agent's registry says decides
// working or idle while no event is newer: busy is working past
// idle-after, idle is idle with a turn open; a newer event decides again,
// an older one (a transcript line read late) does not; an older status
// is kept out.
func TestConformanceAgentStatus(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
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

// An agent's status set on one instance moves no head, yet another
// instance's cached state must not answer the state from before it: its
// guard finds the status changed, in the one-statement append and in the
// general one.
func TestAgentStatusSeenByAnotherInstance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := twoInstances(t)
	old := projection.NewTime(time.Now().Add(-time.Minute))
	at := func(ne projection.NewEvent) projection.NewEvent { ne.At = &old; return ne }
	for _, next := range []projection.NewEvent{writeTodos("one", "completed"), ev(projection.TypeMessageAssistant, `{"text":"more"}`)} {
		sess, _, err := a.CreateSession(ctx, store.NewSession{Title: "status"})
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, a, sess.ID, at(evTurnStart), at(writeTodos("one", "pending")))
		// a caches the session, working (its turn open a minute ago).
		if res := mustAppend(t, a, sess.ID, at(writeTodos("one", "in_progress"))); res.Session.State != projection.StateWorking {
			t.Fatalf("state %s before the status", res.Session.State)
		}
		if _, err := b.SetAgentStatus(ctx, sess.ID, projection.AgentStatus{Status: projection.AgentIdle, At: projection.NewTime(time.Now())}); err != nil {
			t.Fatal(err)
		}
		// An event older than the status, as a transcript line read late.
		if res := mustAppend(t, a, sess.ID, at(next)); res.Session.State != projection.StateIdle {
			t.Fatalf("%s appended on the other instance answered %s after the agent went idle", next.Type, res.Session.State)
		}
	}
}

// seedWaits makes a session still waiting on its person and one whose
// wait an event has ended since, as Tack marked waits before it kept the
// log's seq with them.
func seedWaits(t *testing.T, st store.Store) (waiting, answered string) {
	t.Helper()
	ctx := context.Background()
	need := projection.NeedsYou{Kind: projection.NeedsQuestion, Message: "Which one?"}
	waiting, answered = newSession(t, st).ID, newSession(t, st).ID
	for _, id := range []string{waiting, answered} {
		mustAppend(t, st, id, evTurnStart)
	}
	if err := st.SetNeedsYou(ctx, waiting, projection.NewTime(time.Now().Add(time.Second)), need); err != nil {
		t.Fatal(err)
	}
	if err := st.SetNeedsYou(ctx, answered, projection.NewTime(time.Now().Add(-time.Minute)), need); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st, answered, userMsg("the first"))
	return waiting, answered
}

// checkWaits checks what the migration made of seedWaits' sessions.
func checkWaits(t *testing.T, st store.Store, waiting, answered string) {
	t.Helper()
	ctx := context.Background()
	if s, err := st.Session(ctx, waiting); err != nil || s.State != projection.StateNeedsYou || s.NeedsYou == nil || s.NeedsYou.Message != "Which one?" {
		t.Errorf("a wait no event followed reads %s (%+v, %v) after the migration, want needs_you", s.State, s.NeedsYou, err)
	}
	if s, err := st.Session(ctx, answered); err != nil || s.State != projection.StateWorking {
		t.Errorf("a wait an event ended reads %s (%v) after the migration, want working", s.State, err)
	}
	// The next event ends the wait that stands.
	if res := mustAppend(t, st, waiting, userMsg("the second")); res.Session.State != projection.StateWorking {
		t.Errorf("an answer after the migration left it %s", res.Session.State)
	}
	if s, _ := st.Session(ctx, waiting); s.State != projection.StateWorking {
		t.Errorf("after the answer it reads %s", s.State)
	}
}

// TestMigrateNeedsYouSeq: the migration that keeps the log's seq with a
// wait keeps the waits no event has followed, and no other.
func TestMigrateNeedsYouSeq(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		st := storetest.PlainPostgres(t, projection.Config{})
		waiting, answered := seedWaits(t, st)
		db := stdlib.OpenDBFromPool(st.Pool)
		defer db.Close()
		migrateDownUp(t, goose.DialectPostgres, db, migrations.Postgres, 16)
		st.Pool.Reset()
		checkWaits(t, st, waiting, answered)
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "tack.db")
		st, err := store.OpenSQLite(context.Background(), path, projection.Config{})
		if err != nil {
			t.Fatal(err)
		}
		waiting, answered := seedWaits(t, st)
		st.Close()
		db, err := sql.Open("sqlite", path+"?_pragma=foreign_keys(1)")
		if err != nil {
			t.Fatal(err)
		}
		migrateDownUp(t, goose.DialectSQLite3, db, migrations.SQLite, 16)
		db.Close()
		st, err = store.OpenSQLite(context.Background(), path, projection.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		checkWaits(t, st, waiting, answered)
	})
}
