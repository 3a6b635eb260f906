package fast_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
)

// TestGroupCommit queues cached appends of many sessions and sends them as
// one group: they commit in one transaction (one xmin on all their events).
// A group with a member whose cached state is stale (the other instance
// appended) fails in Postgres; its members must then each land alone,
// exactly once, at the log's true end, as must a session's second append in
// the same group.
func TestGroupCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := twoInstances(t)
	clock := fast.StubTime(a, b)
	const n = 8
	ids := make([]string, n)
	for i := range ids {
		s, _, err := a.CreateSession(ctx, store.NewSession{Title: fmt.Sprint("group ", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = s.ID
		if _, err := a.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{turnStart()}}); err != nil {
			t.Fatal(err)
		}
	}
	msg := func(text string) store.AppendRequest {
		data, _ := json.Marshal(map[string]string{"text": text})
		return store.AppendRequest{Events: []projection.NewEvent{{Type: projection.TypeMessageUser, Data: data}}}
	}
	// group queues one append per session (two on the first) while paused,
	// sends them as one group, and returns the seq each landed at.
	group := func(text string) map[string][]int64 {
		t.Helper()
		resume := fast.PauseGroupCommit(a)
		var (
			mu  sync.Mutex
			got = map[string][]int64{}
			wg  sync.WaitGroup
		)
		for _, id := range append([]string{ids[0]}, ids...) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res, err := a.Append(ctx, id, msg(text))
				if err != nil {
					t.Errorf("append to %s: %v", id, err)
					return
				}
				mu.Lock()
				got[id] = append(got[id], res.Events[0].Seq)
				mu.Unlock()
			}()
		}
		eventually.Within(10*time.Second, func() bool { return fast.QueuedAppends(a) >= n+1 })
		if q := fast.QueuedAppends(a); q != n+1 {
			t.Fatalf("%d appends queued, want %d", q, n+1)
		}
		resume()
		wg.Wait()
		return got
	}
	check := func(got map[string][]int64, last map[string]int64) {
		t.Helper()
		for _, id := range ids {
			var lastSeq, events int64
			if err := a.Pool.QueryRow(ctx, `SELECT s.last_seq, (SELECT count(*) FROM events e WHERE e.session_id = s.id)
				FROM sessions s WHERE s.id = $1`, id).Scan(&lastSeq, &events); err != nil {
				t.Fatal(err)
			}
			if lastSeq != last[id] || events != last[id] {
				t.Errorf("session %s: last_seq %d, %d events, want %d", id, lastSeq, events, last[id])
			}
		}
		if len(got[ids[0]]) != 2 || got[ids[0]][0] == got[ids[0]][1] {
			t.Errorf("two appends to one session landed at %v", got[ids[0]])
		}
	}

	// The other instance moves one session on: a's cached state of it is
	// stale, and the group holding it fails.
	if _, err := b.Append(ctx, ids[3], msg("from b")); err != nil {
		t.Fatal(err)
	}
	last := map[string]int64{}
	for _, id := range ids {
		last[id] = 2
	}
	last[ids[0]], last[ids[3]] = 3, 3
	got := group("first")
	check(got, last)
	if got[ids[3]][0] != 3 {
		t.Errorf("the stale session's append landed at %d, want 3", got[ids[3]][0])
	}

	// The stale session, and the session whose two appends then ran alone
	// at once (the second found the first's commit), take the locking way
	// for a second (missQuiet); after it, an append caches each again.
	clock.Advance(fast.MissQuiet)
	for _, id := range []string{ids[0], ids[3]} {
		if _, err := a.Append(ctx, id, msg("again")); err != nil {
			t.Fatal(err)
		}
		last[id]++
	}

	// Now every cached state is current: the group commits as one.
	for _, id := range ids {
		last[id]++
	}
	last[ids[0]]++
	check(group("second"), last)
	var xids int
	if err := a.Pool.QueryRow(ctx, `SELECT count(DISTINCT xmin::text) FROM events
		WHERE session_id = ANY($1) AND data->>'text' = 'second'`, ids).Scan(&xids); err != nil {
		t.Fatal(err)
	}
	// The session's second append runs alone: two transactions.
	if xids != 2 {
		t.Errorf("the group's appends committed in %d transactions, want 2 (the group, and the session's second append alone)", xids)
	}
}
