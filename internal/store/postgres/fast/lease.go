package fast

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/internal/engine"
	"github.com/tack-dev/tack/internal/store/postgres"
)

// Read leases: the fast store answers a session's todo list (GET /todos)
// from memory while it holds the session's read lease, and stays strongly
// consistent on any number of instances: a read that starts after a write
// was acknowledged, on any instance, sees it.
//
// A lease is a row of read_leases naming the instance (migration 00013),
// which expires on Postgres' clock leaseTerm after it was taken or last
// renewed. The rules that make it safe:
//
//   - Every change of a list's view, by any writer, runs the trigger
//     tack_lease_guard holding the list's row lock (Postgres locks the row
//     before a BEFORE UPDATE trigger runs, whatever the statement). It deletes an expired
//     lease of another instance and fails the transaction (TK003) while an
//     unexpired one stands. The writer (postgres.Store.WhileLeased) then asks the holder
//     to let go, by a NOTIFY naming the session, and tries again: nothing
//     of the failed attempt was kept. A holder that never answers holds up
//     the writer until its lease expires: at most leaseTerm.
//   - An instance takes leases with the lists' row locks shared (FOR
//     SHARE), so a lease and a write of its session are ordered: a write
//     committed first is in every read after the lease, and a write after
//     it sees the lease. It renews only rows that still stand, and a writer
//     deletes a row only once it expired.
//   - The holder fills its copy from an ordinary read of Postgres made
//     while it held the lease, and keeps it only when nothing that could
//     change the list happened meanwhile on this instance (the copies'
//     epochs, engine.Copies: every local write, revoke and loss moves the
//     session's). Its own writes pass the trigger (the connection's
//     tack.instance names it) and move the epoch before they answer.
//   - It answers from memory only until leaseTerm−leaseMargin after it
//     sent the statement that took or last renewed the lease, measured on
//     its own monotonic clock (store.Clock's Instant), so before any
//     writer can see the row expired; and only while its listener hears
//     its own pings, since a deaf holder would hold writers up to the
//     lease's end.
//   - An append of this instance that fails may yet commit (a COMMIT whose
//     answer was lost): the session's lease is given up at once, and a new
//     one can only be taken once that transaction ended, since taking it
//     waits for the row lock.
//
// Only sessions read at least leaseHot times within a second are leased, so
// a session read once costs no write; and a lease not read for a renewal
// period is released.

const (
	// leaseTerm is how long a lease stands after it was taken or renewed.
	leaseTerm = 2 * time.Second
	// leaseMargin is how long before that its holder stops serving.
	leaseMargin = 500 * time.Millisecond
	// leaseTick is how often leases are renewed (and idle ones released)
	// and the listener pinged.
	leaseTick = 400 * time.Millisecond
	// leaseQuiet is how long a session whose lease was revoked, lost or
	// refused is not sought again.
	leaseQuiet = time.Second
	// leaseHot is the reads within a second that make a session worth
	// leasing.
	leaseHot = 2
	// leaseEntries bounds the sessions tracked, leased ones kept first
	// (the copies are bounded as engine.Copies bounds them).
	leaseEntries = 16384
	// leaseSweepTicks is how many renewal ticks pass between two sweeps of
	// the leases of instances gone for a minute: 150 ticks of leaseTick
	// are one minute, so a sweep deletes rows at least a minute past their
	// term, and costs one statement a minute.
	leaseSweepTicks = int(time.Minute / leaseTick)
)

type leaseEntry struct {
	// gen moves with every revoke and loss: a lease taken or renewed is
	// kept only when it did not move meanwhile. (The copy's epoch, which
	// every local write moves too, is the copies'.)
	gen uint64
	// held: the lease stands until until (on the store's clock).
	held  bool
	until time.Time
	// read since the last renewal.
	read bool
	// reads counted since readsAt, while not held.
	reads   int
	readsAt time.Time
	// seeking: an acquire is asked or in flight; none before quietUntil.
	seeking    bool
	quietUntil time.Time
}

