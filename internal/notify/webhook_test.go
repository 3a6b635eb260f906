package notify_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/notify"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// receiver is a local webhook receiver that checks each signature and
// keeps what it got; fail answers 500 to the first n requests.
type receiver struct {
	t      *testing.T
	secret []byte
	mu     sync.Mutex
	got    []notify.Delivery
	tries  map[string]int
	fail   int
	srv    *httptest.Server
}

func newReceiver(t *testing.T, secret string, fail int) *receiver {
	r := &receiver{t: t, secret: []byte(secret), tries: map[string]int{}, fail: fail}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		if got, want := req.Header.Get(notify.SignatureHeader), notify.Sign(r.secret, body); got != want {
			t.Errorf("signature %q, want %q", got, want)
		}
		var d notify.Delivery
		if err := json.Unmarshal(body, &d); err != nil || req.Header.Get("X-Tack-Delivery") != d.ID || req.Header.Get("X-Tack-Event") != string(d.Event) {
			t.Errorf("body %s (%v), headers %v", body, err, req.Header)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.tries[d.ID]++
		if r.fail > 0 {
			r.fail--
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		r.got = append(r.got, d)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func (r *receiver) deliveries() []notify.Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]notify.Delivery(nil), r.got...)
}

// defaultBackoff is Options.Backoff's documented default.
var defaultBackoff = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}

// instantClock is a sender's timer (Options.After) that ends every wait at
// once and keeps the waits it was asked for: the backoff is checked as
// asked, not slept through.
type instantClock struct {
	mu    sync.Mutex
	asked []time.Duration
}

func (c *instantClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	c.asked = append(c.asked, d)
	c.mu.Unlock()
	ch := make(chan time.Time, 1)
	ch <- time.Time{}
	return ch
}

func (c *instantClock) waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.asked)
}

// stepClock is a sender's timer that hands each wait to the test, which
// ends it by firing it: until then the sender is parked on it, so what the
// receiver has got meanwhile is all it can get.
type stepClock struct{ waits chan stepWait }

type stepWait struct {
	d    time.Duration
	fire chan<- time.Time
}

func (c stepClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.waits <- stepWait{d: d, fire: ch}
	return ch
}

// next is the wait the sender asks for next.
func (c stepClock) next(t *testing.T) stepWait {
	t.Helper()
	select {
	case w := <-c.waits:
		return w
	case <-time.After(5 * time.Second):
		t.Fatal("the sender asked for no wait")
		return stepWait{}
	}
}

func post(t *testing.T, url, body string) map[string]any {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %d %v", url, resp.StatusCode, out)
	}
	return out
}

// TestWebhooks drives a real server on every store: a completed turn, a
// failed one and a finished plan each reach a receiver once, signed, the
// first attempt's 500 retried; a receiver that never answers slows
// neither the appends nor the other receiver.
func TestWebhooks(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			good := newReceiver(t, "s3cret", 1)
			hang := make(chan struct{})
			dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
			t.Cleanup(func() { close(hang); dead.Close() })
			var clock instantClock
			hooks := notify.NewWebhooks([]string{good.srv.URL}, notify.Options{
				Secret: []byte("s3cret"), PublicURL: "https://tack.test", After: clock.After})
			t.Cleanup(hooks.Close)
			// The dead receiver's queue is small: it fills and drops, and
			// nothing waits on it.
			var log storetest.LogBuffer
			stuck := notify.NewWebhooks([]string{dead.URL}, notify.Options{Secret: []byte("s3cret"), Timeout: time.Minute, Queue: 2, Logger: slog.New(slog.NewTextHandler(&log, nil))})
			t.Cleanup(stuck.Close)
			st := f.Open(t, projection.Config{})
			srv := httptest.NewServer(api.New(st, api.Options{OnAppend: func(id string, res store.AppendResult) {
				hooks.OnAppend(id, res)
				stuck.OnAppend(id, res)
			}}).Handler())
			t.Cleanup(srv.Close)

			var s store.Session
			body, _ := json.Marshal(post(t, srv.URL+"/sessions", `{"title":"Hooked","agent":"codex"}`))
			_ = json.Unmarshal(body, &s)
			events := srv.URL + "/sessions/" + s.ID + "/events"
			start := time.Now()
			post(t, events, `{"events":[{"type":"turn/start","data":{}}]}`)
			post(t, srv.URL+"/sessions/"+s.ID+"/tools/todo_write", `{"todos":[{"content":"Fix it","status":"in_progress"}]}`)
			post(t, srv.URL+"/sessions/"+s.ID+"/tools/todo_write", `{"todos":[{"content":"Fix it","status":"completed"}]}`)
			post(t, events, `{"events":[{"type":"turn/end","data":{"reason":"completed"}},{"type":"turn/start","data":{}},{"type":"turn/end","data":{"reason":"error"}}]}`)
			// More than the dead receiver's queue holds: it drops, nothing waits.
			for range 6 {
				post(t, events, `{"events":[{"type":"turn/start","data":{}},{"type":"turn/end","data":{"reason":"interrupted"}}]}`)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("appends took %v with a receiver that never answers", took)
			}
			eventually.True(t, 5*time.Second, "9 deliveries", func() bool { return len(good.deliveries()) >= 9 }, func() string { return fmt.Sprint(good.deliveries()) })
			if w := clock.waits(); !slices.Equal(w, defaultBackoff[:1]) {
				t.Errorf("the sender waited %v before its retries, want %v (one retry, the default backoff's first)", w, defaultBackoff[:1])
			}
			if !strings.Contains(log.String(), "webhook queue full: delivery dropped") {
				t.Errorf("the dead receiver's drops were not logged:\n%s", log.String())
			}
			got := good.deliveries()
			var kinds []string
			for _, d := range got {
				kinds = append(kinds, string(d.Event)+":"+string(d.Reason))
			}
			want := "plan_completed: turn_ended:completed turn_failed:error " + strings.Repeat("turn_ended:interrupted ", 6)
			if strings.Join(kinds, " ")+" " != want {
				t.Errorf("deliveries %v\nwant %s", kinds, want)
			}
			first := got[0]
			if first.Session.ID != s.ID || first.Session.Title != "Hooked" || first.Link != "https://tack.test/s/"+s.ID ||
				first.Session.TodoCounts.Completed != 1 || first.Session.Agent == nil || *first.Session.Agent != "codex" {
				t.Errorf("first delivery %+v", first)
			}
			good.mu.Lock()
			if good.tries[first.ID] != 2 {
				t.Errorf("first delivery tried %d times, want 2 (a 500, then a 200)", good.tries[first.ID])
			}
			good.mu.Unlock()
			seen := map[string]bool{}
			for _, d := range got {
				if seen[d.ID] {
					t.Errorf("delivery %s twice", d.ID)
				}
				seen[d.ID] = true
			}
		})
	}
}

