package storetest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
)

// The helpers the backends' own tests share with the suite: events to
// append, and stores opened as a backend's tests need them.

// Ev is an event of type typ with data.
func Ev(typ, data string) projection.NewEvent { return ev(typ, data) }

// EvTurnStart and EvTurnEnd open and end a turn.
var (
	EvTurnStart = evTurnStart
	EvTurnEnd   = evTurnEnd
)

// UserMsg is a person's message.
func UserMsg(text string) projection.NewEvent { return userMsg(text) }

// WriteTodos is a todo/write of content/status pairs.
func WriteTodos(pairs ...string) projection.NewEvent { return writeTodos(pairs...) }

// Keyed is ne carrying keys.
func Keyed(ne projection.NewEvent, keys ...string) projection.NewEvent { return keyed(ne, keys...) }

// NewSession makes a session on st.
func NewSession(t *testing.T, st store.Store) store.Session { return newSession(t, st) }

// MustAppend appends events, failing the test on an error.
func MustAppend(t *testing.T, st store.Store, id string, events ...projection.NewEvent) store.AppendResult {
	t.Helper()
	return mustAppend(t, st, id, events...)
}

// Seqs are the seqs of events.
func Seqs(events []projection.Event) []int64 { return seqs(events) }

// TurnStart opens a turn.
func TurnStart() projection.NewEvent {
	return projection.NewEvent{Type: projection.TypeTurnStart, Data: json.RawMessage(`{}`)}
}

// TodoWrite is a todo/write of todos, a JSON array.
func TodoWrite(todos string) projection.NewEvent {
	return projection.NewEvent{Type: projection.TypeTodoWrite, Data: json.RawMessage(`{"todos":` + todos + `}`)}
}

// TodoWriteOK appends a turn start and a todo_write of one item, and
// returns the list's version it made.
func TodoWriteOK(t *testing.T, st store.Store, id, content string) int64 {
	t.Helper()
	data, _ := json.Marshal(map[string]any{"todos": []projection.TodoInput{{Content: content, Status: projection.StatusPending}}})
	res, err := st.Append(context.Background(), id, store.AppendRequest{Events: []projection.NewEvent{
		TurnStart(), {Type: projection.TypeTodoWrite, Data: data}, {Type: projection.TypeTurnEnd, Data: json.RawMessage(`{"reason":"completed"}`)}}})
	if err != nil {
		t.Fatal(err)
	}
	return res.Todos.Version
}

// PostgresAt opens a plain store at url on a pool of conns connections.
func PostgresAt(t testing.TB, url string, conns int32) *postgres.Store {
	t.Helper()
	pc, err := postgres.PoolConfig(url, conns)
	if err != nil {
		t.Fatal(err)
	}
	pg, err := postgres.Open(context.Background(), pc, projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pg.Close)
	return pg
}

// FastAt opens a fast store at url, as an instance of its own.
func FastAt(t testing.TB, url string) *fast.Store {
	t.Helper()
	f := fast.New(PostgresAt(t, url, 8))
	t.Cleanup(f.Close)
	return f
}

// TwoInstances opens two fast stores on one schema, as two Tack instances
// on one database: each keeps its own append cache.
func TwoInstances(t testing.TB) (*fast.Store, *fast.Store) {
	t.Helper()
	url := MigratedSchemaURL(t)
	return FastAt(t, url), FastAt(t, url)
}

// MustAppendB appends events in a benchmark, failing it on an error.
func MustAppendB(b *testing.B, st store.Store, id string, events ...projection.NewEvent) {
	b.Helper()
	if _, err := st.Append(context.Background(), id, store.AppendRequest{Events: events}); err != nil {
		b.Fatal(err)
	}
}

// CheckAgainstReplay fails the test unless the projection st holds of
// session id equals a replay of its log.
func CheckAgainstReplay(t *testing.T, st store.Store, id string) {
	t.Helper()
	checkAgainstReplay(t, st, id)
}

// ConcurrentAppendsEqualReplay runs the suite's concurrent property test on
// st, a store a backend's test makes of its own (two instances at once):
// concurrent appends answered as the log replayed answers them, for the
// given rounds (TACK_PROPERTY_ROUNDS overrides def).
func ConcurrentAppendsEqualReplay(t *testing.T, st store.Store, lifetime string, def int) {
	t.Helper()
	propertyConcurrentEqualsReplay(t, st, lifetime, propertyRounds(t, def))
}

// StepClock is a store.Clock for a test (a store's SetClock): it stands
// still but for its reads of Now, each a step later than the one before,
// so that every append has a time of its own without waiting for the wall
// clock to move, and for Advance, which a test of a timer calls where it
// would otherwise wait. Its timers (After) fire as it moves past them.
type StepClock struct {
	mu     sync.Mutex
	at     time.Time
	step   time.Duration
	timers []stepTimer
}

type stepTimer struct {
	at time.Time
	c  chan time.Time
}

// NewStepClock is a StepClock from the present, truncated to what is
// stored, moving step at each read of Now (0: only as Advance moves it).
func NewStepClock(step time.Duration) *StepClock {
	return &StepClock{at: projection.NewTime(time.Now()).Time, step: step}
}

// Now is the clock's time, which the next read finds step later.
func (c *StepClock) Now() projection.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := projection.NewTime(c.at)
	c.move(c.step)
	return now
}

// Instant is the clock's time; reading it does not move the clock.
func (c *StepClock) Instant() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.at
}

// After is a channel that receives once the clock moved d on.
func (c *StepClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.at
		return ch
	}
	c.timers = append(c.timers, stepTimer{at: c.at.Add(d), c: ch})
	return ch
}

// Advance moves the clock d on, firing the timers it passes.
func (c *StepClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.move(d)
}

// Timers is how many timers wait for the clock to move: how a test knows
// that what it drives is parked on the clock before it moves it.
func (c *StepClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// move moves the clock d on and fires the timers it passed; c.mu is held.
func (c *StepClock) move(d time.Duration) {
	c.at = c.at.Add(d)
	waiting := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.at) {
			waiting = append(waiting, t)
			continue
		}
		t.c <- c.at
	}
	clear(c.timers[len(waiting):])
	c.timers = waiting
}
