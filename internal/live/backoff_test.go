package live

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestBackoffOnTheRealClock runs the carrier's backoff on its default
// clock, time.After, in a bubble whose time moves only when every
// goroutine in it waits: each wait is measured to the nanosecond, 50 ms
// doubling to one second, back to 50 ms after a reset, and a wait ends
// early, reporting false, when its context does.
func TestBackoffOnTheRealClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := backoff{after: time.After}
		want := []time.Duration{50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond,
			400 * time.Millisecond, 800 * time.Millisecond, time.Second, time.Second}
		waited := func() time.Duration {
			start := time.Now()
			if !b.wait(t.Context()) {
				t.Fatal("a wait ended early")
			}
			return time.Since(start)
		}
		for i, d := range want {
			if got := waited(); got != d {
				t.Errorf("wait %d: %v, want %v", i+1, got, d)
			}
		}
		b.reset()
		if got := waited(); got != minBackoff {
			t.Errorf("after a reset: %v, want %v", got, minBackoff)
		}

		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		time.AfterFunc(10*time.Millisecond, cancel)
		if b.wait(ctx) {
			t.Error("a wait outlived its context")
		}
		if got := time.Since(start); got != 10*time.Millisecond {
			t.Errorf("a wait whose context ended after 10ms took %v", got)
		}
	})
}
