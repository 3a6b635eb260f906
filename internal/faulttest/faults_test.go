package faulttest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/storetest"
)

// The fault suite (docs/reliability.md). Two Tack processes share a Postgres
// cluster the test starts itself, reached through a storetest.Proxy so the
// network can stall. Writers append with an Idempotency-Key and retry on 503
// and on connection errors, to any instance; websocket subscribers follow
// every session and resume with after=<last seq> when dropped. Each phase
// writes for a while, injects its fault mid-write and lets the writes in
// flight finish (their retries included) without starting new ones, so the
// last writes of the phase are the ones that raced the fault; then every
// subscriber must reach the last acknowledged seq of its session within
// liveBound. The sweep, the 30 s net under a lost cross-instance notice, is
// set to 10 minutes, out of the test's reach: a subscriber that depends on
// it fails the phase. At the end every acknowledged write is in the log
// exactly once, at the seq it was acknowledged with.
//
// FAULT_TIME sets how long each phase writes before its fault (default 1s);
// FAULT_REPORT names a file to write the table of figures to.

const (
	sessionsN = 3
	// liveBound is how long a subscriber may take to see the last
	// acknowledged event of a phase; a notice takes milliseconds, the sweep
	// ten minutes.
	liveBound = 5 * time.Second
	// stallFor is longer than the API's 4 s store deadline, so that commits
	// sent before the stall race their request's 503.
	stallFor = 5 * time.Second
	// giveUp bounds one write's retries.
	giveUp = 45 * time.Second
)

type fault struct {
	name    string
	inject  func(h *harness)
	restore func(h *harness)
}

// faultTime is how long each phase writes before its fault: FAULT_TIME,
// default 1s.
func faultTime(t *testing.T) time.Duration {
	writeFor := time.Second
	if v := os.Getenv("FAULT_TIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("FAULT_TIME=%q: want a duration such as 30s", v)
		}
		writeFor = d
	}
	return writeFor
}

func TestFaults(t *testing.T) {
	writeFor := faultTime(t)
	cluster := StartCluster(t)
	proxy := storetest.NewProxy(t, cluster.Addr())
	bin := BuildServer(t)
	// -auth local with no write limit, whatever the caller's environment
	// says: the writers are the machine's own user, writing as fast as the
	// instances answer.
	env := []string{"DATABASE_URL=" + cluster.URL(proxy.Addr()), "TACK_LIVE_SWEEP=10m", "TACK_MAX_CONNS=8",
		"TACK_AUTH=local", "TACK_WRITE_RATE=0"}
	h := &harness{t: t, cluster: cluster, proxy: proxy,
		client: &http.Client{Timeout: 5 * time.Second}, acked: map[string]ack{}}
	for range 2 {
		in := NewInstance(t, bin, env...)
		in.Start()
		h.insts = append(h.insts, &instance{Instance: in})
	}
	h.setUp()
	defer h.stopSubscribers()

	victim := func(h *harness) *instance { return h.insts[0] }
	faults := []fault{
		{name: "none (baseline)"},
		{name: "kill -9 of an instance mid-write",
			inject:  func(h *harness) { victim(h).down.Store(true); victim(h).Kill() },
			restore: func(h *harness) { victim(h).Start(); victim(h).down.Store(false) }},
		{name: "SIGTERM of an instance mid-write",
			inject: func(h *harness) {
				victim(h).down.Store(true)
				if err := victim(h).Term(); err != nil {
					h.t.Errorf("SIGTERM: the instance did not exit cleanly: %v", err)
				}
			},
			restore: func(h *harness) { victim(h).Start(); victim(h).down.Store(false) }},
		{name: "Postgres restart -m immediate", inject: func(h *harness) { h.cluster.RestartImmediate() }},
		{name: "pg_terminate_backend of Tack's backends", inject: func(h *harness) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if n, err := h.cluster.TerminateBackends(ctx); err != nil || n == 0 {
				h.t.Errorf("pg_terminate_backend: ended %d backends: %v", n, err)
			}
		}},
		{name: fmt.Sprintf("%s network stall", stallFor), inject: func(h *harness) { h.stall(h.proxy.Stall) }},
		{name: fmt.Sprintf("%s stall of Postgres's replies only", stallFor), inject: func(h *harness) { h.stall(h.proxy.StallReplies) }},
	}
	h.run(faults, writeFor, "2 instances")
}

// hold keeps a fault, or the load before one, in place for d. It is the
// suite's one sleep, and on purpose: the fault is a length of time. No
// clock of the test's can stand in, since what is held runs in other
// processes (the servers' store deadline, Postgres, the writers against
// them) on the wall clock.
func hold(d time.Duration) { time.Sleep(d) }

