package fast_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestAppendCacheNeverTrusted appends to one session from two instances in
// turn: each append must land at the log's true end, and a conflict or a
// stale baseVersion be judged on the stored state, not on the state the
// instance's last append left.
func TestAppendCacheNeverTrusted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := twoInstances(t)
	sess, _, err := a.CreateSession(ctx, store.NewSession{Title: "two instances"})
	if err != nil {
		t.Fatal(err)
	}
	write := func(items ...string) projection.NewEvent {
		todos := []projection.TodoInput{}
		for _, c := range items {
			todos = append(todos, projection.TodoInput{Content: c, Status: projection.StatusPending})
		}
		data, _ := json.Marshal(map[string]any{"todos": todos})
		return projection.NewEvent{Type: projection.TypeTodoWrite, Data: data}
	}
	msg := projection.NewEvent{Type: projection.TypeMessageUser, Data: json.RawMessage(`{"text":"go on"}`)}
	appendOK := func(st *fast.Store, wantSeq int64, req store.AppendRequest) store.AppendResult {
		t.Helper()
		res, err := st.Append(ctx, sess.ID, req)
		if err != nil {
			t.Fatalf("append (want seq %d): %v", wantSeq, err)
		}
		if got := res.Events[len(res.Events)-1].Seq; got != wantSeq || res.Session.LastSeq != wantSeq {
			t.Fatalf("append landed at seq %d (session %d), want %d", got, res.Session.LastSeq, wantSeq)
		}
		return res
	}
	appendOK(a, 1, store.AppendRequest{Events: []projection.NewEvent{turnStart()}})
	appendOK(a, 2, store.AppendRequest{Events: []projection.NewEvent{write("a")}})
	appendOK(b, 3, store.AppendRequest{Events: []projection.NewEvent{write("b")}})
	// a's state ends at 2: its next append must still land at 4.
	appendOK(a, 4, store.AppendRequest{Events: []projection.NewEvent{msg}})
	appendOK(b, 5, store.AppendRequest{Events: []projection.NewEvent{msg}})
	// expectedSeq 5 is right for the stored log, wrong for a's cached 4.
	five := int64(5)
	appendOK(a, 6, store.AppendRequest{Events: []projection.NewEvent{msg}, ExpectedSeq: &five})
	// expectedSeq 6 is right for a's cache; b moves the log on first.
	appendOK(b, 7, store.AppendRequest{Events: []projection.NewEvent{write("c")}})
	six := int64(6)
	_, err = a.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{msg}, ExpectedSeq: &six})
	var conflict *store.ConflictError
	if !errors.As(err, &conflict) || conflict.Actual != 7 {
		t.Fatalf("expectedSeq 6 after b's append: got %v, want a conflict at 7", err)
	}
	// baseVersion 3 was current when a last wrote; b's write made it 7.
	three := int64(3)
	if _, err := a.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{write("d")}, BaseVersion: &three}); err == nil {
		t.Fatal("a todo/write against version 3 after b wrote version 7 was accepted")
	}
	res := appendOK(a, 8, store.AppendRequest{Events: []projection.NewEvent{write("d")}, BaseVersion: new(int64(7))})
	if res.Todos == nil || res.Todos.Version != 8 || res.Todos.Todos[0].Content != "d" {
		t.Fatalf("todos after the write: %+v", res.Todos)
	}
	checkAgainstReplay(t, a, sess.ID)
	checkAgainstReplay(t, b, sess.ID)
}

