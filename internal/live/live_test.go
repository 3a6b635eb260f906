package live_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/storetest"
)

// instance is one Tack server: a store, a hub with its Postgres carrier and
// the hub's sockets on a real HTTP server. It writes as the API does:
// through the store, then hub.OnAppend. Several instances share one schema.
type instance struct {
	t       testing.TB
	store   store.Store
	hub     *live.Hub
	carrier *live.PGNotify
	srv     *httptest.Server
	stopped bool
	stop    func()
}

func startInstance(t testing.TB, pc *pgxpool.Config, opts live.Options) *instance {
	t.Helper()
	return startInstanceWith(t, pc, opts, live.PGNotifyOptions{})
}

func startInstanceWith(t testing.TB, pc *pgxpool.Config, opts live.Options, copts live.PGNotifyOptions) *instance {
	t.Helper()
	pg, err := postgres.Open(context.Background(), pc.Copy(), projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	st := fast.New(pg) // as the server runs it
	t.Cleanup(st.Close)
	in := serveInstance(t, st, live.NewPGNotify(pc.ConnConfig, copts), opts)
	waitFor(t, "the listener to connect", func() bool { return in.carrier.ListenerPID() != 0 })
	return in
}

// serveInstance serves st with a hub; carrier may be nil (one instance, as
// on SQLite). The instance owns st.
func serveInstance(t testing.TB, st store.Store, carrier *live.PGNotify, opts live.Options) *instance {
	t.Helper()
	return serveInstanceWrapped(t, st, carrier, opts, nil)
}

// serveInstanceWrapped is serveInstance with the server's handler wrapped
// in wrap, when it is not nil.
func serveInstanceWrapped(t testing.TB, st store.Store, carrier *live.PGNotify, opts live.Options, wrap func(http.Handler) http.Handler) *instance {
	t.Helper()
	ctx := context.Background()
	if carrier != nil {
		opts.Carrier = carrier
	}
	hub := live.New(st, opts)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = hub.Run(runCtx) }()
	h := sockets(hub)
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	in := &instance{t: t, store: st, hub: hub, carrier: carrier, srv: srv}
	in.stop = func() {
		if in.stopped {
			return
		}
		in.stopped = true
		closeCtx, cancelClose := context.WithTimeout(ctx, 5*time.Second)
		defer cancelClose()
		hub.Close(closeCtx)
		srv.Close()
		cancel()
		<-done
		st.Close()
	}
	t.Cleanup(in.stop)
	return in
}

// waitFor polls cond until it holds, failing the test after 20 seconds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	eventually.True(t, 20*time.Second, what, cond)
}

func (in *instance) wsURL(path string) string {
	return "ws" + strings.TrimPrefix(in.srv.URL, "http") + path
}

// sockets routes the hub's two sockets as the API does once a request has
// passed its checks, each request acting as the local principal, which
// owns every session here. The checks themselves (the session id, its
// owner, the `after` cursor) and the JSON shape of a refusal are the API's,
// and tested with it.
func sockets(hub *live.Hub) http.Handler {
	local := func(r *http.Request) *http.Request { return r.WithContext(auth.With(r.Context(), auth.Local)) }
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sessions/{id}/live", func(w http.ResponseWriter, r *http.Request) {
		after, _ := strconv.ParseInt(r.URL.Query().Get("after"), 10, 64)
		answer(w, hub.ServeSession(w, local(r), r.PathValue("id"), after))
	})
	mux.HandleFunc("GET /live", func(w http.ResponseWriter, r *http.Request) {
		answer(w, hub.ServeFeed(w, local(r)))
	})
	return mux
}