// stall stalls the network to Postgres the way start does for stallFor,
// then lets it flow again.
func (h *harness) stall(start func()) {
	start()
	hold(stallFor)
	h.proxy.Restore()
}

// run runs the phases of faults, checks every log, and prints and checks
// the figures of each: nothing lost, duplicated or out of order, no 500,
// no subscriber waiting for the sweep.
func (h *harness) run(faults []fault, writeFor time.Duration, setting string) {
	t := h.t
	var rows []row
	for i, f := range faults {
		rows = append(rows, h.phase(i, f, writeFor))
	}
	h.verifyLogs(rows)

	var table strings.Builder
	table.WriteString("| fault | acknowledged | lost | duplicated | out of order | 500s | recovery p50 | recovery max | waited for the sweep |\n")
	table.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&table, "| %s | %d | %d | %d | %d | %d | %s | %s | %d |\n", r.fault, r.acked, r.lost, r.dup,
			r.disorder, r.errors500, ms(r.recovery, 0.5), ms(r.recovery, 1), r.sweepWaits)
	}
	t.Logf("figures (FAULT_TIME=%s, %d sessions, %d writers, %d subscribers, %s):\n%s",
		writeFor, sessionsN, 2*sessionsN, 2*sessionsN, setting, table.String())
	if p := os.Getenv("FAULT_REPORT"); p != "" {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = fmt.Fprintf(f, "%s (%s)\n\n%s\n", t.Name(), setting, table.String())
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			t.Error(err)
		}
	}
	for _, r := range rows {
		if r.lost > 0 || r.dup > 0 || r.disorder > 0 || r.errors500 > 0 || r.sweepWaits > 0 {
			t.Errorf("%s: %d lost, %d duplicated, %d out of order, %d answered 500, %d subscribers waited for the sweep",
				r.fault, r.lost, r.dup, r.disorder, r.errors500, r.sweepWaits)
		}
	}
}

type instance struct {
	*Instance
	down atomic.Bool
}

type harness struct {
	t       *testing.T
	cluster *Cluster
	proxy   *storetest.Proxy
	insts   []*instance
	client  *http.Client

	sessions []string
	subs     []*subscriber
	phaseNow atomic.Int64
	errs500  [16]atomic.Int64 // per phase
	disorder [16]atomic.Int64 // per phase

	mu    sync.Mutex
	acked map[string]ack // by Idempotency-Key
	keyPh map[string]int // the phase of every key sent
	// todoKeys are the keys of todo_write calls, whose acknowledged seq is
	// the list's version.
	todoKeys map[string]bool
}

type ack struct {
	session  string
	seq      int64
	phase    int
	replayed bool // answered from the idempotency record
}

type row struct {
	fault                                             string
	acked, lost, dup, disorder, errors500, sweepWaits int
	recovery                                          []time.Duration
}

// pick returns the base URL of an instance for the n-th try, skipping one
// the test has taken down.
func (h *harness) pick(n int) string {
	for k := range len(h.insts) {
		in := h.insts[(n+k)%len(h.insts)]
		if !in.down.Load() {
			return "http://" + in.Addr
		}
	}
	return "http://" + h.insts[n%len(h.insts)].Addr
}

func (h *harness) setUp() {
	for range sessionsN {
		var sess struct{ ID string }
		h.mustJSON(http.MethodPost, "/sessions", `{"title":"faults"}`, http.StatusCreated, &sess)
		h.mustJSON(http.MethodPost, "/sessions/"+sess.ID+"/events", `{"events":[{"type":"turn/start","data":{}}]}`, http.StatusCreated, nil)
		h.sessions = append(h.sessions, sess.ID)
	}
	h.keyPh = map[string]int{}
	for i, id := range h.sessions {
		for k := range 2 {
			s := &subscriber{h: h, session: id, n: i*2 + k, stop: make(chan struct{}), done: make(chan struct{})}
			h.subs = append(h.subs, s)
			go s.run()
		}
	}
}

func (h *harness) mustJSON(method, path, body string, want int, v any) {
	h.t.Helper()
	h.mustJSONAt(h.pick(0), method, path, body, want, v)
}

// mustJSONAt is mustJSON on the instance at base.
func (h *harness) mustJSONAt(base, method, path, body string, want int, v any) {
	h.t.Helper()
	req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		h.t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			h.t.Fatal(err)
		}
	}
}

