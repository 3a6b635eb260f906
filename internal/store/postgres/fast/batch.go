package fast

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
)

// batcher gathers work that arrives together into batches sent as one
// (group commit of appends, group.go; reads of todo lists, reads.go).
// Nothing waits for company: work that finds fewer than flights batches in
// flight is sent at once, alone or with whatever queued, by the goroutine
// that brought it; work arriving while flights batches are in flight
// queues, and the next batch takes it all (at most max) as one of those
// returns. So at one client every batch is of one, and batches grow with
// the load. A batch is taken off the queue before it is sent, so all it
// holds arrived before it went out.
type batcher[M any] struct {
	flights, max int
	send         func([]M)

	mu     sync.Mutex
	queue  []M
	flying int
}

// add queues m and, when a flight is free, sends the queue; it returns
// once its own batch has been sent, sending later ones in another goroutine.
func (b *batcher[M]) add(m M) {
	b.mu.Lock()
	b.queue = append(b.queue, m)
	if b.flying >= b.flights {
		b.mu.Unlock()
		return
	}
	b.flying++
	batch := b.take()
	b.mu.Unlock()
	b.fly(batch)
}

// take takes the next batch off the queue; b.mu is held.
func (b *batcher[M]) take() []M {
	n := min(len(b.queue), b.max)
	batch := slices.Clone(b.queue[:n])
	b.queue = append(b.queue[:0], b.queue[n:]...)
	return batch
}

func (b *batcher[M]) fly(batch []M) {
	b.send(batch)
	b.mu.Lock()
	if len(b.queue) == 0 {
		b.flying--
		b.mu.Unlock()
		return
	}
	next := b.take()
	b.mu.Unlock()
	go b.fly(next)
}

// whileAnyWaits is a context that ends when every one of ctxs has: a batch
// runs while any of its members still waits for it.
func whileAnyWaits(ctxs []context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var waiting atomic.Int64
	waiting.Store(int64(len(ctxs)))
	stops := make([]func() bool, len(ctxs))
	for i, c := range ctxs {
		stops[i] = context.AfterFunc(c, func() {
			if waiting.Add(-1) == 0 {
				cancel()
			}
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}
