package postgres_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// pgBenchStores are the Postgres stores the benchmarks compare.
var pgBenchStores = []struct {
	name string
	open func(testing.TB) store.Store
}{
	{"plain", func(tb testing.TB) store.Store { return storetest.PlainPostgres(tb, projection.Config{}) }},
	{"fast", func(tb testing.TB) store.Store { return storetest.Postgres(tb, projection.Config{}) }},
}

// BenchmarkPostgres measures the plain store and the fast path over it,
// with no HTTP in front, on real Postgres: appends of one client to one session (the cached way, one
// round trip, against the locking way's two), keyed appends (a
// transcript's lines: the held keys read with the state), appends of many clients each
// to its own session (group commit), and reads of one session's todo list
// by many clients (batched reads). Run it with
//
//	go test ./internal/store -bench Postgres -run '^$' -benchtime 2000x -count 3
func BenchmarkPostgres(b *testing.B) {
	ctx := context.Background()
	for _, s := range pgBenchStores {
		b.Run(s.name, func(b *testing.B) {
			st := s.open(b)
			b.Run("append", func(b *testing.B) {
				id := benchSession(b, st)
				mustAppendB(b, st, id, evTurnStart)
				for b.Loop() {
					mustAppendB(b, st, id, userMsg("go on"))
				}
			})
			b.Run("append-keyed", func(b *testing.B) {
				// A transcript's lines as a hook or tack watch sends
				// them: each event keyed, so that none is stored twice.
				id := benchSession(b, st)
				mustAppendB(b, st, id, evTurnStart)
				for i := 0; b.Loop(); i++ {
					call, result := userMsg(fmt.Sprint("call ", i)), userMsg(fmt.Sprint("result ", i))
					call.Keys, result.Keys = []string{fmt.Sprint("call:", i)}, []string{fmt.Sprint("result:", i)}
					mustAppendB(b, st, id, call, result)
				}
			})
			b.Run("append-parallel", func(b *testing.B) {
				b.SetParallelism(4)
				b.RunParallel(func(pb *testing.PB) {
					id := benchSession(b, st)
					mustAppendB(b, st, id, evTurnStart)
					for i := 0; pb.Next(); i++ {
						mustAppendB(b, st, id, writeTodos(fmt.Sprint("step ", i), projection.StatusInProgress))
					}
				})
			})
			b.Run("todolist-parallel", func(b *testing.B) {
				id := benchSession(b, st)
				mustAppendB(b, st, id, evTurnStart, writeTodos("read", "completed", "fix", "in_progress", "ship", "pending"))
				b.SetParallelism(8)
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if _, err := st.TodoList(ctx, id); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		})
	}
}

func benchSession(b *testing.B, st store.Store) string {
	b.Helper()
	s, _, err := st.CreateSession(context.Background(), store.NewSession{Title: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	return s.ID
}