// phase writes for writeFor, injects f mid-write, lets the writes in flight
// finish, checks that every subscriber catches up without the sweep, and
// restores what the fault took down.
func (h *harness) phase(i int, f fault, writeFor time.Duration) row {
	h.phaseNow.Store(int64(i))
	r := row{fault: f.name}
	var (
		stop     atomic.Bool
		faultAt  atomic.Pointer[time.Time]
		wg       sync.WaitGroup
		recMu    sync.Mutex
		recovery []time.Duration
	)
	for w := range 2 * sessionsN {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := h.sessions[w/2]
			for n := 0; !stop.Load(); n++ {
				key := fmt.Sprintf("p%d-w%d-%d", i, w, n)
				ok := h.write(i, id, key, w%2 == 1, w+n)
				if fa := faultAt.Load(); ok && fa != nil {
					// The write was in flight when the fault came: how long
					// until it was acknowledged is this writer's recovery.
					recMu.Lock()
					recovery = append(recovery, time.Since(*fa))
					recMu.Unlock()
					return
				}
			}
		}()
	}
	hold(writeFor)
	if f.inject != nil {
		now := time.Now()
		faultAt.Store(&now)
		stop.Store(true)
		f.inject(h)
	}
	stop.Store(true)
	wg.Wait()
	r.recovery = recovery

	// Every subscriber reaches the last acknowledged seq of its session.
	last := h.lastAcked()
	deadline := time.Now().Add(liveBound)
	for _, s := range h.subs {
		want := last[s.session]
		eventually.Within(time.Until(deadline), func() bool { return s.last.Load() >= want.seq })
		if got := s.last.Load(); got < want.seq {
			r.sweepWaits++
			h.t.Errorf("%s: subscriber %d of %s saw up to seq %d, %s after the phase's writes ended; the last acknowledged is %d (replayed: %v)",
				f.name, s.n, s.session, got, liveBound, want.seq, want.replayed)
		}
	}
	if f.restore != nil {
		f.restore(h)
	}
	return r
}

// lastAcked is the latest acknowledged write of each session.
func (h *harness) lastAcked() map[string]ack {
	h.mu.Lock()
	defer h.mu.Unlock()
	last := map[string]ack{}
	for _, a := range h.acked {
		if a.seq > last[a.session].seq {
			last[a.session] = a
		}
	}
	return last
}

// write sends one write under key until it is acknowledged, retrying on 503
// and on transport errors; it reports whether it was acknowledged.
func (h *harness) write(phase int, id, key string, todo bool, n int) bool {
	path := "/sessions/" + id + "/events"
	body := fmt.Sprintf(`{"events":[{"type":"message/user","data":{"text":%q}}]}`, key)
	if todo {
		path = "/sessions/" + id + "/tools/todo_write"
		body = fmt.Sprintf(`{"todos":[{"content":%q,"status":"in_progress"}]}`, key)
	}
	h.mu.Lock()
	h.keyPh[key] = phase
	if todo {
		if h.todoKeys == nil {
			h.todoKeys = map[string]bool{}
		}
		h.todoKeys[key] = true
	}
	h.mu.Unlock()
	deadline := time.Now().Add(giveUp)
	for try := 0; ; try++ {
		base := h.pick(n + try)
		// A retry waits until its instance says it is ready (/readyz: it
		// reaches Postgres), rather than for a pause of the test's choosing;
		// past giveUp the write is given up, ready instance or not.
		if try > 0 && (time.Now().After(deadline) || !eventually.Within(time.Until(deadline), func() bool { return h.ready(base) })) {
			return false
		}
		req, _ := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", key)
		resp, err := h.client.Do(req)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusServiceUnavailable:
			continue
		case resp.StatusCode == http.StatusTooManyRequests:
			// Not expected with TACK_WRITE_RATE=0: the write is given up.
			h.t.Errorf("%s %s = 429 %s: the suite runs without a write limit", path, key, b)
			return false
		case resp.StatusCode >= 500:
			h.errs500[phase].Add(1)
			h.t.Errorf("%s %s = %d %s", path, key, resp.StatusCode, b)
			continue
		case resp.StatusCode/100 != 2:
			h.t.Errorf("%s %s = %d %s, want 2xx", path, key, resp.StatusCode, b)
			return false
		}
		var res struct {
			Events  []struct{ Seq int64 }
			Version int64
		}
		if err := json.Unmarshal(b, &res); err != nil {
			h.t.Errorf("%s %s: %v in %s", path, key, err, b)
			return false
		}
		seq := res.Version
		if !todo && len(res.Events) == 1 {
			seq = res.Events[0].Seq
		}
		h.mu.Lock()
		h.acked[key] = ack{session: id, seq: seq, phase: phase, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}
		h.mu.Unlock()
		return true
	}
}

