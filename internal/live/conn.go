package live

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/projection"
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
	if !api.ValidSessionID(id) {
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
	// The socket is authorized like GET /sessions/{id}: another
	// principal's session is not found.
	sess, err := h.store.Session(r.Context(), id)
	if err == nil && sess.Owner != principalOf(r) {
		err = store.ErrNotFound
	}
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	// A cursor beyond the log (a client of another database, or a hostile
	// one) is taken as the end of the log: where this socket starts seeds
	// what the session's topic has published, and nothing a client says may
	// move that past what the store holds.
	after = min(after, sess.LastSeq)
	c := h.accept(w, r)
	if c == nil {
		return
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
	c.onEnd = func() { h.unsubscribe(t, sub) }
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
		return
	}
	c.todos = keyOf(todos)
	c.run()
}

// serveFeed streams a summary of every session that changes, on any
// instance. It sends no backlog: a client lists GET /sessions after opening
// the socket and keeps, per session, the summary with the highest lastSeq.
//
// The feed is subscribed before the handshake is answered: with no backlog
// to read, a change committed between the client's 101 and the
// subscription would otherwise be missed by the socket and by the list the
// client read after opening it. What is queued meanwhile waits for the
// handler's own writer run (the wake accept holds).
func (h *Hub) serveFeed(w http.ResponseWriter, r *http.Request) {
	var opened atomic.Pointer[conn]
	sub := newSubscriber(h.opts.QueueSize)
	sub.wake = func() {
		if c := opened.Load(); c != nil {
			c.wake()
		}
	}
	sub.owner = principalOf(r)
	h.mu.Lock()
	h.feed[sub] = struct{}{}
	h.mu.Unlock()
	unsubscribe := func() {
		h.mu.Lock()
		delete(h.feed, sub)
		h.mu.Unlock()
	}
	c := h.accept(w, r)
	if c == nil {
		unsubscribe()
		return
	}
	c.sub = sub
	opened.Store(c)
	c.onEnd = unsubscribe
	c.readUntilClosed()
	c.run()
}

// conn is one socket and how far it has been served.
//
// An idle socket has no goroutine of its own besides the websocket
// library's reader: a writer runs only while there is something to do (a
// queued message, a ping, a close), started by whoever makes the work.
// wakes counts the requests; the goroutine that takes it from 0 to 1 is the
// writer, and it runs until it has served every request it counted. The
// handler holds one request while it writes the backlog, so nothing else
// writes meanwhile.
type conn struct {
	hub *Hub
	ws  *websocket.Conn
	// nc is the socket under ws; its write deadline bounds every run of
	// writes (see timed).
	nc net.Conn
	// cw is what the library's buffered writer writes to: it gathers a
	// run of writes into one (see timed).
	cw    *corkWriter
	sub   *subscriber
	topic *topic
	onEnd func()
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

	wakes   atomic.Int64
	pingDue atomic.Bool
	// gone is set when the reader ends: the client closed or went away.
	gone      atomic.Bool
	lastWrite atomic.Int64 // unix nanoseconds
	ended     atomic.Bool
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
	h.open.Add(1)
	h.mu.Unlock()
	hw := &handshakeWriter{ResponseWriter: w}
	ws, err := websocket.Accept(hw, r, &websocket.AcceptOptions{OriginPatterns: h.opts.AllowedOrigins})
	if err != nil {
		h.open.Done()
		// A refusal is the client's doing (a foreign origin, a request that
		// is no websocket handshake), and a web page can make any number of
		// them: it is logged at DEBUG, never above, and answered with the
		// API's error shape.
		h.log.Debug("live: handshake refused", "path", r.URL.Path, "origin", r.Header.Get("Origin"), "err", err)
		if hw.refused != 0 {
			api.WriteError(w, r, refusal(hw.refused, err))
		}
		return nil
	}
	ws.SetReadLimit(h.opts.ReadLimit)
	c := &conn{hub: h, ws: ws, nc: hw.conn, cw: hw.cw}
	if id, ok := auth.From(r.Context()); ok {
		c.credential = id.CredentialID
	}
	c.wakes.Store(1) // the handler's: it writes until it calls run
	c.lastWrite.Store(time.Now().UnixNano())
	h.mu.Lock()
	h.conns[c] = struct{}{}
	h.mu.Unlock()
	h.stats.Connections.Add(1)
	return c
}

