package live

import (
	"sync"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

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
	retry := backoff{after: h.opts.After}
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
