package fast_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
)

// TestTodoReadsBatched queues reads of todo lists of several sessions (one
// twice, one unknown) and sends them as one query: each gets its own list,
// the unknown one ErrNotFound.
func TestTodoReadsBatched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, _ := twoInstances(t)
	var ids []string
	want := map[string]int64{}
	for i := range 3 {
		s, _, err := a.CreateSession(ctx, store.NewSession{Title: fmt.Sprint("reads ", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, s.ID)
		for range i {
			want[s.ID] = todoWriteOK(t, a, s.ID, fmt.Sprint("item of ", i))
		}
	}
	resume := fast.PauseTodoReads(a)
	type answer struct {
		id      string
		version int64
		err     error
	}
	asked := append(append([]string{}, ids...), ids[2], "ses_unknown")
	answers := make(chan answer, len(asked))
	for _, id := range asked {
		go func() {
			st, err := a.TodoList(ctx, id)
			answers <- answer{id, st.Version, err}
		}()
	}
	eventually.Within(10*time.Second, func() bool { return fast.QueuedTodoReads(a) >= len(asked) })
	if q := fast.QueuedTodoReads(a); q != len(asked) {
		t.Fatalf("%d reads queued, want %d", q, len(asked))
	}
	resume()
	for range asked {
		ans := <-answers
		switch {
		case ans.id == "ses_unknown":
			if !errors.Is(ans.err, store.ErrNotFound) {
				t.Errorf("read of an unknown session: %v, want ErrNotFound", ans.err)
			}
		case ans.err != nil || ans.version != want[ans.id]:
			t.Errorf("read of %s: version %d, %v; want %d", ans.id, ans.version, ans.err, want[ans.id])
		}
	}
}

// TestTodoReadsConsistent reads one session's list on one instance while
// readers keep its batches busy, after each write acknowledged on the
// other: every read sees the write acknowledged before it was asked.
func TestTodoReadsConsistent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := twoInstances(t)
	s, _, err := a.CreateSession(ctx, store.NewSession{Title: "consistent"})
	if err != nil {
		t.Fatal(err)
	}
	var (
		stop atomic.Bool
		wg   sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if _, err := b.TodoList(ctx, s.ID); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	defer wg.Wait()
	defer stop.Store(true)
	for i := range 40 {
		want := todoWriteOK(t, a, s.ID, fmt.Sprint("step ", i))
		st, err := b.TodoList(ctx, s.ID)
		if err != nil || st.Version < want {
			t.Fatalf("read after write %d: version %d, %v; want ≥ %d", i, st.Version, err, want)
		}
	}
}

// TestTodoListDecodeReused: a list read again unchanged reuses its decoded
// items (no JSON decode per read); a list changed on another instance is
// read as it now is.
func TestTodoListDecodeReused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := twoInstances(t)
	sess, _, err := a.CreateSession(ctx, store.NewSession{Title: "t", Owner: "prn_local"})
	if err != nil {
		t.Fatal(err)
	}
	start := projection.NewEvent{Type: projection.TypeTurnStart, Data: json.RawMessage(`{}`)}
	if _, err := a.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{start, todoWrite(`[{"content":"one","status":"pending"}]`)}}); err != nil {
		t.Fatal(err)
	}
	first, err := a.TodoList(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.TodoList(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Items) != 1 || len(again.Items) != 1 || &first.Items[0] != &again.Items[0] {
		t.Errorf("an unchanged list was decoded again: %+v, %+v", first.Items, again.Items)
	}
	if _, err := b.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{todoWrite(`[{"content":"two","status":"pending"}]`)}}); err != nil {
		t.Fatal(err)
	}
	now, err := a.TodoList(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(now.Items) != 1 || now.Items[0].Content != "two" || now.Version != again.Version+1 {
		t.Errorf("after a write on another instance: version %d, %+v", now.Version, now.Items)
	}
}
