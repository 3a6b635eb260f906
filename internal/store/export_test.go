package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

// WarmStatements are the reads WarmPool prepares on every connection.
var WarmStatements = warmStatements

// PgPruneIdempotent is the Postgres prune of expired idempotency keys.
const PgPruneIdempotent = pgPruneIdempotent

// SeedSQLite appends n events to session id in ONE write transaction,
// batch after batch through the same append path as Append (apply, then
// multi-row inserts), so a million-event log is valid and quick to build.
// next returns the i-th event to append. For benchmarks at depth.
func SeedSQLite(ctx context.Context, s *SQLite, id string, n int, next func(i int) projection.NewEvent) error {
	const batch = 5000
	return s.write(ctx, func(tx *sql.Tx) error {
		for done := 0; done < n; {
			events := make([]projection.NewEvent, 0, batch)
			for ; len(events) < batch && done < n; done++ {
				events = append(events, next(done))
			}
			if _, err := appendIn(ctx, sqliteAppend{tx, s.cfg}, id, AppendRequest{Events: events}, s.cfg); err != nil {
				return err
			}
		}
		return nil
	})
}

// AgeIdempotencyKeys makes every stored Idempotency-Key of st d older, as if
// that much time had passed since the appends that made them.
func AgeIdempotencyKeys(ctx context.Context, st Store, d time.Duration) error {
	if f, ok := st.(*Fast); ok {
		st = f.Postgres
	}
	switch s := st.(type) {
	case *Postgres:
		_, err := s.Pool.Exec(ctx, `UPDATE idempotency_keys SET created_at = created_at - make_interval(secs => $1)`, d.Seconds())
		return err
	case *SQLite:
		return s.write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `UPDATE idempotency_keys SET created_at = created_at - ?`, d.Milliseconds())
			return err
		})
	}
	return fmt.Errorf("unknown store %T", st)
}

// IdempotencyKeyCount is how many Idempotency-Keys st keeps, expired or not.
func IdempotencyKeyCount(ctx context.Context, st Store) (n int, err error) {
	if f, ok := st.(*Fast); ok {
		st = f.Postgres
	}
	switch s := st.(type) {
	case *Postgres:
		err = s.Pool.QueryRow(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&n)
	case *SQLite:
		err = s.reader.QueryRowContext(ctx, `SELECT count(*) FROM idempotency_keys`).Scan(&n)
	default:
		err = fmt.Errorf("unknown store %T", st)
	}
	return n, err
}

// PauseGroupCommit makes f's cached appends queue for group commit, none
// sent, until resume sends every queued one as one group.
func PauseGroupCommit(f *Fast) (resume func()) { return pause(&f.group.batcher) }

// QueuedAppends is how many appends wait for f's group commit.
func QueuedAppends(f *Fast) int { return queued(&f.group.batcher) }

// SetGroupFlights lets n groups of f be in flight at once, as on a machine
// of n cores or more.
func SetGroupFlights(f *Fast, n int) {
	f.group.mu.Lock()
	defer f.group.mu.Unlock()
	f.group.flights = n
}

// PauseTodoReads makes f's reads of todo lists queue, none sent, until
// resume sends every queued one as one query.
func PauseTodoReads(f *Fast) (resume func()) { return pause(&f.reads.batcher) }

// QueuedTodoReads is how many reads of todo lists wait in f.
func QueuedTodoReads(f *Fast) int { return queued(&f.reads.batcher) }

// OneStatementAppends is how many of f's appends committed as one
// statement (pgAppendOne).
func OneStatementAppends(f *Fast) int64 { return f.oneStatements.Load() }

// MissQuiet is how long a session found stale takes the locking way.
const MissQuiet = missQuiet

// TimeStub is a clock that stands still until a test moves it.
type TimeStub struct {
	mu  sync.Mutex
	now time.Time
}

// Now is the stub's time.
func (s *TimeStub) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Advance moves the stub's time on by d.
func (s *TimeStub) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
}

// StubTime makes the append caches of stores read the time from one stub,
// set to the present, and returns it.
func StubTime(stores ...*Fast) *TimeStub {
	s := &TimeStub{now: time.Now()}
	for _, f := range stores {
		f.cache.mu.Lock()
		f.cache.now = s.Now
		f.cache.mu.Unlock()
	}
	return s
}

func pause[M any](b *batcher[M]) (resume func()) {
	b.mu.Lock()
	flights, max := b.flights, b.max
	b.flights = 0
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		b.flights = flights
		b.flying++
		b.max = len(b.queue)
		batch := b.take()
		b.max = max
		b.mu.Unlock()
		b.fly(batch)
	}
}

func queued[M any](b *batcher[M]) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.queue)
}

// LeaseStats counts of f's read leases: reads answered from memory, leases
// taken, revokes heard; and waited, the appends of f that waited for
// another instance's lease to go.
func LeaseStats(f *Fast) (served, taken, revoked, waited int64) {
	l := f.leases
	return l.served.Load(), l.taken.Load(), l.revoked.Load(), f.leaseWaits.Load()
}

// LeaseTerm is how long a read lease stands unrenewed.
const LeaseTerm = leaseTerm

// AgeNotes makes every session note and remembered tool call of st d
// older, as if that much time had passed since they were written.
func AgeNotes(ctx context.Context, st Store, d time.Duration) error {
	if f, ok := st.(*Fast); ok {
		st = f.Postgres
	}
	switch s := st.(type) {
	case *Postgres:
		for _, table := range []string{"session_notes", "hook_calls"} {
			if _, err := s.Pool.Exec(ctx, `UPDATE `+table+` SET expires_at = expires_at - make_interval(secs => $1)`, d.Seconds()); err != nil {
				return err
			}
		}
		return nil
	case *SQLite:
		return s.write(ctx, func(tx *sql.Tx) error {
			for _, table := range []string{"session_notes", "hook_calls"} {
				if _, err := tx.ExecContext(ctx, `UPDATE `+table+` SET expires_at = expires_at - ?`, d.Milliseconds()); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return fmt.Errorf("unknown store %T", st)
}

// NoteCount is how many session notes and remembered tool calls st keeps,
// expired or not.
func NoteCount(ctx context.Context, st Store) (notes, calls int, err error) {
	if f, ok := st.(*Fast); ok {
		st = f.Postgres
	}
	const q = `SELECT (SELECT count(*) FROM session_notes), (SELECT count(*) FROM hook_calls)`
	switch s := st.(type) {
	case *Postgres:
		err = s.Pool.QueryRow(ctx, q).Scan(&notes, &calls)
	case *SQLite:
		err = s.reader.QueryRowContext(ctx, q).Scan(&notes, &calls)
	default:
		err = fmt.Errorf("unknown store %T", st)
	}
	return notes, calls, err
}
