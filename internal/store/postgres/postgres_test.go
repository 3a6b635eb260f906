package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/storetest"
)

// Tests of the Postgres store's own SQL (postgres.go), each run on the
// plain store and on the fast path over it (store/postgres/fast), which falls back on
// that SQL.

// forEachPostgres runs test on a plain store that open opens, and on the
// fast path over another; pg is the plain store under st.
func forEachPostgres(t *testing.T, open func(testing.TB) *postgres.Store, test func(t *testing.T, st store.Store, pg *postgres.Store)) {
	t.Helper()
	t.Parallel()
	for _, onFast := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "fast"}[onFast], func(t *testing.T) {
			t.Parallel()
			pg := open(t)
			var st store.Store = pg
			if onFast {
				f := fast.New(pg)
				t.Cleanup(f.Close)
				st = f
			}
			test(t, st, pg)
		})
	}
}

// freshPostgres is a plain store on a fresh schema.
func freshPostgres(t testing.TB) *postgres.Store {
	return storetest.PlainPostgres(t, projection.Config{})
}

// The append transaction is pipelined in two batches; these tests cover the
// paths that leave it early: an unknown session, an idempotent replay or
// mismatch, an expectedSeq conflict and a rejected event.

func TestAppendUnknownSession(t *testing.T) {
	forEachPostgres(t, freshPostgres, func(t *testing.T, st store.Store, _ *postgres.Store) {
		_, err := st.Append(context.Background(), "ses_missing", store.AppendRequest{Events: []projection.NewEvent{turnStart()}})
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("err = %v, want ErrNotFound", err)
		}
	})
}

func TestAppendIdempotencyKey(t *testing.T) {
	forEachPostgres(t, freshPostgres, func(t *testing.T, st store.Store, _ *postgres.Store) {
		ctx := context.Background()
		sess := newSession(t, st)
		req := store.AppendRequest{Events: []projection.NewEvent{turnStart()}, IdempotencyKey: "k1", RequestHash: "h1"}
		first, err := st.Append(ctx, sess.ID, req)
		if err != nil {
			t.Fatal(err)
		}
		again, err := st.Append(ctx, sess.ID, req)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Replayed || !reflect.DeepEqual(again.Events, first.Events) || again.Session.LastSeq != first.Session.LastSeq {
			t.Fatalf("retry = %+v, want the replayed %+v", again, first)
		}
		req.RequestHash = "h2"
		if _, err := st.Append(ctx, sess.ID, req); !errors.Is(err, store.ErrIdempotencyMismatch) {
			t.Fatalf("err = %v, want ErrIdempotencyMismatch", err)
		}
		got, err := st.Session(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.LastSeq != 1 {
			t.Fatalf("lastSeq = %d after a retry and a mismatch, want 1", got.LastSeq)
		}
	})
}

// TestAppendRejectionsKeepTheConnection checks that a transaction left open by
// a rejection is rolled back and its connection reused, not closed: many
// rejected appends in a row open no new connections.
func TestAppendRejectionsKeepTheConnection(t *testing.T) {
	forEachPostgres(t, freshPostgres, func(t *testing.T, st store.Store, pg *postgres.Store) {
		ctx := context.Background()
		sess := newSession(t, st)
		mustAppend(t, st, sess.ID, turnStart())
		opened := pg.Pool.Stat().NewConnsCount()
		zero := int64(0)
		for range 20 {
			_, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{turnStart()}})
			var evErr *store.EventError
			if !errors.As(err, &evErr) {
				t.Fatalf("second turn/start: err = %v, want an EventError", err)
			}
			_, err = st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{todoWrite(`[]`)}, ExpectedSeq: &zero})
			var conflict *store.ConflictError
			if !errors.As(err, &conflict) {
				t.Fatalf("stale expectedSeq: err = %v, want a ConflictError", err)
			}
		}
		if n := pg.Pool.Stat().NewConnsCount() - opened; n > 1 {
			t.Fatalf("40 rejected appends opened %d connections, want at most 1", n)
		}
		res, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{todoWrite(`[{"content":"a","status":"pending"}]`)}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Session.LastSeq != 2 || res.Todos == nil || res.Todos.Version != 2 {
			t.Fatalf("append after rejections = %+v, want seq 2 and todos version 2", res)
		}
	})
}

