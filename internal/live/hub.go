// Package live pushes every change of a session log to websocket subscribers:
// a hub of per-session topics fed by the API after each committed append, a
// feed of session summaries, and a Carrier that brings changes made by other
// instances sharing the database. The store is the source of truth: the hub
// only ever publishes events in seq order, and whatever it misses it reads
// back from the store, so a lost notice costs latency, never an event.
package live

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/store"
)

// Close codes the server ends a socket with (see docs/live.md).
const (
	// CodeTooSlow closes a subscriber whose queue overflowed: it was not
	// reading fast enough. It resumes with after=<last seq it saw>.
	CodeTooSlow websocket.StatusCode = 4008
	// CodeGoingAway (1001) closes every socket when the server shuts down.
	CodeGoingAway = websocket.StatusGoingAway
	// CodeUnavailable closes a socket whose catch-up read from the database
	// failed; the client resumes with after=<last seq> after a short wait.
	CodeUnavailable websocket.StatusCode = 1011
)

// Options configure a Hub. Zero values take the documented defaults.
type Options struct {
	Logger *slog.Logger
	// AllowedOrigins are host patterns (path.Match, e.g. "*.example.com", or
	// "https://app.example.com" to match scheme and host) whose browser
	// origins may open a socket besides the server's own host.
	AllowedOrigins []string
	// QueueSize bounds the entries waiting for one connection (default 128;
	// an entry is one append's events, a todos view or a session summary).
	QueueSize int
	// QueueBytes bounds the bytes waiting for one connection (default 16 MiB).
	QueueBytes int64
	// WriteTimeout bounds every write to a socket (default 10s): a write
	// the client has not taken within 7/8 of it to all of it (the deadline
	// is moved only when less than 7/8 is left) ends the socket.
	WriteTimeout time.Duration
	// PingInterval is how often an idle socket is pinged (default 30s).
	PingInterval time.Duration
	// After times the hub's waits: the ticks of the ping clock, every half
	// PingInterval, and the backoff before a topic's failed catch-up read
	// is retried (default time.After). A test hands in a clock of its own
	// and moves it, to see a socket pinged once it has been silent for a
	// PingInterval, and not before, without waiting one in real time.
	After func(time.Duration) <-chan time.Time
	// ReadLimit caps a message a client may send (default 1024 bytes; the
	// protocol is server to client, so any data message closes the socket).
	ReadLimit int64
	// Carrier brings changes from other instances; nil serves one instance.
	Carrier Carrier
	// MaxSocketsPerPrincipal caps the sockets one principal may hold open
	// (past it the upgrade is refused with 429); 0 is no cap.
	MaxSocketsPerPrincipal int
	// MaxSockets caps the sockets of the whole server, so that the
	// descriptors left serve requests, health checks and the database
	// (past it the upgrade is refused with 503); 0 is no cap.
	MaxSockets int
}

// Hub fans changes out to the sockets of one server instance.
type Hub struct {
	store store.Store
	opts  Options
	log   *slog.Logger

	// ctx bounds the hub's own reads from the store; it ends with Close.
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.RWMutex
	topics map[string]*topic
	feed   map[*subscriber]struct{}
	conns  map[*conn]struct{}
	// sockets counts the sockets open or opening, in all and by principal,
	// against the caps of Options.
	sockets int
	held    map[string]int
	// holds are the streams served outside the hub that count as sockets
	// (Hold).
	holds   map[*hold]struct{}
	closing chan struct{}
	closed  bool
	// afterHandshake, when set (tests), runs in accept between the
	// handshake's answer and the socket's registration.
	afterHandshake func()
	open           sync.WaitGroup

	summaries summaryQueue

	// writers serve the sockets' wakes; writerTurn gives them sockets in
	// turn.
	writers    []*writer
	writerTurn atomic.Uint32

	// remote is told of other instances' changes (OnRemote).
	remote atomic.Pointer[func(sessions []string)]

	// ticks is the ping clock: the half PingIntervals since New. A socket
	// keeps the tick of its last write (conn.lastWrite), which costs an
	// atomic load where a read of the time cost a clock read.
	ticks atomic.Int64

	stats Stats
}

