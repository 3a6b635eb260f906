package live_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/storetest"
)

// Tests of what a hostile or unlucky client, a racing writer or a shutdown
// must not break.

// noSweep is a sweep interval no test waits for: a test that delivers
// within seconds under it shows the delivery did not come from the sweep.
const noSweep = time.Hour

// promptly bounds a delivery that a notice (not the sweep) makes.
const promptly = 5 * time.Second

// instanceOn serves one instance on a fresh store of the named kind.
func instanceOn(t testing.TB, kind string, opts live.Options) *instance {
	t.Helper()
	if kind == "sqlite" {
		return serveInstance(t, storetest.SQLite(t, projection.Config{}), nil, opts)
	}
	return startInstanceWith(t, storetest.PoolConfig(t), opts, live.PGNotifyOptions{Sweep: noSweep})
}

// awaitSeq reads c until it has seen event upTo, within promptly; events
// must continue f's log.
func awaitSeq(t *testing.T, c *websocket.Conn, f *follower, upTo int64, what string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), promptly)
	defer cancel()
	if err := f.readTo(ctx, c, upTo); err != nil {
		t.Fatalf("%s: waiting for event %d after %d: %v", what, upTo, f.last, err)
	}
}

// TestAfterBeyondTheLog: a subscriber asking for events after a seq the
// log has not reached must not move what the session's topic has published:
// every other subscriber keeps getting new events, before and after it
// leaves, on every store. The far cursor itself is taken as the end of the
// log.
func TestAfterBeyondTheLog(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"postgres", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			a := instanceOn(t, kind, live.Options{})
			ctx := testCtx(t)
			id := a.createSession()
			a.appendUsers(id, 3, 10)

			far, err := dial(ctx, a.wsURL("/sessions/"+id+"/live?after=1000000"))
			if err != nil {
				t.Fatal(err)
			}
			defer far.CloseNow()
			if m, err := read(ctx, far); err != nil || m.Type != "todos" {
				t.Fatalf("far subscriber's first message %+v, %v; want the todos view", m, err)
			}
			near, err := dial(ctx, a.wsURL("/sessions/"+id+"/live?after=0"))
			if err != nil {
				t.Fatal(err)
			}
			defer near.CloseNow()
			var fn follower
			awaitSeq(t, near, &fn, 3, "backlog")

			a.appendUsers(id, 1, 10)
			awaitSeq(t, near, &fn, 4, "while the far subscriber is open")
			ff := follower{last: 3}
			awaitSeq(t, far, &ff, 4, "far subscriber, its cursor taken as the end of the log")

			far.Close(websocket.StatusNormalClosure, "")
			a.appendUsers(id, 1, 10)
			awaitSeq(t, near, &fn, 5, "after the far subscriber left")
		})
	}
}

// TestFirstTodosNotAheadOfEvents opens sockets one after another while
// writers change the todos view as fast as they can: a socket's first todos
// message must never show a state whose events it has not been sent yet —
// neither a version beyond its last event nor a plan no longer standing
// whose turn/start it has not seen.
func TestFirstTodosNotAheadOfEvents(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"postgres", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			a := instanceOn(t, kind, live.Options{})
			ctx := testCtx(t)
			id := a.createSession()

			stop := make(chan struct{})
			var wg sync.WaitGroup
			var written atomic.Int64
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					// turn/start ends a standing plan, todo_write sets one.
					res := a.appendEvents(id, ev{"type": "turn/start", "data": ev{}})
					a.todoWrite(id, ev{"todos": []ev{{"content": fmt.Sprint("step ", i), "status": "in_progress"}}})
					a.appendEvents(id, ev{"type": "turn/end", "data": ev{"reason": "completed"}})
					if len(res.Events) == 1 {
						written.Store(res.Events[0].Seq)
					}
				}
			})
			defer func() { close(stop); wg.Wait() }()

			const sockets = 150
			ahead := 0
			for i := range sockets {
				after := max(0, written.Load()-6)
				c, err := dial(ctx, a.wsURL(fmt.Sprintf("/sessions/%s/live?after=%d", id, after)))
				if err != nil {
					t.Fatal(err)
				}
				f := follower{last: after}
				var turnStarts []int64
				for len(f.todos) == 0 {
					m, err := read(ctx, c)
					if err == nil {
						err = f.take(m)
					}
					if err != nil {
						t.Fatal(err)
					}
					if m.Type == "event" && m.Event.Type == projection.TypeTurnStart {
						turnStarts = append(turnStarts, m.Event.Seq)
					}
				}
				c.CloseNow()
				v := f.todos[0]
				switch {
				case v.Version > f.last:
					ahead++
					t.Logf("socket %d: first todos v%d after event %d", i, v.Version, f.last)
				case !v.Standing && v.Version > after && !hasAfter(turnStarts, v.Version):
					ahead++
					t.Logf("socket %d: first todos v%d no longer standing, but no turn/start after it among events %d..%d", i, v.Version, after+1, f.last)
				}
			}
			if ahead > 0 {
				t.Errorf("%d of %d sockets got a first todos message ahead of their events", ahead, sockets)
			}
		})
	}
}

func hasAfter(seqs []int64, v int64) bool {
	for _, s := range seqs {
		if s > v {
			return true
		}
	}
	return false
}

