package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/storetest"
)

// The outage tests run the real server against a Postgres reached through a
// storetest.Proxy, cut the database away and give it back. They check that
// while the database is away requests answer 503 with the JSON error (never a
// 500, never a hang); nothing acknowledged is lost; and once it is back the
// service recovers by itself, sockets included. See docs/stores.md, "Database
// outages".

// answerTimeout bounds every request: the pool's connect timeout is 2 s, so a
// request that has not answered in 5 s hangs. It is a bound on "it answered",
// not a performance figure.
const answerTimeout = 5 * time.Second

// recoverTimeout bounds the wait for readiness and for sockets to catch up
// after the database returns.
const recoverTimeout = 20 * time.Second

type outage struct {
	t      *testing.T
	base   string
	addr   string
	proxy  *storetest.Proxy
	out    *storetest.LogBuffer
	client *http.Client
}

func startOutage(t *testing.T) *outage {
	t.Helper()
	url, proxy := storetest.ProxiedSchemaURL(t)
	out := &storetest.LogBuffer{}
	addr, stop := start(t, env(map[string]string{"DATABASE_URL": url}), out)
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if t.Failed() {
			t.Logf("server log:\n%s", out.String())
		}
	})
	return &outage{t: t, base: "http://" + addr, addr: addr, proxy: proxy, out: out,
		client: &http.Client{Timeout: answerTimeout}}
}

type answer struct {
	status   int
	body     []byte
	replayed bool
}

