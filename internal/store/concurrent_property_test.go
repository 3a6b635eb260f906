package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// propertyRounds is how many rounds of concurrent appends the concurrent
// property runs: a few by default, so CI spends seconds on it, and as many as
// TACK_PROPERTY_ROUNDS says when a longer hunt is wanted.
func propertyRounds(t *testing.T, def int) int {
	t.Helper()
	return storetest.EnvInt(t, "TACK_PROPERTY_ROUNDS", def, 1)
}

// TestConcurrentAppendsEqualReplay races writers on one session: turn changes
// (turn/end+turn/start batches), todo/writes with and without a baseVersion,
// a person's edits (todo/edit, with the round's baseVersion), the model's
// tool writes and reads (held to and marking what it has seen), messages and
// multi-event batches, from several goroutines at once. After
// each round the stored views (todos, session summary, snapshot) must equal a
// replay of the log read back, and of the writers that shared one baseVersion
// at most one may have won.
func TestConcurrentAppendsEqualReplay(t *testing.T) {
	t.Parallel()
	rounds := propertyRounds(t, 40)
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			propertyConcurrentEqualsReplay(t, f.Open(t, projection.Config{}), rounds)
		})
	}
}

func propertyConcurrentEqualsReplay(t *testing.T, st store.Store, rounds int) {
	ctx := context.Background()
	sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "concurrent property"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{turnStart()}}); err != nil {
		t.Fatal(err)
	}
	const writers, appendsEach = 8, 3
	won := map[int64]int{} // baseVersion → accepted todo/writes made against it
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
					if rng.IntN(8) == 0 {
						if _, err := st.TodoRead(ctx, sess.ID); err != nil {
							mu.Lock()
							bad = append(bad, err)
							mu.Unlock()
						}
					}
					_, err := st.Append(ctx, sess.ID, req)
					var evErr *store.EventError
					mu.Lock()
					switch {
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
	}
	if len(won) == 0 {
		t.Fatal("no todo/write with a baseVersion was ever accepted: the mix does not exercise the race")
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
		return store.AppendRequest{Events: []projection.NewEvent{turnEnd(), turnStart()}}
	case 2: // a turn ended or started alone (each rejected in the other state)
		if rng.IntN(3) == 0 {
			return store.AppendRequest{Events: []projection.NewEvent{turnEnd()}}
		}
		return store.AppendRequest{Events: []projection.NewEvent{turnStart()}}
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
