package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// The append transaction is pipelined in two batches; these tests cover the
// paths that leave it early: an unknown session, an idempotent replay or
// mismatch, an expectedSeq conflict and a rejected event.

func turnStart() projection.NewEvent {
	return projection.NewEvent{Type: projection.TypeTurnStart, Data: json.RawMessage(`{}`)}
}

func todoWrite(todos string) projection.NewEvent {
	return projection.NewEvent{Type: projection.TypeTodoWrite, Data: json.RawMessage(`{"todos":` + todos + `}`)}
}

func TestAppendUnknownSession(t *testing.T) {
	t.Parallel()
	st := storetest.Postgres(t, projection.Config{})
	_, err := st.Append(context.Background(), "ses_missing", store.AppendRequest{Events: []projection.NewEvent{turnStart()}})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("err = %v, want ErrNotFound", err)
	}
}

func TestAppendIdempotencyKey(t *testing.T) {
	t.Parallel()
	st := storetest.Postgres(t, projection.Config{})
	ctx := context.Background()
	sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "idempotent"})
	if err != nil {
		t.Fatal(err)
	}
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
}

// TestAppendRejectionsKeepTheConnection checks that a transaction left open by
// a rejection is rolled back and its connection reused, not closed: many
// rejected appends in a row open no new connections.
func TestAppendRejectionsKeepTheConnection(t *testing.T) {
	t.Parallel()
	st := storetest.Postgres(t, projection.Config{})
	ctx := context.Background()
	sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "rejections"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{turnStart()}}); err != nil {
		t.Fatal(err)
	}
	opened := st.Pool.Stat().NewConnsCount()
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
	if n := st.Pool.Stat().NewConnsCount() - opened; n > 1 {
		t.Fatalf("40 rejected appends opened %d connections, want at most 1", n)
	}
	res, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{todoWrite(`[{"content":"a","status":"pending"}]`)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Session.LastSeq != 2 || res.Todos == nil || res.Todos.Version != 2 {
		t.Fatalf("append after rejections = %+v, want seq 2 and todos version 2", res)
	}
}

// TestAppendConcurrentWrites runs many appends on one session at once: the
// row lock taken in the first batch must serialize them, leaving seqs
// distinct and gapless and the kept list that of the last committed write.
func TestAppendConcurrentWrites(t *testing.T) {
	t.Parallel()
	st := storetest.Postgres(t, projection.Config{})
	ctx := context.Background()
	sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "concurrent"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{turnStart()}}); err != nil {
		t.Fatal(err)
	}
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
}