// do sends a request and returns its answer; err is a transport failure,
// a client timeout included.
func (o *outage) do(method, path, body string, header ...string) (answer, error) {
	req, err := http.NewRequest(method, o.base+path, strings.NewReader(body))
	if err != nil {
		return answer{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := o.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, body: b, replayed: resp.Header.Get("Idempotent-Replayed") == "true"}, err
}

// must sends a request that has to succeed with want.
func (o *outage) must(want int, method, path, body string, header ...string) answer {
	o.t.Helper()
	a, err := o.do(method, path, body, header...)
	if err != nil {
		o.t.Fatalf("%s %s: %v", method, path, err)
	}
	if a.status != want {
		o.t.Fatalf("%s %s = %d %s, want %d", method, path, a.status, a.body, want)
	}
	return a
}

// wantUnavailable checks that a request answers, within answerTimeout, with
// 503 and the JSON error body.
func (o *outage) wantUnavailable(method, path, body string) {
	o.t.Helper()
	a, err := o.do(method, path, body)
	if err != nil {
		o.t.Errorf("%s %s while the database is away: no answer: %v", method, path, err)
		return
	}
	var e struct {
		Error struct{ Code, Message string }
	}
	if a.status != http.StatusServiceUnavailable || json.Unmarshal(a.body, &e) != nil ||
		e.Error.Code != "unavailable" || e.Error.Message == "" {
		o.t.Errorf("%s %s while the database is away = %d %s, want 503 with error code unavailable", method, path, a.status, a.body)
	}
}

// awaitReady polls readyz until it answers 200.
func (o *outage) awaitReady() {
	o.t.Helper()
	var (
		a   answer
		err error
	)
	if !eventually.Within(recoverTimeout, func() bool {
		a, err = o.do("GET", "/readyz", "")
		return err == nil && a.status == http.StatusOK
	}) {
		o.t.Fatalf("readyz did not return to 200 within %v after the database came back: %d %s %v", recoverTimeout, a.status, a.body, err)
	}
}

type event struct {
	Seq  int64
	Type string
	Data struct{ Text string }
}

// appendText appends one user message; it returns the answer and, on 201,
// the stored seq.
func (o *outage) appendText(id, text, key string) (answer, int64, error) {
	body := fmt.Sprintf(`{"events":[{"type":"message/user","data":{"text":%q}}]}`, text)
	var header []string
	if key != "" {
		header = []string{"Idempotency-Key", key}
	}
	a, err := o.do("POST", "/sessions/"+id+"/events", body, header...)
	if err != nil || a.status != http.StatusCreated {
		return a, 0, err
	}
	var res struct{ Events []event }
	if err := json.Unmarshal(a.body, &res); err != nil || len(res.Events) != 1 {
		return a, 0, fmt.Errorf("append answer %s: %v", a.body, err)
	}
	return a, res.Events[0].Seq, nil
}

// log reads a session's whole log and checks that its seqs are 1…n.
func (o *outage) log(id string) []event {
	o.t.Helper()
	var all []event
	for after := int64(0); ; {
		a := o.must(http.StatusOK, "GET", "/sessions/"+id+"/events?limit=1000&after="+strconv.FormatInt(after, 10), "")
		var page struct {
			Events  []event
			HasMore bool
		}
		if err := json.Unmarshal(a.body, &page); err != nil {
			o.t.Fatal(err)
		}
		all = append(all, page.Events...)
		if !page.HasMore || len(page.Events) == 0 {
			break
		}
		after = page.Events[len(page.Events)-1].Seq
	}
	for i, ev := range all {
		if ev.Seq != int64(i+1) {
			o.t.Fatalf("log seq %d at position %d: the log has a gap or a duplicate", ev.Seq, i)
		}
	}
	return all
}

// countTexts counts each user message text in a log.
func countTexts(log []event) map[string]int {
	n := map[string]int{}
	for _, ev := range log {
		if ev.Type == "message/user" {
			n[ev.Data.Text]++
		}
	}
	return n
}

// sessionSocket is a subscriber to /sessions/{id}/live that checks, message
// by message, that events arrive in seq order with no gap and no duplicate.
// When the server closes it, it resumes with after=<last seq> as a client
// is told to, and counts the reconnects.
type sessionSocket struct {
	o          *outage
	id         string
	ws         *websocket.Conn
	msgs       chan []byte
	ended      chan error
	lastSeq    int64
	reconnects []string
}

func (o *outage) openSession(id string) *sessionSocket {
	s := &sessionSocket{o: o, id: id}
	s.dial()
	return s
}

func (s *sessionSocket) dial() {
	s.o.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, fmt.Sprintf("ws://%s/sessions/%s/live?after=%d", s.o.addr, s.id, s.lastSeq), nil)
	if err != nil {
		s.o.t.Fatalf("open session socket after=%d: %v", s.lastSeq, err)
	}
	ws.SetReadLimit(1 << 20)
	s.ws, s.msgs, s.ended = ws, make(chan []byte, 1024), make(chan error, 1)
	go read(ws, s.msgs, s.ended)
	s.o.t.Cleanup(func() { ws.CloseNow() })
}

// read forwards a socket's messages until it ends.
func read(ws *websocket.Conn, msgs chan<- []byte, ended chan<- error) {
	for {
		_, b, err := ws.Read(context.Background())
		if err != nil {
			ended <- err
			return
		}
		msgs <- b
	}
}

// await reads until the subscriber has seen seq upTo.
func (s *sessionSocket) await(upTo int64) {
	s.o.t.Helper()
	s.until(fmt.Sprintf("seq %d", upTo), func(string) bool { return s.lastSeq >= upTo })
}

// awaitLive reads until the first todos message, which the server sends
// after the backlog: from then on the socket is served from the hub and
// reads nothing from the store by itself.
func (s *sessionSocket) awaitLive() {
	s.o.t.Helper()
	s.until("the todos message", func(typ string) bool { return typ == "todos" })
}

