package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// oneConnection is a Postgres store on a pool of one connection, in a
// fresh schema, and a session in it.
func oneConnection(t *testing.T) (*store.Postgres, store.Session) {
	t.Helper()
	ctx := context.Background()
	pc, err := store.PoolConfig(storetest.SchemaURL(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenPostgres(ctx, pc, projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "one connection"})
	if err != nil {
		t.Fatal(err)
	}
	return st, sess
}

// TestHistoryPipelineLeavesConnectionClean reads the history tail, sent as
// one pipeline with its own BEGIN and COMMIT, through a pool of one
// connection: after a session not found and a read cut short by its
// context, the one connection still serves every read and write, and each
// tail's snapshot and page agree.
func TestHistoryPipelineLeavesConnectionClean(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, sess := oneConnection(t)
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
}

// TestUnknownSessionKeepsPreparedStatements reads and appends to a session
// that does not exist through a pool of one connection, between reads and
// appends of one that does. Each pipeline reports the absence as
// ErrNotFound without failing: an error in a pipeline makes pgx forget the
// prepared statements of every query in it, so that every request for an
// unknown session would cost the next requests fresh prepares.
func TestUnknownSessionKeepsPreparedStatements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, sess := oneConnection(t)
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
		rows, err := st.Pool.Query(ctx, `SELECT name, prepare_time FROM pg_prepared_statements`)
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
}

// TestPostgresPrunePlan: the prune of expired idempotency keys, which every
// keyed append runs, reads a range of the age index and deletes by ctid
// under the generic plan a prepared statement comes to, never scanning
// every key kept.
func TestPostgresPrunePlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, sess := oneConnection(t)
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
		`PREPARE prune(timestamptz, integer) AS ` + store.PgPruneIdempotent,
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
