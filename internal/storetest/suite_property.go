package storetest

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
		// A message of the model's, at times one of a few that agents
		// write in parts (messageId): its parts are one step.
		if m := rng.IntN(3); m > 0 {
			return projection.NewEvent{Type: projection.TypeMessageAssistant, Data: json.RawMessage(fmt.Sprintf(`{"text":"working","messageId":"msg_%d"}`, m))}
		}
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

// testIncrementalProjectionEqualsReplay appends many random batches, some of
// them rejected, and checks after each that the projection kept by the store
// equals a full replay of the log it holds, for every store.
func testIncrementalProjectionEqualsReplay(t *testing.T, f Factory) {
	t.Parallel()
	{ // the one kind of store f opens
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			propertyIncrementalEqualsReplay(t, f.Open(t, projection.Config{}))
		})
	}
}

func propertyIncrementalEqualsReplay(t *testing.T, st store.Store) {
	ctx := context.Background()
	edits, told := 0, 0 // accepted edits, tool writes rejected for an unseen edit
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
				req := store.AppendRequest{Events: batch}
				cur, err := st.Todos(ctx, sess.ID)
				if err != nil {
					t.Fatal(err)
				}
				switch rng.IntN(6) {
				case 0: // a person's edit, now and then against a stale version
					req = randomEdit(rng, cur.Version-int64(rng.IntN(2)))
				case 1: // the model's todo_write through the tool, held to seen
					req = randomToolWrite(rng)
				case 2: // the model's todo_read, which marks the list seen
					if _, err := st.TodoRead(ctx, sess.ID); err != nil {
						t.Fatal(err)
					}
				}
				before, _ := st.Session(ctx, sess.ID)
				_, err = st.Append(ctx, sess.ID, req)
				var evErr *store.EventError
				if err != nil && !errors.As(err, &evErr) {
					t.Fatal(err)
				}
				if err == nil && batchOf(req, projection.TypeTodoEdit) {
					edits++
				}
				if err != nil && evErr.Err.Shown > 0 {
					told++
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
	if edits == 0 || told == 0 {
		t.Fatalf("%d edits accepted, %d tool writes told of an edit: the mix does not exercise them", edits, told)
	}
}

func batchOf(req store.AppendRequest, typ string) bool {
	return len(req.Events) == 1 && req.Events[0].Type == typ
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
	sess, err := st.Session(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	want := projection.Config{PlanLifetime: sess.PlanLifetime}.Replay(events)

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
	// The summary's activity: updatedAt is the latest event's time, and
	// the state is the replayed activity's (now, at the default idle time).
	if want.LastAt != nil && !sess.UpdatedAt.Equal(want.LastAt.Time) {
		t.Fatalf("session updatedAt %v, want the latest event's at %v", sess.UpdatedAt, *want.LastAt)
	}
	if state, since := projection.SessionState(want.Activity(), store.Now(), 0, sess.CreatedAt); sess.State != state || !sess.StateSince.Equal(since.Time) {
		t.Fatalf("session state %s since %v, replay %s since %v", sess.State, sess.StateSince, state, since)
	}
	if sess.LastSeq != want.LastSeq || sess.Turn != want.Turn || sess.TodoCounts != projection.Count(want.Items) ||
		!reflect.DeepEqual(sess.CurrentItem, projection.CurrentItem(want.Items)) {
		t.Fatalf("session %+v differs from replay %+v", sess, want)
	}
	// The reminder's counters come from the log; seen does only in part
	// (a todo_read and a rejection append nothing): the log's value is a
	// floor of it, and the model never saw a version yet to come.
	list, err := st.TodoList(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if list.TaskHigh != want.TaskHigh {
		t.Fatalf("todo list's highest task id %d, replay %d", list.TaskHigh, want.TaskHigh)
	}
	if list.LastEdit != want.LastEdit || list.EditedBy != want.EditedBy || list.Steps != want.Steps ||
		list.StepMessage != want.StepMessage || list.Seen < want.Seen || list.Seen > want.Version {
		t.Fatalf("todo list state (seen %d, last edit %d by %q, steps %d of %q) differs from replay (seen ≥ %d ≤ %d, %d by %q, %d of %q)",
			list.Seen, list.LastEdit, list.EditedBy, list.Steps, list.StepMessage, want.Seen, want.Version, want.LastEdit, want.EditedBy, want.Steps, want.StepMessage)
	}
	// The history, paged newest first, is the replayed one.
	replayed := projection.ReplayHistory(events)
	var hist []projection.Version
	for before := int64(0); ; {
		page, more, err := st.TodoHistory(ctx, id, before, 3)
		if err != nil {
			t.Fatal(err)
		}
		hist = append(hist, page...)
		if !more {
			break
		}
		before = page[len(page)-1].Version
	}
	if len(hist) != len(replayed) {
		t.Fatalf("history has %d versions, replay %d", len(hist), len(replayed))
	}
	for i, v := range hist {
		if w := replayed[len(replayed)-1-i]; !reflect.DeepEqual(v, w) {
			t.Fatalf("history version differs from replay:\n got  %+v\n want %+v", v, w)
		}
	}
}

// randomTodos draws a valid list from a small pool of contents.
func randomTodos(rng *rand.Rand) string {
	contents := []string{"read the code", "write the test", "fix the bug", "run the suite", "ship it"}
	statuses := []string{"pending", "completed", "in_progress"}
	var todos []projection.TodoInput
	inProgress := false
	for _, c := range contents[:rng.IntN(len(contents)+1)] {
		s := statuses[rng.IntN(3)]
		if s == "in_progress" {
			if inProgress {
				s = "pending"
			}
			inProgress = true
		}
		todos = append(todos, projection.TodoInput{Content: c, Status: s})
	}
	b, _ := json.Marshal(todos)
	if todos == nil {
		b = []byte("[]")
	}
	return string(b)
}

// randomEdit is a person's edit against version base.
func randomEdit(rng *rand.Rand, base int64) store.AppendRequest {
	ev, v, err := projection.ParseTodoEditArgs(json.RawMessage(fmt.Sprintf(`{"todos":%s,"baseVersion":%d}`, randomTodos(rng), max(base, 0))), "ana")
	if err != nil {
		panic(err)
	}
	return store.AppendRequest{Events: []projection.NewEvent{ev}, BaseVersion: &v}
}

// randomToolWrite is the model's todo_write as the tool endpoint makes it.
func randomToolWrite(rng *rand.Rand) store.AppendRequest {
	ev, _, err := projection.ParseTodoWriteArgs(json.RawMessage(`{"todos":` + randomTodos(rng) + `}`))
	if err != nil {
		panic(err)
	}
	return store.AppendRequest{Events: []projection.NewEvent{ev}}
}
