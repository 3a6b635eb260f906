package live

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// conn is one socket and how far it has been served.
//
// An idle socket has no goroutine of its own besides its reader (see
// read), parked in a read on a shallow stack: a writer runs only while there is something to do (a
// queued message, a ping, a close), started by whoever makes the work.
// wakes counts the requests; the wake that takes it from 0 to 1 makes the
// writer, and the writer runs until it has served every request it
// counted. That writer is the socket's hub writer (see writer) as long as
// nothing would block, and a goroutine of the socket's own (run) from the
// first thing that might until the count is back at 0. The handler holds
// one request while it writes the backlog, so nothing else writes
// meanwhile.
type conn struct {
	hub *Hub
	// br reads what the client sends (see read); readDone is closed when
	// the reader has ended, and the socket with it.
	br       *bufio.Reader
	readDone chan struct{}
	// cw is what every byte of the socket goes out through: it gathers a
	// run of writes into one (see timed) and bounds each write.
	cw *corkWriter
	// sub is the socket's queue, on topic (a session's socket) or on the
	// feed (topic nil); the socket's end takes it off.
	sub   *subscriber
	topic *topic
	// lastSeq is the last event seq written; todos the last todos view.
	lastSeq int64
	todos   todosKey
	// timing is set inside timed; written counts the messages of its run,
	// added to Stats.Deliveries once when the run ends.
	timing  bool
	written int64
	// credential is the token or sign-in that opened the socket ("" in
	// -auth local); revoking it closes the socket.
	credential string
	// principal is who opened it, whose cap it counts against; admin
	// whether it was an admin then (an admin's socket carries sessions of
	// others, and closes when the principal is an admin no longer).
	principal string
	admin     bool

	// writer is the hub writer that serves the socket's wakes.
	writer  *writer
	wakes   atomic.Int64
	pingDue atomic.Bool
	// pingSent is when the last ping went out (since clockStart), 0 once
	// its pong came; closeSent is set once the server has written its
	// close frame.
	pingSent  atomic.Int64
	closeSent atomic.Bool
	// gone is set when the reader ends: the client closed or went away.
	gone      atomic.Bool
	lastWrite atomic.Int64 // the ping clock's tick then (Hub.ticks)
	ended     atomic.Bool
}

// wake asks for a writer; it never blocks.
func (c *conn) wake() {
	if c.wakes.Add(1) == 1 {
		c.writer.add(c)
	}
}

// serve is a run of the socket's writer on its hub writer, which read the
// ping clock at now and lends its rawWrite: it writes what is queued as long as that cannot block, and
// hands the rest of the run, with the wakes it counted, to a goroutine of
// the socket's own (run) otherwise. It returns the messages it wrote.
func (c *conn) serve(rw *rawWrite, now int64) (written int64) {
	for {
		if c.ended.Load() {
			return written
		}
		n := c.wakes.Load()
		w, ok := c.quick(rw)
		written += w
		if w > 0 {
			c.lastWrite.Store(now)
		}
		if !ok {
			go c.run()
			return written
		}
		if c.wakes.Add(-n) == 0 {
			return written
		}
	}
}

// quick writes everything queued, in as few non-blocking writes as
// corkMax allows, and reports whether it did (ok) and how many messages it
// wrote. It does nothing that could block, and leaves to run (ok false):
// a socket gone, dropped, pinged or closing; an event past the next seq,
// whose gap is read from the store; a socket whose buffer did not take a
// whole write (what is left stays gathered in the corkWriter, which writes
// it before anything else); and a corkWriter busy with a control frame
// (a pong the reader writes).
func (c *conn) quick(rw *rawWrite) (written int64, ok bool) {
	if c.gone.Load() || c.pingDue.Load() || c.hub.isClosing() {
		return 0, false
	}
	w := c.cw
	if w.raw == nil || !w.mu.TryLock() {
		return 0, false
	}
	defer w.mu.Unlock()
	if w.closed || w.buf != nil {
		return 0, false
	}
	for {
		m := c.sub.peek()
		if m == nil || c.sub.dropped.Load() || c.gap(m) {
			// Nothing more this run can write: what is gathered goes,
			// and anything left is run's.
			return written, w.tryFlushLocked(rw) && m == nil
		}
		c.sub.pop()
		c.sub.bytes.Add(-int64(m.size))
		switch m.kind {
		case kindEvent:
			for _, ev := range m.events {
				if ev.seq > c.lastSeq {
					w.gather(ev.data)
					c.lastSeq = ev.seq
					written++
				}
			}
		case kindTodos:
			if m.todos.newer(c.todos) {
				w.gather(m.data)
				c.todos = m.todos
				written++
			}
		default:
			w.gather(m.data)
			written++
		}
		if w.buf != nil && len(*w.buf) >= corkMax && !w.tryFlushLocked(rw) {
			return written, false
		}
	}
}

// gap reports whether m holds an event past the next seq: the events
// between are read from the store first (see send).
func (c *conn) gap(m *message) bool {
	if m.kind != kindEvent {
		return false
	}
	for _, ev := range m.events {
		if ev.seq > c.lastSeq {
			return ev.seq > c.lastSeq+1
		}
	}
	return false
}

// run is the writer: it serves every wake it counted, then lets go. The
// handler calls it when the backlog is written, holding the first wake, and
// returns with it: the handler's goroutine, its request and the stack the
// backlog grew are not kept for the life of the socket.
func (c *conn) run() {
	for {
		if c.ended.Load() {
			return // wakes stays above 0: no writer will start again
		}
		n := c.wakes.Load()
		if c.work() {
			c.end()
			return
		}
		if c.wakes.Add(-n) == 0 {
			return
		}
	}
}