// readUntilClosed reads what the client sends until the socket closes,
// then marks the connection gone and wakes its writer to end it. The
// protocol is server to client: a data message closes the socket with
// 1008, one over the read limit with 1009 (the library closes it so while
// reading). The library's CloseRead would close both with 1008, as it
// never reads the message.
//
// The read takes no context: one that can end would cost the library a
// context.AfterFunc for the life of the socket. Every way a socket ends
// closes it (release, the hub's Close), which ends the read.
func (c *conn) readUntilClosed() {
	go func() {
		defer func() {
			c.gone.Store(true)
			c.wake()
		}()
		_, msg, err := c.ws.Reader(context.Background())
		if err != nil {
			return // closed, by either side
		}
		if _, err := io.Copy(io.Discard, msg); err != nil {
			if errors.Is(err, websocket.ErrMessageTooBig) {
				// The library has sent the 1009; finishing the close
				// handshake reads the rest of the message, so that the
				// socket is not reset with it unread and the client does
				// get the code.
				c.close(websocket.StatusMessageTooBig, "message too big")
			}
			return
		}
		c.close(websocket.StatusPolicyViolation, "unexpected data message: the protocol is server to client")
	}()
}

// wake asks for a writer; it never blocks.
func (c *conn) wake() {
	if c.wakes.Add(1) == 1 {
		go c.run()
	}
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
		ctx, cancel := context.WithTimeout(h.ctx, h.opts.WriteTimeout)
		err := c.ws.Ping(ctx)
		cancel()
		if err != nil {
			return true
		}
	}
	return false
}

func (c *conn) end() {
	if !c.ended.CompareAndSwap(false, true) {
		return
	}
	if c.onEnd != nil {
		c.onEnd()
	}
	c.hub.release(c)
}

func (h *Hub) release(c *conn) {
	_ = c.ws.CloseNow()
	h.mu.Lock()
	delete(h.conns, c)
	h.mu.Unlock()
	h.stats.Connections.Add(-1)
	h.open.Done()
}

// drain writes m and whatever else is queued, under one write deadline:
// a timer per message would cost more than the write.
func (c *conn) drain(ctx context.Context, m *message) error {
	defer c.lastWrite.Store(time.Now().UnixNano())
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

// writeEvents writes a page of events up to upTo, under one write deadline.
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

// write writes one message. It runs inside timed, whose deadline on the
// socket bounds it: a context with a deadline would cost a timer and a
// context.AfterFunc in the websocket library for every message of every
// subscriber. A client that goes away closes the socket (readUntilClosed),
// which ends a blocked write at once. Every write runs inside timed, which
// counts the run's deliveries once: not one shared atomic per message.
func (c *conn) write(data []byte) error {
	c.written++
	return c.ws.Write(context.Background(), websocket.MessageText, data)
}

// timed runs a run of writes under one write deadline on the socket, and
// clears it after, so that the library's own writes (pongs) between runs
// are not cut short by a stale one. A nested run (a page of a gap read
// inside a drain) renews the deadline and leaves the clearing to the
// outer one. Only the socket's one writer calls it.
//
// The run's messages are gathered and written together when it ends (or
// every corkMax bytes): a socket that has several messages waiting, as
// every socket has when a thousand subscribers outrun the CPU, gets them in
// one write(2), and that write is most of what a delivery costs.
func (c *conn) timed(f func() error) error {
	_ = c.nc.SetWriteDeadline(time.Now().Add(c.hub.opts.WriteTimeout))
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
	_ = c.nc.SetWriteDeadline(time.Time{})
	c.hub.stats.Deliveries.Add(c.written)
	c.written = 0
	return err
}

// corkMax bounds what a corked writer gathers before it writes.
const corkMax = 32 << 10

var corkBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// corkWriter writes through to the socket, except while corked: then it
// gathers what it is given in a pooled buffer, held only for the run, and
// writes it at uncork. The library writes to it from the socket's writer
// and, for pongs and close frames, from other goroutines: mu orders them.
type corkWriter struct {
	conn   net.Conn
	mu     sync.Mutex
	corked bool
	buf    *[]byte
}

func (w *corkWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.corked {
		return w.conn.Write(p)
	}
	if w.buf != nil && len(*w.buf)+len(p) > corkMax {
		if err := w.flushLocked(); err != nil {
			return 0, err
		}
	}
	if len(p) > corkMax {
		return w.conn.Write(p)
	}
	if w.buf == nil {
		w.buf = corkBufs.Get().(*[]byte)
	}
	*w.buf = append(*w.buf, p...)
	return len(p), nil
}

func (w *corkWriter) cork() {
	w.mu.Lock()
	w.corked = true
	w.mu.Unlock()
}

// uncork writes what was gathered and writes through again.
func (w *corkWriter) uncork() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.corked = false
	return w.flushLocked()
}