// ready reports whether the instance at base answers /readyz with 200.
func (h *harness) ready(base string) bool {
	resp, err := h.client.Get(base + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// verifyLogs reads every session's log and fills in the rows: each
// acknowledged write is there exactly once at its acknowledged seq, and no
// write is there twice.
func (h *harness) verifyLogs(rows []row) {
	for _, a := range h.acked {
		rows[a.phase].acked++
	}
	found := map[string][]int64{}
	for _, id := range h.sessions {
		var seq int64
		for {
			var page struct {
				Events []struct {
					Seq  int64
					Type string
					Data json.RawMessage
				}
				HasMore bool
			}
			h.mustJSON(http.MethodGet, fmt.Sprintf("/sessions/%s/events?after=%d&limit=1000", id, seq), "", http.StatusOK, &page)
			for _, ev := range page.Events {
				if ev.Seq != seq+1 {
					h.t.Errorf("%s: log goes from seq %d to %d", id, seq, ev.Seq)
				}
				seq = ev.Seq
				var d struct {
					Text  string
					Todos []struct{ Content string }
				}
				_ = json.Unmarshal(ev.Data, &d)
				if ev.Type == "todo/write" && len(d.Todos) == 1 {
					d.Text = d.Todos[0].Content
				}
				if d.Text != "" {
					found[d.Text] = append(found[d.Text], ev.Seq)
				}
			}
			if !page.HasMore {
				break
			}
		}
	}
	for key, a := range h.acked {
		switch seqs := found[key]; {
		case len(seqs) == 0:
			rows[a.phase].lost++
			h.t.Errorf("acknowledged write %s (seq %d) is not in the log", key, a.seq)
		case !slices.Equal(seqs, []int64{a.seq}):
			h.t.Errorf("acknowledged write %s (seq %d) is in the log at %v", key, a.seq, seqs)
		}
	}
	for key, seqs := range found {
		if len(seqs) > 1 {
			rows[h.keyPh[key]].dup += len(seqs) - 1
		}
	}
	for i := range rows {
		rows[i].disorder = int(h.disorder[i].Load())
		rows[i].errors500 = int(h.errs500[i].Load())
	}
}

func (h *harness) stopSubscribers() {
	for _, s := range h.subs {
		close(s.stop)
	}
	for _, s := range h.subs {
		<-s.done
	}
}

// subscriber follows one session's live socket, resuming with after=<last
// seq> on another instance whenever its socket drops, and counts every event
// that is not the one after the last.
type subscriber struct {
	h       *harness
	session string
	n       int
	last    atomic.Int64
	stop    chan struct{}
	done    chan struct{}
}

func (s *subscriber) run() {
	defer close(s.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { <-s.stop; cancel() }()
	for try := s.n; ctx.Err() == nil; try++ {
		base := s.h.pick(try)
		// A resume waits until its instance says it is ready, as a
		// writer's retry does, or until the subscriber is stopped.
		if try > s.n && !eventually.Within(giveUp, func() bool { return ctx.Err() != nil || s.h.ready(base) }) {
			continue
		}
		s.follow(ctx, strings.Replace(base, "http://", "ws://", 1))
	}
}

func (s *subscriber) follow(ctx context.Context, base string) {
	dctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	ws, resp, err := websocket.Dial(dctx, fmt.Sprintf("%s/sessions/%s/live?after=%d", base, s.session, s.last.Load()), nil)
	cancel()
	if err != nil {
		if resp != nil && resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
			s.h.errs500[s.h.phaseNow.Load()].Add(1)
			s.h.t.Errorf("subscriber %d: handshake answered %d", s.n, resp.StatusCode)
		}
		return
	}
	defer ws.CloseNow()
	ws.SetReadLimit(4 << 20)
	for {
		_, b, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var m struct {
			Type  string
			Event struct{ Seq int64 }
		}
		if err := json.Unmarshal(b, &m); err != nil {
			s.h.t.Errorf("subscriber %d: %v in %s", s.n, err, b)
			return
		}
		if m.Type != "event" {
			continue
		}
		if last := s.last.Load(); m.Event.Seq != last+1 {
			s.h.disorder[s.h.phaseNow.Load()].Add(1)
			s.h.t.Errorf("subscriber %d of %s: seq %d after %d", s.n, s.session, m.Event.Seq, last)
			if m.Event.Seq <= last {
				continue
			}
		}
		s.last.Store(m.Event.Seq)
	}
}

// ms is the q-quantile of ds in milliseconds, "—" when there is none.
func ms(ds []time.Duration, q float64) string {
	if len(ds) == 0 {
		return "—"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return fmt.Sprintf("%d ms", s[int(q*float64(len(s)-1))].Milliseconds())
}
