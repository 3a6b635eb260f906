package live_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// pageRecorder is a real store that notes the size of every page of events
// it answers, so a test sees what a socket's catch-up holds in memory.
type pageRecorder struct {
	store.Store
	mu    sync.Mutex
	pages [][]int // the data sizes of each page's events
}

func (p *pageRecorder) Events(ctx context.Context, id string, after int64, limit int) ([]projection.Event, bool, error) {
	events, more, err := p.Store.Events(ctx, id, after, limit)
	sizes := make([]int, len(events))
	for i, e := range events {
		sizes[i] = len(e.Data)
	}
	p.mu.Lock()
	p.pages = append(p.pages, sizes)
	p.mu.Unlock()
	return events, more, err
}

// TestCatchUpPagesBoundedByBytes has a socket catch up on a log of several
// MiB: it gets every event once and in order, and no page of events its
// catch-up read held more than the page budget plus one event.
func TestCatchUpPagesBoundedByBytes(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			rec := &pageRecorder{Store: f.Open(t, projection.Config{})}
			in := serveInstance(t, rec, nil, live.Options{QueueBytes: 64 << 20})
			ctx := testCtx(t)

			id := in.createSession()
			const n, size = 60, 100 << 10 // 6 MB of events
			for i := 0; i < n; i += 10 {
				in.appendUsers(id, 10, size)
			}
			rec.mu.Lock()
			rec.pages = nil
			rec.mu.Unlock()

			c, err := dial(ctx, in.wsURL(fmt.Sprintf("/sessions/%s/live?after=0", id)))
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			c.SetReadLimit(1 << 20)
			var f follower
			if err := f.readTo(ctx, c, n); err != nil {
				t.Fatalf("after seq %d: %v", f.last, err)
			}

			rec.mu.Lock()
			defer rec.mu.Unlock()
			read := 0
			for i, sizes := range rec.pages {
				sum := 0
				for _, s := range sizes[:max(len(sizes)-1, 0)] {
					sum += s
				}
				if sum >= store.MaxPageBytes {
					t.Errorf("catch-up page %d: %d events holding %d bytes before the last, over the budget of %d",
						i, len(sizes), sum, store.MaxPageBytes)
				}
				read += len(sizes)
			}
			if read < n || len(rec.pages) < 3 {
				t.Errorf("the catch-up read %d events in %d pages, want all %d in several", read, len(rec.pages), n)
			}
		})
	}
}
