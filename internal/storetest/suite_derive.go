package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// derived is a todo/write given as the task tool call that made it.
func derived(tool, args, taskID string, keys ...string) projection.NewEvent {
	b, _ := json.Marshal(projection.Derivation{Tool: tool, Args: json.RawMessage(args), TaskID: taskID})
	return projection.NewEvent{Type: projection.TypeTodoWrite, Data: b, Keys: keys}
}

// taskLines writes a list as "#id content status owner" lines.
func taskLines(items []projection.Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, fmt.Sprintf("#%s %s %s %s", it.TaskID, it.Content, it.Status, it.Owner))
	}
	return out
}

func parallelSession(t *testing.T, st store.Store) store.Session {
	t.Helper()
	parallel := true
	s, _, err := st.CreateSession(context.Background(), store.NewSession{Title: "derived", ParallelInProgress: &parallel})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, st, s.ID, evTurnStart)
	return s
}

// testDerivedListWrites: a list write given as its call is made
// from the list as it stands where it is appended and stored as a plain
// todo/write; one that changes nothing stores nothing and fails nothing;
// a malformed one fails its batch, all of it.
func testDerivedListWrites(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s := parallelSession(t, st)
		// Creates out of Claude Code's order keep its ids, in id order.
		mustAppend(t, st, s.ID,
			derived("TaskCreate", `{"subject":"Two","description":""}`, "2"),
			derived("TaskCreate", `{"subject":"One","description":""}`, "1"),
			derived("TaskCreate", `{"subject":"Three","description":""}`, ""))
		todos, _ := st.Todos(ctx, s.ID)
		if got, want := taskLines(todos.Todos), []string{"#1 One pending ", "#2 Two pending ", "#3 Three pending "}; !slices.Equal(got, want) {
			t.Fatalf("list %q, want %q", got, want)
		}
		stored := allEvents(t, st, s.ID)
		var d map[string]json.RawMessage
		if err := json.Unmarshal(stored[len(stored)-1].Data, &d); err != nil || d["todos"] == nil || len(d) != 1 {
			t.Fatalf("stored %s: want a plain todo/write", stored[len(stored)-1].Data)
		}

		// An update naming no task, or setting what the list holds, stores
		// nothing: the batch's other events are stored, its key not held.
		before := todos.Version
		res := mustAppend(t, st, s.ID,
			derived("TaskUpdate", `{"taskId":"9","status":"completed"}`, "", "write:a"),
			userMsg("between"),
			derived("TaskUpdate", `{"taskId":"1","status":"pending"}`, "", "write:b"),
			derived("TaskUpdate", `{"taskId":"2","status":"completed"}`, "", "write:c"))
		if len(res.Events) != 2 || res.Events[0].Type != projection.TypeMessageUser || res.Todos == nil || res.Todos.Version == before {
			t.Fatalf("append answered %+v", res.Events)
		}
		mustAppend(t, st, s.ID, derived("TaskCreate", `{"subject":"Nine","description":""}`, "9"))
		if res = mustAppend(t, st, s.ID, derived("TaskUpdate", `{"taskId":"9","status":"completed"}`, "", "write:a")); len(res.Events) != 1 {
			t.Fatalf("a key of a write that stored nothing is held: %+v", res)
		}

		// A malformed derivation is the batch's error, and nothing of it is
		// stored.
		last := res.Events[0].Seq
		for _, bad := range []projection.NewEvent{
			derived("TaskUpdate", `{"taskId":"1","status":"done"}`, ""),
			derived("TaskUpdate", `{"taskId":"1"}`, "4"),
			derived("Bash", `{}`, ""),
			derived("update_plan", `{"plan":"x"}`, ""),
			ev(projection.TypeTodoWrite, `{"tool":"TaskUpdate","args":{"taskId":"1"},"todos":[]}`),
			ev(projection.TypeTodoWrite, `{"tool":"TaskCreate"}`),
		} {
			_, err := st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{userMsg("first"), bad}})
			wantEventError(t, err, 1, projection.CodeInvalid)
			wantUnchanged(t, st, s.ID, last)
		}
		// A derived list is held to the list's rules: here, an open turn.
		mustAppend(t, st, s.ID, evTurnEnd)
		_, err := st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{derived("TaskUpdate", `{"taskId":"1","status":"completed"}`, "")}})
		wantEventError(t, err, 0, projection.CodeConflict)
		checkAgainstReplay(t, st, s.ID)
	})
}

// testConcurrentDerivedWrites races task tool calls on one list,
// each touching its own task or field, keyed (the way hooks and
// transcripts send them) and not (which the Postgres fast path may commit
// from its cached state, in a group): every change is in the list at the
// end, as the calls made it in any order.
func testConcurrentDerivedWrites(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s := parallelSession(t, st)
		const tasks = 8
		for n := 1; n <= tasks; n++ {
			mustAppend(t, st, s.ID, derived("TaskCreate", fmt.Sprintf(`{"subject":"Task %d","description":""}`, n), ""))
		}
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			errs []error
		)
		want := []string{}
		for n := 1; n <= tasks; n++ {
			id := strconv.Itoa(n)
			status := []string{"in_progress", "completed"}[n%2]
			owner := "w" + id
			want = append(want, fmt.Sprintf("#%s Task %d %s %s", id, n, status, owner))
			for i, args := range []string{
				fmt.Sprintf(`{"taskId":%q,"status":%q}`, id, status),
				fmt.Sprintf(`{"taskId":%q,"owner":%q}`, id, owner),
			} {
				var keys []string
				if (n+i)%2 == 0 {
					keys = []string{"write:" + id + "-" + strconv.Itoa(i)}
				}
				wg.Go(func() {
					_, err := st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{derived("TaskUpdate", args, "", keys...)}})
					mu.Lock()
					defer mu.Unlock()
					if err != nil {
						errs = append(errs, err)
					}
				})
			}
		}
		wg.Wait()
		for _, err := range errs {
			t.Fatalf("concurrent derived write: %v", err)
		}
		todos, _ := st.Todos(ctx, s.ID)
		if got := taskLines(todos.Todos); !slices.Equal(got, want) {
			t.Fatalf("list\n%q\nwant\n%q", got, want)
		}
		if todos.Version != int64(1+tasks+2*tasks) {
			t.Fatalf("version %d, want %d: one list write per call", todos.Version, 1+tasks+2*tasks)
		}
		checkAgainstReplay(t, st, s.ID)
	})
}