// until reads messages until done(type of the last message) holds.
func (s *sessionSocket) until(what string, done func(typ string) bool) {
	t := s.o.t
	t.Helper()
	deadline := time.After(recoverTimeout)
	for typ := ""; !done(typ); {
		select {
		case b := <-s.msgs:
			var m struct {
				Type  string
				Event event
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("session socket message %s: %v", b, err)
			}
			typ = m.Type
			if m.Type != "event" {
				continue
			}
			if m.Event.Seq != s.lastSeq+1 {
				t.Fatalf("session socket: seq %d after %d, want %d (a gap or a duplicate)", m.Event.Seq, s.lastSeq, s.lastSeq+1)
			}
			s.lastSeq = m.Event.Seq
		case err := <-s.ended:
			if len(s.msgs) > 0 {
				// Read what arrived before the close first.
				s.ended <- err
				continue
			}
			if code := websocket.CloseStatus(err); code != websocket.StatusInternalError {
				t.Fatalf("session socket ended with %v, want only 1011 (database unavailable) or nothing", err)
			}
			s.reconnects = append(s.reconnects, err.Error())
			s.dial()
		case <-deadline:
			t.Fatalf("session socket: at seq %d, no %s within %v", s.lastSeq, what, recoverTimeout)
		}
	}
}

// feedSocket is a subscriber to /live, the feed of session summaries.
type feedSocket struct {
	o     *outage
	msgs  chan []byte
	ended chan error
}

func (o *outage) openFeed() *feedSocket {
	o.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), answerTimeout)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+o.addr+"/live", nil)
	if err != nil {
		o.t.Fatalf("open /live: %v", err)
	}
	o.t.Cleanup(func() { ws.CloseNow() })
	f := &feedSocket{o: o, msgs: make(chan []byte, 1024), ended: make(chan error, 1)}
	go read(ws, f.msgs, f.ended)
	return f
}

// await reads the feed until a summary of session id at lastSeq ≥ upTo.
func (f *feedSocket) await(id string, upTo int64) {
	t := f.o.t
	t.Helper()
	deadline := time.After(recoverTimeout)
	for {
		select {
		case b := <-f.msgs:
			var m struct {
				Type    string
				Session struct {
					ID      string
					LastSeq int64
				}
			}
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("feed message %s: %v", b, err)
			}
			if m.Type == "session" && m.Session.ID == id && m.Session.LastSeq >= upTo {
				return
			}
		case err := <-f.ended:
			t.Fatalf("/live ended: %v", err)
		case <-deadline:
			t.Fatalf("/live: no summary of %s at seq %d within %v", id, upTo, recoverTimeout)
		}
	}
}

// newSession creates a session and opens a turn with a todo list.
func (o *outage) newSession() string {
	o.t.Helper()
	var s struct{ ID string }
	if err := json.Unmarshal(o.must(http.StatusCreated, "POST", "/sessions", `{"title":"outage"}`).body, &s); err != nil {
		o.t.Fatal(err)
	}
	o.must(http.StatusCreated, "POST", "/sessions/"+s.ID+"/events", `{"events":[{"type":"turn/start","data":{}}]}`)
	o.must(http.StatusOK, "POST", "/sessions/"+s.ID+"/tools/todo_write",
		`{"todos":[{"content":"Survive the outage","status":"in_progress"},{"content":"Recover","status":"pending"}]}`)
	return s.ID
}

// checkUnavailable checks every kind of request while the database is away.
func (o *outage) checkUnavailable(id string) {
	o.t.Helper()
	o.wantUnavailable("POST", "/sessions/"+id+"/events", `{"events":[{"type":"message/user","data":{"text":"during the outage"}}]}`)
	o.wantUnavailable("POST", "/sessions/"+id+"/tools/todo_write", `{"todos":[{"content":"Survive the outage","status":"completed"}]}`)
	o.wantUnavailable("GET", "/sessions/"+id+"/todos", "")
	o.wantUnavailable("GET", "/sessions/"+id+"/history", "")
	o.wantUnavailable("GET", "/readyz", "")
}

