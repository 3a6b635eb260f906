package fast_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/storetest"
)

// alternating is one store made of two instances: appends and todo_reads
// go to one and the other in turn, reads to the first.
type alternating struct {
	*fast.Store
	other *fast.Store
	n     atomic.Int64
}

func (a *alternating) pick() *fast.Store {
	if a.n.Add(1)%2 == 0 {
		return a.other
	}
	return a.Store
}

func (a *alternating) Append(ctx context.Context, id string, req store.AppendRequest) (store.AppendResult, error) {
	return a.pick().Append(ctx, id, req)
}

func (a *alternating) TodoRead(ctx context.Context, id string) (projection.Todos, error) {
	return a.pick().TodoRead(ctx, id)
}

// TestConcurrentAppendsTwoInstances is the concurrent property with the
// writers' appends spread over two instances, so that each instance's
// cached state is behind the log half the time: projection == replay and
// one winner per baseVersion must hold as with one.
func TestConcurrentAppendsTwoInstances(t *testing.T) {
	t.Parallel()
	a, b := twoInstances(t)
	storetest.ConcurrentAppendsEqualReplay(t, &alternating{Store: a, other: b}, projection.PlanSession, 20)
}