// TestWebhookNeedsYou: a permission prompt heard through the hooks reaches
// a receiver once as needs_you, saying what for (the message, the pending
// call's tool and command), with the page's absolute link.
func TestWebhookNeedsYou(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			good := newReceiver(t, "s3cret", 0)
			hooks := notify.NewWebhooks([]string{good.srv.URL}, notify.Options{Secret: []byte("s3cret"), PublicURL: "https://tack.test"})
			t.Cleanup(hooks.Close)
			st := f.Open(t, projection.Config{})
			srv := httptest.NewServer(api.New(st, api.Options{OnAppend: hooks.OnAppend}).Handler())
			t.Cleanup(srv.Close)

			hook := func(event, more string) {
				post(t, srv.URL+"/hooks/claude-code", `{"session_id":"w1","hook_event_name":"`+event+`","prompt_id":"p1"`+more+`}`)
			}
			hook("UserPromptSubmit", `,"prompt":"Deploy"`)
			hook("PreToolUse", `,"tool_name":"Bash","tool_use_id":"tu1","tool_input":{"command":"make deploy"}`)
			hook("Notification", `,"notification_type":"permission_prompt","message":"Claude needs your permission to use Bash"`)
			eventually.True(t, 5*time.Second, "needs_you delivery", func() bool { return len(good.deliveries()) >= 1 }, func() string { return fmt.Sprint(good.deliveries()) })
			d := good.deliveries()[0]
			want := projection.NeedsYou{Kind: "permission", Message: "Claude needs your permission to use Bash", Tool: "Bash", Input: "make deploy"}
			if d.Event != notify.NeedsYou || d.Session.State != projection.StateNeedsYou || d.Session.NeedsYou == nil || *d.Session.NeedsYou != want {
				t.Fatalf("delivery %+v (needsYou %+v), want needs_you for %+v", d, d.Session.NeedsYou, want)
			}
			if d.Link != "https://tack.test/s/"+d.Session.ID {
				t.Errorf("link %q", d.Link)
			}
			// The call's result ends the wait: no more needs_you.
			hook("PostToolUse", `,"tool_name":"Bash","tool_use_id":"tu1","tool_input":{"command":"make deploy"},"tool_response":"ok"`)
			hook("Stop", ``)
			eventually.True(t, 5*time.Second, "delivery of the turn's end", func() bool { return len(good.deliveries()) >= 2 }, func() string { return fmt.Sprint(good.deliveries()) })
			if got := good.deliveries(); len(got) != 2 || got[1].Event != notify.TurnEnded || got[1].Session.NeedsYou != nil {
				t.Errorf("deliveries %+v", got)
			}
		})
	}
}

