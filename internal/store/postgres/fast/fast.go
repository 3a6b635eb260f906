// Package fast is the fast layer of the Postgres store: the same contract
// from the same database in fewer round trips (an append cache, group
// commit, batched reads of todo lists, and the holders' half of the read
// leases). It reaches the plain store only through the plain store's
// exported seam (store/postgres's seam.go); -pg-fast=false serves without
// it.
package fast

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/internal/engine"
	"github.com/tack-dev/tack/internal/store/postgres"
)

// Store is the Postgres store with the fast path, a layer on the plain
// store that serves the same contract from the same database in fewer
// round trips. It adds four things, each in a file of its own:
//
//   - the append cache (cache.go): an append to a session this store
//     appended to before runs from the state it left, in one round trip
//     whose first statement checks that the log still ends there; when it
//     does not, or the cached state would reject the batch, the append runs
//     the plain store's locking way, which decides;
//   - group commit (group.go): cached appends of different sessions
//     arriving together are committed in one transaction;
//   - batched reads (reads.go): reads of todo lists arriving together are
//     one query, and a list read unchanged is not decoded again
//     (decoded.go);
//   - read leases (lease.go): a session's list is answered from memory
//     while this instance holds the session's read lease.
//
// Everything else is the plain store's. -pg-fast=false serves from the
// plain store alone.
type Store struct {
	*postgres.Store
	// cache is the state each session's last append here left.
	cache *appendCache
	// group commits cached appends of many sessions together.
	group *groupCommit
	// reads reads todo lists asked together in one query.
	reads *todoReads
	// leases answers the lists of sessions it holds a read lease of from
	// memory (lease.go); nil when the store has no instance name.
	leases *leases
	// oneStatements counts the appends committed as pgAppendOne.
	oneStatements atomic.Int64
}

var _ store.Store = (*Store)(nil)

// New puts the fast path on p.
func New(p *postgres.Store) *Store {
	f := &Store{Store: p, cache: newAppendCache()}
	f.group = newGroupCommit(p.Pool, f.committed)
	f.reads = newTodoReads(p.Pool)
	if p.Instance() != "" {
		f.leases = newLeases(p)
	}
	return f
}

// Close gives up the store's read leases and closes its pool.
func (f *Store) Close() {
	if f.leases != nil {
		f.leases.close()
	}
	f.Store.Close()
}

// Append appends a batch as the plain store does, from the cached state when
// the store holds a usable one: in a group with the cached appends of other
// sessions, else alone in one round trip, else the plain store's locking
// way on the same connection.
//
// A write refused because another instance holds the session's read lease
// asks it to let go and runs again (WhileLeased). A committed change of the
// list drops this instance's copy of it, and an append that failed (not
// one refused outright) gives up its lease, before Append answers.
func (f *Store) Append(ctx context.Context, id string, req store.AppendRequest) (store.AppendResult, error) {
	res, err := f.WhileLeased(ctx, id, func() (store.AppendResult, error) { return f.appendOnce(ctx, id, req) })
	if f.leases != nil {
		switch {
		case err != nil && !engine.Refused(err):
			// It may yet commit (a COMMIT whose answer was lost). The lease
			// is dropped here at once; deleting its row is bounded, since
			// the database may be what failed.
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			f.leases.lose(lctx, id, false)
			cancel()
		case res.TodosChanged:
			f.leases.wrote(id)
		}
	}
	return res, postgres.Err(err)
}

// appendOnce is one try of Append; its error is as Postgres gave it.
func (f *Store) appendOnce(ctx context.Context, id string, req store.AppendRequest) (store.AppendResult, error) {
	a := f.prepareCached(id, req)
	if a != nil {
		err := f.group.commit(ctx, a)
		if err == nil {
			return a.res, nil
		}
		if !errors.Is(err, errAlone) {
			f.cache.drop(id)
			return store.AppendResult{}, err
		}
		a = f.prepareCached(id, req)
	}
	conn, err := f.Pool.Acquire(ctx)
	if err != nil {
		return store.AppendResult{}, err
	}
	defer postgres.Release(conn)
	if a != nil {
		if res, done, err := f.appendCached(ctx, conn.Conn(), a); done {
			return res, err
		}
	}
	res, tx, err := f.AppendLocked(ctx, conn.Conn(), id, req)
	switch {
	case err == nil && tx.Wrote:
		f.cache.put(id, cachedState{sess: res.Session, st: tx.Next, items: tx.Items})
	case err != nil || tx.Seen:
		f.cache.drop(id)
	}
	return res, err
}

// Todos reads the todos projection: from memory while this instance holds
// the session's read lease and a copy read under it (lease.go), else
// through the batched reads.
func (f *Store) Todos(ctx context.Context, id string) (projection.Todos, error) {
	if f.leases == nil {
		st, err := f.TodoList(ctx, id)
		return st.Todos(id), err
	}
	if t, ok := f.leases.serve(id); ok {
		return t, nil
	}
	r := f.leases.begin(id)
	st, err := f.TodoList(ctx, id)
	if err != nil {
		return projection.Todos{}, err
	}
	t := st.Todos(id)
	f.leases.fill(id, r, t)
	return t, nil
}

// TodoList reads the todo side of the projection: one point read, in one
// query with the other reads of todo lists asked at the same time.
func (f *Store) TodoList(ctx context.Context, id string) (projection.State, error) {
	st, err := f.reads.read(ctx, id)
	return st, postgres.Err(err)
}

// TodoRead reads the list for todo_read through the batched reads and marks
// the version it answers as seen.
func (f *Store) TodoRead(ctx context.Context, id string) (projection.Todos, error) {
	todos, marked, err := f.ReadTodos(ctx, id, f.TodoList)
	if marked {
		// The cached state's seen mark is behind now: the next append's
		// check would fail; dropping it spares that append the wasted
		// round trip.
		f.cache.drop(id)
	}
	return todos, err
}

// Rename renames as the plain store does, and forgets the session's cached
// state, whose title it changed (the guard would find it stale anyway).
func (f *Store) Rename(ctx context.Context, id, title string) (store.Session, error) {
	s, err := f.Store.Rename(ctx, id, title)
	f.cache.drop(id)
	return s, err
}

// SetAgentStatus sets the status as the plain store does, and forgets the
// session's cached state, whose status it changed (the guard would find it
// stale anyway).
func (f *Store) SetAgentStatus(ctx context.Context, id string, status projection.AgentStatus) (store.Session, error) {
	s, err := f.Store.SetAgentStatus(ctx, id, status)
	f.cache.drop(id)
	return s, err
}
