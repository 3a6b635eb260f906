package fast

import (
	"sync"
	"time"
)

// PauseGroupCommit makes f's cached appends queue for group commit, none
// sent, until resume sends every queued one as one group.
func PauseGroupCommit(f *Store) (resume func()) { return pause(&f.group.batcher) }

// QueuedAppends is how many appends wait for f's group commit.
func QueuedAppends(f *Store) int { return queued(&f.group.batcher) }

// SetGroupFlights lets n groups of f be in flight at once, as on a machine
// of n cores or more.
func SetGroupFlights(f *Store, n int) {
	f.group.mu.Lock()
	defer f.group.mu.Unlock()
	f.group.flights = n
}

// PauseTodoReads makes f's reads of todo lists queue, none sent, until
// resume sends every queued one as one query.
func PauseTodoReads(f *Store) (resume func()) { return pause(&f.reads.batcher) }

// QueuedTodoReads is how many reads of todo lists wait in f.
func QueuedTodoReads(f *Store) int { return queued(&f.reads.batcher) }

// OneStatementAppends is how many of f's appends committed as one
// statement (pgAppendOne).
func OneStatementAppends(f *Store) int64 { return f.oneStatements.Load() }

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
func StubTime(stores ...*Store) *TimeStub {
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
// It takes the leases' lock, so a read answered from memory is counted
// by the time it returns.
func LeaseStats(f *Store) (served, taken, revoked, waited int64) {
	l := f.leases
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.served.Load(), l.taken.Load(), l.revoked.Load(), f.LeaseWaits()
}

// LeaseListening reports whether f's lease listener listens; LeaseHeard
// whether it heard f's last ping; LeasePings how many pings f sent.
func LeaseListening(f *Store) bool { return f.leases.listening.Load() }
func LeasePings(f *Store) uint64   { return f.leases.pings.Load() }
func LeaseHeard(f *Store) bool {
	f.leases.mu.Lock()
	defer f.leases.mu.Unlock()
	return f.leases.heard
}

// LeaseTerm is how long a read lease stands unrenewed; LeaseTick how often
// leases are renewed.
const (
	LeaseTerm = leaseTerm
	LeaseTick = leaseTick
)
