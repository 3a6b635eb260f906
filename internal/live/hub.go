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

	"github.com/tack-dev/tack/internal/projection"
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
	open    sync.WaitGroup

	summaries summaryQueue

	// remote is told of other instances' changes (OnRemote).
	remote atomic.Pointer[func(sessions []string)]

	stats Stats
}

// Stats count what the hub did, for tests and the load tool.
type Stats struct {
	Connections atomic.Int64 // open sockets
	TooSlow     atomic.Int64 // subscribers dropped for falling behind (closed with CodeTooSlow)
	Fetches     atomic.Int64 // a topic's catch-up runs from the store (each of one or more pages)
	Resyncs     atomic.Int64 // resyncs after the carrier (re)connected
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
	go h.summaryLoop()
	go h.pingLoop()
	return h
}

// Stats returns the hub's counters.
func (h *Hub) Stats() *Stats { return &h.stats }

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

// offer queues m for sub without ever waiting: a subscriber whose queue is
// full, in entries or in bytes, has fallen behind and is dropped, to be
// closed with CodeTooSlow.
func (h *Hub) offer(sub *subscriber, m *message) {
	if sub.dropped.Load() {
		return
	}
	if sub.bytes.Add(int64(m.size)) <= h.opts.QueueBytes && sub.push(m) {
		sub.wake()
		return
	}
	if sub.dropped.CompareAndSwap(false, true) {
		h.stats.TooSlow.Add(1)
		sub.wake()
	}
}

