package live

import (
	"sync"
	"sync/atomic"
)

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

// peek is the oldest queued message, nil when none waits.
func (s *subscriber) peek() *message {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.head == len(s.queue) {
		return nil
	}
	return s.queue[s.head]
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
