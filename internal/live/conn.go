package live

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/store"
)

// Mount adds the live routes; it is api.Options.Extra.
func (h *Hub) Mount(r api.Router) {
	r.Get("/sessions/{id}/live", h.serveSession)
	r.Get("/live", h.serveFeed)
}

// serveSession streams one session: the backlog after `after`, the current
// todos view, then every new event and todos change, each event exactly once
// and in seq order.
func (h *Hub) serveSession(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if id == "" || len(id) > api.MaxSessionIDLength {
		api.WriteError(w, r, store.ErrNotFound)
		return
	}
	after := int64(0)
	if raw := r.URL.Query().Get("after"); raw != "" {
		v, err := strconv.ParseInt(raw, 10, 64)
		if err != nil || v < 0 {
			api.WriteError(w, r, &api.Error{Status: http.StatusBadRequest, Code: "invalid",
				Message: fmt.Sprintf("`after` must be an integer from 0 to %d", int64(math.MaxInt64))})
			return
		}
		after = v
	}
	// Authorization goes here once sessions have principals: the socket is
	// authorized exactly like GET /sessions/{id}.
	if _, err := h.store.Session(r.Context(), id); err != nil {
		api.WriteError(w, r, err)
		return
	}
	c := h.accept(w, r)
	if c == nil {
		return
	}
	defer h.release(c)

	t, sub := h.subscribe(id)
	defer h.unsubscribe(t, sub)
	c.sub, c.topic, c.lastSeq = sub, t, after
	ctx := c.ws.CloseRead(h.ctx)
	if err := c.catchUp(ctx, -1); err != nil {
		c.fail(err)
		return
	}
	t.seed(h, c.lastSeq)
	todos, err := h.store.Todos(ctx, id)
	if err != nil {
		c.fail(err)
		return
	}
	if err := c.write(ctx, encode(todosMessage{Type: "todos", Todos: todos})); err != nil {
		return
	}
	c.todos = keyOf(todos)
	c.pump(ctx)
}

// serveFeed streams a summary of every session that changes, on any
// instance. It sends no backlog: a client lists GET /sessions after opening
// the socket and keeps, per session, the summary with the highest lastSeq.
func (h *Hub) serveFeed(w http.ResponseWriter, r *http.Request) {
	c := h.accept(w, r)
	if c == nil {
		return
	}
	defer h.release(c)
	c.sub = newSubscriber(h.opts.QueueSize)
	h.mu.Lock()
	h.feed[c.sub] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.feed, c.sub)
		h.mu.Unlock()
	}()
	c.pump(c.ws.CloseRead(h.ctx))
}

// conn is one socket and how far it has been served.
type conn struct {
	hub   *Hub
	ws    *websocket.Conn
	sub   *subscriber
	topic *topic
	// lastSeq is the last event seq written; todos the last todos view.
	lastSeq int64
	todos   todosKey
}

// accept upgrades the request, checking its Origin: the server's own host,
// or one of the allowed origins. It answers 503 while shutting down.
func (h *Hub) accept(w http.ResponseWriter, r *http.Request) *conn {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		api.WriteError(w, r, &api.Error{Status: http.StatusServiceUnavailable, Code: "unavailable",
			Message: "the server is shutting down; reconnect to another instance"})
		return nil
	}
	h.conns.Add(1)
	h.mu.Unlock()
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: h.opts.AllowedOrigins})
	if err != nil {
		// Accept has answered: 403 for a foreign origin, 400/426 for a bad handshake.
		h.log.Info("live: handshake refused", "path", r.URL.Path, "origin", r.Header.Get("Origin"), "err", err)
		h.conns.Done()
		return nil
	}
	ws.SetReadLimit(h.opts.ReadLimit)
	h.mu.Lock()
	h.sockets[ws] = struct{}{}
	h.mu.Unlock()
	h.stats.Connections.Add(1)
	return &conn{hub: h, ws: ws}
}

func (h *Hub) release(c *conn) {
	_ = c.ws.CloseNow()
	h.mu.Lock()
	delete(h.sockets, c.ws)
	h.mu.Unlock()
	h.stats.Connections.Add(-1)
	h.conns.Done()
}

