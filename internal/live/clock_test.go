package live_test

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/tack-dev/tack/internal/storetest"
)

// fakeClock is a hub's or a carrier's timer (Options.After,
// PGNotifyOptions.After) that only the test moves: a wait ends when
// Advance has moved the clock to its end, never by itself. A test steps
// through a PingInterval, a sweep or a backoff without waiting any of them
// in real time, and a wait still pending is a timer that has not fired:
// what it would have set off has not happened.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Duration
	waits []fakeWait
	asked []time.Duration
	// newWait is closed, and replaced, when a wait is asked for.
	newWait chan struct{}
}

type fakeWait struct {
	d, end time.Duration
	c      chan time.Time
}

// epoch is the time the clock reads at zero.
var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, d)
	if c.newWait != nil {
		close(c.newWait)
		c.newWait = nil
	}
	if d <= 0 {
		ch <- epoch.Add(c.now)
		return ch
	}
	c.waits = append(c.waits, fakeWait{d: d, end: c.now + d, c: ch})
	return ch
}

// Advance moves the clock by d and ends every wait due by then.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now += d
	c.waits = slices.DeleteFunc(c.waits, func(w fakeWait) bool {
		if w.end > c.now {
			return false
		}
		w.c <- epoch.Add(w.end)
		return true
	})
}

// pending counts the waits of d that have not ended.
func (c *fakeClock) pending(d time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pendingLocked(d)
}

func (c *fakeClock) pendingLocked(d time.Duration) int {
	n := 0
	for _, w := range c.waits {
		if w.d == d {
			n++
		}
	}
	return n
}

// awaitWait waits until a wait of d is pending: the code under test has
// done what it does before it asks for that wait. It is told of each new
// wait rather than polling, as a test may step a clock many times.
func (c *fakeClock) awaitWait(t *testing.T, d time.Duration, what string) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		if c.pendingLocked(d) > 0 {
			c.mu.Unlock()
			return
		}
		if c.newWait == nil {
			c.newWait = make(chan struct{})
		}
		asked := c.newWait
		c.mu.Unlock()
		select {
		case <-asked:
		case <-deadline.C:
			t.Fatalf("no %s within 20s: waits asked %v", what, c.waitsAsked())
		}
	}
}

// waitsAsked are the waits asked so far, in order, leaving out those of
// the durations in except.
func (c *fakeClock) waitsAsked(except ...time.Duration) []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, d := range c.asked {
		if !slices.Contains(except, d) {
			out = append(out, d)
		}
	}
	return out
}

// through is cc reaching its database through proxy (every fallback too:
// one of them is the attempt without TLS).
func through(cc *pgx.ConnConfig, proxy *storetest.Proxy) *pgx.ConnConfig {
	cc = cc.Copy()
	port := uint16(proxy.Port())
	cc.Host, cc.Port = "127.0.0.1", port
	for _, f := range cc.Fallbacks {
		f.Host, f.Port = "127.0.0.1", port
	}
	return cc
}