// work does what is due and reports whether the socket is done with: it
// writes the queue, closes a dropped subscriber with CodeTooSlow and every
// socket with 1001 on shutdown, and pings when asked to.
func (c *conn) work() (done bool) {
	h := c.hub
	if c.gone.Load() {
		return true
	}
	// What a hub writer gathered and the socket did not take goes first.
	if err := c.cw.flush(); err != nil {
		return true
	}
	if c.sub.dropped.Load() {
		c.close(CodeTooSlow, fmt.Sprintf("too slow; resume with after=%d", c.lastSeq))
		return true
	}
	if h.isClosing() {
		c.close(CodeGoingAway, fmt.Sprintf("server shutting down; resume with after=%d", c.lastSeq))
		return true
	}
	if m := c.sub.pop(); m != nil {
		if err := c.drain(h.ctx, m); err != nil {
			c.fail(err)
			return true
		}
		if c.sub.dropped.Load() {
			return c.work()
		}
	}
	if c.pingDue.Swap(false) {
		// A client that has not answered the last ping, a PingInterval
		// ago, within the write timeout is gone, or does not read.
		now := time.Since(clockStart)
		if sent := c.pingSent.Load(); sent != 0 && now-time.Duration(sent) > h.opts.WriteTimeout {
			return true
		}
		c.pingSent.Store(max(int64(now), 1))
		if _, err := c.cw.Write(pingFrame); err != nil {
			return true
		}
	}
	return false
}

func (c *conn) end() {
	if !c.ended.CompareAndSwap(false, true) {
		return
	}
	switch {
	case c.topic != nil:
		c.hub.unsubscribe(c.topic, c.sub)
	case c.sub != nil: // the feed's
		c.hub.unsubscribeFeed(c.sub)
	}
	c.hub.release(c)
}

func (h *Hub) release(c *conn) {
	// A socket in its close handshake is the reader's to close, once the
	// client has answered or the handshake's time has run out: closed now,
	// with the client's frames unread, it would be reset, and the client
	// could lose the close frame.
	if !c.closeSent.Load() {
		_ = c.cw.conn.Close()
	}
	h.mu.Lock()
	delete(h.conns, c)
	h.mu.Unlock()
	h.unhold(c.principal)
	h.stats.Connections.Add(-1)
	h.open.Done()
}

// drain writes m and whatever else is queued, in one run.
func (c *conn) drain(ctx context.Context, m *message) error {
	defer c.lastWrite.Store(c.hub.ticks.Load())
	return c.timed(func() error {
		for {
			if err := c.send(ctx, m); err != nil {
				return err
			}
			if c.sub.dropped.Load() {
				return nil
			}
			if m = c.sub.pop(); m == nil {
				return nil
			}
		}
	})
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
				rctx, cancel := context.WithTimeout(ctx, c.hub.opts.WriteTimeout)
				err := c.catchUp(rctx, ev.seq-1)
				cancel()
				if err != nil {
					return err
				}
			}
			if err := c.write(ev.data); err != nil {
				return err
			}
			c.lastSeq = ev.seq
		}
	case kindTodos:
		if !m.todos.newer(c.todos) {
			return nil
		}
		if err := c.write(m.data); err != nil {
			return err
		}
		c.todos = m.todos
	default:
		return c.write(m.data)
	}
	return nil
}

// catchUp writes the events after lastSeq from the store, up to upTo (-1:
// to the end of the log as it is now).
func (c *conn) catchUp(ctx context.Context, upTo int64) error {
	h := c.hub
	for upTo < 0 || c.lastSeq < upTo {
		// What a run has gathered goes out before the client waits on
		// a read from the store.
		if err := c.cw.flush(); err != nil {
			return err
		}
		h.stats.SocketReads.Add(1)
		events, more, err := h.store.Events(ctx, c.topic.id, c.lastSeq, pageSize)
		if err != nil {
			h.stats.ReadErrors.Add(1)
			return err
		}
		if err := c.writeEvents(events, upTo); err != nil {
			return err
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

// writeEvents writes a page of events up to upTo, in one run.
func (c *conn) writeEvents(events []projection.Event, upTo int64) error {
	return c.timed(func() error {
		for _, ev := range events {
			if upTo >= 0 && ev.Seq > upTo {
				return nil
			}
			if err := c.write(encodeEvent(ev)); err != nil {
				return err
			}
			c.lastSeq = ev.Seq
		}
		return nil
	})
}

var errShuttingDown = errors.New("shutting down")

// write writes one message, a frame built when it was encoded (see
// encode), through the corkWriter: not through the websocket library, which
// would frame it again. The corkWriter's deadline on the socket bounds it:
// a context with a deadline would cost a timer and a context.AfterFunc in
// the websocket library for every message of every subscriber. A client
// that goes away closes the socket (readUntilClosed), which ends a blocked
// write at once. Every write runs inside timed, which counts the run's
// deliveries once: not one shared atomic per message.
func (c *conn) write(frame []byte) error {
	c.written++
	return c.cw.frame(frame)
}

// timed runs a run of writes, corked: the run's messages are gathered
// and written together when it ends (or every corkMax bytes): a socket that
// has several messages waiting, as every socket has when a thousand
// subscribers outrun the CPU, gets them in one write(2), and that write is
// most of what a delivery costs. Every write to the socket is bounded by
// the write timeout (see corkWriter.out). A nested run (a page of a gap
// read inside a drain) leaves the uncorking to the outer one. Only the
// socket's one writer calls it.
func (c *conn) timed(f func() error) error {
	if c.timing {
		return f()
	}
	c.timing = true
	c.cw.cork()
	err := f()
	if ferr := c.cw.uncork(); err == nil {
		err = ferr
	}
	c.timing = false
	c.hub.stats.Deliveries.Add(c.written)
	c.written = 0
	return err
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