// TestAppendConcurrentWrites runs many appends on one session at once: the
// row lock taken in the first batch must serialize them, leaving seqs
// distinct and gapless and the kept list that of the last committed write.
func TestAppendConcurrentWrites(t *testing.T) {
	forEachPostgres(t, freshPostgres, func(t *testing.T, st store.Store, _ *postgres.Store) {
		ctx := context.Background()
		sess := newSession(t, st)
		mustAppend(t, st, sess.ID, turnStart())
		const writers = 50
		type outcome struct {
			res store.AppendResult
			err error
		}
		outcomes := make(chan outcome, writers)
		for i := range writers {
			go func() {
				res, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{
					todoWrite(fmt.Sprintf(`[{"content":"write %d","status":"pending"}]`, i)),
				}})
				outcomes <- outcome{res, err}
			}()
		}
		seen := map[int64]string{}
		for range writers {
			o := <-outcomes
			if o.err != nil {
				t.Fatal(o.err)
			}
			seen[o.res.Events[0].Seq] = o.res.Todos.Todos[0].Content
		}
		for seq := int64(2); seq < 2+writers; seq++ {
			if _, ok := seen[seq]; !ok {
				t.Fatalf("no write got seq %d: seqs %v", seq, seen)
			}
		}
		todos, err := st.Todos(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		last := int64(1 + writers)
		if todos.Version != last || todos.Todos[0].Content != seen[last] {
			t.Fatalf("kept list version %d %q, want the last write: version %d %q", todos.Version, todos.Todos[0].Content, last, seen[last])
		}
	})
}

// oneConnection is a plain store on a pool of one connection, in a fresh
// schema.
func oneConnection(t testing.TB) *postgres.Store { return openPostgres(t, storetest.SchemaURL(t), 1) }

// TestHistoryPipelineLeavesConnectionClean reads the history tail, sent as
// one pipeline with its own BEGIN and COMMIT, through a pool of one
// connection: after a session not found and a read cut short by its
// context, the one connection still serves every read and write, and each
// tail's snapshot and page agree.
func TestHistoryPipelineLeavesConnectionClean(t *testing.T) {
	forEachPostgres(t, oneConnection, func(t *testing.T, st store.Store, _ *postgres.Store) {
		ctx := context.Background()
		sess := newSession(t, st)
		version := todoWriteOK(t, st, sess.ID, "first")

		if _, err := st.History(ctx, "ses_unknown", 0, 10); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("history of an unknown session: %v, want ErrNotFound", err)
		}
		cut, cancel := context.WithTimeout(ctx, time.Microsecond)
		_, _ = st.History(cut, sess.ID, 0, 10) // cut short anywhere, or not at all
		cancel()
		if _, err := st.History(ctx, sess.ID, 2, 10); err != nil { // a page with no snapshot
			t.Fatal(err)
		}

		for i := range 3 {
			h, err := st.History(ctx, sess.ID, 0, 2)
			if err != nil {
				t.Fatalf("read %d: %v", i, err)
			}
			if h.Snapshot == nil || h.Snapshot.TodosVersion != version || len(h.Events) != 2 || !h.HasMore ||
				h.Events[1].Seq != h.Snapshot.LastSeq {
				t.Fatalf("read %d: snapshot %+v, %d events, hasMore %v", i, h.Snapshot, len(h.Events), h.HasMore)
			}
			version = todoWriteOK(t, st, sess.ID, "step "+string(rune('a'+i)))
		}
	})
}

