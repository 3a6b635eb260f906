package notify_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
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

// waitFor polls until ok, failing after a few seconds.
func waitFor(t *testing.T, what string, ok func() bool, state func() string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s: %s", what, state())
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
			hooks := notify.NewWebhooks([]string{good.srv.URL}, notify.Options{
				Secret: []byte("s3cret"), PublicURL: "https://tack.test", Backoff: []time.Duration{10 * time.Millisecond, 10 * time.Millisecond}})
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
			waitFor(t, "9 deliveries", func() bool { return len(good.deliveries()) >= 9 }, func() string { return fmt.Sprint(good.deliveries()) })
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
			waitFor(t, "the needs_you delivery", func() bool { return len(good.deliveries()) >= 1 }, func() string { return fmt.Sprint(good.deliveries()) })
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
			waitFor(t, "the turn's end", func() bool { return len(good.deliveries()) >= 2 }, func() string { return fmt.Sprint(good.deliveries()) })
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
	hooks := notify.NewWebhooks(urls, notify.Options{Secret: []byte("s3cret"), Backoff: []time.Duration{10 * time.Millisecond},
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	t.Cleanup(hooks.Close)
	st := storetest.Factories[0].Open(t, projection.Config{})
	srv := httptest.NewServer(api.New(st, api.Options{OnAppend: hooks.OnAppend}).Handler())
	t.Cleanup(srv.Close)
	var s store.Session
	body, _ := json.Marshal(post(t, srv.URL+"/sessions", `{"title":"Hooked","agent":"codex"}`))
	_ = json.Unmarshal(body, &s)
	post(t, srv.URL+"/sessions/"+s.ID+"/events", `{"events":[{"type":"turn/start","data":{}},{"type":"turn/end","data":{"reason":"completed"}}]}`)
	waitFor(t, "both receivers out of retries", func() bool { return strings.Count(log.String(), "out of retries") >= 2 }, log.String)
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