// TestContendedSessionTakesTheLockingWay appends to one session from two
// instances in turn, as a load balancer spreading one agent's calls would:
// each instance's cached state is found stale once, and then its appends
// take the locking way, not a doomed cached pipeline each (a miss on every
// append, 1.1 ms an append against 0.3). A second later an instance caches
// the session again: its next append after the other's tries the cached
// way and misses once more.
func TestContendedSessionTakesTheLockingWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := twoInstances(t)
	clock := fast.StubTime(a, b)
	misses := func() float64 { return cacheMisses(t, a, b) }
	sess, _, err := a.CreateSession(ctx, store.NewSession{Title: "contended"})
	if err != nil {
		t.Fatal(err)
	}
	seq := int64(0)
	appendOn := func(st *fast.Store) {
		t.Helper()
		res, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{
			{Type: projection.TypeMessageUser, Data: json.RawMessage(`{"text":"go on"}`)}}})
		if err != nil {
			t.Fatal(err)
		}
		if seq++; res.Events[0].Seq != seq {
			t.Fatalf("append landed at seq %d, want %d", res.Events[0].Seq, seq)
		}
	}
	for range 5 {
		appendOn(a)
		appendOn(b)
	}
	if got := misses(); got != 2 {
		t.Errorf("%v misses in 10 appends in turn, want 2 (one an instance)", got)
	}
	clock.Advance(fast.MissQuiet)
	appendOn(a) // the locking way, and cached again
	appendOn(b)
	appendOn(a) // the cached way: stale
	if got := misses(); got != 3 {
		t.Errorf("%v misses after the quiet second, want 3", got)
	}
}

// cacheMisses is the sum of the stores' tack_append_cache_misses_total.
func cacheMisses(t *testing.T, stores ...*fast.Store) float64 {
	t.Helper()
	n := 0.0
	for _, st := range stores {
		reg := prometheus.NewRegistry()
		if err := st.Register(reg); err != nil {
			t.Fatal(err)
		}
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() == "tack_append_cache_misses_total" {
				n += f.GetMetric()[0].GetCounter().GetValue()
			}
		}
	}
	return n
}

// TestKeyedAppendsTakeTheCachedWay: an append with an Idempotency-Key to a
// session the instance has cached takes the cached way, and stores its
// result under the key; its retry finds the key stored, fails the
// pipeline's key guard (not a miss: the cached state is current), and is
// answered the locking way from the stored result, the same answer; a
// retry from the other instance too; and a different request under the
// key is refused.
func TestKeyedAppendsTakeTheCachedWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := twoInstances(t)
	sess, _, err := a.CreateSession(ctx, store.NewSession{Title: "keyed"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{turnStart()}}); err != nil {
		t.Fatal(err)
	}
	req := store.AppendRequest{Events: []projection.NewEvent{{Type: projection.TypeMessageUser, Data: json.RawMessage(`{"text":"once"}`)}},
		IdempotencyKey: "k1", RequestHash: "h1"}
	first, err := a.Append(ctx, sess.ID, req)
	if err != nil {
		t.Fatal(err)
	}
	if got := cacheMisses(t, a, b); got != 0 || first.Replayed || first.Events[0].Seq != 2 {
		t.Fatalf("first keyed append: %v misses, replayed %v, seq %d; want the cached way at seq 2", got, first.Replayed, first.Events[0].Seq)
	}
	for _, st := range []*fast.Store{a, b} {
		again, err := st.Append(ctx, sess.ID, req)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Replayed {
			t.Fatal("the retry was not answered from the stored result")
		}
		again.Replayed = false
		if !reflect.DeepEqual(again, first) {
			t.Fatalf("replay differs:\n got  %+v\n want %+v", again, first)
		}
	}
	if got := cacheMisses(t, a, b); got != 0 {
		t.Errorf("%v misses, want 0: a result stored under the key is no stale state", got)
	}
	other := req
	other.RequestHash = "h2"
	if _, err := a.Append(ctx, sess.ID, other); !errors.Is(err, store.ErrIdempotencyMismatch) {
		t.Fatalf("another request under the key: %v, want ErrIdempotencyMismatch", err)
	}
	events, _, err := a.Events(ctx, sess.ID, 0, 10)
	if err != nil || len(events) != 2 {
		t.Fatalf("%d events (%v), want 2: the retries appended nothing", len(events), err)
	}
}