type leases struct {
	pool *pgxpool.Pool
	// clock is the store's (store.Clock): the terms, ticks and back-offs
	// run on it, so that a test moves it rather than waiting.
	clock             func() store.Clock
	cc                *pgx.ConnConfig
	instance, channel string

	mu      sync.Mutex
	entries map[string]*leaseEntry
	// copies are the lists read while held, each kept only when the
	// session's epoch did not move during its read; l.mu is taken before
	// the copies' own lock, never after.
	copies *engine.Copies
	// heard: the listener listens and heard its last ping.
	heard bool
	// listening: the listener listens (a test's signal to move the clock).
	listening atomic.Bool

	wake     chan struct{}
	stop     chan struct{}
	started  sync.Once
	stopped  sync.Once
	routines sync.WaitGroup

	pings    atomic.Uint64 // the last ping sent
	pingSeen atomic.Uint64 // the last of ours heard

	served, taken, revoked atomic.Int64
}

func newLeases(p *postgres.Store) *leases {
	return &leases{
		pool: p.Pool, clock: p.Clock, cc: p.Pool.Config().ConnConfig, instance: p.Instance(), channel: p.LeaseChannel(),
		entries: make(map[string]*leaseEntry), copies: engine.NewCopies(), wake: make(chan struct{}, 1), stop: make(chan struct{}),
	}
}

// start starts the listener, the renewer and the acquirer, once, on the
// first read.
func (l *leases) start() {
	l.started.Do(func() {
		l.routines.Add(3)
		go l.listen()
		go l.renew(l.now())
		go l.acquire()
	})
}

// close stops them and gives up every lease.
func (l *leases) close() {
	l.stopped.Do(func() {
		close(l.stop)
		l.routines.Wait()
		if ids := l.dropAll(); len(ids) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			l.release(ctx, ids)
		}
	})
}

// serve answers session id's list from memory, when it holds a fresh copy.
func (l *leases) serve(id string) (projection.Todos, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries[id]
	if e == nil || !e.held || !l.heard || !l.now().Before(e.until) {
		return projection.Todos{}, false
	}
	t, ok := l.copies.Get(id)
	if !ok {
		return projection.Todos{}, false
	}
	e.read = true
	l.served.Add(1)
	return t, true
}

// leaseRead is what fill needs of a read begun by begin.
type leaseRead struct {
	epoch uint64
	held  bool
}

// begin notes a read of session id about to go to Postgres: it counts
// towards seeking a lease, and when one is held its result may fill the
// copy (fill).
func (l *leases) begin(id string) leaseRead {
	l.start()
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entry(id)
	if e.held && now.Before(e.until) {
		e.read = true
		return leaseRead{epoch: l.copies.Begin(id), held: true}
	}
	if now.Sub(e.readsAt) > time.Second {
		e.reads, e.readsAt = 0, now
	}
	e.reads++
	if e.reads >= leaseHot && !e.seeking && !e.held && now.After(e.quietUntil) && l.heard {
		e.seeking = true
		select {
		case l.wake <- struct{}{}:
		default:
		}
	}
	return leaseRead{}
}

// fill keeps the list a read begun by r found, when the lease was held all
// along and nothing moved the session's epoch.
func (l *leases) fill(id string, r leaseRead, todos projection.Todos) {
	if !r.held {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e := l.entries[id]; e != nil && e.held {
		l.copies.Fill(id, r.epoch, todos)
	}
}

// wrote notes a committed write of session id on this instance: the copy
// is dropped; the lease stands.
func (l *leases) wrote(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.entries[id] != nil {
		l.copies.Wrote(id)
	}
}

// lose gives up session id's lease: another instance asked for it
// (asked, from the listener), or a write here failed and may yet commit.
// Its row is deleted before lose returns; when asked, whether or not this
// instance still knows of it, since a writer asks again while a row stands
// (release may have skipped it).
func (l *leases) lose(ctx context.Context, id string, asked bool) {
	l.mu.Lock()
	had := asked
	if e := l.entries[id]; e != nil {
		had = had || e.held || e.seeking
		l.forget(id, e)
		e.quietUntil = l.now().Add(leaseQuiet)
	}
	l.mu.Unlock()
	if had {
		l.release(ctx, []string{id})
	}
}

// dropAll gives up every lease locally and returns the sessions.
func (l *leases) dropAll() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var ids []string
	for id, e := range l.entries {
		if e.held || e.seeking {
			ids = append(ids, id)
		}
		l.forget(id, e)
	}
	return ids
}

// forget ends session id's lease, entry e, and drops its copy; l.mu is
// held.
func (l *leases) forget(id string, e *leaseEntry) {
	e.gen++
	e.held, e.seeking = false, false
	l.copies.Wrote(id)
}

