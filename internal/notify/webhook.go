package notify

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// Delivery is the JSON body a webhook is sent: the moment, the session as
// its summary says it then (what it needs its person for, in needs_you),
// and the link to its page, absolute under Options.PublicURL.
type Delivery struct {
	// ID names the delivery: the same on every attempt, so that a receiver
	// that got it twice (a retry after a lost answer) can tell.
	ID      string               `json:"id"`
	Event   Kind                 `json:"event"`
	At      projection.Time      `json:"at"`
	Reason  projection.EndReason `json:"reason,omitempty"`
	Session DeliverySession      `json:"session"`
	Link    string               `json:"link"`
}

// DeliverySession is what a delivery says of its session.
type DeliverySession struct {
	ID          string            `json:"id"`
	Title       string            `json:"title"`
	Agent       *string           `json:"agent"`
	Cwd         *string           `json:"cwd"`
	State       string            `json:"state"`
	StateSince  projection.Time   `json:"stateSince"`
	TodoCounts  projection.Counts `json:"todoCounts"`
	CurrentItem *string           `json:"currentItem"`
	// NeedsYou says what the agent waits on its person for, in needs_you.
	NeedsYou *projection.NeedsYou `json:"needsYou,omitempty"`
	// Goal is the session's goal, when it has one.
	Goal *projection.Goal `json:"goal,omitempty"`
}

// SignatureHeader carries "sha256=" and the hex HMAC-SHA256 of the body
// under the shared secret.
const SignatureHeader = "X-Tack-Signature"

// Sign is the signature header's value for body under secret.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Options configure Webhooks; the zero values are the documented defaults.
type Options struct {
	// Secret signs every body (required).
	Secret []byte
	// PublicURL is the base of each delivery's link ("" gives a path).
	PublicURL string
	Logger    *slog.Logger
	// Backoff is the wait before each retry; its length is how many
	// retries there are. Default 1 s, 5 s, 30 s, 2 min, 10 min.
	Backoff []time.Duration
	// Timeout bounds one attempt (default 10 s).
	Timeout time.Duration
	// Queue is how many deliveries may wait per receiver (default 1,000);
	// past it the newest is dropped and logged.
	Queue int
	// Client sends the requests (default a client of its own).
	Client *http.Client
	// After times the wait before each retry (default time.After). A test
	// hands in a clock of its own, to see which wait each retry asks for
	// and to end it at once rather than sleep through the backoff.
	After func(time.Duration) <-chan time.Time
}

// Webhooks delivers the moments of every append to each receiver.
type Webhooks struct {
	opts      Options
	receivers []*receiver
	wg        sync.WaitGroup
	stop      context.CancelFunc
	ctx       context.Context
}

type receiver struct {
	url string
	// shown is url as the log shows it: a webhook URL often carries its
	// own credential (a Slack-style path, a token in the query, a
	// password), so the log names only its scheme and host.
	shown string
	queue chan Delivery
}

// redactURL is a webhook URL as the log may show it: scheme and host, and
// "/…" for whatever path and query followed.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(unparsable URL)"
	}
	shown := u.Scheme + "://" + u.Host
	if strings.Trim(u.Path, "/") != "" || u.RawQuery != "" || u.Opaque != "" {
		shown += "/…"
	}
	return shown
}

// redactErr is a client error without the URL it names in full.
func redactErr(err error, shown string) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: shown, Err: ue.Err}
	}
	return err
}

// noRedirects keeps a signed body from being sent on to wherever a
// receiver's answer points: a redirect is answered as the failure it is.
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// NewWebhooks starts one sender per URL; Close stops them.
func NewWebhooks(urls []string, opts Options) *Webhooks {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Backoff == nil {
		opts.Backoff = []time.Duration{time.Second, 5 * time.Second, 30 * time.Second, 2 * time.Minute, 10 * time.Minute}
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Queue <= 0 {
		opts.Queue = 1000
	}
	if opts.Client == nil {
		opts.Client = &http.Client{CheckRedirect: noRedirects}
	}
	if opts.After == nil {
		opts.After = time.After
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Webhooks{opts: opts, ctx: ctx, stop: cancel}
	for _, u := range urls {
		r := &receiver{url: u, shown: redactURL(u), queue: make(chan Delivery, opts.Queue)}
		w.receivers = append(w.receivers, r)
		w.wg.Add(1)
		go w.send(r)
	}
	return w
}

// OnAppend queues the moments of a committed append for every receiver; it
// never blocks (api.Options.OnAppend).
func (w *Webhooks) OnAppend(sessionID string, res store.AppendResult) {
	if !res.Session.Listed {
		return // a session in no list is told of nowhere
	}
	for _, m := range Detect(res) {
		w.enqueue(w.delivery(res.Session, m))
	}
}

func (w *Webhooks) delivery(s store.Session, m Moment) Delivery {
	return Delivery{
		ID: fmt.Sprintf("%s:%d:%s", s.ID, m.Seq, m.Kind), Event: m.Kind, At: m.At, Reason: m.Reason,
		Session: DeliverySession{ID: s.ID, Title: s.Title, Agent: s.Agent, Cwd: s.Cwd, State: s.State,
			StateSince: s.StateSince, TodoCounts: s.TodoCounts, CurrentItem: s.CurrentItem, NeedsYou: s.NeedsYou, Goal: s.Goal},
		Link: w.opts.PublicURL + "/s/" + s.ID,
	}
}

func (w *Webhooks) enqueue(d Delivery) {
	for _, r := range w.receivers {
		select {
		case r.queue <- d:
		default:
			w.opts.Logger.Warn("webhook queue full: delivery dropped", "url", r.shown, "delivery", d.ID, "queue", w.opts.Queue)
		}
	}
}

// Close stops the senders; deliveries still queued or waiting to retry are
// dropped (and logged).
func (w *Webhooks) Close() {
	w.stop()
	w.wg.Wait()
}

// send delivers r's queue in order, each delivery retried with backoff
// until it is answered 2xx or the retries run out.
func (w *Webhooks) send(r *receiver) {
	defer w.wg.Done()
	for {
		select {
		case <-w.ctx.Done():
			return
		case d := <-r.queue:
			body, _ := json.Marshal(d)
			for attempt := 0; ; attempt++ {
				status, err := w.post(r.url, d, body)
				err = redactErr(err, r.shown)
				log := w.opts.Logger.With("url", r.shown, "delivery", d.ID, "event", d.Event, "attempt", attempt+1)
				if err == nil && status/100 == 2 {
					log.Info("webhook delivered", "status", status)
					break
				}
				if attempt >= len(w.opts.Backoff) {
					log.Error("webhook not delivered: out of retries", "status", status, "err", err)
					break
				}
				log.Warn("webhook failed, retrying", "status", status, "err", err, "in", w.opts.Backoff[attempt])
				select {
				case <-w.ctx.Done():
					log.Warn("webhook dropped at shutdown")
					return
				case <-w.opts.After(w.opts.Backoff[attempt]):
				}
			}
		}
	}
}

func (w *Webhooks) post(to string, d Delivery, body []byte) (int, error) {
	ctx, cancel := context.WithTimeout(w.ctx, w.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Tack-Webhook")
	req.Header.Set(SignatureHeader, Sign(w.opts.Secret, body))
	req.Header.Set("X-Tack-Event", string(d.Event))
	req.Header.Set("X-Tack-Delivery", d.ID)
	resp, err := w.opts.Client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // the connection is kept for the next
	return resp.StatusCode, nil
}