// TestWebhookSecretsStayOut: a webhook URL's credentials (a password, a
// token in its query, the secret path of a Slack-style URL) appear in no
// log line, whether the receiver answers or cannot be reached; and a
// receiver's redirect is not followed with the signed body, but answered
// as a failure.
func TestWebhookSecretsStayOut(t *testing.T) {
	t.Parallel()
	var taken []string
	var mu sync.Mutex
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		taken = append(taken, r.Header.Get(notify.SignatureHeader))
		mu.Unlock()
	}))
	t.Cleanup(elsewhere.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/collect", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	closed := httptest.NewServer(http.NotFoundHandler())
	unreachable := closed.URL
	closed.Close()
	secrets := []string{"hunter2", "TOKENSECRET", "PATHSECRET"}
	urls := []string{
		strings.Replace(redirecting.URL, "://", "://bot:hunter2@", 1) + "/services/T0/B0/PATHSECRET?token=TOKENSECRET",
		strings.Replace(unreachable, "://", "://bot:hunter2@", 1) + "/services/T0/B0/PATHSECRET?token=TOKENSECRET",
	}
	var log storetest.LogBuffer
	var clock instantClock
	hooks := notify.NewWebhooks(urls, notify.Options{Secret: []byte("s3cret"), After: clock.After,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	t.Cleanup(hooks.Close)
	st := storetest.Factories[0].Open(t, projection.Config{})
	srv := httptest.NewServer(api.New(st, api.Options{OnAppend: hooks.OnAppend}).Handler())
	t.Cleanup(srv.Close)
	var s store.Session
	body, _ := json.Marshal(post(t, srv.URL+"/sessions", `{"title":"Hooked","agent":"codex"}`))
	_ = json.Unmarshal(body, &s)
	post(t, srv.URL+"/sessions/"+s.ID+"/events", `{"events":[{"type":"turn/start","data":{}},{"type":"turn/end","data":{"reason":"completed"}}]}`)
	eventually.True(t, 5*time.Second, "end of both receivers' retries", func() bool { return strings.Count(log.String(), "out of retries") >= 2 }, log.String)
	// Each receiver was retried through the whole default backoff.
	want := slices.Sorted(slices.Values(slices.Concat(defaultBackoff, defaultBackoff)))
	if got := slices.Sorted(slices.Values(clock.waits())); !slices.Equal(got, want) {
		t.Errorf("the senders waited %v, want the default backoff once each, %v", got, want)
	}
	for _, secret := range secrets {
		if strings.Contains(log.String(), secret) {
			t.Errorf("the log shows %q:\n%s", secret, log.String())
		}
	}
	if !strings.Contains(log.String(), redirecting.URL+"/…") {
		t.Errorf("the log names no receiver by its host:\n%s", log.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(taken) != 0 {
		t.Errorf("the redirect was followed with the signed body %d times", len(taken))
	}
}

// TestWebhookBackoff: a receiver that keeps failing is retried after each
// wait of the default backoff in turn, and never before its wait ends; once
// the retries run out the delivery is given up and logged, and a delivery
// waiting for its retry when the webhooks close is dropped and logged.
func TestWebhookBackoff(t *testing.T) {
	t.Parallel()
	failing := newReceiver(t, "s3cret", 1<<30)
	tries := func() int {
		failing.mu.Lock()
		defer failing.mu.Unlock()
		n := 0
		for _, k := range failing.tries {
			n += k
		}
		return n
	}
	clock := stepClock{waits: make(chan stepWait, 1)}
	var log storetest.LogBuffer
	hooks := notify.NewWebhooks([]string{failing.srv.URL}, notify.Options{Secret: []byte("s3cret"), After: clock.After,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	closed := false
	t.Cleanup(func() {
		if !closed {
			hooks.Close()
		}
	})
	st := storetest.Factories[0].Open(t, projection.Config{})
	srv := httptest.NewServer(api.New(st, api.Options{OnAppend: hooks.OnAppend}).Handler())
	t.Cleanup(srv.Close)
	var s store.Session
	body, _ := json.Marshal(post(t, srv.URL+"/sessions", `{"title":"Hooked","agent":"codex"}`))
	_ = json.Unmarshal(body, &s)
	turn := func() {
		post(t, srv.URL+"/sessions/"+s.ID+"/events", `{"events":[{"type":"turn/start","data":{}},{"type":"turn/end","data":{"reason":"completed"}}]}`)
	}

	turn()
	for i, want := range defaultBackoff {
		w := clock.next(t)
		if w.d != want {
			t.Errorf("wait %d is %v, want %v", i+1, w.d, want)
		}
		// The sender is parked on the wait: the receiver has had every
		// attempt it will get until the wait ends.
		if n := tries(); n != i+1 {
			t.Fatalf("during wait %d the receiver has had %d attempts, want %d", i+1, n, i+1)
		}
		w.fire <- time.Time{}
	}
	eventually.True(t, 5*time.Second, "end of the retries", func() bool { return strings.Contains(log.String(), "out of retries") }, log.String)
	if n := tries(); n != len(defaultBackoff)+1 {
		t.Errorf("the receiver had %d attempts, want %d (the first and one per wait)", n, len(defaultBackoff)+1)
	}

	// The next delivery fails, waits for its retry, and is dropped when
	// the webhooks close.
	turn()
	clock.next(t)
	hooks.Close()
	closed = true
	if !strings.Contains(log.String(), "webhook dropped at shutdown") {
		t.Errorf("a delivery waiting for its retry at shutdown was not logged as dropped:\n%s", log.String())
	}
	if n := tries(); n != len(defaultBackoff)+2 {
		t.Errorf("the receiver had %d attempts, want %d", n, len(defaultBackoff)+2)
	}
}
