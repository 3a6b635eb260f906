package live_test

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/storetest"
)

// idleSocketHeapBudget is the heap an idle, served socket may keep alive
// through the hub's own code (its conn, reader and corkWriter, all
// allocated under internal/live; the websocket library's connection is let
// go after the handshake). Go's GC lets the heap grow to about twice what
// is live, and the reader goroutine's stack (2 KiB) comes on top: this
// budget is what keeps the resident memory per idle socket within the
// figure of docs/performance.md.
const idleSocketHeapBudget = 1000

// TestIdleSocketHeap opens sockets, lets each receive its backlog, and
// counts the heap still held by allocations made under internal/live: the
// per-socket figure stays within the budget. It is not parallel: it sets
// the process-wide memory profile rate to record every allocation.
func TestIdleSocketHeap(t *testing.T) {
	old := runtime.MemProfileRate
	runtime.MemProfileRate = 1
	defer func() { runtime.MemProfileRate = old }()

	pc := storetest.PoolConfig(t)
	a := startInstance(t, pc, live.Options{})
	ctx := testCtx(t)
	ids := []string{a.createSession(), a.createSession()}
	const n = 200
	before := liveHeap()
	conns := make([]*websocket.Conn, 0, n)
	for i := range n {
		c, err := dial(ctx, a.wsURL("/sessions/"+ids[i%2]+"/live"))
		if err != nil {
			t.Fatal(err)
		}
		if m, err := read(ctx, c); err != nil || m.Type != "todos" {
			t.Fatalf("first message: %+v %v", m, err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.CloseNow()
		}
	}()
	waitFor(t, "every socket to be open", func() bool { return a.hub.Stats().Connections.Load() == n })
	// Each socket's writer lets go of what it held for the backlog once it
	// has written it, on its own goroutine: the heap is read until it is
	// within the budget, or for as long as a loaded machine may take.
	var per int64
	settled := eventually.Within(10*time.Second, func() bool {
		per = (liveHeap() - before) / n
		return per <= idleSocketHeapBudget
	})
	t.Logf("heap held per idle socket under internal/live: %d B", per)
	if !settled {
		t.Errorf("an idle socket holds %d B of heap, over the budget of %d B", per, idleSocketHeapBudget)
	}
}

// liveHeap is the heap in use by allocations with a frame of package live
// on their stack, as of a completed GC. What the database driver allocates
// under it (a pool connection opened for a backlog read, its statement
// cache) belongs to the pool, not to a socket, and is left out.
func liveHeap() int64 {
	// The profile is published one cycle late, and what sync.Pools hold
	// (the corked runs' buffers) goes only at the second cycle.
	runtime.GC()
	runtime.GC()
	runtime.GC()
	recs := make([]runtime.MemProfileRecord, 1024)
	for {
		n, ok := runtime.MemProfile(recs, false)
		if ok {
			recs = recs[:n]
			break
		}
		recs = make([]runtime.MemProfileRecord, n+1024)
	}
	var total int64
	for _, r := range recs {
		frames := runtime.CallersFrames(r.Stack())
		for {
			f, more := frames.Next()
			if strings.HasPrefix(f.Function, "github.com/jackc/") {
				break
			}
			if strings.HasPrefix(f.Function, "github.com/tack-dev/tack/internal/live.") {
				total += r.InUseBytes()
				break
			}
			if !more {
				break
			}
		}
	}
	return total
}
