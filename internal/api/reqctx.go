package api

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/tack-dev/tack/internal/auth"
)

// requestContext is the one context a request's layers share, made by
// observe. Each layer used to add a context of its own, and with it a copy
// of the request: observe its requestInfo, chi its routing state,
// authenticate the identity, deadline a timer. That was five contexts,
// four copies and a timer on every request, a measurable share of a read
// served from memory (docs/performance.md). Here the layers set fields of
// this one instead, and the deadline's timer is only made once something
// waits on it: a read answered from memory never does.
//
// The fields are set by the layers in order, before the handler runs and
// could hand the context to another goroutine; only the deadline's state
// is read from other goroutines, under mu.
type requestContext struct {
	context.Context // net/http's: canceled when the client goes away

	info  requestInfo
	route *chi.Context // pooled (routeContexts), as chi pools its own
	// identity is the auth.Identity authenticate decided, boxed once, for
	// auth.From; nil before.
	identity any

	mu sync.Mutex
	// limit is the deadline the bounded routes' store work has (deadline);
	// zero for none (yet).
	limit time.Time
	// timed is the context with the timer of limit, made on first need.
	timed atomic.Pointer[timedContext]
	// ended is set once the bounded part of the request returned: the
	// context is canceled from then on, as a context.WithTimeout would be
	// by its deferred cancel.
	ended bool
}

type timedContext struct {
	context.Context
	cancel context.CancelFunc
}

var routeContexts = sync.Pool{New: func() any { return chi.NewRouteContext() }}

// authIdentityKey is the key auth.From looks an identity up by.
var authIdentityKey = auth.ContextKey()

func newRequestContext(parent context.Context) *requestContext {
	rctx := routeContexts.Get().(*chi.Context)
	rctx.Reset()
	return &requestContext{Context: parent, route: rctx}
}

// release returns the routing state to the pool: the request is over.
// Like chi's own, it is not taken from the context: nothing reads a
// request's route once its handler returned.
func (c *requestContext) release() { routeContexts.Put(c.route) }

func (c *requestContext) Value(key any) any {
	switch key {
	case chi.RouteCtxKey:
		return c.route
	case requestContextKey{}:
		return c
	case authIdentityKey:
		if c.identity != nil {
			return c.identity
		}
	}
	if t := c.timed.Load(); t != nil {
		// The timer's context, which net/http's is the parent of, answers:
		// it names itself to the children the context package makes, so
		// that they hang off it without a goroutine each.
		return t.Value(key)
	}
	return c.Context.Value(key)
}

// bound gives the request's store work the deadline d; end ends it,
// canceling the context.
func (c *requestContext) bound(d time.Time) {
	c.mu.Lock()
	c.limit = d
	c.mu.Unlock()
}

func (c *requestContext) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ended = true
	if t := c.timed.Load(); t != nil {
		t.cancel()
	}
}

// timer is the context with limit's timer, made now if it was not yet, or
// nil while the request has no deadline.
func (c *requestContext) timer() context.Context {
	if t := c.timed.Load(); t != nil {
		return t
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if t := c.timed.Load(); t != nil {
		return t
	}
	if c.limit.IsZero() {
		return nil
	}
	ctx, cancel := context.WithDeadline(c.Context, c.limit)
	if c.ended {
		cancel()
	}
	c.timed.Store(&timedContext{ctx, cancel})
	return ctx
}

func (c *requestContext) Deadline() (time.Time, bool) {
	c.mu.Lock()
	limit := c.limit
	c.mu.Unlock()
	d, ok := c.Context.Deadline()
	if limit.IsZero() || ok && d.Before(limit) {
		return d, ok
	}
	return limit, true
}

func (c *requestContext) Done() <-chan struct{} {
	if t := c.timer(); t != nil {
		return t.Done()
	}
	return c.Context.Done()
}

// Err answers without making the timer: a store that only checks Err
// before it starts pays nothing for it.
func (c *requestContext) Err() error {
	if t := c.timed.Load(); t != nil {
		return t.Err()
	}
	c.mu.Lock()
	limit, ended := c.limit, c.ended
	c.mu.Unlock()
	if err := c.Context.Err(); err != nil || limit.IsZero() {
		return err
	}
	if ended {
		return context.Canceled
	}
	if !time.Now().Before(limit) {
		return context.DeadlineExceeded
	}
	return nil
}

type requestContextKey struct{}

// requestContextOf is the request context observe made for r; nil outside
// the router (a handler called on its own in a test).
func requestContextOf(r *http.Request) *requestContext {
	c, _ := r.Context().Value(requestContextKey{}).(*requestContext)
	return c
}

// router is the API's chi router as Handler returns it: its routes are the
// router's (chi.Walk reads them), and it serves each request through
// observe, which wraps the router rather than being its first middleware:
// it makes the request's one context, chi's routing state included, which
// the router then takes instead of making its own.
type router struct {
	*chi.Mux
	serve http.Handler
}

func (rt *router) ServeHTTP(w http.ResponseWriter, r *http.Request) { rt.serve.ServeHTTP(w, r) }
