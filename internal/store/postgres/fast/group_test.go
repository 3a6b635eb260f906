package fast_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/storetest"
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

// TestGroupFlights: one group in flight per core, two at the least, and no
// more than half the pool.
func TestGroupFlights(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cores    int
		maxConns int32
		want     int
	}{
		{1, 16, 2}, {2, 16, 2}, {4, 16, 4}, {16, 16, 8}, {16, 64, 16}, {64, 64, 32}, {16, 3, 2}, {16, 1, 2},
	} {
		if got := fast.GroupFlights(c.cores, c.maxConns); got != c.want {
			t.Errorf("GroupFlights(%d cores, pool %d) = %d, want %d", c.cores, c.maxConns, got, c.want)
		}
	}
}

// TestGroupsOverlapInPostgres: with n flights, n groups run in Postgres at
// once, each in a backend of its own (here all n wait together on row locks
// another transaction holds), the next append queues, and once the locks go
// every append lands exactly once.
func TestGroupsOverlapInPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := storetest.SchemaURL(t)
	f := fast.New(openPostgres(t, url, 16))
	t.Cleanup(f.Close)
	const flights = 6
	fast.SetGroupFlights(f, flights)
	ids := make([]string, flights+1)
	for i := range ids {
		s, _, err := f.CreateSession(ctx, store.NewSession{Title: fmt.Sprint("overlap ", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = s.ID
		// The locking way; it caches the state the next append runs from.
		if _, err := f.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{turnStart()}}); err != nil {
			t.Fatal(err)
		}
	}
	locker, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer locker.Close(ctx)
	tx, err := locker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var lockerPID int
	if err := tx.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&lockerPID); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT FROM sessions WHERE id = ANY($1) ORDER BY id FOR UPDATE`, ids); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]string{"text": "overlap"})
	var wg sync.WaitGroup
	seqs := make([]int64, len(ids))
	start := func(i int) {
		wg.Go(func() {
			res, err := f.Append(ctx, ids[i], store.AppendRequest{Events: []projection.NewEvent{{Type: projection.TypeMessageUser, Data: data}}})
			if err != nil {
				t.Errorf("append to %s: %v", ids[i], err)
				return
			}
			seqs[i] = res.Events[0].Seq
		})
	}
	blocked := func() int {
		var n int
		if err := f.Pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, lockerPID).Scan(&n); err != nil {
			t.Error(err)
		}
		return n
	}
	for i := range flights {
		start(i)
	}
	eventually.True(t, 10*time.Second, fmt.Sprintf("%d groups waiting in Postgres at once", flights),
		func() bool { return blocked() == flights }, func() string { return fmt.Sprint(blocked(), " waiting") })
	// Every flight is taken: the next append queues.
	start(flights)
	eventually.True(t, 10*time.Second, "an append queued behind the flights", func() bool { return fast.QueuedAppends(f) == 1 })
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, id := range ids {
		var lastSeq, events int64
		if err := f.Pool.QueryRow(ctx, `SELECT s.last_seq, (SELECT count(*) FROM events e WHERE e.session_id = s.id)
			FROM sessions s WHERE s.id = $1`, id).Scan(&lastSeq, &events); err != nil {
			t.Fatal(err)
		}
		if seqs[i] != 2 || lastSeq != 2 || events != 2 {
			t.Errorf("session %s: append answered seq %d; last_seq %d, %d events; want 2, 2, 2", id, seqs[i], lastSeq, events)
		}
	}
}

// TestManyFlightsUnderLoad: with eight flights, writers appending to sessions
// they share (so that groups in flight together hold one session's appends,
// and one of them misses its guard and runs its members alone) neither lose
// nor double an append, and every session's log stays gapless.
func TestManyFlightsUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := fast.New(openPostgres(t, storetest.SchemaURL(t), 16))
	t.Cleanup(f.Close)
	fast.SetGroupFlights(f, 8)
	const sessions, writers, appendsEach = 12, 24, 15
	ids := make([]string, sessions)
	for i := range ids {
		s, _, err := f.CreateSession(ctx, store.NewSession{Title: fmt.Sprint("load ", i)})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = s.ID
		if _, err := f.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{turnStart()}}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu   sync.Mutex
		seqs = map[string][]int64{}
		wg   sync.WaitGroup
	)
	for w := range writers {
		wg.Go(func() {
			for k := range appendsEach {
				id := ids[(w*7+k*5)%sessions]
				data, _ := json.Marshal(map[string]string{"text": fmt.Sprint(w, " ", k)})
				res, err := f.Append(ctx, id, store.AppendRequest{Events: []projection.NewEvent{{Type: projection.TypeMessageUser, Data: data}}})
				if err != nil {
					t.Errorf("append to %s: %v", id, err)
					return
				}
				mu.Lock()
				seqs[id] = append(seqs[id], res.Events[0].Seq)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	total := 0
	for _, id := range ids {
		got := seqs[id]
		total += len(got)
		slices.Sort(got)
		for i, seq := range got {
			if seq != int64(i+2) {
				t.Fatalf("session %s: appends answered seqs %v, want 2…%d each once", id, got, len(got)+1)
			}
		}
		var lastSeq, events int64
		if err := f.Pool.QueryRow(ctx, `SELECT s.last_seq, (SELECT count(*) FROM events e WHERE e.session_id = s.id)
			FROM sessions s WHERE s.id = $1`, id).Scan(&lastSeq, &events); err != nil {
			t.Fatal(err)
		}
		if lastSeq != int64(len(got)+1) || events != lastSeq {
			t.Errorf("session %s: last_seq %d, %d events, want %d of each", id, lastSeq, events, len(got)+1)
		}
	}
	if total != writers*appendsEach {
		t.Errorf("%d appends answered, want %d", total, writers*appendsEach)
	}
}