// Stats count what the hub did, for tests and the load tool.
type Stats struct {
	Connections atomic.Int64 // open sockets
	TooSlow     atomic.Int64 // subscribers dropped for falling behind (closed with CodeTooSlow)
	Fetches     atomic.Int64 // a topic's catch-up runs from the store (each of one or more pages)
	Resyncs     atomic.Int64 // resyncs after the carrier (re)connected
	Pings       atomic.Int64 // pings asked of sockets silent for a PingInterval
	// Deliveries are messages written to sockets; SocketReads the pages
	// read for one socket's own backlog or gap; ReadErrors the catch-up
	// reads that failed (the database did not answer).
	Deliveries  atomic.Int64
	SocketReads atomic.Int64
	ReadErrors  atomic.Int64
}

// New returns a hub over st. Call Run to start the carrier, Close to stop.
func New(st store.Store, opts Options) *Hub {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.QueueSize <= 0 {
		opts.QueueSize = 128
	}
	if opts.QueueBytes <= 0 {
		opts.QueueBytes = 16 << 20
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = 10 * time.Second
	}
	if opts.PingInterval <= 0 {
		opts.PingInterval = 30 * time.Second
	}
	if opts.ReadLimit <= 0 {
		opts.ReadLimit = 1024
	}
	if opts.After == nil {
		opts.After = time.After
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &Hub{
		store: st, opts: opts, log: opts.Logger, ctx: ctx, cancel: cancel,
		topics:  map[string]*topic{},
		feed:    map[*subscriber]struct{}{},
		conns:   map[*conn]struct{}{},
		held:    map[string]int{},
		holds:   map[*hold]struct{}{},
		closing: make(chan struct{}),
	}
	h.summaries.init()
	h.startWriters()
	go h.summaryLoop()
	go h.pingLoop()
	return h
}

// Stats returns the hub's counters.
func (h *Hub) Stats() *Stats { return &h.stats }

// Sockets is how many places of the caps are taken now: sockets open or
// in their handshake, and the streams that count as sockets (Hold). A
// socket takes its place before its handshake answers and gives it back
// after it is gone, so Sockets falls to zero only once every socket a
// client saw open has been let go.
func (h *Hub) Sockets() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.sockets
}

// Run runs the carrier, if any, until ctx ends.
func (h *Hub) Run(ctx context.Context) error {
	if h.opts.Carrier == nil {
		<-ctx.Done()
		return nil
	}
	return h.opts.Carrier.Run(ctx, h)
}

// OnAppend publishes a committed append; it is api.Options.OnAppend. It
// never blocks on a subscriber: a full queue closes that subscriber instead.
// CreateSession calls it with only Session set.
func (h *Hub) OnAppend(sessionID string, res store.AppendResult) {
	if h.opts.Carrier != nil {
		h.opts.Carrier.Announce(sessionID, res.Session.LastSeq)
	}
	h.publishSession(res.Session)
	if len(res.Events) == 0 {
		return
	}
	if t := h.lookup(sessionID); t != nil {
		t.deliver(h, res.Events, res.Todos)
	}
}

// Change names a session and the last seq another instance committed.
type Change struct {
	Session string `json:"s"`
	LastSeq int64  `json:"q"`
}

// OnRemote has f told of the sessions other instances changed, as the
// carrier brings them, and told nil after a resync, when any may have: the
// server's other listeners than the sockets (MCP's resource subscribers)
// hear every instance's writes too. f must not block.
func (h *Hub) OnRemote(f func(sessions []string)) { h.remote.Store(&f) }

// Changed takes notice of changes made by other instances: topics with
// subscribers read the new events from the store, and the session feed gets
// fresh summaries.
func (h *Hub) Changed(changes []Change) {
	feed := h.feedSize() > 0
	for _, c := range changes {
		if t := h.lookup(c.Session); t != nil {
			t.hint(h, c.LastSeq)
		}
		if feed {
			h.summaries.add(c.Session)
		}
	}
	if f := h.remote.Load(); f != nil {
		ids := make([]string, len(changes))
		for i, c := range changes {
			ids[i] = c.Session
		}
		(*f)(ids)
	}
}

// Resync makes every topic read the store for events it may have missed;
// the carrier calls it after every (re)connect, when notices may have been
// lost.
func (h *Hub) Resync() {
	h.stats.Resyncs.Add(1)
	h.mu.RLock()
	topics := make([]*topic, 0, len(h.topics))
	for _, t := range h.topics {
		topics = append(topics, t)
	}
	h.mu.RUnlock()
	for _, t := range topics {
		t.mu.Lock()
		t.markDirty(h)
		t.mu.Unlock()
	}
	if h.feedSize() > 0 {
		h.summaries.addRecent()
	}
	if f := h.remote.Load(); f != nil {
		(*f)(nil)
	}
}

