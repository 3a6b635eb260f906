package storetest_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestSeedSessionMatchesReplay checks that a seeded session is one the store
// could have written: its kept projection equals a replay of its log.
func TestSeedSessionMatchesReplay(t *testing.T) {
	t.Parallel()
	st := storetest.Postgres(t, projection.Config{})
	ctx := context.Background()
	sess := storetest.SeedSession(t, st, 301)
	events, _, err := st.Events(ctx, sess.ID, 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(events) != 301 || sess.LastSeq != 301 {
		t.Fatalf("seeded %d events, lastSeq %d, want 301 of each", len(events), sess.LastSeq)
	}
	for i, ev := range events {
		if ev.Seq != int64(i+1) {
			t.Fatalf("events[%d].seq = %d, want %d", i, ev.Seq, i+1)
		}
	}
	replayed := projection.Replay(events)
	if replayed.LastSeq != sess.LastSeq || replayed.Turn != sess.Turn {
		t.Fatalf("session lastSeq %d turn %+v, replay gives %d %+v", sess.LastSeq, sess.Turn, replayed.LastSeq, replayed.Turn)
	}
	todos, err := st.Todos(ctx, sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want := replayed.Todos(sess.ID); !reflect.DeepEqual(todos, want) {
		t.Fatalf("kept todos %+v, replay gives %+v", todos, want)
	}
	h, err := st.History(ctx, sess.ID, 0, 50)
	if err != nil {
		t.Fatal(err)
	}
	if want := replayed.Snapshot(); !reflect.DeepEqual(*h.Snapshot, want) || len(want.Todos) != 5 {
		t.Fatalf("tail snapshot %+v, replay gives %+v with the 5 seeded todos", *h.Snapshot, want)
	}
}