// TestShutdownFlushesNotices: an instance that shuts down right after a
// write still tells the other instances, so their subscribers get the write
// at once and not at the next sweep. The notifier's clock does not move, so
// after the session's creation went out it waits for its next round for
// as long as the instance lives: the write's notice is still recorded when
// the instance stops.
func TestShutdownFlushesNotices(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	const interval = 5 * time.Millisecond
	clock := new(fakeClock)
	a := startInstanceWith(t, pc, live.Options{}, live.PGNotifyOptions{Interval: interval, Sweep: noSweep, After: clock.After})
	b := startInstanceWith(t, pc, live.Options{}, live.PGNotifyOptions{Sweep: noSweep})
	ctx := testCtx(t)
	id := a.createSession() // its notice goes out at once, then the notifier waits
	clock.awaitWait(t, interval, "the notifier's wait after the creation's round")
	c, err := dial(ctx, b.wsURL("/sessions/"+id+"/live"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if m, err := read(ctx, c); err != nil || m.Type != "todos" {
		t.Fatalf("first message %+v, %v; want the todos view", m, err)
	}
	sent := a.carrier.Sent()
	a.appendUsers(id, 2, 10)
	a.stop()
	if a.carrier.Sent() == sent {
		t.Error("the instance stopped without notifying its last writes")
	}
	var f follower
	awaitSeq(t, c, &f, 2, "writes made just before the other instance shut down")
}

// failAfterCommit is a store whose next Append commits and then reports the
// database unavailable, as when the connection drops between the commit
// and its answer: the client is told 503 for a write that is stored.
type failAfterCommit struct {
	store.Store
	armed atomic.Bool
}

func (s *failAfterCommit) Append(ctx context.Context, id string, req store.AppendRequest) (store.AppendResult, error) {
	res, err := s.Store.Append(ctx, id, req)
	if err == nil && s.armed.CompareAndSwap(true, false) {
		return store.AppendResult{}, fmt.Errorf("commit: %w", store.ErrUnavailable)
	}
	return res, err
}

// TestReplayedWriteIsAnnounced: a write whose commit raced a 503 is
// retried with its Idempotency-Key; the retry appends nothing, and the API
// hands the hub its replayed result, which must still announce the write,
// so that subscribers here and on other instances get it at once, not at
// the next write or sweep.
func TestReplayedWriteIsAnnounced(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	pg, err := postgres.Open(context.Background(), pc.Copy(), projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	st := fast.New(pg) // as the server runs it
	t.Cleanup(st.Close)
	flaky := &failAfterCommit{Store: st}
	a := serveInstance(t, flaky, live.NewPGNotify(pc.ConnConfig, live.PGNotifyOptions{Sweep: noSweep}), live.Options{})
	b := startInstanceWith(t, pc, live.Options{}, live.PGNotifyOptions{Sweep: noSweep})
	waitFor(t, "the listener to connect", func() bool { return a.carrier.ListenerPID() != 0 })
	ctx := testCtx(t)
	id := a.createSession()
	a.appendUsers(id, 1, 10)

	subs := map[string]*websocket.Conn{}
	follows := map[string]*follower{}
	for name, in := range map[string]*instance{"local": a, "remote": b} {
		c, err := dial(ctx, in.wsURL("/sessions/"+id+"/live"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		subs[name], follows[name] = c, &follower{}
		awaitSeq(t, c, follows[name], 1, name+" backlog")
	}

	post := func() error {
		_, err := a.commit(id, store.AppendRequest{
			Events:         []projection.NewEvent{{Type: "message/user", Data: json.RawMessage(`{"text":"raced"}`)}},
			IdempotencyKey: "raced-503", RequestHash: "raced",
		})
		return err
	}
	flaky.armed.Store(true)
	if err := post(); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("write that raced the outage: %v, want the database unavailable", err)
	}
	if err := post(); err != nil {
		t.Fatalf("retry: %v", err)
	}
	for name, c := range subs {
		awaitSeq(t, c, follows[name], 2, name+" subscriber, the retried write")
	}
}

// TestClientMessagesClose: the protocol is server to client, so any data
// message closes the socket with 1008, and one over the read limit with
// 1009, as docs/live.md says. The client sends at once after the
// handshake, as a hasty one does: what it sends must reach the server whole
// (a frame that arrives with the 101 once lost its first bytes, and the
// socket ended in EOF or a protocol error instead).
func TestClientMessagesClose(t *testing.T) {
	t.Parallel()
	a := instanceOn(t, "postgres", live.Options{})
	ctx := testCtx(t)
	id := a.createSession()
	type testCase struct {
		name string
		path string
		size int
		want websocket.StatusCode
	}
	var cases []testCase
	for range 5 {
		cases = append(cases, []testCase{
			{"small, session", "/sessions/" + id + "/live", 10, websocket.StatusPolicyViolation},
			{"too large, session", "/sessions/" + id + "/live", 4 << 10, websocket.StatusMessageTooBig},
			{"small, feed", "/live", 10, websocket.StatusPolicyViolation},
			{"too large, feed", "/live", 4 << 10, websocket.StatusMessageTooBig},
		}...)
	}
	for _, tc := range cases {
		c, err := dial(ctx, a.wsURL(tc.path))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Write(ctx, websocket.MessageText, bytes.Repeat([]byte("x"), tc.size)); err != nil {
			t.Fatal(tc.name, err)
		}
		for err == nil {
			_, _, err = c.Read(ctx)
		}
		if got := websocket.CloseStatus(err); got != tc.want {
			t.Errorf("%s: socket ended with %v, want close code %d", tc.name, err, tc.want)
		}
		c.CloseNow()
	}
}
