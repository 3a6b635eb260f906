package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// propertyRounds is how many rounds of concurrent appends the concurrent
// property runs: a few by default, so CI spends seconds on it, and as many as
// TACK_PROPERTY_ROUNDS says when a longer hunt is wanted.
func propertyRounds(t *testing.T, def int) int {
	t.Helper()
	return EnvInt(t, "TACK_PROPERTY_ROUNDS", def, 1)
}

// testConcurrentAppendsEqualReplay races writers on one session: turn changes
// (turn/end+turn/start batches), todo/writes with and without a baseVersion,
// a person's edits (todo/edit, with the round's baseVersion), the model's
// tool writes and reads (held to and marking what it has seen), messages and
// multi-event batches, Claude Code's task tools (ids and blockedBy), and
// events with the agent's own times, from several goroutines at once. After
// each round the stored views (todos, session summary and state, snapshot,
// task ids) must equal a replay of the log read back, each event read back
// must be the one its append answered (at, receivedAt), and of the writers
// that shared one baseVersion at most one may have won. It runs for a
// session of each plan lifetime.
func testConcurrentAppendsEqualReplay(t *testing.T, f Factory) {
	t.Parallel()
	rounds := propertyRounds(t, 40)
	{ // the one kind of store f opens
		for _, lifetime := range []string{projection.PlanTurn, projection.PlanSession} {
			t.Run(f.Name+"/"+lifetime, func(t *testing.T) {
				t.Parallel()
				propertyConcurrentEqualsReplay(t, f.Open(t, projection.Config{}), lifetime, rounds)
			})
		}
	}
}

func propertyConcurrentEqualsReplay(t *testing.T, st store.Store, lifetime string, rounds int) {
	ctx := context.Background()
	sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "concurrent property", PlanLifetime: lifetime})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{TurnStart()}}); err != nil {
		t.Fatal(err)
	}
	const writers, appendsEach = 8, 3
	won := map[int64]int{}                   // baseVersion → accepted todo/writes made against it
	answered := map[int64]projection.Event{} // seq → the event as its append answered it
	tasks := 0                               // accepted task tool writes
	for round := range rounds {
		// Every writer of a round that sends a baseVersion sends the one
		// current before the round: they all race for the same list.
		base, err := st.Todos(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		var (
			mu  sync.Mutex
			wg  sync.WaitGroup
			bad []error
		)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(round), uint64(w)))
				for range appendsEach {
					req := randomConcurrentRequest(rng, base.Version)
					task := rng.IntN(8) == 0
					if task {
						var ok bool
						if req, ok = randomTaskWrite(ctx, st, sess.ID, rng); !ok {
							continue
						}
					}
					withAgentTimes(rng, round, req.Events)
					if rng.IntN(8) == 0 {
						if _, err := st.TodoRead(ctx, sess.ID); err != nil {
							mu.Lock()
							bad = append(bad, err)
							mu.Unlock()
						}
					}
					res, err := st.Append(ctx, sess.ID, req)
					var evErr *store.EventError
					mu.Lock()
					for _, ev := range res.Events {
						answered[ev.Seq] = ev
					}
					switch {
					case err == nil && task:
						tasks++
					case err == nil && req.BaseVersion != nil:
						won[*req.BaseVersion]++
					case err != nil && !errors.As(err, &evErr):
						bad = append(bad, err)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(bad) > 0 {
			t.Fatalf("round %d: append failed: %v", round, bad[0])
		}
		for v, n := range won {
			if n > 1 {
				t.Fatalf("round %d: %d todo/writes with baseVersion %d were accepted, want at most 1", round, n, v)
			}
		}
		checkAgainstReplay(t, st, sess.ID)
		checkAnswered(t, st, sess.ID, answered)
	}
	if len(won) == 0 || tasks == 0 {
		t.Fatalf("%d todo/writes with a baseVersion, %d task writes accepted: the mix does not exercise them", len(won), tasks)
	}
}

// withAgentTimes gives about half of events an agent's own time: in the
// past (a transcript imported late), in the round's minute so that times
// move on from round to round.
func withAgentTimes(rng *rand.Rand, round int, events []projection.NewEvent) {
	start := time.Date(2025, 1, 15, 9, 0, 0, 0, time.UTC)
	for i := range events {
		if rng.IntN(2) == 0 {
			at := projection.NewTime(start.Add(time.Duration(round)*time.Minute + time.Duration(rng.IntN(60000))*time.Millisecond))
			events[i].At = &at
		}
	}
}