// pingLoop asks every socket that has written nothing for a PingInterval
// for a ping, which keeps idle connections and their proxies alive.
func (h *Hub) pingLoop() {
	tick := time.NewTicker(h.opts.PingInterval / 2)
	defer tick.Stop()
	for {
		select {
		case <-h.ctx.Done():
			return
		case <-tick.C:
		}
		idle := time.Now().Add(-h.opts.PingInterval).UnixNano()
		h.mu.RLock()
		for c := range h.conns {
			if c.lastWrite.Load() < idle {
				c.lastWrite.Store(time.Now().UnixNano())
				c.pingDue.Store(true)
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
	h.endHolds(func(*hold) bool { return true })
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
		// A socket still in its close handshake is given up on: CloseNow
		// may wait for the handshake, so each runs on its own.
		for c := range h.conns {
			go c.ws.CloseNow()
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

// topic is one session's subscribers and how far the hub has published its
// log. Events reach subscribers only in seq order: an append that arrives
// out of order, or a notice from another instance, makes the topic read the
// missing events from the store.
type topic struct {
	id string

	mu   sync.Mutex
	subs map[*subscriber]struct{}
	// published is the last seq sent to the subscribers, -1 until the first
	// subscriber has read its backlog and seeded it.
	published int64
	// todos is the last todos view published.
	todos todosKey
	// dirty asks the fetcher for a read of the store after published;
	// todosStale asks it for the todos view.
	dirty, todosStale bool
	fetching          bool
	closed            bool
}

// deliver publishes the events of a local append when they follow on from
// what was published; otherwise it leaves the gap to the fetcher.
func (t *topic) deliver(h *Hub, events []projection.Event, todos *projection.Todos) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	last := events[len(events)-1].Seq
	if t.published < 0 || events[0].Seq > t.published+1 {
		t.markDirty(h)
		return
	}
	t.publishEvents(h, events)
	if todos != nil && t.published >= last {
		t.publishTodos(h, *todos)
	}
}

// hint notes that the log reaches lastSeq.
func (t *topic) hint(h *Hub, lastSeq int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.published < 0 || lastSeq > t.published {
		t.markDirty(h)
	}
}

// seed sets where publishing starts, from the first subscriber's backlog.
func (t *topic) seed(h *Hub, lastSeq int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.published >= 0 || t.closed {
		return
	}
	t.published = lastSeq
	if t.dirty {
		t.startFetch(h)
	}
}

// publishEvents publishes the events that follow on from published, as one
// queue entry: an append of a thousand events costs one slot, not a thousand.
// It reports whether a todos-changing type was among them.
func (t *topic) publishEvents(h *Hub, events []projection.Event) (todosTouched bool) {
	m := &message{kind: kindEvent}
	for _, ev := range events {
		if ev.Seq != t.published+1 {
			continue
		}
		m.events = append(m.events, encodedEvent{seq: ev.Seq, data: encodeEvent(ev)})
		m.size += len(m.events[len(m.events)-1].data)
		t.published = ev.Seq
		todosTouched = todosTouched || projection.ListWrite(ev.Type) || ev.Type == projection.TypeTurnStart
	}
	if len(m.events) == 0 {
		return false
	}
	for s := range t.subs {
		h.offer(s, m)
	}
	return todosTouched
}

func (t *topic) publishTodos(h *Hub, todos projection.Todos) {
	key := keyOf(todos)
	if !key.newer(t.todos) {
		return
	}
	t.todos = key
	data := encode(todosMessage{Type: "todos", Todos: todos})
	m := &message{kind: kindTodos, todos: key, data: data, size: len(data)}
	for s := range t.subs {
		h.offer(s, m)
	}
}

// markDirty asks for a catch-up read; t.mu is held.
func (t *topic) markDirty(h *Hub) {
	t.dirty = true
	if t.published >= 0 {
		t.startFetch(h)
	}
}

func (t *topic) startFetch(h *Hub) {
	if !t.fetching && !t.closed {
		t.fetching = true
		go t.fetch(h)
	}
}

// fetch reads the store until the topic has published everything it was
// told of, retrying with backoff while the database is away.
func (t *topic) fetch(h *Hub) {
	var retry backoff
	for {
		t.mu.Lock()
		if t.closed || (!t.dirty && !t.todosStale) {
			t.fetching = false
			t.mu.Unlock()
			return
		}
		t.dirty = false
		from := t.published
		t.mu.Unlock()

		err := t.catchUp(h, from)
		if err == nil {
			retry.reset()
			continue
		}
		h.stats.ReadErrors.Add(1)
		h.log.Warn("live: catch-up read failed", "session", t.id, "err", err)
		t.mu.Lock()
		t.dirty = true
		t.mu.Unlock()
		if !retry.wait(h.ctx) {
			t.mu.Lock()
			t.fetching = false
			t.mu.Unlock()
			return
		}
	}
}

const pageSize = 1000

func (t *topic) catchUp(h *Hub, from int64) error {
	h.stats.Fetches.Add(1)
	for {
		events, more, err := h.store.Events(h.ctx, t.id, from, pageSize)
		if err != nil {
			return err
		}
		t.mu.Lock()
		if t.publishEvents(h, events) {
			t.todosStale = true
		}
		t.mu.Unlock()
		if !more || len(events) == 0 {
			break
		}
		from = events[len(events)-1].Seq
	}
	t.mu.Lock()
	stale := t.todosStale
	t.mu.Unlock()
	if !stale {
		return nil
	}
	// The view read here is at least as new as the events just published;
	// publishTodos sends it only if it is newer than the last one sent.
	todos, err := h.store.Todos(h.ctx, t.id)
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if todos.Version > t.published {
		// The view names a todo/write not yet published: publish the events
		// up to it first, so that a todos message never runs ahead of them.
		t.dirty = true
		return nil
	}
	t.todosStale = false
	t.publishTodos(h, todos)
	return nil
}

// subscriber is one socket's bounded queue. The queue is a slice that
// holds memory only while something waits: a channel of QueueSize entries
// would cost every idle socket a KiB.
type subscriber struct {
	mu sync.Mutex
	// queue[head:] is what waits, oldest first.
	queue []*message
	head  int
	limit int
	// wake starts the socket's writer, if it is not running.
	wake func()
	// bytes is the size of what is queued; messages are shared between
	// subscribers, so this is what a slow one keeps alive.
	bytes atomic.Int64
	// dropped is set when the subscriber fell behind.
	dropped atomic.Bool
	// owner is the principal a feed subscriber sees the sessions of; all
	// (an admin's feed) sees every one.
	owner string
	all   bool
}

func newSubscriber(size int) *subscriber {
	return &subscriber{limit: size}
}

// push queues m; it reports false when the queue holds limit entries.
func (s *subscriber) push(m *message) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue)-s.head >= s.limit {
		return false
	}
	if s.head > 0 && len(s.queue) == cap(s.queue) {
		// Reuse the taken front rather than grow: a queue that never
		// quite empties stays within twice its limit.
		n := copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue, s.head = s.queue[:n], 0
	}
	s.queue = append(s.queue, m)
	return true
}

// pop takes the oldest queued message, nil when none waits. An emptied
// queue lets go of its array unless it is a small one.
func (s *subscriber) pop() *message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head == len(s.queue) {
		return nil
	}
	m := s.queue[s.head]
	s.queue[s.head] = nil
	s.head++
	if s.head == len(s.queue) {
		s.head = 0
		if cap(s.queue) > 4 {
			s.queue = nil
		} else {
			s.queue = s.queue[:0]
		}
	}
	return m
}

const (
	kindEvent = iota + 1
	kindTodos
	kindSession
)

// message is one queue entry, encoded and framed once and shared by every
// subscriber: the events of one append (each sent as its own websocket
// message), a todos view, or a session summary.
type message struct {
	kind   uint8
	size   int
	events []encodedEvent // kindEvent
	todos  todosKey       // kindTodos
	data   []byte         // kindTodos, kindSession
}

type encodedEvent struct {
	seq  int64
	data []byte
}

// todosKey orders the states of the todos view: the version only grows, and
// within a version a standing plan only stops standing.
type todosKey struct {
	version  int64
	standing bool
	set      bool
}

func keyOf(t projection.Todos) todosKey {
	return todosKey{version: t.Version, standing: t.Standing, set: true}
}

func (k todosKey) newer(than todosKey) bool {
	if !than.set {
		return true
	}
	return k.version > than.version || (k.version == than.version && than.standing && !k.standing)
}

type eventMessage struct {
	Type  string           `json:"type"`
	Event projection.Event `json:"event"`
}

type todosMessage struct {
	Type  string           `json:"type"`
	Todos projection.Todos `json:"todos"`
}

type sessionMessage struct {
	Type    string        `json:"type"`
	Session store.Session `json:"session"`
}

// encodeEvent is an event message, framed (see encode); it is encoded once
// per event and the same bytes go to every subscriber.
func encodeEvent(ev projection.Event) []byte {
	return encode(eventMessage{Type: "event", Event: ev})
}

// resyncSessions is how many of the most recently active sessions the feed
// is sent again after the carrier reconnects.
const resyncSessions = 100

// summaryQueue collects the sessions whose summaries must be read.
type summaryQueue struct {
	mu      sync.Mutex
	pending map[string]struct{}
	recent  bool
	wake    chan struct{}
}

func (q *summaryQueue) addRecent() {
	q.mu.Lock()
	q.recent = true
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *summaryQueue) init() {
	q.pending = map[string]struct{}{}
	q.wake = make(chan struct{}, 1)
}

func (q *summaryQueue) add(id string) {
	q.mu.Lock()
	q.pending[id] = struct{}{}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *summaryQueue) take() (ids []string, recent bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	ids = make([]string, 0, len(q.pending))
	for id := range q.pending {
		ids = append(ids, id)
	}
	clear(q.pending)
	recent, q.recent = q.recent, false
	return ids, recent
}
