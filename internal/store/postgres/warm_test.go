package postgres_test

import (
	"context"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/storetest"
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