// TestOutageWhileIdle cuts the database while nothing is being written.
func TestOutageWhileIdle(t *testing.T) {
	t.Parallel()
	o := startOutage(t)
	id := o.newSession()
	acked := map[string]bool{}
	for i := range 5 {
		text := fmt.Sprintf("before %d", i)
		if _, _, err := o.appendText(id, text, ""); err != nil {
			t.Fatal(err)
		}
		acked[text] = true
	}
	sock := o.openSession(id)
	feed := o.openFeed()
	sock.awaitLive()
	sock.await(int64(2 + len(acked)))

	o.proxy.Cut()
	o.checkUnavailable(id)
	// A write with an Idempotency-Key during the outage: the client retries
	// it with the same key once the database is back.
	const retryText, retryKey = "retried after the outage", "outage-retry-1"
	if a, _, err := o.appendText(id, retryText, retryKey); err != nil || a.status != http.StatusServiceUnavailable {
		t.Fatalf("keyed append while the database is away = %d %s %v, want 503", a.status, a.body, err)
	}

	o.proxy.Restore()
	o.awaitReady()
	if a, _, err := o.appendText(id, retryText, retryKey); err != nil || a.status != http.StatusCreated {
		t.Fatalf("retry of the keyed append = %d %s %v, want 201", a.status, a.body, err)
	}
	acked[retryText] = true
	o.must(http.StatusOK, "POST", "/sessions/"+id+"/tools/todo_write",
		`{"todos":[{"content":"Survive the outage","status":"completed"},{"content":"Recover","status":"in_progress"}]}`)
	var last int64
	for i := range 5 {
		text := fmt.Sprintf("after %d", i)
		_, seq, err := o.appendText(id, text, "")
		if err != nil || seq == 0 {
			t.Fatalf("append after the outage: seq %d, %v", seq, err)
		}
		acked[text], last = true, seq
	}

	log := o.log(id)
	if int64(len(log)) != last {
		t.Fatalf("log ends at %d, the last acknowledged append at %d", len(log), last)
	}
	counts := countTexts(log)
	for text := range acked {
		if counts[text] != 1 {
			t.Errorf("acknowledged %q is in the log %d times, want once", text, counts[text])
		}
	}
	if counts["during the outage"] != 0 {
		t.Errorf("an append answered 503 is in the log")
	}
	sock.await(last)
	feed.await(id, last)
	// An idle socket reads nothing from the store during the outage, so it
	// rides it out: the server keeps it open and resumes pushing to it.
	if len(sock.reconnects) > 0 {
		t.Errorf("the idle session socket was closed during the outage: %v", sock.reconnects)
	}
	t.Logf("log of %d events; the session socket stayed open", len(log))
}