// TestUnknownSessionKeepsPreparedStatements reads and appends to a session
// that does not exist through a pool of one connection, between reads and
// appends of one that does. Each pipeline reports the absence as
// ErrNotFound without failing: an error in a pipeline makes pgx forget the
// prepared statements of every query in it, so that every request for an
// unknown session would cost the next requests fresh prepares.
func TestUnknownSessionKeepsPreparedStatements(t *testing.T) {
	forEachPostgres(t, oneConnection, func(t *testing.T, st store.Store, pg *postgres.Store) {
		ctx := context.Background()
		sess := newSession(t, st)
		known := func() {
			t.Helper()
			if _, _, err := st.Events(ctx, sess.ID, 0, 10); err != nil {
				t.Fatal(err)
			}
			if _, err := st.History(ctx, sess.ID, 0, 10); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Messages(ctx, sess.ID, 0, 10); err != nil {
				t.Fatal(err)
			}
			todoWriteOK(t, st, sess.ID, "known")
		}
		prepared := func() map[string]time.Time {
			t.Helper()
			rows, err := pg.Pool.Query(ctx, `SELECT name, prepare_time FROM pg_prepared_statements`)
			if err != nil {
				t.Fatal(err)
			}
			out := map[string]time.Time{}
			for rows.Next() {
				var name string
				var at time.Time
				if err := rows.Scan(&name, &at); err != nil {
					t.Fatal(err)
				}
				out[name] = at
			}
			if err := rows.Err(); err != nil {
				t.Fatal(err)
			}
			return out
		}
		known()
		before := prepared()
		if len(before) == 0 {
			t.Fatal("no prepared statements on the connection")
		}
		if _, _, err := st.Events(ctx, "ses_unknown", 0, 10); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("events of an unknown session: %v, want ErrNotFound", err)
		}
		if _, err := st.History(ctx, "ses_unknown", 0, 10); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("history of an unknown session: %v, want ErrNotFound", err)
		}
		if _, err := st.Messages(ctx, "ses_unknown", 0, 10); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("messages of an unknown session: %v, want ErrNotFound", err)
		}
		if _, err := st.Append(ctx, "ses_unknown", store.AppendRequest{Events: []projection.NewEvent{turnStart()}}); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("append to an unknown session: %v, want ErrNotFound", err)
		}
		known()
		after := prepared()
		for name, at := range before {
			if !after[name].Equal(at) {
				t.Errorf("statement %s prepared again (at %v, then %v)", name, at, after[name])
			}
		}
	})
}

// TestPostgresPrunePlan: the prune of expired idempotency keys, which every
// keyed append runs, reads a range of the age index and deletes by ctid
// under the generic plan a prepared statement comes to, never scanning
// every key kept.
func TestPostgresPrunePlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := oneConnection(t)
	sess := newSession(t, st)
	if _, err := st.Pool.Exec(ctx, `INSERT INTO idempotency_keys (session_id, key, request_hash, result, created_at)
		SELECT $1, 'k' || i, 'h', '{}', now() - (i % 3) * interval '1 day' FROM generate_series(1, 20000) i`, sess.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Pool.Exec(ctx, `ANALYZE idempotency_keys`); err != nil {
		t.Fatal(err)
	}
	conn, err := st.Pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, q := range []string{
		`SET plan_cache_mode = force_generic_plan`,
		`PREPARE prune(timestamptz, integer) AS ` + postgres.PgPruneIdempotent,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	defer conn.Exec(ctx, `DEALLOCATE prune; RESET plan_cache_mode`)
	rows, err := conn.Query(ctx, `EXPLAIN EXECUTE prune(now() - interval '1 day', 64)`)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(plan, "\n")
	if strings.Contains(text, "Seq Scan") || !strings.Contains(text, "idempotency_keys_age") {
		t.Errorf("the prune's generic plan scans the table or skips the age index:\n%s", text)
	}
}
