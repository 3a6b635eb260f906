package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/storetest"
	"github.com/tack-dev/tack/migrations"
)

// TestWarmPool: a pool made with WarmPool holds its MinConns connections
// when Open returns, before anything has asked for one, and every
// connection it opens, those and any opened later on demand, has the reads
// of the log prepared in its backend (pg_prepared_statements) when it is
// first handed out. Without it a restarted server's first reads each open
// a connection and prepare on it (docs/performance.md).
func TestWarmPool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pc := storetest.PoolConfig(t)
	pc.MaxConns = 6
	postgres.WarmPool(pc, 4)
	pg, err := postgres.Open(ctx, pc, projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	s := pg.Pool.Stat()
	if open := s.TotalConns() - s.ConstructingConns(); open < 4 {
		t.Fatalf("Open returned with %d connections open, want the 4 of MinConns", open)
	}
	// Hold all six: four warmed at start, two opened now.
	var conns []interface{ Release() }
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	want := postgres.WarmStatements()
	for i := range 6 {
		c, err := pg.Pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		var n int
		if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement = ANY($1)`, want).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != len(want) {
			t.Errorf("connection %d: %d of the %d reads prepared", i, n, len(want))
		}
	}
	for _, c := range conns {
		c.Release()
	}
	conns = nil
	// A prepared read is the one a query of its text runs: a page reads.
	sess, _, err := pg.CreateSession(ctx, store.NewSession{Title: "warm"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := pg.Events(ctx, sess.ID, 0, 10); err != nil {
		t.Fatal(err)
	}
	if _, _, err := pg.Events(ctx, "ses_nosuch", 0, 10); err != store.ErrNotFound {
		t.Fatalf("unknown session: %v, want ErrNotFound", err)
	}
}

// TestWarmPoolUpgrades: a warmed pool opens a database an older Tack
// migrated, whose tables lack columns the reads name (events.received_at
// came with migration 10): the reads cannot be prepared until the
// migrations ran, and a connection opened before that (the migration's
// own, or one another instance opens while this one migrates) must not
// fail for it. It failed every upgrade from before migration 10 with
// "column received_at does not exist", and, now and then, the second of
// two instances started together on an empty schema.
func TestWarmPoolUpgrades(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pc := storetest.PoolConfig(t)
	db := stdlib.OpenDB(*pc.ConnConfig)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.Postgres)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	postgres.WarmPool(pc, 2)
	pg, err := postgres.Open(ctx, pc, projection.Config{})
	if err != nil {
		t.Fatalf("open a database at migration 9: %v", err)
	}
	defer pg.Close()
	sess, _, err := pg.CreateSession(ctx, store.NewSession{Title: "upgraded"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pg.History(ctx, sess.ID, 0, 10); err != nil {
		t.Fatalf("read the log after the upgrade: %v", err)
	}
	var n int
	if err := pg.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_prepared_statements WHERE statement = ANY($1)`, postgres.WarmStatements()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != len(postgres.WarmStatements()) {
		t.Errorf("after the upgrade %d of the %d reads are prepared", n, len(postgres.WarmStatements()))
	}
}
