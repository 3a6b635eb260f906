package fast

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tack-dev/tack/internal/store/postgres"
)

// Group commit: appends that take the cached way (cache.go) and arrive
// together, to different sessions, are committed in one transaction: one
// pipeline of BEGIN, each member's guarded statements as it would send them
// alone, and one COMMIT, so Postgres pays one commit and one WAL flush for
// the group and this process one round trip.
//
// Groups form as batch.go's batcher forms them: at one client every
// append is a group of one, and groups grow with the load.
//
// A group's members are sorted by session, so that two groups lock their
// sessions' rows in one order and never deadlock. A session queued twice
// sends its second append alone once the group has answered (the first
// one's commit moved the head its guard expects). When Postgres fails the
// group's transaction — a member's guard missed (another instance
// appended), or any statement failed — nothing of it was kept, and every
// member runs again alone, the way it would have without the group: from
// the cached state in one round trip, else the locking way. A failure to
// reach Postgres is every member's answer, as it would be alone. Each
// member answers only once the group's COMMIT has answered.

// GroupFlights is how many groups may be in flight at once, each on a
// connection of its own, for a process on cores cores with a pool of
// maxConns: one per core, at least minGroupFlights, at most half the pool.
//
// A group's statements run one after another in one backend, so Postgres
// works on at most as many appends at once as there are groups in flight:
// at two, on 16 cores, Tack's Postgres was busy on 1.7 of them while
// pgbench, with a backend per client, kept it on 11, and Tack wrote 0.3×
// pgbench's rate of the same statements. One flight per core lets Postgres
// overlap the groups as it overlaps pgbench's transactions. On few cores
// the two flights stay, and fewer, larger groups spend less of Postgres'
// CPU on commits: four in flight on 2 cores cost Postgres 570–590 µs a
// call against 356–424 with two, and one serialises the WAL flushes. The
// cores counted are this process's (GOMAXPROCS): the benchmark's Postgres
// shares them, and one on a machine of its own with more is served as
// well as it was with two. Half the pool is left to reads, appends that
// run alone and the read leases, which the groups would otherwise keep
// waiting on the pool.
func GroupFlights(cores int, maxConns int32) int {
	return max(minGroupFlights, min(cores, int(maxConns)/2))
}

// minGroupFlights is the fewest groups in flight; groupMembers the most
// appends in one group.
const (
	minGroupFlights = 2
	groupMembers    = 64
)

// errAlone tells a member of a group to run again alone.
var errAlone = errors.New("store: run the append alone")

type groupMember struct {
	ctx  context.Context
	a    *cachedAppend
	done chan error
}

type groupCommit struct {
	pool *pgxpool.Pool
	// committed notes a committed member's state in the cache.
	committed func(*cachedAppend)
	batcher[*groupMember]
}

func newGroupCommit(pool *pgxpool.Pool, committed func(*cachedAppend)) *groupCommit {
	g := &groupCommit{pool: pool, committed: committed}
	flights := GroupFlights(runtime.GOMAXPROCS(0), pool.Config().MaxConns)
	g.batcher = batcher[*groupMember]{flights: flights, max: groupMembers, send: g.send}
	return g
}

// commit commits a in a group: nil once committed, errAlone when it must run
// alone, or the error that failed it.
func (g *groupCommit) commit(ctx context.Context, a *cachedAppend) error {
	m := &groupMember{ctx: ctx, a: a, done: make(chan error, 1)}
	g.add(m)
	select {
	case err := <-m.done:
		return err
	case <-ctx.Done():
		// The group may still commit it: the outcome is unknown, as it is
		// for an append alone whose context ends during its COMMIT.
		return ctx.Err()
	}
}

// send commits one group and answers each member.
func (g *groupCommit) send(group []*groupMember) {
	slices.SortFunc(group, func(x, y *groupMember) int { return strings.Compare(x.a.id, y.a.id) })
	var members, again []*groupMember
	for i, m := range group {
		if i > 0 && m.a.id == group[i-1].a.id {
			again = append(again, m)
			continue
		}
		members = append(members, m)
	}
	ctxs := make([]context.Context, len(members))
	for i, m := range members {
		ctxs[i] = m.ctx
	}
	ctx, done := whileAnyWaits(ctxs)
	defer done()
	err := g.exec(ctx, members)
	var pe *pgconn.PgError
	if err != nil && errors.As(err, &pe) {
		// Postgres failed the transaction: none of it was kept.
		err = errAlone
	}
	for _, m := range members {
		if err == nil {
			g.committed(m.a)
		}
		m.done <- err
	}
	// A session's second append runs alone once its first has committed
	// (or failed), from the state the first left in the cache.
	for _, m := range again {
		m.done <- errAlone
	}
}

func (g *groupCommit) exec(ctx context.Context, members []*groupMember) error {
	conn, err := g.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer postgres.Release(conn)
	batch := &pgx.Batch{}
	batch.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	for _, m := range members {
		m.a.queue(batch)
	}
	batch.Queue("COMMIT")
	return conn.Conn().SendBatch(ctx, batch).Close()
}
