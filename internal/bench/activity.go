package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// activityEvery is how often a phase's backends are sampled in
// pg_stat_activity: often enough for a mean over a few hundred samples in a
// phase, rarely enough that the sampling query (about 0.2 ms of Postgres a
// time) stays out of the figures.
const activityEvery = 20 * time.Millisecond

// activity is what a phase's Postgres backends were doing, sampled from
// pg_stat_activity: how many were running a statement at once (state
// active, whether on a core or waiting on a lock, the WAL or the client
// within a pipeline) and what the active ones waited on. The cores a side
// keeps busy say how much work Postgres did; this says how much of it
// could overlap: a side whose backends are active two at a time keeps at
// most two cores busy, however many the machine has.
type activity struct {
	samples   int
	backends  int            // the phase's backends
	active    int            // summed over the samples
	maxActive int            // at once
	inTx      int            // idle in transaction, summed over the samples
	waits     map[string]int // wait_event_type/wait_event of the active ones, "running" when none
}

// watchActivity samples the backends pids every activityEvery on db.conn
// until the returned function is called, which returns what it saw. db.conn
// must not be used meanwhile.
func (db *database) watchActivity(ctx context.Context, pids []int) func() activity {
	a := activity{backends: len(pids), waits: map[string]int{}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(activityEvery)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if !db.sampleActivity(ctx, pids, &a) {
				return
			}
		}
	}()
	return func() activity {
		close(stop)
		<-done
		return a
	}
}

// sampleActivity adds one sample of the backends pids to a.
func (db *database) sampleActivity(ctx context.Context, pids []int, a *activity) bool {
	// Each query is a transaction of its own, so each sees a fresh
	// snapshot of pg_stat_activity.
	rows, err := db.conn.Query(ctx, `SELECT state, coalesce(wait_event_type || '/' || wait_event, 'running')
		FROM pg_stat_activity WHERE pid = ANY($1)`, pids)
	if err != nil {
		return false
	}
	type backend struct{ state, wait string }
	bs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (backend, error) {
		var b backend
		var state *string
		err := r.Scan(&state, &b.wait)
		if state != nil {
			b.state = *state
		}
		return b, err
	})
	if err != nil {
		return false
	}
	active := 0
	for _, b := range bs {
		switch b.state {
		case "active":
			active++
			a.waits[b.wait]++
		case "idle in transaction":
			a.inTx++
		}
	}
	a.samples++
	a.active += active
	a.maxActive = max(a.maxActive, active)
	return true
}

// meanActive is the backends active at once, on average over the samples.
func (a activity) meanActive() float64 {
	if a.samples == 0 {
		return 0
	}
	return float64(a.active) / float64(a.samples)
}

// String is, e.g., "1.7 of 16 active on average (max 2), 0.0 idle in
// transaction; active ones: running 61%, IO/WALSync 22%, Client/ClientRead 9%".
func (a activity) String() string {
	if a.samples == 0 {
		return "not sampled"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%.1f of %d active on average (max %d), %.1f idle in transaction",
		a.meanActive(), a.backends, a.maxActive, float64(a.inTx)/float64(a.samples))
	if a.active == 0 {
		return b.String()
	}
	type wait struct {
		name string
		n    int
	}
	var ws []wait
	for name, n := range a.waits {
		ws = append(ws, wait{name, n})
	}
	slices.SortFunc(ws, func(x, y wait) int {
		if x.n != y.n {
			return y.n - x.n
		}
		return strings.Compare(x.name, y.name)
	})
	b.WriteString("; active ones: ")
	for i, w := range ws[:min(len(ws), 5)] {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %.0f%%", w.name, 100*float64(w.n)/float64(a.active))
	}
	return b.String()
}