// flush writes what was gathered and stays corked.
func (w *corkWriter) flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

func (w *corkWriter) flushLocked() error {
	if w.buf == nil {
		return nil
	}
	b := w.buf
	w.buf = nil
	_, err := w.conn.Write(*b)
	if cap(*b) <= 2*corkMax {
		*b = (*b)[:0]
		corkBufs.Put(b)
	}
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

func (c *conn) close(code websocket.StatusCode, reason string) {
	_ = c.ws.Close(code, reason)
}

// refusal is the API error for a handshake the websocket library refused
// with status.
func refusal(status int, err error) *api.Error {
	msg := strings.TrimPrefix(err.Error(), "failed to accept WebSocket connection: ")
	code := "invalid"
	switch status {
	case http.StatusForbidden:
		code = "forbidden"
	case http.StatusUpgradeRequired:
		code = "upgrade_required"
		msg = "this route is a websocket: " + msg
	case http.StatusMethodNotAllowed:
		code = "method_not_allowed"
	default:
		if status >= 500 {
			code = "internal"
		}
	}
	return &api.Error{Status: status, Code: code, Message: msg}
}

// handshakeWriter is the response writer the websocket library accepts on.
// It keeps a refused handshake's status and drops the library's text/plain
// body, so that the refusal is answered with the API's JSON error instead.
//
// It also hands the websocket smaller buffers than net/http's 4 KiB reader
// and writer: a client only ever sends pongs and a close frame, and the
// writer's buffer only has to hold a frame header and a control frame:
// messages go through the corkWriter, which gathers a run of them in a
// buffer held only for the run. An idle socket so holds no write buffer.
// And it keeps the hijacked socket, for its write deadline.
type handshakeWriter struct {
	http.ResponseWriter
	refused int
	conn    net.Conn
	cw      *corkWriter
}

func (w *handshakeWriter) WriteHeader(status int) {
	if status != http.StatusSwitchingProtocols {
		w.refused = status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *handshakeWriter) Write(p []byte) (int, error) {
	if w.refused != 0 {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *handshakeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = conn
	// What the client sent right after the 101 may already sit in
	// net/http's reader. It must sit in the buffer of the reader handed
	// on, not behind it: the websocket library keeps only that reader's
	// buffered bytes and reads the socket itself after them.
	// A client sends only control frames (at most 125 bytes of payload),
	// so 256 bytes of reader will do.
	var r *bufio.Reader
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		r = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(b)), conn), max(256, n))
		_, _ = r.Peek(n)
	} else {
		r = bufio.NewReaderSize(conn, 256)
	}
	w.cw = &corkWriter{conn: conn}
	return conn, bufio.NewReadWriter(r, bufio.NewWriterSize(w.cw, 160)), nil
}

// principalOf is the principal the request acts as (api.authenticate put
// it there); a request without one owns nothing.
func principalOf(r *http.Request) string {
	if id, ok := auth.From(r.Context()); ok {
		return id.Principal.ID
	}
	return ""
}

// CodeRevoked closes a socket whose token was revoked or whose sign-in
// ended.
const CodeRevoked websocket.StatusCode = 4401

// Credentials lists the credential ids of the open sockets, each once.
func (h *Hub) Credentials() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	seen := map[string]bool{}
	var ids []string
	for c := range h.conns {
		if c.credential != "" && !seen[c.credential] {
			seen[c.credential] = true
			ids = append(ids, c.credential)
		}
	}
	return ids
}

// CloseCredential closes every socket opened with the credential id, with
// CodeRevoked.
func (h *Hub) CloseCredential(id string) {
	if id == "" {
		return
	}
	h.mu.RLock()
	var conns []*conn
	for c := range h.conns {
		if c.credential == id {
			conns = append(conns, c)
		}
	}
	h.mu.RUnlock()
	for _, c := range conns {
		go c.close(CodeRevoked, "credential revoked or signed out")
	}
}