// entry is session id's entry, made when missing; l.mu is held. Past
// leaseEntries, the entries holding nothing are forgotten.
func (l *leases) entry(id string) *leaseEntry {
	e := l.entries[id]
	if e != nil {
		return e
	}
	if len(l.entries) >= leaseEntries {
		for k, v := range l.entries {
			if !v.held && !v.seeking {
				delete(l.entries, k)
			}
		}
	}
	e = &leaseEntry{}
	l.entries[id] = e
	return e
}

// release deletes this instance's leases of ids.
//
// No lease statement waits for a row lock (SKIP LOCKED; and read_leases
// has no foreign key, whose check would wait for an append's session lock): writers hold a
// session's row and then its list's, and a statement locking many lists or
// leases in turn while waiting would close a cycle with them (a deadlock
// Postgres breaks by failing a write: the fault suite's two instances met
// it). A row skipped is simply not taken, renewed or deleted this time: a
// lease not taken is sought later, one not renewed runs out, and one not
// deleted is deleted when its writer asks again, or expires.
func (l *leases) release(ctx context.Context, ids []string) {
	_, _ = l.pool.Exec(ctx, `DELETE FROM read_leases WHERE instance = $1 AND session_id IN (
		SELECT session_id FROM read_leases WHERE instance = $1 AND session_id = ANY($2) FOR UPDATE SKIP LOCKED)`, l.instance, ids)
}

// listen keeps a connection listening on the lease channel: a revoke
// names a session another instance waits to write; a ping of ours tells
// that the listener still hears. While it is down nothing is served.
func (l *leases) listen() {
	defer l.routines.Done()
	for {
		l.listenOnce()
		l.deaf()
		select {
		case <-l.stop:
			return
		case <-l.clock().After(time.Second):
		}
	}
}

func (l *leases) listenOnce() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-l.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	nc, err := postgres.ConnectNotify(ctx, l.cc, "tack leases", l.channel)
	if err != nil {
		return
	}
	defer nc.Close()
	if err := nc.Listen(ctx); err != nil {
		return
	}
	l.listening.Store(true)
	defer l.listening.Store(false)
	pingPrefix := "p " + l.instance + " "
	for {
		payload, err := nc.Wait(ctx)
		if err != nil {
			return
		}
		switch {
		case strings.HasPrefix(payload, "r "):
			l.revoked.Add(1)
			rctx, rcancel := context.WithTimeout(ctx, time.Second)
			l.lose(rctx, payload[2:], true)
			rcancel()
		case strings.HasPrefix(payload, pingPrefix):
			if n, err := strconv.ParseUint(payload[len(pingPrefix):], 10, 64); err == nil {
				l.pingSeen.Store(n)
				l.mu.Lock()
				l.heard = n == l.pings.Load()
				l.mu.Unlock()
			}
		}
	}
}

// deaf stops serving: the listener may have missed a revoke.
func (l *leases) deaf() {
	l.mu.Lock()
	l.heard = false
	l.mu.Unlock()
	if ids := l.dropAll(); len(ids) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		l.release(ctx, ids)
	}
}

// renew pings the listener, renews the leases read since the last tick and
// releases the others, every leaseTick. As a ticker, it keeps its pace
// whatever a tick takes, but a tick late by more than a period is not made
// up for: the next one follows a period after it. The first tick is a
// period after from, the time start started it, so that a test moving the
// clock once start returned moves it.
func (l *leases) renew(from time.Time) {
	defer l.routines.Done()
	next := from
	for ticks := 0; ; ticks++ {
		next = next.Add(leaseTick)
		if now := l.now(); next.Before(now) {
			next = now
		}
		select {
		case <-l.stop:
			return
		case <-l.clock().After(next.Sub(l.now())):
		}
		ctx, cancel := context.WithTimeout(context.Background(), leaseTick)
		l.tick(ctx, ticks)
		cancel()
	}
}

