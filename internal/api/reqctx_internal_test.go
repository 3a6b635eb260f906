package api

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/tack-dev/tack/internal/auth"
)

type parentKey struct{}

// TestRequestContextAsWithTimeout holds the request's one context to what
// the contexts it replaced did: the values of every layer, and a deadline
// that behaves as context.WithTimeout's while its timer is made only when
// something waits on it.
func TestRequestContextAsWithTimeout(t *testing.T) {
	t.Parallel()
	parent := context.WithValue(context.Background(), parentKey{}, "kept")

	c := newRequestContext(parent)
	defer c.release()
	if chi.RouteContext(c) != c.route || c.Value(parentKey{}) != "kept" {
		t.Fatal("the routing state or a parent's value is not found")
	}
	if _, ok := auth.From(c); ok {
		t.Fatal("an identity before authenticate decided one")
	}
	id := auth.Identity{Principal: auth.Local.Principal, Scope: auth.Read, Kind: "token", CredentialID: "tok_1"}
	c.identity = id
	if got, ok := auth.From(c); !ok || got != id {
		t.Fatalf("auth.From: %+v %v, want %+v", got, ok, id)
	}

	// Unbounded, it is its parent's.
	if _, ok := c.Deadline(); ok || c.Done() != nil || c.Err() != nil {
		t.Fatal("an unbounded request has a deadline")
	}

	// Bounded: the deadline is there, and no timer until something waits.
	limit := time.Now().Add(time.Hour)
	c.bound(limit)
	if d, ok := c.Deadline(); !ok || !d.Equal(limit) {
		t.Fatalf("deadline %v %v, want %v", d, ok, limit)
	}
	if c.Err() != nil || c.timed.Load() != nil {
		t.Fatal("Err before the deadline made a timer or failed")
	}
	child, cancelChild := context.WithCancel(c)
	defer cancelChild()
	if c.timed.Load() == nil {
		t.Fatal("a child context waits on no timer")
	}
	if c.Value(parentKey{}) != "kept" || chi.RouteContext(child) != c.route {
		t.Fatal("the timer hides a value")
	}
	c.end()
	<-child.Done() // the end cancels what hangs off it
	if !errors.Is(c.Err(), context.Canceled) || !errors.Is(child.Err(), context.Canceled) {
		t.Fatalf("after the end: %v, child %v, want canceled", c.Err(), child.Err())
	}

	// A deadline passed is seen by Err alone, with no timer, and by Done.
	late := newRequestContext(parent)
	defer late.release()
	late.bound(time.Now().Add(-time.Millisecond))
	if !errors.Is(late.Err(), context.DeadlineExceeded) || late.timed.Load() != nil {
		t.Fatalf("past its deadline: %v", late.Err())
	}
	<-late.Done()
	if !errors.Is(late.Err(), context.DeadlineExceeded) {
		t.Fatalf("past its deadline, after Done: %v", late.Err())
	}

	// The timer fires: Done closes on its own.
	soon := newRequestContext(parent)
	defer soon.release()
	soon.bound(time.Now().Add(20 * time.Millisecond))
	select {
	case <-soon.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the deadline's timer never fired")
	}
	if !errors.Is(soon.Err(), context.DeadlineExceeded) {
		t.Fatalf("after the timer: %v", soon.Err())
	}

	// The client gone: the parent's cancel is the request's.
	gone, leave := context.WithCancel(parent)
	cut := newRequestContext(gone)
	defer cut.release()
	cut.bound(time.Now().Add(time.Hour))
	leave()
	if !errors.Is(cut.Err(), context.Canceled) {
		t.Fatalf("parent canceled: %v", cut.Err())
	}
	<-cut.Done()
	if d, ok := cut.Deadline(); !ok || d.Before(time.Now()) {
		t.Fatalf("deadline %v %v after the parent's cancel", d, ok)
	}
}
