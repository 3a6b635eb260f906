package store_test

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
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

// TestMigrateSessionSummary: the migration that adds currentItem and the
// turn's end reason fills them in for sessions made before it.
func TestMigrateSessionSummary(t *testing.T) {
	t.Parallel()
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		st := storetest.Postgres(t, projection.Config{})
		want := seedSummaries(t, st)
		db := stdlib.OpenDBFromPool(st.Pool)
		defer db.Close()
		migrateDownUp(t, goose.DialectPostgres, db, migrations.Postgres, 7)
		// A fresh pool: the old one's prepared statements name the columns' old types.
		st.Pool.Reset()
		for _, w := range want {
			got, err := st.Session(context.Background(), w.ID)
			if err != nil || !reflect.DeepEqual(got, w) {
				t.Errorf("after the migration %+v (%v), want %+v", got, err, w)
			}
		}
	})
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(t.TempDir(), "tack.db")
		st, err := store.OpenSQLite(context.Background(), path, projection.Config{})
		if err != nil {
			t.Fatal(err)
		}
		want := seedSummaries(t, st)
		st.Close()
		db, err := sql.Open("sqlite", path+"?_pragma=foreign_keys(1)")
		if err != nil {
			t.Fatal(err)
		}
		migrateDownUp(t, goose.DialectSQLite3, db, migrations.SQLite, 6)
		db.Close()
		st, err = store.OpenSQLite(context.Background(), path, projection.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for _, w := range want {
			got, err := st.Session(context.Background(), w.ID)
			if err != nil || !reflect.DeepEqual(got, w) {
				t.Errorf("after the migration %+v (%v), want %+v", got, err, w)
			}
		}
	})
}