// TestOutageUnderWrites cuts the database while writers hammer one session
// with keyed appends. Every append answered 201 must be in the log once.
// One answered 503 may have committed anyway, when the cut fell between
// Postgres's commit and the server hearing of it: the log is read before
// the retry, each such text is there at most once, and the retry with the
// same Idempotency-Key tells which it was — it replays (Idempotent-Replayed)
// exactly when the first attempt had committed, and appends otherwise.
func TestOutageUnderWrites(t *testing.T) {
	t.Parallel()
	o := startOutage(t)
	id := o.newSession()
	sock := o.openSession(id)
	feed := o.openFeed()
	sock.awaitLive()

	type write struct{ text, key string }
	var (
		mu        sync.Mutex
		acked     []write
		failed    []write // answered 503
		unknown   []write // no answer or another status: an error, resolved by retry
		acks, n5x atomic.Int64
		stop      atomic.Bool
		wg        sync.WaitGroup
	)
	const writers = 4
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				wr := write{text: fmt.Sprintf("w%d-%d", w, i), key: fmt.Sprintf("k-%d-%d", w, i)}
				a, _, err := o.appendText(id, wr.text, wr.key)
				mu.Lock()
				switch {
				case err == nil && a.status == http.StatusCreated:
					acked = append(acked, wr)
					acks.Add(1)
				case err == nil && a.status == http.StatusServiceUnavailable:
					failed = append(failed, wr)
					n5x.Add(1)
				default:
					t.Errorf("append %s during the outage test: %d %s %v, want 201 or 503", wr.text, a.status, a.body, err)
					unknown = append(unknown, wr)
				}
				mu.Unlock()
			}
		}()
	}
	await := func(what string, cond func() bool) {
		t.Helper()
		if !eventually.Within(recoverTimeout, cond) {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("%s: not within %v", what, recoverTimeout)
		}
	}
	await("writers acknowledged", func() bool { return acks.Load() >= 50 })
	o.proxy.Cut()
	before := n5x.Load()
	await("writers answered 503", func() bool { return n5x.Load() >= before+2*writers })
	o.checkUnavailable(id)
	o.proxy.Restore()
	o.awaitReady()
	ackedAtRestore := acks.Load()
	await("writers acknowledged after the restore", func() bool { return acks.Load() >= ackedAtRestore+50 })
	stop.Store(true)
	wg.Wait()

	// Before any retry: each 503 text is absent or, if its commit raced the
	// cut, present once.
	counts := countTexts(o.log(id))
	raced := map[string]bool{}
	for _, wr := range append(failed, unknown...) {
		switch counts[wr.text] {
		case 0:
		case 1:
			raced[wr.text] = true
		default:
			t.Errorf("%s, answered 503, is in the log %d times", wr.text, counts[wr.text])
		}
	}
	for _, wr := range append(failed, unknown...) {
		a, _, err := o.appendText(id, wr.text, wr.key)
		if err != nil || a.status != http.StatusCreated {
			t.Fatalf("retry of %s = %d %s %v, want 201", wr.text, a.status, a.body, err)
		}
		if a.replayed != raced[wr.text] {
			t.Errorf("retry of %s: replayed %v, but its first attempt committed: %v", wr.text, a.replayed, raced[wr.text])
		}
	}
	_, last, err := o.appendText(id, "the end", "")
	if err != nil || last == 0 {
		t.Fatalf("final append: %v", err)
	}

	log := o.log(id)
	counts = countTexts(log)
	for _, wr := range append(append(acked, failed...), unknown...) {
		if counts[wr.text] != 1 {
			t.Errorf("%s is in the log %d times, want exactly once", wr.text, counts[wr.text])
		}
	}
	if got, want := int64(len(log)), last; got != want {
		t.Errorf("log of %d events, the last append at seq %d", got, want)
	}
	sock.await(last)
	feed.await(id, last)
	t.Logf("%d acknowledged, %d answered 503 (%d of them had committed), %d unanswered; session socket: %d reconnects %v; log of %d events",
		len(acked), len(failed), len(raced), len(unknown), len(sock.reconnects), sock.reconnects, len(log))
}

// TestOutageStalled takes the database away as a network partition does:
// the pooled connections stay open but carry nothing, so no error ever comes
// back from them. Requests must still answer 503 within the bound.
func TestOutageStalled(t *testing.T) {
	t.Parallel()
	o := startOutage(t)
	id := o.newSession()
	sock := o.openSession(id)
	feed := o.openFeed()
	sock.awaitLive()
	if _, _, err := o.appendText(id, "before", ""); err != nil {
		t.Fatal(err)
	}
	o.proxy.Stall()
	o.checkUnavailable(id)
	o.proxy.Restore()
	o.awaitReady()
	_, last, err := o.appendText(id, "after", "")
	if err != nil || last == 0 {
		t.Fatalf("append after the partition healed: %v", err)
	}
	// A 503 is an unknown outcome, not a refusal: an append sent whole
	// into the partition (the one-round-trip path pipelines its COMMIT) is
	// delivered and committed once the network heals, after its 503. It
	// lands once or not at all, and its key's retry would tell which.
	counts := countTexts(o.log(id))
	if counts["before"] != 1 || counts["after"] != 1 || counts["during the outage"] > 1 {
		t.Errorf("log texts %v, want before and after once each, the write answered 503 at most once", counts)
	}
	sock.await(last)
	feed.await(id, last)
	t.Logf("session socket: %d reconnects %v", len(sock.reconnects), sock.reconnects)
}
