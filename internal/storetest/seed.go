package storetest

import (
	"context"
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
)

// SeedPlan is the todo list a seeded session's todo/write sets.
const SeedPlan = `[
	{"content": "Read the failing test", "status": "completed"},
	{"content": "Find the cause", "status": "in_progress"},
	{"content": "Fix it", "status": "pending"},
	{"content": "Run the suite", "status": "pending"},
	{"content": "Write the changelog", "status": "pending"}
]`

// SeedSession makes a session of n ≥ 2 events in st, fast enough for a
// million: a turn/start and a todo/write (seqs 1 and 2) go through Append, so
// the projection is the store's own, and the other n-2 events, user and
// assistant messages of the same open turn, are copied straight into the log
// with COPY, which leaves the todos projection as it is. Then the session's
// head is moved to seq n. The todo/write lies n-2 events behind the tail, so
// the history tail's snapshot comes from the projection, never from the page.
func SeedSession(tb testing.TB, st *fast.Store, n int) store.Session {
	tb.Helper()
	if n < 2 {
		tb.Fatalf("SeedSession needs at least 2 events, got %d", n)
	}
	ctx := context.Background()
	sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "seeded"})
	if err != nil {
		tb.Fatal(err)
	}
	res, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{
		{Type: projection.TypeTurnStart, Data: json.RawMessage(`{}`)},
		{Type: projection.TypeTodoWrite, Data: json.RawMessage(`{"todos":` + SeedPlan + `}`)},
	}})
	if err != nil {
		tb.Fatal(err)
	}
	at := res.Session.UpdatedAt.Time
	rows := &filler{next: 3, last: int64(n), turn: int32(res.Session.Turn.Number), at: at}
	if _, err := st.Pool.CopyFrom(ctx, pgx.Identifier{"events"}, []string{"session_id", "seq", "type", "turn", "at", "data"},
		pgx.CopyFromFunc(func() ([]any, error) { return rows.row(sess.ID) })); err != nil {
		tb.Fatal(err)
	}
	if _, err := st.Pool.Exec(ctx, `UPDATE sessions SET last_seq = $2 WHERE id = $1`, sess.ID, n); err != nil {
		tb.Fatal(err)
	}
	// Fresh statistics, as autovacuum would soon make them, so that the
	// planner knows the log is large.
	if _, err := st.Pool.Exec(ctx, `ANALYZE events`); err != nil {
		tb.Fatal(err)
	}
	seeded, err := st.Session(ctx, sess.ID)
	if err != nil {
		tb.Fatal(err)
	}
	return seeded
}

// filler yields the copied events: user and assistant messages in turn.
type filler struct {
	next, last int64
	turn       int32
	at         time.Time
}

var (
	userData      = []byte(`{"text":"Please keep going with the next step."}`)
	assistantData = []byte(`{"text":"Done. Moving on to the next item of the plan."}`)
)

func (f *filler) row(sessionID string) ([]any, error) {
	if f.next > f.last {
		return nil, nil
	}
	seq := f.next
	f.next++
	if seq%2 == 1 {
		return []any{sessionID, seq, projection.TypeMessageUser, f.turn, f.at, userData}, nil
	}
	return []any{sessionID, seq, projection.TypeMessageAssistant, f.turn, f.at, assistantData}, nil
}

// SeedListWrites makes a session of n ≥ 1 list writes in st, fast enough
// for 100,000: a turn/start and the first todo/write go through Append, so
// the projection and the first history entry are the store's own; the
// other n-1 todo/writes, of the same list, go straight into the log and
// into todo_versions with COPY. Then the head of the log and the todo
// list's version move to the last of them, as the model's own writes.
func SeedListWrites(tb testing.TB, st *fast.Store, n int) store.Session {
	tb.Helper()
	if n < 1 {
		tb.Fatalf("SeedListWrites needs at least 1 write, got %d", n)
	}
	ctx := context.Background()
	sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "seeded list writes"})
	if err != nil {
		tb.Fatal(err)
	}
	data := json.RawMessage(`{"todos":` + SeedPlan + `}`)
	res, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{
		{Type: projection.TypeTurnStart, Data: json.RawMessage(`{}`)},
		{Type: projection.TypeTodoWrite, Data: data},
	}})
	if err != nil {
		tb.Fatal(err)
	}
	compact, _ := json.Marshal(json.RawMessage(data))
	items, _ := json.Marshal(res.Todos.Todos)
	at, turn, last := res.Session.UpdatedAt.Time, int32(res.Session.Turn.Number), int64(n+1)
	copyRows := func(table string, cols []string, row func(seq int64) []any) {
		seq := int64(3)
		if _, err := st.Pool.CopyFrom(ctx, pgx.Identifier{table}, cols, pgx.CopyFromFunc(func() ([]any, error) {
			if seq > last {
				return nil, nil
			}
			seq++
			return row(seq - 1), nil
		})); err != nil {
			tb.Fatal(err)
		}
	}
	copyRows("events", []string{"session_id", "seq", "type", "turn", "at", "data"}, func(seq int64) []any {
		return []any{sess.ID, seq, projection.TypeTodoWrite, turn, at, compact}
	})
	copyRows("todo_versions", []string{"session_id", "version", "at", "author", "todos", "changes"}, func(seq int64) []any {
		return []any{sess.ID, seq, at, projection.AgentAuthor, items, []byte("[]")}
	})
	if _, err := st.Pool.Exec(ctx, `UPDATE sessions SET last_seq = $2 WHERE id = $1`, sess.ID, last); err != nil {
		tb.Fatal(err)
	}
	if _, err := st.Pool.Exec(ctx, `UPDATE todo_lists SET version = $2, seen = $2 WHERE session_id = $1`, sess.ID, last); err != nil {
		tb.Fatal(err)
	}
	if _, err := st.Pool.Exec(ctx, `ANALYZE events; ANALYZE todo_versions`); err != nil {
		tb.Fatal(err)
	}
	seeded, err := st.Session(ctx, sess.ID)
	if err != nil {
		tb.Fatal(err)
	}
	return seeded
}

// BenchDepth is the deep side of a benchmark at depth: def, or
// TACK_BENCH_DEPTH when set (the test command runs every benchmark once at
// a small depth, so that none breaks unseen).
func BenchDepth(tb testing.TB, def int) int {
	tb.Helper()
	return EnvInt(tb, "TACK_BENCH_DEPTH", def, 20)
}

// EnvInt is the integer in the environment variable name, at least min, or
// def when it is unset: the knobs of the longer runs of tests and
// benchmarks.
func EnvInt(tb testing.TB, name string, def, min int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < min {
		tb.Fatalf("%s=%q: want an integer ≥ %d", name, v, min)
	}
	return n
}
