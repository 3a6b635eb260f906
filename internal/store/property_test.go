package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// randomEvent draws an event that is sometimes valid and sometimes breaks a
// rule, so the sequences cover rejections as well as appends.
func randomEvent(rng *rand.Rand) projection.NewEvent {
	contents := []string{"read the code", "write the test", "fix the bug", "run the suite", "ship it"}
	statuses := []string{"pending", "in_progress", "completed"}
	switch rng.IntN(8) {
	case 0, 1:
		return projection.NewEvent{Type: projection.TypeTurnStart, Data: json.RawMessage(`{}`)}
	case 2:
		return projection.NewEvent{Type: projection.TypeTurnEnd, Data: json.RawMessage(`{"reason":"completed"}`)}
	case 3:
		return projection.NewEvent{Type: projection.TypeMessageUser, Data: json.RawMessage(`{"text":"go on"}`)}
	case 4:
		return projection.NewEvent{Type: projection.TypeMessageAssistant, Data: json.RawMessage(`{"text":"working","toolCalls":[{"id":"c1","name":"todo_write","args":{}}]}`)}
	case 5:
		return projection.NewEvent{Type: projection.TypeToolResult, Data: json.RawMessage(`{"callId":"c1","name":"todo_write","isError":false,"content":"ok"}`)}
	default:
		var todos []projection.TodoInput
		for _, c := range contents[:rng.IntN(len(contents)+1)] {
			todos = append(todos, projection.TodoInput{Content: c, Status: statuses[rng.IntN(3)]})
		}
		data, _ := json.Marshal(map[string]any{"todos": todos})
		if todos == nil {
			data = []byte(`{"todos":[]}`)
		}
		return projection.NewEvent{Type: projection.TypeTodoWrite, Data: data}
	}
}

// TestIncrementalProjectionEqualsReplay appends many random batches, some of
// them rejected, and checks after each that the projection kept by the store
// equals a full replay of the log it holds, for every store.
func TestIncrementalProjectionEqualsReplay(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			propertyIncrementalEqualsReplay(t, f.Open(t, projection.Config{}))
		})
	}
}

func propertyIncrementalEqualsReplay(t *testing.T, st store.Store) {
	ctx := context.Background()
	for seed := range uint64(20) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 42))
			sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "property"})
			if err != nil {
				t.Fatal(err)
			}
			for range 60 {
				batch := make([]projection.NewEvent, 1+rng.IntN(3))
				for i := range batch {
					batch[i] = randomEvent(rng)
				}
				before, _ := st.Session(ctx, sess.ID)
				_, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: batch})
				var evErr *store.EventError
				if err != nil && !errors.As(err, &evErr) {
					t.Fatal(err)
				}
				if err != nil {
					after, _ := st.Session(ctx, sess.ID)
					if after.LastSeq != before.LastSeq {
						t.Fatalf("rejected batch moved lastSeq %d -> %d", before.LastSeq, after.LastSeq)
					}
				}
				checkAgainstReplay(t, st, sess.ID)
			}
		})
	}
}

func checkAgainstReplay(t *testing.T, st store.Store, id string) {
	t.Helper()
	ctx := context.Background()
	events, _, err := st.Events(ctx, id, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range events {
		if ev.Seq != int64(i+1) {
			t.Fatalf("seq gap: event %d has seq %d", i, ev.Seq)
		}
	}
	want := projection.Replay(events)

	got, err := st.Todos(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if wantTodos := want.Todos(id); !reflect.DeepEqual(got, wantTodos) {
		t.Fatalf("todos projection differs from replay:\n got  %+v\n want %+v", got, wantTodos)
	}
	h, err := st.History(ctx, id, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if wantSnap := want.Snapshot(); !reflect.DeepEqual(*h.Snapshot, wantSnap) {
		t.Fatalf("snapshot differs from replay:\n got  %+v\n want %+v", *h.Snapshot, wantSnap)
	}
	sess, err := st.Session(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if sess.LastSeq != want.LastSeq || sess.Turn != want.Turn || sess.TodoCounts != projection.Count(want.Items) {
		t.Fatalf("session %+v differs from replay %+v", sess, want)
	}
}