// pump is the connection's writer: the only goroutine that writes to the
// socket. It drains the queue, pings when idle, and closes the socket when
// the subscriber was dropped or the server shuts down.
func (c *conn) pump(ctx context.Context) {
	h := c.hub
	ping := time.NewTimer(h.opts.PingInterval)
	defer ping.Stop()
	for {
		select {
		case <-c.sub.kick:
			c.close(CodeTooSlow, fmt.Sprintf("too slow; resume with after=%d", c.lastSeq))
			return
		default:
		}
		select {
		case m := <-c.sub.queue:
			if err := c.send(ctx, m); err != nil {
				c.fail(err)
				return
			}
		case <-c.sub.kick:
			// Checked again at the top of the loop.
		case <-h.closing:
			c.close(CodeGoingAway, fmt.Sprintf("server shutting down; resume with after=%d", c.lastSeq))
			return
		case <-ctx.Done():
			return
		case <-ping.C:
			pctx, cancel := context.WithTimeout(ctx, h.opts.WriteTimeout)
			err := c.ws.Ping(pctx)
			cancel()
			if err != nil {
				return
			}
			ping.Reset(h.opts.PingInterval)
		}
	}
}

// send writes m unless this connection has already written it. An event
// beyond the next seq means the hub published past this connection's
// backlog; the gap is read from the store first.
func (c *conn) send(ctx context.Context, m *message) error {
	c.sub.bytes.Add(-int64(m.size))
	switch m.kind {
	case kindEvent:
		for _, ev := range m.events {
			if ev.seq <= c.lastSeq {
				continue
			}
			if ev.seq > c.lastSeq+1 {
				if err := c.catchUp(ctx, ev.seq-1); err != nil {
					return err
				}
			}
			if err := c.write(ctx, ev.data); err != nil {
				return err
			}
			c.lastSeq = ev.seq
		}
	case kindTodos:
		if !m.todos.newer(c.todos) {
			return nil
		}
		if err := c.write(ctx, m.data); err != nil {
			return err
		}
		c.todos = m.todos
	default:
		return c.write(ctx, m.data)
	}
	return nil
}

// catchUp writes the events after lastSeq from the store, up to upTo (-1:
// to the end of the log as it is now).
func (c *conn) catchUp(ctx context.Context, upTo int64) error {
	h := c.hub
	for upTo < 0 || c.lastSeq < upTo {
		events, more, err := h.store.Events(ctx, c.topic.id, c.lastSeq, pageSize)
		if err != nil {
			return err
		}
		for _, ev := range events {
			if upTo >= 0 && ev.Seq > upTo {
				return nil
			}
			if err := c.write(ctx, encode(eventMessage{Type: "event", Event: ev})); err != nil {
				return err
			}
			c.lastSeq = ev.Seq
		}
		if !more || len(events) == 0 {
			return nil
		}
		if h.isClosing() {
			return errShuttingDown
		}
	}
	return nil
}

var errShuttingDown = errors.New("shutting down")

func (c *conn) write(ctx context.Context, data []byte) error {
	ctx, cancel := context.WithTimeout(ctx, c.hub.opts.WriteTimeout)
	defer cancel()
	return c.ws.Write(ctx, websocket.MessageText, data)
}

// fail ends the connection after err, with a close code that tells the
// client what to do when there is still someone to tell.
func (c *conn) fail(err error) {
	switch {
	case errors.Is(err, errShuttingDown):
		c.close(CodeGoingAway, fmt.Sprintf("server shutting down; resume with after=%d", c.lastSeq))
	case errors.Is(err, store.ErrUnavailable):
		c.close(CodeUnavailable, fmt.Sprintf("database unavailable; resume with after=%d", c.lastSeq))
	case errors.Is(err, store.ErrNotFound):
		c.close(websocket.StatusPolicyViolation, "session not found")
	default:
		// A write failed or timed out: the socket is already gone.
		c.hub.log.Debug("live: connection ended", "err", err)
	}
}

func (c *conn) close(code websocket.StatusCode, reason string) {
	_ = c.ws.Close(code, reason)
}
