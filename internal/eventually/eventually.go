// Package eventually is the suite's one way to wait for what another
// goroutine, process or instance makes true: a condition polled until it
// holds or a deadline passes. Tests wait with it instead of sleeping, so a
// fast machine moves on at once and a loaded one is given its time; an
// absence is never asserted by waiting (assert it against a clock or a
// sequence number the code under test exposes instead).
package eventually

import (
	"testing"
	"time"
)

// Every is how often a condition is polled.
const Every = 10 * time.Millisecond

// True polls cond until it returns true, failing t (Fatalf) after within
// with what it waited for and, when state is given, what state reports
// then (a log's tail, the value last seen).
func True(t testing.TB, within time.Duration, what string, cond func() bool, state ...func() string) {
	t.Helper()
	if Within(within, cond) {
		return
	}
	msg := ""
	for _, s := range state {
		msg += "\n" + s()
	}
	t.Fatalf("no %s within %v%s", what, within, msg)
}

// Within polls cond until it returns true (reporting true) or within passes
// (reporting false), for a caller that fails in its own words.
func Within(within time.Duration, cond func() bool) bool {
	if cond() {
		return true
	}
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	tick := time.NewTicker(Every)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			if cond() {
				return true
			}
		case <-deadline.C:
			return cond()
		}
	}
}