// answer answers a socket refused before its handshake with the status of
// its Refusal (500 for any other error).
func answer(w http.ResponseWriter, err error) {
	var rf *live.Refusal
	switch {
	case err == nil:
	case errors.As(err, &rf):
		http.Error(w, rf.Message, rf.Status)
	default:
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// createSession creates a session as the API does, announcing it.
func (in *instance) createSession() string {
	in.t.Helper()
	s, _, err := in.store.CreateSession(context.Background(), store.NewSession{Title: "live"})
	if err != nil {
		in.t.Fatal(err)
	}
	in.hub.OnAppend(s.ID, store.AppendResult{Session: s})
	return s.ID
}

type ev = map[string]any

// appendUsers appends n message/user events in one batch.
func (in *instance) appendUsers(id string, n, size int) {
	in.t.Helper()
	events := make([]ev, n)
	for i := range events {
		events[i] = ev{"type": "message/user", "data": ev{"text": strings.Repeat("x", size)}}
	}
	in.appendEvents(id, events...)
}

// appendEvents appends events in one batch.
func (in *instance) appendEvents(id string, events ...ev) store.AppendResult {
	in.t.Helper()
	req := store.AppendRequest{}
	for _, e := range events {
		data, _ := json.Marshal(e["data"])
		req.Events = append(req.Events, projection.NewEvent{Type: e["type"].(string), Data: data})
	}
	res, err := in.commit(id, req)
	if err != nil {
		in.t.Error(err)
	}
	return res
}

// todoWrite is the todo_write tool's write of args.
func (in *instance) todoWrite(id string, args ev) {
	in.t.Helper()
	raw, _ := json.Marshal(args)
	e, base, err := projection.ParseTodoWriteArgs(raw)
	if err == nil {
		_, err = in.commit(id, store.AppendRequest{Events: []projection.NewEvent{e}, BaseVersion: base})
	}
	if err != nil {
		in.t.Error(err)
	}
}

// commit appends req and tells the hub, as the API does after every
// committed append and every replay of one.
func (in *instance) commit(id string, req store.AppendRequest) (store.AppendResult, error) {
	res, err := in.store.Append(context.Background(), id, req)
	if err != nil {
		return res, err
	}
	if len(res.Events) > 0 {
		res.Session.Owner = store.LocalPrincipal
		in.hub.OnAppend(id, res)
	}
	return res, nil
}

// msg is any server message.
type msg struct {
	Type    string            `json:"type"`
	Event   *projection.Event `json:"event"`
	Todos   *projection.Todos `json:"todos"`
	Session *store.Session    `json:"session"`
}

func dial(ctx context.Context, url string) (*websocket.Conn, error) {
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(1 << 20)
	return c, nil
}

// read reads one server message, checked against its schema in
// api.openapi.yaml (WsEvent, WsTodos, WsSession).
func read(ctx context.Context, c *websocket.Conn) (msg, error) {
	var m msg
	_, b, err := c.Read(ctx)
	if err != nil {
		return m, err
	}
	if err := checkContract(b); err != nil {
		return m, err
	}
	return m, json.Unmarshal(b, &m)
}

// apiDoc is api.openapi.yaml.
var apiDoc = sync.OnceValues(func() (*openapi3.T, error) {
	return openapi3.NewLoader().LoadFromFile("../../api.openapi.yaml")
})

// checkSchema checks b against the named schema of api.openapi.yaml.
func checkSchema(name string, b []byte) error {
	doc, err := apiDoc()
	if err != nil {
		return err
	}
	ref := doc.Components.Schemas[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("api.openapi.yaml has no schema %s", name)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("%w: %.300s", err, b)
	}
	if err := ref.Value.VisitJSON(v); err != nil {
		return fmt.Errorf("breaks the contract's %s: %v\n%.300s", name, err, b)
	}
	return nil
}

// checkContract checks a server message against its schema in
// api.openapi.yaml, by its type.
func checkContract(b []byte) error {
	var v struct{ Type string }
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	name, ok := map[string]string{"event": "WsEvent", "todos": "WsTodos", "session": "WsSession"}[v.Type]
	if !ok {
		return fmt.Errorf("message of unknown type: %.200s", b)
	}
	return checkSchema(name, b)
}

// follower is a subscriber that checks every event it sees continues its
// log: seq last+1, never a gap or a repeat, across reconnects.
type follower struct {
	last  int64
	todos []projection.Todos
}

func (f *follower) take(m msg) error {
	switch m.Type {
	case "event":
		if m.Event.Seq != f.last+1 {
			return fmt.Errorf("got seq %d after %d", m.Event.Seq, f.last)
		}
		f.last = m.Event.Seq
	case "todos":
		f.todos = append(f.todos, *m.Todos)
	default:
		return fmt.Errorf("unexpected message type %q", m.Type)
	}
	return nil
}

// follow reads from a new socket on in until the follower has seen upTo.
func (f *follower) follow(ctx context.Context, in *instance, id string, upTo int64) error {
	c, err := dial(ctx, in.wsURL(fmt.Sprintf("/sessions/%s/live?after=%d", id, f.last)))
	if err != nil {
		return err
	}
	defer c.CloseNow()
	if err := f.readTo(ctx, c, upTo); err != nil {
		return err
	}
	return c.Close(websocket.StatusNormalClosure, "")
}

// readTo reads c until the follower has seen upTo.
func (f *follower) readTo(ctx context.Context, c *websocket.Conn, upTo int64) error {
	for f.last < upTo {
		m, err := read(ctx, c)
		if err != nil {
			return err
		}
		if err := f.take(m); err != nil {
			return err
		}
	}
	return nil
}

// background is a follower reading its socket in a goroutine of its own
// until the socket fails: seen is the last event it has taken.
type background struct {
	name string
	seen atomic.Int64
	err  chan error
}

// followInBackground starts a background follower, named name in a failure,
// on c.
func followInBackground(ctx context.Context, name string, c *websocket.Conn) *background {
	b := &background{name: name, err: make(chan error, 1)}
	go func() {
		var f follower
		for {
			m, err := read(ctx, c)
			if err == nil {
				err = f.take(m)
			}
			if err != nil {
				b.err <- err
				return
			}
			b.seen.Store(f.last)
		}
	}()
	return b
}

// at reports whether the follower has seen n events, failing the test
// when it has failed.
func (b *background) at(t *testing.T, n int64) bool {
	t.Helper()
	select {
	case err := <-b.err:
		t.Fatalf("%s: %v", b.name, err)
	default:
	}
	return b.seen.Load() == n
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestSubscriberOnOtherInstanceSeesWrites(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	a, b := startInstance(t, pc, live.Options{}), startInstance(t, pc, live.Options{})
	ctx := testCtx(t)
	id := a.createSession()
	a.appendUsers(id, 3, 10)

	c, err := dial(ctx, b.wsURL("/sessions/"+id+"/live"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var f follower
	if err := f.readTo(ctx, c, 3); err != nil {
		t.Fatal(err)
	}
	// After the backlog comes the current todos view, then live events.
	m, err := read(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if m.Type != "todos" || m.Todos.Version != 0 || m.Todos.SessionID != id || m.Todos.Todos == nil {
		t.Fatalf("after the backlog got %+v, want the empty todos view", m)
	}
	a.appendUsers(id, 2, 10)
	a.appendUsers(id, 1, 10)
	if err := f.readTo(ctx, c, 6); err != nil {
		t.Fatal(err)
	}
	if a.carrier.Sent() == 0 {
		t.Error("instance A sent no notification")
	}
}

// TestSweepCatchesUnannouncedWrites appends through a bare store, as a
// process that died between its commit and its NOTIFY would leave it: no
// notice ever comes, and the periodic sweep alone must deliver the events,
// when the carrier's clock reaches the sweep and not before.
func TestSweepCatchesUnannouncedWrites(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	const sweep = time.Minute
	clock := new(fakeClock)
	b := startInstanceWith(t, pc, live.Options{}, live.PGNotifyOptions{Sweep: sweep, After: clock.After})
	resyncs := &b.hub.Stats().Resyncs
	waitFor(t, "the resync after the listener connected", func() bool { return resyncs.Load() == 1 })
	clock.awaitWait(t, sweep, "the sweep's wait")
	ctx := testCtx(t)
	id := b.createSession()
	c, err := dial(ctx, b.wsURL("/sessions/"+id+"/live"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if m, err := read(ctx, c); err != nil || m.Type != "todos" {
		t.Fatalf("first message %+v, %v; want the todos view", m, err)
	}

	bare, err := postgres.Open(ctx, pc.Copy(), projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	for range 3 {
		if _, err := bare.Append(ctx, id, store.AppendRequest{Events: []projection.NewEvent{
			{Type: projection.TypeMessageUser, Data: json.RawMessage(`{"text":"unannounced"}`)},
		}}); err != nil {
			t.Fatal(err)
		}
	}
	// A moment before the sweep its wait has not ended: nothing but the
	// connect has resynced.
	clock.Advance(sweep - time.Millisecond)
	if n := clock.pending(sweep); n != 1 || resyncs.Load() != 1 {
		t.Fatalf("a moment before the sweep: %d sweep waits pending, %d resyncs; want 1 and 1", n, resyncs.Load())
	}
	clock.Advance(time.Millisecond)
	var f follower
	if err := f.readTo(ctx, c, 3); err != nil {
		t.Fatal(err)
	}
	if got := resyncs.Load(); got != 2 {
		t.Errorf("%d resyncs, want 2: the connect's and the sweep's", got)
	}
}

// TestListenerBackoff: a listener that cannot connect retries after 50 ms,
// doubling up to one second, and resyncs once it is up; one that loses its
// connection tries again at once, and when that fails starts the backoff
// over at 50 ms. The database is behind a proxy the test refuses and restores,
// and the test moves the carrier's clock: a retry can only follow a wait
// that has ended, and none is slept through.
func TestListenerBackoff(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	// The database, away: its host refuses every connection at once.
	g := storetest.NewProxy(t, net.JoinHostPort(pc.ConnConfig.Host, strconv.Itoa(int(pc.ConnConfig.Port))))
	g.Refuse()
	clock := new(fakeClock)
	pg, err := postgres.Open(context.Background(), pc.Copy(), projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	carrier := live.NewPGNotify(through(pc.ConnConfig, g), live.PGNotifyOptions{Sweep: noSweep, After: clock.After})
	in := serveInstance(t, pg, carrier, live.Options{})
	resyncs := &in.hub.Stats().Resyncs

	want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
		400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
	for i, d := range want {
		clock.awaitWait(t, d, fmt.Sprintf("retry %d's wait of %v", i+1, d))
		if pid, n := carrier.ListenerPID(), resyncs.Load(); pid != 0 || n != 0 {
			t.Fatalf("with the database refused: listener %d, %d resyncs", pid, n)
		}
		if i == len(want)-1 {
			g.Restore()
		}
		clock.Advance(d)
	}
	waitFor(t, "the listener to connect once the database is back", func() bool { return carrier.ListenerPID() != 0 })
	waitFor(t, "the resync after the connect", func() bool { return resyncs.Load() == 1 })
	if got := clock.waitsAsked(noSweep); !slices.Equal(got, want) {
		t.Fatalf("waits asked %v, want %v", got, want)
	}

	// The connection is lost and the database away: the backoff starts over.
	g.Refuse()
	waitFor(t, "the listener to notice its connection lost", func() bool { return carrier.ListenerPID() == 0 })
	clock.awaitWait(t, 50*time.Millisecond, "the wait before the first retry")
	if got := clock.waitsAsked(noSweep); !slices.Equal(got, append(want, 50*time.Millisecond)) {
		t.Fatalf("waits asked %v, want %v then 50ms", got, want)
	}
	g.Restore()
	clock.Advance(50 * time.Millisecond)
	waitFor(t, "the listener to reconnect", func() bool { return carrier.ListenerPID() != 0 })
	waitFor(t, "the resync after the reconnect", func() bool { return resyncs.Load() == 2 })
}

func TestTodosMessages(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	a, b := startInstance(t, pc, live.Options{}), startInstance(t, pc, live.Options{})
	ctx := testCtx(t)
	id := a.createSession()

	// One subscriber where the writes happen (the append's own result), one
	// on the other instance (read back from the store).
	conns := map[string]*websocket.Conn{}
	for name, in := range map[string]*instance{"local": a, "remote": b} {
		c, err := dial(ctx, in.wsURL("/sessions/"+id+"/live"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		if m, err := read(ctx, c); err != nil || m.Type != "todos" {
			t.Fatalf("%s: first message %+v, %v; want the todos view", name, m, err)
		}
		conns[name] = c
	}

	a.appendEvents(id, ev{"type": "turn/start", "data": ev{}})
	a.todoWrite(id, ev{"todos": []ev{
		{"content": "read", "status": "completed"},
		{"content": "write", "status": "in_progress"},
	}})
	a.appendEvents(id, ev{"type": "turn/end", "data": ev{"reason": "completed"}})
	a.appendEvents(id, ev{"type": "turn/start", "data": ev{}}) // ends the standing plan
	a.appendEvents(id, ev{"type": "turn/end", "data": ev{"reason": "completed"}})
	a.appendEvents(id, ev{"type": "turn/start", "data": ev{}}) // no plan stands: no todos message

	// Where the append happened every change is its own message, right after
	// the event that made it. Elsewhere changes that arrive together are
	// conflated to the latest view, still never ahead of its events.
	want := []string{"event 1", "event 2", "todos v2 standing", "event 3", "event 4", "todos v2 ended", "event 5", "event 6"}
	for name, c := range conns {
		var got []string
		var last int64
		ended := false
		for last < 6 || !ended {
			m, err := read(ctx, c)
			if err != nil {
				t.Fatal(name, err)
			}
			switch m.Type {
			case "event":
				last = m.Event.Seq
				got = append(got, fmt.Sprintf("event %d", m.Event.Seq))
			case "todos":
				state := "ended"
				if m.Todos.Standing {
					state = "standing"
				}
				ended = !m.Todos.Standing
				got = append(got, fmt.Sprintf("todos v%d %s", m.Todos.Version, state))
				if len(m.Todos.Todos) != 2 || m.Todos.Counts.Completed != 1 || m.Todos.Counts.InProgress != 1 {
					t.Errorf("%s: todos message %+v", name, m.Todos)
				}
				if m.Todos.Version > last {
					t.Errorf("%s: todos v%d sent before event %d", name, m.Todos.Version, m.Todos.Version)
				}
			}
		}
		if name == "local" && fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s subscriber got\n%v\nwant\n%v", name, got, want)
		}
		t.Logf("%s: %v", name, got)
	}
}

// TestRandomizedResume: writers append on either instance while subscribers
// connect, drop and resume at random points on either instance. Every
// subscriber must end having seen 1..N once each, in order.
func TestRandomizedResume(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	ins := []*instance{startInstance(t, pc, live.Options{}), startInstance(t, pc, live.Options{})}
	ctx := testCtx(t)
	id := ins[0].createSession()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))

	// Each writer's batches, drawn up front so that N is known.
	const writers, batches = 3, 40
	var total int64
	plans := make([][]int, writers)
	for w := range plans {
		for range batches {
			n := 1 + rng.IntN(5)
			plans[w] = append(plans[w], n)
			total += int64(n)
		}
	}

	const subscribers = 6
	errs := make(chan error, subscribers)
	for s := range subscribers {
		rng := rand.New(rand.NewPCG(seed, 100+uint64(s)))
		go func() {
			var f follower
			reconnects := 0
			for f.last < total {
				in := ins[rng.IntN(2)]
				upTo := min(total, f.last+1+int64(rng.IntN(40)))
				c, err := dial(ctx, in.wsURL(fmt.Sprintf("/sessions/%s/live?after=%d", id, f.last)))
				if err != nil {
					errs <- err
					return
				}
				if err := f.readTo(ctx, c, upTo); err != nil {
					c.CloseNow()
					errs <- fmt.Errorf("subscriber %d: %w", s, err)
					return
				}
				// Drop abruptly half the time, politely otherwise.
				if rng.IntN(2) == 0 {
					c.CloseNow()
				} else {
					_ = c.Close(websocket.StatusNormalClosure, "")
				}
				reconnects++
			}
			t.Logf("subscriber %d: %d events over %d connections", s, f.last, reconnects)
			errs <- nil
		}()
	}
	var wg sync.WaitGroup
	for w, plan := range plans {
		rng := rand.New(rand.NewPCG(seed, 10+uint64(w)))
		wg.Go(func() {
			for _, n := range plan {
				ins[rng.IntN(2)].appendUsers(id, n, 20)
			}
		})
	}
	wg.Wait()
	for range subscribers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// TestListenerKilled kills the listener's connection while writes go on:
// the carrier reconnects and resyncs, and the subscriber misses nothing.
// Each round writes while the listener is down and then writes no more, so
// that only the resync after the reconnect can deliver that round.
func TestListenerKilled(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	a, b := startInstance(t, pc, live.Options{}), startInstance(t, pc, live.Options{})
	ctx := testCtx(t)
	id := a.createSession()

	admin, err := pgx.ConnectConfig(ctx, pc.ConnConfig.Copy())
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())

	c, err := dial(ctx, b.wsURL("/sessions/"+id+"/live"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	sub := followInBackground(ctx, "the subscriber", c)

	const rounds, perRound = 5, 20
	dead := map[uint32]bool{}
	for r := range rounds {
		var pid uint32
		waitFor(t, "the listener to be up again", func() bool { pid = b.carrier.ListenerPID(); return pid != 0 && !dead[pid] })
		dead[pid] = true
		var killed bool
		if err := admin.QueryRow(ctx, "SELECT pg_terminate_backend($1)", int32(pid)).Scan(&killed); err != nil || !killed {
			t.Fatalf("round %d: terminate listener %d: %v %v", r, pid, killed, err)
		}
		waitFor(t, "the listener to notice", func() bool { return b.carrier.ListenerPID() != pid })
		a.appendUsers(id, perRound, 10)
		want := int64((r + 1) * perRound)
		waitFor(t, fmt.Sprintf("round %d to reach the subscriber", r), func() bool { return sub.at(t, want) })
	}
	if got := b.hub.Stats().Resyncs.Load(); got < rounds+1 {
		t.Errorf("%d resyncs, want one per connect (%d)", got, rounds+1)
	}
}

// TestSlowClientIsClosed: a subscriber that stops reading is closed with
// CodeTooSlow once its queue overflows, while a fast one on the same session
// sees every event and the writer never waits.
func TestSlowClientIsClosed(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	a := startInstance(t, pc, live.Options{QueueSize: 64, QueueBytes: 2 << 20, WriteTimeout: 30 * time.Second})
	ctx := testCtx(t)
	id := a.createSession()

	// The slow client's receive buffer is small, so that its queue on the
	// server, not the kernel, soon holds what it does not read.
	slow, err := dialSmallBuffer(ctx, a.wsURL("/sessions/"+id+"/live"))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.CloseNow()
	fastConn, err := dial(ctx, a.wsURL("/sessions/"+id+"/live"))
	if err != nil {
		t.Fatal(err)
	}
	defer fastConn.CloseNow()
	fast := followInBackground(ctx, "fast subscriber", fastConn)

	// 2 KiB events, 50 to an append, until the slow socket's kernel buffers
	// and then its queue are full. Each append waits for the fast
	// subscriber to have read the one before: on a loaded machine (under
	// -race, beside other suites) a writer that runs ahead of it fills its
	// queue of 64 too, and the test would close both.
	var n int64
	caughtUp := func() {
		waitFor(t, "the fast subscriber to see every event", func() bool { return fast.at(t, n) })
	}
	for a.hub.Stats().TooSlow.Load() == 0 {
		if n > 50000 {
			t.Fatal("the slow client was never closed")
		}
		a.appendUsers(id, 50, 2<<10)
		n += 50
		caughtUp()
	}
	a.appendUsers(id, 50, 2<<10)
	n += 50
	caughtUp()
	if got := a.hub.Stats().TooSlow.Load(); got != 1 {
		t.Errorf("%d subscribers closed as too slow, want only the slow one", got)
	}

	// The slow client now reads what was buffered for it: a gapless prefix
	// of the log, then the close frame telling it where to resume.
	var f follower
	for {
		m, err := read(ctx, slow)
		if err != nil {
			if got := websocket.CloseStatus(err); got != live.CodeTooSlow {
				t.Fatalf("slow client ended with %v (status %d), want close code %d", err, got, live.CodeTooSlow)
			}
			var ce websocket.CloseError
			errors.As(err, &ce)
			if want := fmt.Sprintf("after=%d", f.last); !strings.Contains(ce.Reason, want) {
				t.Errorf("close reason %q does not say %q", ce.Reason, want)
			}
			break
		}
		if err := f.take(m); err != nil {
			t.Fatal(err)
		}
	}
	if f.last >= n {
		t.Errorf("the slow client saw all %d events; it was not slow", n)
	}
	t.Logf("slow client closed after %d of %d events", f.last, n)

	// It resumes where it stopped and gets the rest.
	if err := f.follow(ctx, a, id, n); err != nil {
		t.Fatal(err)
	}
}

// dialSmallBuffer dials a socket whose receive buffer is 32 KiB: a client
// that does not read it soon fills the kernel's buffers.
func dialSmallBuffer(ctx context.Context, url string) (*websocket.Conn, error) {
	dialer := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		err := rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 32<<10) })
		return errors.Join(err, serr)
	}}
	client := &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}}
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		return nil, err
	}
	c.SetReadLimit(1 << 20)
	return c, nil
}

// TestSlowReaderCatchesUp: a subscriber that stops reading for a while,
// though not long enough to overflow its queue, holds up no other socket
// (one per hub writer reads beside it, so that one shares its writer), and
// once it reads again gets every event, in order, none twice. What it is
// sent fills the kernel's buffers many times over: writes to it are cut
// short and finished by its own goroutine, a run at a time.
func TestSlowReaderCatchesUp(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	a := startInstance(t, pc, live.Options{QueueSize: 1 << 16, QueueBytes: 256 << 20, WriteTimeout: time.Minute})
	ctx := testCtx(t)
	id := a.createSession()
	slow, err := dialSmallBuffer(ctx, a.wsURL("/sessions/"+id+"/live"))
	if err != nil {
		t.Fatal(err)
	}
	defer slow.CloseNow()

	others := make([]*background, runtime.GOMAXPROCS(0))
	for i := range others {
		c, err := dial(ctx, a.wsURL("/sessions/"+id+"/live"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		others[i] = followInBackground(ctx, "another subscriber", c)
	}

	// 8 MiB in appends of 50 events of 16 KiB: twice what a socket's send
	// buffer grows to (4 MiB), and far over the slow client's 32 KiB.
	var n int64
	for range 10 {
		a.appendUsers(id, 50, 16<<10)
		n += 50
		waitFor(t, "the other subscribers to see every event", func() bool {
			all := true
			for _, o := range others {
				all = o.at(t, n) && all // each one's failure looked at
			}
			return all
		})
	}
	var f follower
	if err := f.readTo(ctx, slow, n); err != nil {
		t.Fatal(err)
	}
	if got := a.hub.Stats().TooSlow.Load(); got != 0 {
		t.Errorf("%d subscribers closed as too slow, want none", got)
	}
}

func TestCrossOriginRefused(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	a := startInstance(t, pc, live.Options{AllowedOrigins: []string{"app.example.com"}})
	ctx := testCtx(t)
	id := a.createSession()
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"", true}, // not a browser
		{a.srv.URL, true},
		{"http://app.example.com", true},
		{"http://evil.example.com", false},
		{"http://app.example.com.evil.example", false},
	} {
		for _, path := range []string{"/sessions/" + id + "/live", "/live"} {
			h := http.Header{}
			if tc.origin != "" {
				h.Set("Origin", tc.origin)
			}
			c, resp, err := websocket.Dial(ctx, a.wsURL(path), &websocket.DialOptions{HTTPHeader: h})
			if tc.ok {
				if err != nil {
					t.Errorf("origin %q on %s: %v", tc.origin, path, err)
					continue
				}
				c.Close(websocket.StatusNormalClosure, "")
				continue
			}
			if err == nil {
				c.CloseNow()
				t.Errorf("origin %q on %s: handshake accepted", tc.origin, path)
				continue
			}
			if resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Errorf("origin %q on %s: %v, want 403", tc.origin, path, err)
			}
		}
	}
}

// TestResumeAfterRestart: a server shuts down under a subscriber, which is
// told so with 1001 and resumes on the restarted server without a gap.
func TestResumeAfterRestart(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	a := startInstance(t, pc, live.Options{})
	ctx := testCtx(t)
	id := a.createSession()
	a.appendUsers(id, 5, 10)

	c, err := dial(ctx, a.wsURL("/sessions/"+id+"/live"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var f follower
	if err := f.readTo(ctx, c, 5); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() { a.stop(); close(stopped) }()
	for {
		m, err := read(ctx, c)
		if err != nil {
			if got := websocket.CloseStatus(err); got != websocket.StatusGoingAway {
				t.Fatalf("socket ended with %v, want 1001", err)
			}
			break
		}
		if err := f.take(m); err != nil {
			t.Fatal(err)
		}
	}
	<-stopped

	// Writes made while no server was up, then the restart.
	restarted := startInstance(t, pc, live.Options{})
	restarted.appendUsers(id, 4, 10)
	errc := make(chan error, 1)
	go func() { errc <- f.follow(ctx, restarted, id, 15) }()
	restarted.appendUsers(id, 6, 10)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

func TestSessionFeed(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	a, b := startInstance(t, pc, live.Options{}), startInstance(t, pc, live.Options{})
	ctx := testCtx(t)
	feeds := map[string]*websocket.Conn{}
	for name, in := range map[string]*instance{"local": a, "remote": b} {
		c, err := dial(ctx, in.wsURL("/live"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		feeds[name] = c
	}
	waitFor(t, "both feeds", func() bool {
		return a.hub.Stats().Connections.Load() == 1 && b.hub.Stats().Connections.Load() == 1
	})
	id := a.createSession()
	a.appendEvents(id, ev{"type": "turn/start", "data": ev{}})
	a.todoWrite(id, ev{"todos": []ev{{"content": "a", "status": "pending"}}})
	for name, c := range feeds {
		// Summaries may coalesce on the remote side; wait for the last state.
		for {
			m, err := read(ctx, c)
			if err != nil {
				t.Fatal(name, err)
			}
			if m.Type != "session" || m.Session.ID != id {
				t.Fatalf("%s: got %+v", name, m)
			}
			if m.Session.LastSeq == 2 {
				if m.Session.TodoCounts.Pending != 1 || !m.Session.Turn.Open {
					t.Errorf("%s: summary %+v", name, m.Session)
				}
				break
			}
		}
	}
}

// TestIdleSocketsArePinged: a socket with nothing to say is pinged once it
// has been silent for a PingInterval, not before, then every PingInterval,
// and answering keeps it open. The test moves the hub's ping clock, half a
// PingInterval a tick, and counts the pings the hub asked for at each.
func TestIdleSocketsArePinged(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	const interval = time.Minute
	const tick = interval / 2
	clock := new(fakeClock)
	a := startInstance(t, pc, live.Options{PingInterval: interval, After: clock.After})
	ctx := testCtx(t)
	id := a.createSession()
	stats := a.hub.Stats()
	clock.awaitWait(t, tick, "the ping clock's first tick")
	// step moves the ping clock one tick and returns the pings asked for
	// once the hub has looked at every socket at it (it then asks for its
	// next tick).
	step := func() int64 {
		clock.Advance(tick)
		clock.awaitWait(t, tick, "the ping clock's next tick")
		return stats.Pings.Load()
	}
	for _, path := range []string{"/sessions/" + id + "/live", "/live"} {
		waitFor(t, "the last socket to be gone", func() bool { return stats.Connections.Load() == 0 })
		before := stats.Pings.Load()
		var pings, messages atomic.Int64
		c, _, err := websocket.Dial(ctx, a.wsURL(path), &websocket.DialOptions{
			OnPingReceived: func(context.Context, []byte) bool { pings.Add(1); return true },
		})
		if err != nil {
			t.Fatal(err)
		}
		// Reading is what answers pings; the session socket also gets its
		// todos view, the feed nothing.
		readErr := make(chan error, 1)
		go func() {
			for {
				if _, _, err := c.Read(ctx); err != nil {
					readErr <- err
					return
				}
				messages.Add(1)
			}
		}()
		waitFor(t, "the socket to be open", func() bool { return stats.Connections.Load() == 1 })
		if path != "/live" {
			waitFor(t, "the todos view", func() bool { return messages.Load() == 1 })
		}
		// The socket wrote last before the next tick or, when it stored
		// that write's tick only after the test moved the clock, before
		// the one after.
		for k := 1; k <= 2; k++ {
			if n := step() - before; n != 0 {
				t.Fatalf("%s: %d pings %d ticks after the last write, within a PingInterval of silence", path, n, k)
			}
		}
		if step() == before && step() == before {
			t.Fatalf("%s: no ping after two PingIntervals of silence", path)
		}
		for want := int64(1); want <= 3; want++ {
			if n := stats.Pings.Load() - before; n != want {
				t.Fatalf("%s: %d pings asked, want %d", path, n, want)
			}
			waitFor(t, fmt.Sprintf("ping %d on %s", want, path), func() bool { return pings.Load() == want })
			if n := step() - before; n != want {
				t.Fatalf("%s: %d pings half a PingInterval after ping %d", path, n, want)
			}
			step()
		}
		if messages.Load() > 1 {
			t.Errorf("%s: %d messages; the socket had nothing to say but its todos view", path, messages.Load())
		}
		select {
		case err := <-readErr:
			t.Fatalf("%s: socket ended: %v", path, err)
		default:
		}
		c.Close(websocket.StatusNormalClosure, "")
	}
}
