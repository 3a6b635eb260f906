// Package warm opens a Postgres store's first connections before it
// serves and warms each backend once, as its connection opens.
package warm

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tack-dev/tack/internal/store/postgres/internal/pgerr"
)

// A Postgres backend is a process of its own, and a new one reads its
// first large page at several times the CPU of every later one: each value
// it detoasts (a message of up to 256 KiB) and each row message it builds
// is a malloc over glibc's initial mmap threshold of 128 KiB, so it is
// mapped, zero-filled by the kernel page by page and unmapped again, until
// frees of larger and larger chunks have raised the threshold (glibc's
// dynamic threshold) and the backend's heap has grown to hold them. A first
// page of 1 MiB costs a fresh backend about 4,000 page faults and 0.1 s of
// CPU (a third of it in the kernel), a warm one 270 faults and 0.025 s;
// on a loaded machine the difference is seconds (docs/performance.md).
//
// Pool opens the first connections before the store is served and
// warms each backend once, when its connection is opened, with one
// allocation larger than any a page makes: freeing it raises the threshold
// over them all, so the backend's first real page runs as its hundredth.

// warmAlloc is the allocation that warms a backend: 4 MiB, the largest
// request body, over every value a page detoasts and every message it
// builds.
const warmAlloc = 4 << 20

// warmSQL makes a backend allocate, touch and free warmAlloc bytes, and
// returns nothing of them.
var warmSQL = `SELECT octet_length(repeat('x', ` + strconv.Itoa(warmAlloc) + `))`

// Pool makes pc's pool open min(n, MaxConns) connections before the
// store's Open returns, and keep them open (MinConns), and warms every
// connection the pool opens, these and any later ones, once (AfterConnect,
// after pc's own hook, if any), preparing reads on it.
func Pool(pc *pgxpool.Config, n int32, reads []string) {
	pc.MinConns = max(0, min(n, pc.MaxConns))
	after := pc.AfterConnect
	pc.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, conn); err != nil {
				return err
			}
		}
		return warmConn(ctx, conn, reads)
	}
}

// warmConn warms one new connection's backend, then prepares the reads on
// it (reads). Each is prepared under its own text as its name, which is how pgx
// finds it: a query of that text runs the prepared statement. Until the
// migrations ran there may be nothing to prepare them on (an empty schema)
// or tables without the columns they read (a database an older Tack
// migrated, or one another instance is migrating): the connection is
// warmed alone, and Start prepares the reads once the migrations ran.
func warmConn(ctx context.Context, conn *pgx.Conn, reads []string) error {
	if _, err := conn.Exec(ctx, warmSQL, pgx.QueryExecModeSimpleProtocol); err != nil {
		return err
	}
	err := prepareReads(ctx, conn, reads)
	if e := (*pgconn.PgError)(nil); errors.As(err, &e) && strings.HasPrefix(e.Code, "42") {
		// Class 42, syntax error or access rule violation: a table,
		// column, function or type the reads name is not there yet.
		return nil
	}
	return err
}

// prepareReads prepares the reads on conn anew: the statements it held,
// prepared while a migration may have been changing the tables they read,
// are deallocated first.
func prepareReads(ctx context.Context, conn *pgx.Conn, reads []string) error {
	if err := conn.DeallocateAll(ctx); err != nil {
		return err
	}
	for _, sql := range reads {
		if _, err := conn.Prepare(ctx, sql, sql); err != nil {
			return err
		}
	}
	return nil
}

// Start waits until the pool holds its MinConns connections, opened
// (and warmed) in the background since the pool was made, or until ctx
// ends or within, whichever is first, and then prepares the reads on each
// of them anew, the migrations being done. A pool that cannot open them
// all still serves, opening connections as requests need them.
func Start(ctx context.Context, pool *pgxpool.Pool, within time.Duration, reads []string) error {
	want := pool.Config().MinConns
	if want <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		s := pool.Stat()
		if s.TotalConns()-s.ConstructingConns() >= want {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
	// Holding every idle connection at once, each is a different one.
	conns := pool.AcquireAllIdle(ctx)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for _, c := range conns {
		if err := prepareReads(ctx, c.Conn(), reads); err != nil {
			return pgerr.Map(err)
		}
	}
	return nil
}