// randomTaskWrite is a TaskCreate or a TaskUpdate as the task tools make
// it: run on the list read now and written against its version, so that
// racing writers conflict. ok is false when the update changes nothing.
func randomTaskWrite(ctx context.Context, st store.Store, id string, rng *rand.Rand) (store.AppendRequest, bool) {
	list, err := st.TodoList(ctx, id)
	if err != nil {
		panic(err)
	}
	args := fmt.Sprintf(`{"subject":"task %d","description":"d","activeForm":"Doing %d"}`, rng.IntN(5), rng.IntN(5))
	tool := "TaskCreate"
	if n := len(list.Items); n > 0 && rng.IntN(2) == 0 {
		it := list.Items[rng.IntN(n)]
		if it.TaskID != "" {
			tool = "TaskUpdate"
			args = fmt.Sprintf(`{"taskId":%q,"status":"completed","addBlockedBy":[]}`, it.TaskID)
			if other := list.Items[rng.IntN(n)]; other.TaskID != "" && other.TaskID != it.TaskID {
				args = fmt.Sprintf(`{"taskId":%q,"owner":"helper","addBlockedBy":[%q]}`, it.TaskID, other.TaskID)
			}
		}
	}
	a, err := projection.ParseTaskArgs(tool, json.RawMessage(args))
	if err != nil {
		panic(err)
	}
	res := projection.RunTask(a, list.Items, list.TaskHigh)
	if !res.Changed {
		return store.AppendRequest{}, false
	}
	base := list.Version
	return store.AppendRequest{Events: []projection.NewEvent{projection.TaskWrite(res.Todos)}, BaseVersion: &base}, true
}

// checkAnswered holds every event read back to the one its append
// answered: the agent's time as at, the receipt as receivedAt.
func checkAnswered(t *testing.T, st store.Store, id string, answered map[int64]projection.Event) {
	t.Helper()
	events, _, err := st.Events(context.Background(), id, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range events {
		if want, ok := answered[ev.Seq]; ok && !reflect.DeepEqual(ev, want) {
			t.Fatalf("event %d read back as %+v, answered %+v", ev.Seq, ev, want)
		}
	}
}

func turnEnd() projection.NewEvent {
	return projection.NewEvent{Type: projection.TypeTurnEnd, Data: json.RawMessage(`{"reason":"completed"}`)}
}

// randomTodoWrite draws a todo list from a small pool of contents, so that
// writes keep some items (and their updatedAt) and change others.
func randomTodoWrite(rng *rand.Rand) projection.NewEvent {
	contents := []string{"read the code", "write the test", "fix the bug", "run the suite", "ship it", "NEW"}
	statuses := []string{projection.StatusPending, projection.StatusCompleted, projection.StatusInProgress}
	rng.Shuffle(len(contents), func(i, j int) { contents[i], contents[j] = contents[j], contents[i] })
	todos := []projection.TodoInput{}
	inProgress := false
	for _, c := range contents[:rng.IntN(len(contents)+1)] {
		s := statuses[rng.IntN(len(statuses))]
		if s == projection.StatusInProgress {
			if inProgress {
				s = projection.StatusPending
			}
			inProgress = true
		}
		todos = append(todos, projection.TodoInput{Content: c, Status: s})
	}
	data, _ := json.Marshal(map[string]any{"todos": todos})
	return projection.NewEvent{Type: projection.TypeTodoWrite, Data: data}
}

// randomConcurrentRequest draws one append of the concurrent mix; base is the
// todos version every baseVersion writer of the round shares.
func randomConcurrentRequest(rng *rand.Rand, base int64) store.AppendRequest {
	msg := projection.NewEvent{Type: projection.TypeMessageAssistant, Data: json.RawMessage(`{"text":"working"}`)}
	switch rng.IntN(9) {
	case 7: // a person's edit against the round's shared version
		return randomEdit(rng, base)
	case 8: // the model's todo_write through the tool
		return randomToolWrite(rng)
	case 0, 1: // a turn change, as an agent ends one turn and starts the next
		return store.AppendRequest{Events: []projection.NewEvent{turnEnd(), TurnStart()}}
	case 2: // a turn ended or started alone (each rejected in the other state)
		if rng.IntN(3) == 0 {
			return store.AppendRequest{Events: []projection.NewEvent{turnEnd()}}
		}
		return store.AppendRequest{Events: []projection.NewEvent{TurnStart()}}
	case 3: // todo_write with the round's shared baseVersion
		return store.AppendRequest{Events: []projection.NewEvent{randomTodoWrite(rng)}, BaseVersion: &base}
	case 4: // todo_write without a baseVersion
		return store.AppendRequest{Events: []projection.NewEvent{randomTodoWrite(rng)}}
	case 5: // a message
		return store.AppendRequest{Events: []projection.NewEvent{
			{Type: projection.TypeMessageUser, Data: json.RawMessage(`{"text":"go on"}`)}}}
	default: // a multi-event batch: a reply, a todo_write and its result
		return store.AppendRequest{Events: []projection.NewEvent{msg, randomTodoWrite(rng),
			{Type: projection.TypeToolResult, Data: json.RawMessage(fmt.Sprintf(
				`{"callId":"c%d","name":"todo_write","isError":false,"content":"ok"}`, rng.IntN(100)))}}}
	}
}
