package live

import (
	"net/http"
	"sync/atomic"

	"github.com/tack-dev/tack/internal/auth"
)

// The two sockets. The API routes them (GET /sessions/{id}/live and GET
// /live) behind the checks every route passes: the Host and Origin guard,
// authentication and, for a session's socket, a session id that exists and
// belongs to the principal. What either handler refuses before the
// handshake is answered it returns, for the API to answer; once the socket
// is open, a close code says what went wrong (see conn.fail).

// ServeSession streams session id from the events after `after`: the
// backlog, the current todos view, then every new event and todos change,
// each event exactly once and in seq order. The caller has checked that the
// session exists and is the request's principal's.
func (h *Hub) ServeSession(w http.ResponseWriter, r *http.Request, id string, after int64) error {
	// Read for where the log ends, not for who owns it: a cursor beyond
	// the log (a client of another database, or a hostile one) is taken as
	// the end of the log. Where this socket starts seeds what the session's
	// topic has published, and nothing a client says may move that past
	// what the store holds.
	sess, err := h.store.Session(r.Context(), id)
	if err != nil {
		return err
	}
	after = min(after, sess.LastSeq)
	c, err := h.accept(w, r)
	if c == nil {
		return err
	}
	// Subscribe first, then read: whatever commits meanwhile is queued, and
	// send skips what the backlog already covered. The todos view is read
	// before the backlog: it is the view of a prefix of the log, and the
	// backlog read after it reaches at least as far, so the first todos
	// message is never ahead of the events sent before it. A view newer
	// than it was committed after the subscription and comes through the
	// queue.
	t, sub := h.subscribe(id, c.wake)
	c.sub, c.topic, c.lastSeq = sub, t, after
	c.readUntilClosed()
	// The reads take the hub's context, not one of the socket's: a client
	// gone meanwhile fails the next write, and a context per socket would
	// keep the map of children every read registers in it.
	todos, err := h.store.Todos(h.ctx, id)
	if err == nil {
		err = c.catchUp(h.ctx, -1)
	}
	if err == nil {
		t.seed(h, c.lastSeq)
		data := encode(todosMessage{Type: "todos", Todos: todos})
		err = c.timed(func() error { return c.write(data) })
	}
	if err != nil {
		c.fail(err)
		c.end()
		return nil
	}
	c.todos = keyOf(todos)
	c.run()
	return nil
}

// ServeFeed streams a summary of every session of the request's principal
// that changes, on any instance. It sends no backlog: a client lists GET
// /sessions after opening the socket and keeps, per session, the summary
// with the highest lastSeq.
//
// The feed is subscribed before the handshake is answered: with no backlog
// to read, a change committed between the client's 101 and the
// subscription would otherwise be missed by the socket and by the list the
// client read after opening it. What is queued meanwhile waits for the
// handler's own writer run (the wake accept holds).
func (h *Hub) ServeFeed(w http.ResponseWriter, r *http.Request) error {
	var opened atomic.Pointer[conn]
	sub := newSubscriber(h.opts.QueueSize)
	sub.wake = func() {
		if c := opened.Load(); c != nil {
			c.wake()
		}
	}
	sub.owner = principalOf(r)
	if id, ok := auth.From(r.Context()); ok && id.Admin() {
		sub.all = true // an admin's feed carries every session
	}
	h.mu.Lock()
	h.feed[sub] = struct{}{}
	h.mu.Unlock()
	c, err := h.accept(w, r)
	if c == nil {
		h.unsubscribeFeed(sub)
		return err
	}
	c.sub = sub
	opened.Store(c)
	c.readUntilClosed()
	c.run()
	return nil
}

// principalOf is the principal the request acts as (the API's
// authentication put it there); a request without one owns nothing.
func principalOf(r *http.Request) string {
	if id, ok := auth.From(r.Context()); ok {
		return id.Principal.ID
	}
	return ""
}

func (h *Hub) unsubscribeFeed(sub *subscriber) {
	h.mu.Lock()
	delete(h.feed, sub)
	h.mu.Unlock()
}