func (h *Hub) lookup(id string) *topic {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.topics[id]
}

func (h *Hub) feedSize() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.feed)
}

// subscribe registers a subscriber on a session's topic, creating the topic
// if needed. It happens before the subscriber reads its backlog, so nothing
// committed after the backlog read can be missed.
func (h *Hub) subscribe(id string, wake func()) (*topic, *subscriber) {
	s := newSubscriber(h.opts.QueueSize)
	s.wake = wake
	h.mu.Lock()
	defer h.mu.Unlock()
	t := h.topics[id]
	if t == nil {
		t = &topic{id: id, subs: map[*subscriber]struct{}{}, published: -1}
		h.topics[id] = t
	}
	t.mu.Lock()
	t.subs[s] = struct{}{}
	t.mu.Unlock()
	return t, s
}

func (h *Hub) unsubscribe(t *topic, s *subscriber) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.subs, s)
	if len(t.subs) == 0 && h.topics[t.id] == t {
		delete(h.topics, t.id)
		t.closed = true
	}
}

func (h *Hub) publishSession(s store.Session) {
	if !s.Listed {
		return // in no list until it holds content: no feed shows it either
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if len(h.feed) == 0 {
		return
	}
	// Each principal sees only its own sessions: the summary is encoded
	// once, and only when one of its owner's sockets is on the feed.
	var m *message
	for sub := range h.feed {
		if !sub.all && sub.owner != s.Owner {
			continue
		}
		if m == nil {
			data := encode(sessionMessage{Type: "session", Session: s})
			m = &message{kind: kindSession, data: data, size: len(data)}
		}
		h.offer(sub, m)
	}
}

// pingLoop asks every socket that has written nothing for a PingInterval
// for a ping, which keeps idle connections and their proxies alive. It
// ticks every half PingInterval: a socket whose last write came before the
// tick two ticks back has been silent for more than a PingInterval, and no
// more than one and a half. A ping is written at its tick, where a message
// may be written anywhere within the half interval after it: it counts as
// written before its tick, so that an idle socket is pinged every
// PingInterval, two ticks apart.
func (h *Hub) pingLoop() {
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.opts.After(h.opts.PingInterval / 2):
		}
		now := h.ticks.Add(1)
		h.mu.RLock()
		for c := range h.conns {
			if c.lastWrite.Load() < now-2 {
				c.lastWrite.Store(now - 1)
				c.pingDue.Store(true)
				h.stats.Pings.Add(1)
				c.wake()
			}
		}
		h.mu.RUnlock()
	}
}

// summaryLoop reads the summaries of sessions other instances changed and
// publishes them to the feed, one read per session however many notices.
func (h *Hub) summaryLoop() {
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-h.summaries.wake:
		}
		ids, recent := h.summaries.take()
		if recent {
			// After a lost connection, whatever changed meanwhile is among
			// the most recently active sessions.
			list, _, err := h.store.Sessions(h.ctx, resyncSessions, "")
			if err != nil {
				h.log.Warn("live: read recent sessions", "err", err)
			}
			for _, s := range list {
				h.publishSession(s)
			}
		}
		for _, id := range ids {
			s, err := h.store.Session(h.ctx, id)
			if err != nil {
				h.log.Warn("live: read session summary", "session", id, "err", err)
				continue
			}
			h.publishSession(s)
		}
	}
}

// Close closes every socket with 1001 and waits until they are gone or ctx
// ends. New sockets are refused from the start of Close.
func (h *Hub) Close(ctx context.Context) {
	h.mu.Lock()
	if !h.closed {
		h.closed = true
		close(h.closing)
	}
	h.mu.Unlock()
	h.endHolds(func(ho *hold) bool { return !ho.opening })
	done := make(chan struct{})
	go func() { h.open.Wait(); close(done) }()
	h.mu.RLock()
	for c := range h.conns {
		c.wake()
	}
	h.mu.RUnlock()
	select {
	case <-done:
	case <-ctx.Done():
		h.mu.RLock()
		// A socket still in its close handshake is given up on.
		for c := range h.conns {
			_ = c.cw.conn.Close()
		}
		h.mu.RUnlock()
	}
	h.cancel()
}

func (h *Hub) isClosing() bool {
	select {
	case <-h.closing:
		return true
	default:
		return false
	}
}