func (l *leases) tick(ctx context.Context, ticks int) {
	// The last ping must have come back within a tick.
	if sent := l.pings.Load(); sent > 0 && l.pingSeen.Load() != sent {
		l.deaf()
	}
	n := l.pings.Add(1)
	if _, err := l.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, l.channel, "p "+l.instance+" "+strconv.FormatUint(n, 10)); err != nil {
		l.deaf()
		return
	}
	gens := map[string]uint64{}
	var idle []string
	l.mu.Lock()
	for id, e := range l.entries {
		switch {
		case e.held && e.read:
			gens[id] = e.gen
			e.read = false
		case e.held:
			l.forget(id, e)
			idle = append(idle, id)
		}
	}
	l.mu.Unlock()
	if len(idle) > 0 {
		l.release(ctx, idle)
	}
	if ticks%leaseSweepTicks == leaseSweepTicks-1 {
		// Leases of instances gone for a minute.
		_, _ = l.pool.Exec(ctx, `DELETE FROM read_leases WHERE expires_at < now() - interval '1 minute' AND session_id IN (
			SELECT session_id FROM read_leases WHERE expires_at < now() - interval '1 minute' FOR UPDATE SKIP LOCKED)`)
	}
	if len(gens) == 0 {
		return
	}
	ids := make([]string, 0, len(gens))
	for id := range gens {
		ids = append(ids, id)
	}
	sent := l.now()
	rows, err := l.pool.Query(ctx, `UPDATE read_leases SET expires_at = now() + $3 * interval '1 millisecond'
		WHERE instance = $1 AND session_id IN (
			SELECT session_id FROM read_leases WHERE instance = $1 AND session_id = ANY($2) FOR UPDATE SKIP LOCKED)
		RETURNING session_id`, l.instance, ids, leaseTerm.Milliseconds())
	renewed, err := scanIDs(rows, err)
	l.mu.Lock()
	defer l.mu.Unlock()
	for id, g := range gens {
		e := l.entries[id]
		if e == nil || e.gen != g {
			continue
		}
		if _, ok := renewed[id]; ok && err == nil {
			e.until = sent.Add(leaseTerm - leaseMargin)
		} else if err == nil {
			// The row is gone: the lease with it.
			l.forget(id, e)
		}
		// On an error the lease runs out by itself at until.
	}
}

// acquire takes the leases sought, in one statement for all that are
// sought together.
func (l *leases) acquire() {
	defer l.routines.Done()
	for {
		select {
		case <-l.stop:
			return
		case <-l.wake:
		}
		gens := map[string]uint64{}
		l.mu.Lock()
		for id, e := range l.entries {
			if e.seeking && !e.held {
				gens[id] = e.gen
			}
		}
		l.mu.Unlock()
		if len(gens) == 0 {
			continue
		}
		ids := make([]string, 0, len(gens))
		for id := range gens {
			ids = append(ids, id)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		sent := l.now()
		rows, err := l.pool.Query(ctx, `WITH locked AS (SELECT session_id AS id FROM todo_lists WHERE session_id = ANY($1) ORDER BY session_id FOR SHARE SKIP LOCKED)
			INSERT INTO read_leases (session_id, instance, expires_at)
			SELECT id, $2, now() + $3 * interval '1 millisecond' FROM locked
			ON CONFLICT (session_id) DO UPDATE SET instance = excluded.instance, expires_at = excluded.expires_at
			WHERE read_leases.instance = excluded.instance OR read_leases.expires_at <= now()
			RETURNING session_id`, ids, l.instance, leaseTerm.Milliseconds())
		taken, err := scanIDs(rows, err)
		var stale []string
		l.mu.Lock()
		for id, g := range gens {
			_, ok := taken[id]
			e := l.entries[id]
			switch {
			case e == nil || e.gen != g:
				// Revoked, lost or forgotten meanwhile: give it back.
				if ok {
					stale = append(stale, id)
				}
			case ok && err == nil:
				l.copies.Wrote(id)
				e.held, e.until, e.seeking = true, sent.Add(leaseTerm-leaseMargin), false
				e.read = true
				l.taken.Add(1)
			default:
				e.seeking = false
				e.quietUntil = l.now().Add(leaseQuiet)
			}
		}
		l.mu.Unlock()
		if len(stale) > 0 {
			l.release(ctx, stale)
		}
		cancel()
	}
}

// now is the present on the store's clock, for spans (store.Clock's
// Instant).
func (l *leases) now() time.Time { return l.clock().Instant() }

// scanIDs collects the ids rows returns.
func scanIDs(rows pgx.Rows, err error) (map[string]struct{}, error) {
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	set := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		set[id] = struct{}{}
	}
	return set, err
}
