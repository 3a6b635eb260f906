package storetest

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/sqlite"
	"github.com/tack-dev/tack/migrations"
)

// seedSummaries makes sessions in every state the summary tells apart and
// returns their summaries as the store reads them.
func seedSummaries(t *testing.T, st store.Store) []store.Session {
	t.Helper()
	ctx := context.Background()
	fresh := newSession(t, st)
	open := newSession(t, st)
	mustAppend(t, st, open.ID, evTurnStart, writeTodos("a", "completed", "b", "in_progress"))
	ended := newSession(t, st)
	mustAppend(t, st, ended.ID, evTurnStart, writeTodos("x", "in_progress"), ev(projection.TypeTurnEnd, `{"reason":"error"}`),
		evTurnStart, ev(projection.TypeTurnEnd, `{"reason":"interrupted"}`), userMsg("after the turn"))
	var out []store.Session
	for _, id := range []string{fresh.ID, open.ID, ended.ID} {
		s, err := st.Session(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if out[1].CurrentItem == nil || *out[1].CurrentItem != "b" || out[2].Turn.EndReason != projection.EndInterrupted {
		t.Fatalf("seeded %+v", out)
	}
	return out
}

// migrateDownUp takes db back to before version, then up again: the
// migration's backfill then rebuilds the columns the down dropped.
func migrateDownUp(t *testing.T, dialect goose.Dialect, db *sql.DB, fsys fs.FS, version int64) {
	t.Helper()
	ctx := context.Background()
	p, err := goose.NewProvider(dialect, db, fsys)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, version-1); err != nil {
		t.Fatal(err)
	}
	if v, _ := p.GetDBVersion(ctx); v != version-1 {
		t.Fatalf("down to version %d, at %d", version-1, v)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
}

// testMigration runs, on each backend, seed on a fresh store, takes its
// database back to before the migration (pgVersion on Postgres,
// sqliteVersion on SQLite) and up again, and runs the check seed returned
// on the store over the migrated database.
func testMigration(t *testing.T, pgVersion, sqliteVersion int64, seed func(t *testing.T, st store.Store) (check func(st store.Store))) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		st := PlainPostgres(t, projection.Config{})
		check := seed(t, st)
		db := stdlib.OpenDBFromPool(st.Pool)
		defer db.Close()
		migrateDownUp(t, goose.DialectPostgres, db, migrations.Postgres, pgVersion)
		// A fresh pool: the old one's prepared statements name the columns' old types.
		st.Pool.Reset()
		check(st)
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "tack.db")
		st, err := sqlite.Open(context.Background(), path, projection.Config{})
		if err != nil {
			t.Fatal(err)
		}
		check := seed(t, st)
		st.Close()
		db, err := sql.Open("sqlite", path+"?_pragma=foreign_keys(1)")
		if err != nil {
			t.Fatal(err)
		}
		migrateDownUp(t, goose.DialectSQLite3, db, migrations.SQLite, sqliteVersion)
		db.Close()
		st, err = sqlite.Open(context.Background(), path, projection.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		check(st)
	})
}

// TestMigrateSessionSummary: the migration that adds currentItem and the
// turn's end reason fills them in for sessions made before it.
func TestMigrateSessionSummary(t *testing.T) {
	testMigration(t, 7, 6, func(t *testing.T, st store.Store) func(store.Store) {
		want := seedSummaries(t, st)
		return func(st store.Store) {
			for _, w := range want {
				got, err := st.Session(context.Background(), w.ID)
				if err != nil || !reflect.DeepEqual(got, w) {
					t.Errorf("after the migration %+v (%v), want %+v", got, err, w)
				}
			}
		}
	})
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
	testMigration(t, 16, 16, func(t *testing.T, st store.Store) func(store.Store) {
		waiting, answered := seedWaits(t, st)
		return func(st store.Store) { checkWaits(t, st, waiting, answered) }
	})
}

// seedKeyTitled makes sessions as Tack made them before titles moved with
// the log: one titled by its raw key that never said anything, one titled
// by its key with a prompt in its log, and one with a title of its own.
func seedKeyTitled(t *testing.T, st store.Store) (quiet, spoke, named store.Session) {
	t.Helper()
	ctx := context.Background()
	mk := func(key, title string) store.Session {
		s, _, err := st.CreateSession(ctx, store.NewSession{ExternalKey: key, Title: title, Agent: "claude-code", Cwd: "/home/ana/webapp/"})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	quiet = mk("claude-code:quiet", "claude-code:quiet")
	mustAppend(t, st, quiet.ID, ev(projection.TypeSessionEnd, `{}`))
	spoke = mk("claude-code:spoke", "claude-code:spoke")
	mustAppend(t, st, spoke.ID, evTurnStart, userMsg("Fix it"))
	named = mk("claude-code:named", "Named")
	mustAppend(t, st, named.ID, evTurnStart, userMsg("Something"))
	return quiet, spoke, named
}

// checkRetitled checks what the migration made of seedKeyTitled's sessions.
func checkRetitled(t *testing.T, st store.Store, quiet, spoke, named store.Session) {
	t.Helper()
	ctx := context.Background()
	for _, s := range []store.Session{quiet, spoke} {
		got, err := st.Session(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := "Claude Code · webapp · " + s.CreatedAt.UTC().Format("15:04") + " UTC"
		if got.Title != want || !got.Untitled {
			t.Errorf("a key-titled session reads %q (untitled %v) after the migration, want %q", got.Title, got.Untitled, want)
		}
	}
	if got, err := st.Session(ctx, named.ID); err != nil || got.Title != "Named" || got.Untitled {
		t.Errorf("a named session reads %q (untitled %v, %v)", got.Title, got.Untitled, err)
	}
	list, _, err := st.FindSessions(ctx, store.SessionQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, s := range list {
		listed[s.ID] = true
	}
	if listed[quiet.ID] || !listed[spoke.ID] || !listed[named.ID] {
		t.Errorf("after the migration the list holds %v: want the quiet session out, the others in", listed)
	}
	// The next prompt titles a session the migration left untitled.
	if res := mustAppend(t, st, quiet.ID, evTurnStart, userMsg("Now say something")); res.Session.Title != "Now say something" {
		t.Errorf("a prompt after the migration titled it %q", res.Session.Title)
	}
}

// TestMigrateSessionTitles: the migration that moves titles with the log
// gives a session titled by its raw key the made-up title, and takes one
// that never said anything out of the list.
func TestMigrateSessionTitles(t *testing.T) {
	testMigration(t, 15, 15, func(t *testing.T, st store.Store) func(store.Store) {
		quiet, spoke, named := seedKeyTitled(t, st)
		return func(st store.Store) { checkRetitled(t, st, quiet, spoke, named) }
	})
}