// TestOneStatementStoresWhatTheLockingWayStores appends the same batches to
// a session of the fast store, whose todo_writes after the first take the
// cached way as one statement (pgAppendOne), and to a session of the plain
// store, which sends each write as a statement of its own: every row of
// both sessions must be the same, times read as the seq of the event they
// are the time of.
func TestOneStatementStoresWhatTheLockingWayStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	quick, _ := twoInstances(t)
	plain := quick.Store
	// Each event a millisecond of its own, and more: the clock moves on
	// with every read.
	plain.SetClock(storetest.NewStepClock(time.Millisecond))
	write := func(statuses ...string) projection.NewEvent {
		todos := []projection.TodoInput{}
		for i, s := range statuses {
			todos = append(todos, projection.TodoInput{Content: fmt.Sprint("step ", i), Status: s})
		}
		data, _ := json.Marshal(map[string]any{"todos": todos})
		return projection.NewEvent{Type: projection.TypeTodoWrite, Data: data}
	}
	p, ip, c := projection.StatusPending, projection.StatusInProgress, projection.StatusCompleted
	msg := projection.NewEvent{Type: projection.TypeMessageUser, Data: json.RawMessage(`{"text":"go on"}`)}
	batches := []store.AppendRequest{
		{Events: []projection.NewEvent{turnStart()}},
		{Events: []projection.NewEvent{write(p, p, p)}},
		{Events: []projection.NewEvent{write(ip, p, p)}},
		{Events: []projection.NewEvent{msg}},
		{Events: []projection.NewEvent{write(c, ip, p)}, BaseVersion: new(int64(3))},
		{Events: []projection.NewEvent{write(c, c, ip, p)}},
		{Events: []projection.NewEvent{write()}},
	}
	var ids []string
	for _, st := range []store.Store{quick, plain} {
		sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "one statement"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, sess.ID)
		for i, req := range batches {
			if _, err := st.Append(ctx, sess.ID, req); err != nil {
				t.Fatalf("batch %d: %v", i, err)
			}
		}
	}
	if n := fast.OneStatementAppends(quick); n < 4 {
		t.Fatalf("%d appends took one statement, want the 4 todo_writes after the first", n)
	}
	rows := func(id string) []string {
		t.Helper()
		var out []string
		err := plain.Pool.QueryRow(ctx, `
			WITH times AS (SELECT to_jsonb(at) #>> '{}' AS at, 'at of ' || seq AS name FROM events WHERE session_id = $1)
			SELECT array_agg(r ORDER BY r) FROM (
				SELECT t || ' ' || (SELECT jsonb_object_agg(k, CASE WHEN k IN ('id', 'session_id') THEN '"id"'::jsonb
						ELSE coalesce((SELECT to_jsonb(name) FROM times WHERE times.at = v #>> '{}'), v) END)
					FROM jsonb_each(j) AS f(k, v)) AS r
				FROM (SELECT 'sessions' AS t, to_jsonb(s) - 'created_at' AS j FROM sessions s WHERE id = $1
					UNION ALL SELECT 'events', to_jsonb(e) FROM events e WHERE session_id = $1
					UNION ALL SELECT 'todo_lists', to_jsonb(l) FROM todo_lists l WHERE session_id = $1
					UNION ALL SELECT 'todo_versions', to_jsonb(v) FROM todo_versions v WHERE session_id = $1) AS x
				UNION ALL SELECT 'json as stored ' || seq || ' ' || data::text FROM events WHERE session_id = $1
				UNION ALL SELECT 'json as stored ' || version || ' ' || todos::text || ' ' || changes::text FROM todo_versions WHERE session_id = $1
				) AS y`,
			id).Scan(&out)
		if err != nil {
			t.Fatal(err)
		}
		// The items' times are the times of events too.
		events, _, err := plain.Events(ctx, id, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		for i := range out {
			for _, ev := range events {
				out[i] = strings.ReplaceAll(out[i], ev.At.Time.UTC().Format("2006-01-02T15:04:05.000Z"), fmt.Sprint("at of ", ev.Seq))
			}
		}
		return out
	}
	got, want := rows(ids[0]), rows(ids[1])
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("rows as one statement stored them:\n%s\nrows as the locking way stored them:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if len(want) != 1+2*len(batches)+1+2*5 {
		t.Fatalf("%d rows: %s", len(want), strings.Join(want, "\n"))
	}
	checkAgainstReplay(t, quick, ids[0])
}
