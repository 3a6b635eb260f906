package store_test

import (
	"context"
	"encoding/json"
	"errors"
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
	sess, err := st.CreateSession(ctx, "idempotent")
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
	sess, err := st.CreateSession(ctx, "rejections")
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
