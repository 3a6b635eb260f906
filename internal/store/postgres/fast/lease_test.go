package fast_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/storetest"
)

// fastAt opens a fast store at url, as an instance of its own.
func fastAt(t testing.TB, url string) *fast.Store {
	t.Helper()
	f := fast.New(openPostgres(t, url, 8))
	t.Cleanup(f.Close)
	return f
}

// clockedFastAt opens a fast store at url, as an instance of its own,
// whose clock stands still until the test moves it: its leases are taken
// and renewed, and end, only as the test moves it (hearPings).
func clockedFastAt(t testing.TB, url string) (*fast.Store, *storetest.StepClock) {
	t.Helper()
	f := fastAt(t, url)
	c := storetest.NewStepClock(0)
	f.SetClock(c)
	return f, c
}

// hearPings moves f's clock one renewal tick on, once its lease listener
// listens (it starts on f's first read), and waits until the listener
// heard the tick's ping: from then on f seeks the leases of the sessions
// read hot.
func hearPings(t *testing.T, f *fast.Store, c *storetest.StepClock) {
	t.Helper()
	// Waits for what will come, not bounds: a loaded machine (the whole
	// suite at once on two cores) has taken over 5 s to connect and hear.
	eventually.True(t, 20*time.Second, "the lease listener listening", func() bool { return fast.LeaseListening(f) })
	c.Advance(fast.LeaseTick)
	eventually.True(t, 20*time.Second, "the listener hearing the tick's ping", func() bool { return fast.LeaseHeard(f) })
}

// todoTurn is a turn that writes a list of one item, content, as
// todoWriteOK appends it, for a goroutine of a test.
func todoTurn(content string) store.AppendRequest {
	data := `[{"content":` + strconv.Quote(content) + `,"status":"pending"}]`
	return store.AppendRequest{Events: []projection.NewEvent{
		turnStart(), todoWrite(data), {Type: projection.TypeTurnEnd, Data: json.RawMessage(`{"reason":"completed"}`)}}}
}

// hotReaders reads session id's list on each store in turn until the test
// ends, as GET /todos pollers do, so that the stores seek and keep leases.
func hotReaders(t *testing.T, id string, stores ...*fast.Store) {
	t.Helper()
	var (
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	for _, f := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A poller's pace: a read every 200 µs at most.
			pace := time.NewTicker(200 * time.Microsecond)
			defer pace.Stop()
			for !stop.Load() {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				_, _ = f.Todos(ctx, id)
				cancel()
				<-pace.C
			}
		}()
	}
	t.Cleanup(func() { stop.Store(true); wg.Wait() })
}

// awaitServed waits until f answered a read from memory since served.
func awaitServed(t *testing.T, f *fast.Store, since int64) {
	t.Helper()
	eventually.True(t, 5*time.Second, "read answered from memory", func() bool {
		served, _, _, _ := fast.LeaseStats(f)
		return served > since
	})
}

