package live

import (
	"runtime"
	"sync"
)

// writer is one of the hub's writer goroutines, one per CPU the runtime
// uses. Each socket belongs to one of them (given in turn at accept), and
// a wake that finds the socket without a writer puts it on its writer's
// ready list: a fan-out to 10,000 sockets wakes each writer once and
// starts no goroutine, where one goroutine per woken socket cost more in
// the scheduler than the write itself on a machine with many cores.
//
// A writer only ever does what cannot block (see conn.quick): it writes
// what is queued with a non-blocking write(2), whole when the socket's
// buffer takes it, which is the common case. Anything else (a socket
// whose buffer is full, a gap to read from the store, a ping, a close, the
// end of a socket) goes to a goroutine of the socket's own (conn.run), as
// every wake did before, so that one slow client never holds up the
// others.
type writer struct {
	mu    sync.Mutex
	ready []*conn
	// stopped is set when the hub's context ends: a wake then starts the
	// socket's own goroutine, as nobody serves the list any more.
	stopped bool
	wake    chan struct{}
	raw     *rawWrite
}

// startWriters starts the hub's writers; they stop when h.ctx ends.
func (h *Hub) startWriters() {
	h.writers = make([]*writer, runtime.GOMAXPROCS(0))
	for i := range h.writers {
		w := &writer{wake: make(chan struct{}, 1), raw: newRawWrite()}
		h.writers[i] = w
		go w.loop(h)
	}
}

// nextWriter is the writer of a new socket.
func (h *Hub) nextWriter() *writer {
	return h.writers[int(h.writerTurn.Add(1))%len(h.writers)]
}

// add puts c on the ready list, which holds it at most once: only the wake
// that finds c without a writer adds it.
func (w *writer) add(c *conn) {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		go c.run()
		return
	}
	w.ready = append(w.ready, c)
	first := len(w.ready) == 1
	w.mu.Unlock()
	if first {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
}

func (w *writer) loop(h *Hub) {
	var batch []*conn
	for {
		select {
		case <-w.wake:
		case <-h.ctx.Done():
			w.mu.Lock()
			w.stopped = true
			batch, w.ready = w.ready, nil
			w.mu.Unlock()
			for _, c := range batch {
				go c.run()
			}
			return
		}
		for {
			w.mu.Lock()
			batch, w.ready = w.ready, batch[:0]
			w.mu.Unlock()
			if len(batch) == 0 {
				break
			}
			// One read of the ping clock a batch: the sockets' last
			// writes are read only to decide which to ping, at half a
			// PingInterval's grain.
			now := h.ticks.Load()
			var written int64
			for i, c := range batch {
				written += c.serve(w.raw, now)
				batch[i] = nil
			}
			h.stats.Deliveries.Add(written)
		}
	}
}