// TestReadLeaseServesFromMemory: a session read again and again is leased,
// its row names the instance, and its list is then answered from memory; a
// write on the same instance is in the very next read.
func TestReadLeaseServesFromMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.SchemaURL(t)
	a, clock := clockedFastAt(t, url)
	s := newSession(t, a)
	todoWriteOK(t, a, s.ID, "one")
	hotReaders(t, s.ID, a)
	hearPings(t, a, clock)
	awaitServed(t, a, 0)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM read_leases WHERE session_id = $1 AND expires_at > now()`, s.ID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("leases of the session: %d, %v; want 1", n, err)
	}
	for i := range 20 {
		want := todoWriteOK(t, a, s.ID, fmt.Sprint("local ", i))
		got, err := a.Todos(ctx, s.ID)
		if err != nil || got.Version != want || got.Todos[0].Content != fmt.Sprint("local ", i) {
			t.Fatalf("read after local write %d: version %d %+v, %v; want %d", i, got.Version, got.Todos, err, want)
		}
	}
}

// TestReadLeaseSurvivesARefusal: an append refused outright (an
// expectedSeq the log has passed, a todo_write the projection rejects)
// committed nothing a read shows, so the instance keeps its lease and its
// copy, and the next read is still answered from memory.
func TestReadLeaseSurvivesARefusal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, clock := clockedFastAt(t, storetest.SchemaURL(t))
	s := newSession(t, a)
	todoWriteOK(t, a, s.ID, "one")
	mustAppend(t, a, s.ID, turnStart())
	if _, err := a.Todos(ctx, s.ID); err != nil {
		t.Fatal(err)
	}
	hearPings(t, a, clock)
	// Read until a read is answered from memory: the lease and its copy.
	eventually.True(t, 5*time.Second, "read answered from memory", func() bool {
		if served, _, _, _ := fast.LeaseStats(a); served > 0 {
			return true
		}
		if _, err := a.Todos(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		return false
	})
	stale := int64(0)
	refusals := map[string]store.AppendRequest{
		"expectedSeq passed":  {ExpectedSeq: &stale, Events: []projection.NewEvent{userMsg("late")}},
		"todo_write rejected": {Events: []projection.NewEvent{todoWrite(`[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]`)}},
	}
	for name, req := range refusals {
		if _, err := a.Append(ctx, s.ID, req); err == nil {
			t.Fatalf("%s: the append was not refused", name)
		}
		before, _, _, _ := fast.LeaseStats(a)
		if _, err := a.Todos(ctx, s.ID); err != nil {
			t.Fatal(err)
		}
		if after, _, _, _ := fast.LeaseStats(a); after != before+1 {
			t.Fatalf("%s: the read after it went to Postgres: the lease or its copy was given up", name)
		}
	}
}

// TestReadLeasesConsistent: with two instances keeping one session's list
// hot, and writes acknowledged by either of them or by a plain store that
// holds no lease, every read after an acknowledged write, on either
// instance, sees it. Leases are taken, revoked and served throughout (the
// test checks that they were, or it would prove nothing). It runs on the
// system clock: holders renewing and writers backing off as they do in a
// server is what it exercises.
func TestReadLeasesConsistent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.SchemaURL(t)
	a, b := fastAt(t, url), fastAt(t, url)
	writers := []store.Store{a, b, openPostgres(t, url, 4)}
	s := newSession(t, a)
	todoWriteOK(t, a, s.ID, "first")
	hotReaders(t, s.ID, a, b, a, b)
	check := func(i int, want int64) {
		t.Helper()
		for _, r := range []*fast.Store{a, b} {
			got, err := r.Todos(ctx, s.ID)
			if err != nil || got.Version < want {
				t.Fatalf("read after write %d: version %d, %v; want ≥ %d", i, got.Version, err, want)
			}
		}
	}
	for i := range 90 {
		if i%9 == 0 {
			// Let a lease be taken again and serve before the next write.
			sa, _, _, _ := fast.LeaseStats(a)
			sb, _, _, _ := fast.LeaseStats(b)
			eventually.True(t, 5*time.Second, "lease serving", func() bool {
				na, _, _, _ := fast.LeaseStats(a)
				nb, _, _, _ := fast.LeaseStats(b)
				return na > sa || nb > sb
			})
		}
		check(i, todoWriteOK(t, writers[i%len(writers)], s.ID, fmt.Sprint("step ", i)))
	}
	var served, revoked, waited int64
	for _, f := range []*fast.Store{a, b} {
		s, _, r, w := fast.LeaseStats(f)
		served, revoked, waited = served+s, revoked+r, waited+w
	}
	t.Logf("reads from memory %d, revokes %d, appends that waited %d", served, revoked, waited)
	if revoked == 0 || waited == 0 {
		t.Errorf("no write waited for a lease (revokes %d, waits %d): the test did not test leases", revoked, waited)
	}
}

// TestReadLeasesNeedTheGuard is the test above's failure without the
// trigger: a write that does not revoke the lease leaves the holder
// answering the list from before it. It shows the trigger is what keeps
// reads consistent, and that the consistency tests can fail.
func TestReadLeasesNeedTheGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.SchemaURL(t)
	a, clock := clockedFastAt(t, url)
	b := fastAt(t, url)
	s := newSession(t, a)
	todoWriteOK(t, a, s.ID, "first")
	if _, err := a.Pool.Exec(ctx, `DROP TRIGGER todo_lists_lease_guard ON todo_lists`); err != nil {
		t.Fatal(err)
	}
	hotReaders(t, s.ID, a)
	hearPings(t, a, clock)
	awaitServed(t, a, 0)
	want := todoWriteOK(t, b, s.ID, "second")
	got, err := a.Todos(ctx, s.ID)
	if err != nil || got.Version >= want {
		t.Fatalf("without the guard a read after the write saw version %d (%v); want the stale %d", got.Version, err, want-1)
	}
}

// TestReadLeaseOfAGoneInstance: a lease whose holder is gone (it never
// answers) holds a write up until it expires, and no longer. The writer's
// clock stands still, so it tries once, asks, and waits on its clock; the
// test moves it, and Postgres' clock (the lease's end) by hand.
func TestReadLeaseOfAGoneInstance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, clock := clockedFastAt(t, storetest.SchemaURL(t))
	s := newSession(t, a)
	if _, err := a.Pool.Exec(ctx, `INSERT INTO read_leases (session_id, instance, expires_at) VALUES ($1, 'gone', now() + interval '1 hour')`, s.ID); err != nil {
		t.Fatal(err)
	}
	waits := func() int64 { _, _, _, w := fast.LeaseStats(a); return w }
	done := make(chan error, 1)
	go func() {
		_, err := a.Append(ctx, s.ID, todoTurn("after the lease"))
		done <- err
	}()
	// Refused, it waits on its clock: nothing moves until the test moves it.
	eventually.True(t, 5*time.Second, "the write refused and waiting", func() bool { return waits() == 1 && clock.Timers() == 1 })
	clock.Advance(time.Millisecond)
	eventually.True(t, 5*time.Second, "the write refused again and waiting", func() bool { return waits() == 2 && clock.Timers() == 1 })
	select {
	case err := <-done:
		t.Fatalf("the write passed an unexpired lease (%v)", err)
	default:
	}
	// The lease runs out; the write's next try passes, and deletes it.
	if _, err := a.Pool.Exec(ctx, `UPDATE read_leases SET expires_at = now() - interval '1 millisecond' WHERE session_id = $1`, s.ID); err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if w := waits(); w != 2 {
		t.Errorf("the write was refused %d times; want 2, none after the lease ran out", w)
	}
	var n int
	if err := a.Pool.QueryRow(ctx, `SELECT count(*) FROM read_leases WHERE session_id = $1`, s.ID).Scan(&n); err != nil || n != 0 {
		t.Errorf("the expired lease is still there (%d, %v)", n, err)
	}
}

// proxiedFast is a fast store whose every connection, its lease listener's
// included, passes through a proxy the test can cut, on the schema of url.
func proxiedFast(t *testing.T, raw string) (*fast.Store, *storetest.Proxy) {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	if port == "" {
		port = "5432"
	}
	p := storetest.NewProxy(t, net.JoinHostPort(u.Hostname(), port))
	u.Host = p.Addr()
	return fastAt(t, u.String()), p
}

// TestReadLeasesUnderFaults: the holder of a lease loses its database while
// another instance writes. Partitioned (Stall), it can neither hear the
// revoke nor renew: the write waits for the lease to run out and the holder
// stops answering from memory before it does. Hearing nothing back
// (StallReplies), its own write may commit unheard: it gives its lease up.
// Cut, its listener fails at once. In every case each read on the holder
// after an acknowledged write either fails or sees that write, and once the
// database is back both instances read the same list. The holder's clock
// stands still but where the test moves it past the lease's term, and the
// lease runs out on Postgres' clock only after that, as the holder's
// margin makes it do: the test sets the row's end by hand.
func TestReadLeasesUnderFaults(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"stall", "stall replies", "cut"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			raw := storetest.SchemaURL(t)
			a, proxy := proxiedFast(t, raw)
			clock := storetest.NewStepClock(0)
			a.SetClock(clock)
			b := fastAt(t, raw)
			s := newSession(t, b)
			todoWriteOK(t, b, s.ID, "first")
			hotReaders(t, s.ID, a)
			hearPings(t, a, clock)
			awaitServed(t, a, 0)
			switch fault {
			case "stall":
				proxy.Stall()
			case "stall replies":
				proxy.StallReplies()
				wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
				data := `[{"content":"unheard","status":"pending"}]`
				_, err := a.Append(wctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{todoWrite(data)}})
				cancel()
				if err == nil {
					t.Fatal("a write with its replies stalled was acknowledged")
				}
			case "cut":
				proxy.Cut()
			}
			_, _, _, waitsBefore := fast.LeaseStats(b)
			type written struct {
				version int64
				err     error
			}
			done := make(chan written, 1)
			go func() {
				res, err := b.Append(ctx, s.ID, todoTurn("while the holder is away"))
				if err == nil && res.Todos == nil {
					err = errors.New("the write did not change the list")
				}
				if err != nil {
					done <- written{err: err}
					return
				}
				done <- written{res.Todos.Version, nil}
			}()
			// The write is refused while the lease stands (unless the holder
			// gave it up in time), and the holder answers nothing from memory
			// once its term passed on its clock.
			var (
				w    written
				over bool
			)
			eventually.True(t, 5*time.Second, "the write refused, or done", func() bool {
				select {
				case w = <-done:
					over = true
					return true
				default:
				}
				_, _, _, w := fast.LeaseStats(b)
				return w > waitsBefore
			})
			clock.Advance(fast.LeaseTerm)
			served, _, _, _ := fast.LeaseStats(a)
			if !over {
				conn, err := pgx.Connect(ctx, raw)
				if err != nil {
					t.Fatal(err)
				}
				_, err = conn.Exec(ctx, `UPDATE read_leases SET expires_at = now() - interval '1 millisecond' WHERE session_id = $1`, s.ID)
				conn.Close(ctx)
				if err != nil {
					t.Fatal(err)
				}
				w = <-done
			}
			if w.err != nil {
				t.Fatal(w.err)
			}
			want := w.version
			for range 5 {
				rctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
				got, err := a.Todos(rctx, s.ID)
				cancel()
				if err == nil && got.Version < want {
					t.Fatalf("the holder answered version %d after version %d was acknowledged", got.Version, want)
				}
			}
			if now, _, _, _ := fast.LeaseStats(a); now != served {
				t.Fatalf("the holder answered %d reads from memory past its lease's term", now-served)
			}
			proxy.Restore()
			var (
				got, now projection.Todos
				err      error
			)
			agreed := eventually.Within(10*time.Second, func() bool {
				var berr error
				got, err = a.Todos(ctx, s.ID)
				now, berr = b.Todos(ctx, s.ID)
				if berr != nil {
					t.Fatal(berr)
				}
				if errors.Is(err, context.Canceled) {
					t.Fatal(err)
				}
				return err == nil && got.Version == now.Version
			})
			if !agreed {
				t.Fatalf("after the restore the holder reads version %d (%v), the other %d", got.Version, err, now.Version)
			}
			if got.Version < want {
				t.Fatalf("after the restore: version %d, want ≥ %d", got.Version, want)
			}
		})
	}
}
