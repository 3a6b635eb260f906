package storetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// The conformance suite: the Store contract, run by Run against one kind
// of store, so that no behaviour can differ between stores silently. Every
// backend's tests run it (storetest.Run), on each of its kinds.

// forEachStore runs test, in parallel with the suite's other tests, on a
// fresh, empty store f opens.
func forEachStore(t *testing.T, f Factory, test func(t *testing.T, st store.Store)) {
	t.Helper()
	t.Parallel()
	test(t, f.Open(t, projection.Config{}))
}

func ev(typ, data string) projection.NewEvent {
	return projection.NewEvent{Type: typ, Data: json.RawMessage(data)}
}

var (
	evTurnStart = ev(projection.TypeTurnStart, `{}`)
	evTurnEnd   = ev(projection.TypeTurnEnd, `{"reason":"completed"}`)
)

func userMsg(text string) projection.NewEvent {
	b, _ := json.Marshal(map[string]string{"text": text})
	return ev(projection.TypeMessageUser, string(b))
}

// writeTodos makes a todo/write from content/status pairs.
func writeTodos(pairs ...string) projection.NewEvent {
	todos := []projection.TodoInput{}
	for i := 0; i < len(pairs); i += 2 {
		todos = append(todos, projection.TodoInput{Content: pairs[i], Status: pairs[i+1]})
	}
	b, _ := json.Marshal(map[string]any{"todos": todos})
	return ev(projection.TypeTodoWrite, string(b))
}

func newSession(t *testing.T, st store.Store) store.Session {
	t.Helper()
	s, _, err := st.CreateSession(context.Background(), store.NewSession{Title: "conformance"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustAppend(t *testing.T, st store.Store, id string, events ...projection.NewEvent) store.AppendResult {
	t.Helper()
	res, err := st.Append(context.Background(), id, store.AppendRequest{Events: events})
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	return res
}

func allEvents(t *testing.T, st store.Store, id string) []projection.Event {
	t.Helper()
	var events []projection.Event
	for after := int64(0); ; {
		page, more, err := st.Events(context.Background(), id, after, 1_000_000)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, page...)
		if !more {
			return events
		}
		after = page[len(page)-1].Seq
	}
}

func seqs(events []projection.Event) []int64 {
	out := []int64{}
	for _, e := range events {
		out = append(out, e.Seq)
	}
	return out
}

func seqRange(from, to int64) []int64 {
	out := []int64{}
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// wantEventError checks that err rejects event index with the given code.
func wantEventError(t *testing.T, err error, index int, code projection.Code) {
	t.Helper()
	var evErr *store.EventError
	if !errors.As(err, &evErr) {
		t.Fatalf("got error %v, want an EventError", err)
	}
	if evErr.Index != index || evErr.Err.Code != code {
		t.Fatalf("got events[%d] %s (%s), want events[%d] %s", evErr.Index, evErr.Err.Code, evErr.Err.Message, index, code)
	}
}

// wantUnchanged checks that the session's log still ends at lastSeq.
func wantUnchanged(t *testing.T, st store.Store, id string, lastSeq int64) {
	t.Helper()
	s, err := st.Session(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if s.LastSeq != lastSeq {
		t.Fatalf("lastSeq is %d, want %d: a rejected request wrote", s.LastSeq, lastSeq)
	}
	if got := seqs(allEvents(t, st, id)); !slices.Equal(got, seqRange(1, lastSeq)) {
		t.Fatalf("log seqs %v, want 1..%d", got, lastSeq)
	}
}

func testCreateAndRead(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		created, _, err := st.CreateSession(ctx, store.NewSession{Title: "fix the flaky test"})
		if err != nil {
			t.Fatal(err)
		}
		if created.ID == "" || created.Title != "fix the flaky test" || created.LastSeq != 0 ||
			created.Turn != (projection.Turn{}) || created.TodoCounts != (projection.Counts{}) || created.CreatedAt != created.UpdatedAt {
			t.Fatalf("created %+v", created)
		}
		// Times round-trip to the millisecond: what was returned is what is read.
		got, err := st.Session(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, created) {
			t.Fatalf("read %+v, want %+v", got, created)
		}

		todos, err := st.Todos(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		want := projection.Todos{SessionID: created.ID, Todos: []projection.Item{}}
		if !reflect.DeepEqual(todos, want) {
			t.Fatalf("todos of a new session %+v, want %+v", todos, want)
		}
		h, err := st.History(ctx, created.ID, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		wantSnap := projection.Snapshot{Todos: []projection.Item{}}
		if len(h.Events) != 0 || h.HasMore || h.Snapshot == nil || !reflect.DeepEqual(*h.Snapshot, wantSnap) {
			t.Fatalf("history of a new session %+v (snapshot %+v)", h, h.Snapshot)
		}
		events, more, err := st.Events(ctx, created.ID, 0, 10)
		if err != nil || len(events) != 0 || more {
			t.Fatalf("events of a new session %v %v %v", events, more, err)
		}
		msgs, err := st.Messages(ctx, created.ID, 0, 10)
		if err != nil || len(msgs.Messages) != 0 || msgs.Messages == nil || msgs.HasMore || msgs.NextAfter != 0 {
			t.Fatalf("messages of a new session %+v %v", msgs, err)
		}
		if err := st.Ping(ctx); err != nil {
			t.Fatalf("ping: %v", err)
		}
	})
}

func testSessionsOrderAndPaging(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		ids := []string{}
		for range 7 {
			ids = append(ids, newSession(t, st).ID)
		}
		// Activity on the oldest session moves it to the front: wait for the
		// clock to pass its creation so its updatedAt is strictly the newest.
		first, _ := st.Session(ctx, ids[0])
		for last, _ := st.Session(ctx, ids[len(ids)-1]); !store.Now().After(last.UpdatedAt.Time); {
			runtime.Gosched()
		}
		mustAppend(t, st, ids[0], userMsg("hello"))

		all, next, err := st.Sessions(ctx, 100, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != len(ids) || next != "" {
			t.Fatalf("listed %d sessions, next %q; want %d and no cursor", len(all), next, len(ids))
		}
		if all[0].ID != ids[0] || all[0].LastSeq != 1 || !all[0].UpdatedAt.After(first.UpdatedAt.Time) {
			t.Fatalf("first listed %+v, want the session with the latest activity %s", all[0], ids[0])
		}
		sorted := slices.IsSortedFunc(all, func(a, b store.Session) int {
			if c := b.UpdatedAt.Compare(a.UpdatedAt.Time); c != 0 {
				return c
			}
			return -compareStrings(a.ID, b.ID)
		})
		if !sorted {
			t.Fatalf("sessions not in (updatedAt, id) descending order: %+v", all)
		}
		for _, s := range all {
			one, err := st.Session(ctx, s.ID)
			if err != nil || !reflect.DeepEqual(one, s) {
				t.Fatalf("listed %+v, read %+v (%v)", s, one, err)
			}
		}

		for _, limit := range []int{1, 2, 3, 7} {
			var paged []store.Session
			cursor, pages := "", 0
			for {
				page, next, err := st.Sessions(ctx, limit, cursor)
				if err != nil {
					t.Fatal(err)
				}
				if len(page) > limit {
					t.Fatalf("limit %d: page of %d", limit, len(page))
				}
				paged = append(paged, page...)
				pages++
				if next == "" {
					break
				}
				cursor = next
			}
			if !reflect.DeepEqual(paged, all) {
				t.Fatalf("limit %d: pages give %d sessions, not the full list", limit, len(paged))
			}
			if want := (len(all) + limit - 1) / limit; pages != want {
				t.Fatalf("limit %d: %d pages, want %d (no empty last page)", limit, pages, want)
			}
		}
	})
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func testBadCursor(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		newSession(t, st)
		for _, c := range []string{
			"!!not base64!!",
			base64.RawURLEncoding.EncodeToString([]byte("no colon")),
			base64.RawURLEncoding.EncodeToString([]byte("notanumber:ses_x")),
			base64.RawURLEncoding.EncodeToString([]byte("1700000000000:")),
		} {
			if _, _, err := st.Sessions(context.Background(), 10, c); !errors.Is(err, store.ErrBadCursor) {
				t.Errorf("cursor %q: got %v, want ErrBadCursor", c, err)
			}
		}
	})
}

func testAppendGaplessSeqs(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s := newSession(t, st)
		res := mustAppend(t, st, s.ID, userMsg("before any turn"), evTurnStart, userMsg("in turn 1"))
		if got := seqs(res.Events); !slices.Equal(got, []int64{1, 2, 3}) {
			t.Fatalf("seqs %v, want 1 2 3", got)
		}
		if turns := []int{res.Events[0].Turn, res.Events[1].Turn, res.Events[2].Turn}; !slices.Equal(turns, []int{0, 1, 1}) {
			t.Fatalf("turns %v, want 0 1 1", turns)
		}
		if res.Events[0].At != res.Events[2].At {
			t.Fatalf("one batch, two times: %v %v", res.Events[0].At, res.Events[2].At)
		}
		if res.Session.LastSeq != 3 || res.Session.Turn != (projection.Turn{Number: 1, Open: true}) || res.Session.UpdatedAt != res.Events[0].At {
			t.Fatalf("session after append %+v", res.Session)
		}
		res2 := mustAppend(t, st, s.ID, evTurnEnd, evTurnStart)
		if got := seqs(res2.Events); !slices.Equal(got, []int64{4, 5}) {
			t.Fatalf("second batch seqs %v, want 4 5", got)
		}
		stored := allEvents(t, st, s.ID)
		if want := append(res.Events, res2.Events...); !reflect.DeepEqual(stored, want) {
			t.Fatalf("stored events differ from appended ones:\n got  %+v\n want %+v", stored, want)
		}
		read, err := st.Session(ctx, s.ID)
		if err != nil || !reflect.DeepEqual(read, res2.Session) {
			t.Fatalf("session read %+v, append said %+v (%v)", read, res2.Session, err)
		}
	})
}

func testBatchAtomicity(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s := newSession(t, st)
		mustAppend(t, st, s.ID, evTurnStart)
		before, _ := st.Todos(ctx, s.ID)

		cases := []struct {
			name  string
			batch []projection.NewEvent
			index int
			code  projection.Code
		}{
			{"unknown type last", []projection.NewEvent{userMsg("ok"), writeTodos("a", "pending"), ev("message/system", `{}`)}, 2, projection.CodeInvalid},
			{"bad data", []projection.NewEvent{userMsg("ok"), ev(projection.TypeMessageUser, `{"text":1}`)}, 1, projection.CodeInvalid},
			{"rule broken mid-batch", []projection.NewEvent{writeTodos("a", "pending"), evTurnEnd, evTurnEnd, userMsg("never")}, 2, projection.CodeConflict},
			{"invalid todos", []projection.NewEvent{userMsg("ok"), writeTodos("a", "in_progress", "b", "in_progress")}, 1, projection.CodeInvalid},
		}
		for _, c := range cases {
			_, err := st.Append(ctx, s.ID, store.AppendRequest{Events: c.batch})
			wantEventError(t, err, c.index, c.code)
			wantUnchanged(t, st, s.ID, 1)
		}
		after, _ := st.Todos(ctx, s.ID)
		if !reflect.DeepEqual(after, before) {
			t.Fatalf("rejected batches changed the todos: %+v", after)
		}
	})
}

func testExpectedSeq(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s := newSession(t, st)
		at := func(n int64) *int64 { return &n }
		if _, err := st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{userMsg("1")}, ExpectedSeq: at(0)}); err != nil {
			t.Fatal(err)
		}
		_, err := st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{userMsg("2")}, ExpectedSeq: at(0)})
		var conflict *store.ConflictError
		if !errors.As(err, &conflict) || *conflict != (store.ConflictError{Expected: 0, Actual: 1}) {
			t.Fatalf("got %v, want ConflictError{0, 1}", err)
		}
		wantUnchanged(t, st, s.ID, 1)
		if _, err := st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{userMsg("2")}, ExpectedSeq: at(1)}); err != nil {
			t.Fatal(err)
		}
		_, err = st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{userMsg("3")}, ExpectedSeq: at(5)})
		if !errors.As(err, &conflict) || *conflict != (store.ConflictError{Expected: 5, Actual: 2}) {
			t.Fatalf("expectedSeq ahead of the log: got %v, want ConflictError{5, 2}", err)
		}
		wantUnchanged(t, st, s.ID, 2)
	})
}

func testIdempotency(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s := newSession(t, st)
		req := store.AppendRequest{Events: []projection.NewEvent{evTurnStart, writeTodos("a", "in_progress")}, IdempotencyKey: "k1", RequestHash: "h1"}
		first, err := st.Append(ctx, s.ID, req)
		if err != nil {
			t.Fatal(err)
		}
		if first.Replayed {
			t.Fatal("first request marked as replayed")
		}
		// Something else happens in between; the retry still gets the original answer.
		mustAppend(t, st, s.ID, userMsg("later"))
		again, err := st.Append(ctx, s.ID, req)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Replayed {
			t.Fatal("retry not marked as replayed")
		}
		again.Replayed = false
		if !reflect.DeepEqual(again, first) {
			t.Fatalf("replay differs:\n got  %+v\n want %+v", again, first)
		}
		wantUnchanged(t, st, s.ID, 3)

		mismatch := req
		mismatch.RequestHash = "h2"
		if _, err := st.Append(ctx, s.ID, mismatch); !errors.Is(err, store.ErrIdempotencyMismatch) {
			t.Fatalf("reused key with another request: got %v, want ErrIdempotencyMismatch", err)
		}
		wantUnchanged(t, st, s.ID, 3)

		// A rejected request stores no key: the corrected request can use it.
		bad := store.AppendRequest{Events: []projection.NewEvent{evTurnStart}, IdempotencyKey: "k2", RequestHash: "bad"}
		_, err = st.Append(ctx, s.ID, bad)
		wantEventError(t, err, 0, projection.CodeConflict)
		good := store.AppendRequest{Events: []projection.NewEvent{userMsg("fixed")}, IdempotencyKey: "k2", RequestHash: "good"}
		if res, err := st.Append(ctx, s.ID, good); err != nil || res.Replayed || res.Events[0].Seq != 4 {
			t.Fatalf("corrected request after a rejected one: %+v %v", res, err)
		}

		// Keys belong to a session: the same key elsewhere is a new request.
		other := newSession(t, st)
		res, err := st.Append(ctx, other.ID, req)
		if err != nil || res.Replayed || res.Events[0].Seq != 1 {
			t.Fatalf("same key in another session: %+v %v", res, err)
		}
	})
}

func testTurnRules(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s := newSession(t, st)
		assistant := ev(projection.TypeMessageAssistant, `{"text":"hi"}`)
		result := ev(projection.TypeToolResult, `{"callId":"c1","name":"todo_write","isError":false,"content":"ok"}`)
		for _, e := range []projection.NewEvent{evTurnEnd, assistant, result, writeTodos("a", "pending")} {
			_, err := st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{e}})
			wantEventError(t, err, 0, projection.CodeConflict)
		}
		_, err := st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{writeTodos("a", "pending")}})
		var evErr *store.EventError
		if errors.As(err, &evErr); evErr == nil || evErr.Err.Message != "todo_write requires an owning agent session" {
			t.Fatalf("todo/write outside a turn: %v", err)
		}
		wantUnchanged(t, st, s.ID, 0)

		res := mustAppend(t, st, s.ID, evTurnStart, assistant, result, writeTodos("a", "pending"), evTurnEnd, evTurnStart)
		if got := []int{res.Events[0].Turn, res.Events[4].Turn, res.Events[5].Turn}; !slices.Equal(got, []int{1, 1, 2}) {
			t.Fatalf("turns %v, want 1 1 2", got)
		}
		_, err = st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{evTurnStart}})
		wantEventError(t, err, 0, projection.CodeConflict)
		wantUnchanged(t, st, s.ID, 6)
		sess, _ := st.Session(ctx, s.ID)
		if sess.Turn != (projection.Turn{Number: 2, Open: true}) {
			t.Fatalf("turn %+v, want 2 open", sess.Turn)
		}
	})
}

func testTodosProjection(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s := newSession(t, st)
		todos := func() projection.Todos {
			t.Helper()
			v, err := st.Todos(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			return v
		}

		res := mustAppend(t, st, s.ID, evTurnStart, writeTodos("read the code", "in_progress", "fix the bug", "pending"))
		write := res.Events[1]
		if !res.TodosChanged || res.Todos == nil {
			t.Fatalf("todo/write did not report a change: %+v", res)
		}
		v1 := todos()
		if !reflect.DeepEqual(v1, *res.Todos) {
			t.Fatalf("read %+v, append said %+v", v1, *res.Todos)
		}
		if v1.Version != write.Seq || !v1.Standing || v1.Counts != (projection.Counts{Pending: 1, InProgress: 1}) ||
			v1.UpdatedAt == nil || *v1.UpdatedAt != write.At || len(v1.Todos) != 2 ||
			v1.Todos[0].ID != projection.ItemID("read the code") || v1.Todos[0].UpdatedAt != write.At {
			t.Fatalf("todos after the first write %+v", v1)
		}
		if res.Session.TodoCounts != v1.Counts {
			t.Fatalf("session counts %+v, want %+v", res.Session.TodoCounts, v1.Counts)
		}

		// Surface events and turn/end leave the view alone.
		res = mustAppend(t, st, s.ID, userMsg("go on"), evTurnEnd)
		if res.TodosChanged || res.Todos != nil || !reflect.DeepEqual(todos(), v1) {
			t.Fatalf("a batch without todo/write changed the todos: %+v", res)
		}

		// A new turn ends the standing plan but keeps the current list.
		for !store.Now().After(write.At.Time) {
			runtime.Gosched()
		}
		res = mustAppend(t, st, s.ID, evTurnStart)
		v2 := todos()
		if !res.TodosChanged || v2.Standing || v2.Version != v1.Version || !reflect.DeepEqual(v2.Todos, v1.Todos) ||
			*v2.UpdatedAt != res.Events[0].At {
			t.Fatalf("after turn/start: changed %v, todos %+v", res.TodosChanged, v2)
		}
		h, _ := st.History(ctx, s.ID, 0, 1)
		if h.Snapshot.Standing || len(h.Snapshot.Todos) != 0 || h.Snapshot.TodosVersion != v1.Version {
			t.Fatalf("snapshot after turn/start %+v, want no standing plan", h.Snapshot)
		}

		// The next write stands again; same content keeps its id, and an
		// unchanged status keeps its updatedAt.
		for !store.Now().After(res.Events[0].At.Time) {
			runtime.Gosched()
		}
		res = mustAppend(t, st, s.ID, writeTodos("read the code", "completed", "fix the bug", "pending", "run the suite", "pending"))
		v3 := todos()
		if !v3.Standing || v3.Version != res.Events[0].Seq || v3.Counts != (projection.Counts{Pending: 2, Completed: 1}) {
			t.Fatalf("todos after the second write %+v", v3)
		}
		if v3.Todos[0].ID != v1.Todos[0].ID || v3.Todos[0].UpdatedAt != res.Events[0].At ||
			v3.Todos[1].UpdatedAt != v1.Todos[1].UpdatedAt {
			t.Fatalf("item ids or times not derived as specified: before %+v after %+v", v1.Todos, v3.Todos)
		}
		h, _ = st.History(ctx, s.ID, 0, 1)
		if !h.Snapshot.Standing || !reflect.DeepEqual(h.Snapshot.Todos, v3.Todos) {
			t.Fatalf("snapshot %+v, want the standing plan", h.Snapshot)
		}

		// A stale baseVersion is a conflict naming both versions.
		old := v1.Version
		_, err := st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{writeTodos("x", "pending")}, BaseVersion: &old})
		wantEventError(t, err, 0, projection.CodeConflict)
		wantUnchanged(t, st, s.ID, v3.Version)
		cur := v3.Version
		if _, err := st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{writeTodos()}, BaseVersion: &cur}); err != nil {
			t.Fatalf("write at the current version: %v", err)
		}
		if v := todos(); len(v.Todos) != 0 || v.Version != cur+1 || !v.Standing {
			t.Fatalf("empty list write: %+v", v)
		}
	})
}

// seedLog appends n events to a new session: a todo/write at seq 2, then
// user messages. It returns the session id.
func seedLog(t *testing.T, st store.Store, n int) string {
	t.Helper()
	s := newSession(t, st)
	batch := []projection.NewEvent{evTurnStart, writeTodos("a", "in_progress")}
	for len(batch) < n {
		batch = append(batch, userMsg(fmt.Sprint("message ", len(batch)+1)))
	}
	mustAppend(t, st, s.ID, batch...)
	return s.ID
}

func testHistoryPaging(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		id := seedLog(t, st, 10)
		all := allEvents(t, st, id)
		cases := []struct {
			before   int64
			limit    int
			want     []int64
			more     bool
			snapshot bool
		}{
			{0, 3, seqRange(8, 10), true, true},
			{0, 1, []int64{10}, true, true},
			{0, 10, seqRange(1, 10), false, true},
			{0, 100, seqRange(1, 10), false, true},
			{8, 3, seqRange(5, 7), true, false},
			{4, 3, seqRange(1, 3), false, false},
			{3, 3, seqRange(1, 2), false, false},
			{2, 1, []int64{1}, false, false},
			{1, 5, []int64{}, false, false},
			{50, 2, []int64{9, 10}, true, false},
		}
		for _, c := range cases {
			h, err := st.History(ctx, id, c.before, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := seqs(h.Events); !slices.Equal(got, c.want) || h.HasMore != c.more || (h.Snapshot != nil) != c.snapshot {
				t.Errorf("before %d limit %d: seqs %v more %v snapshot %v; want %v %v %v",
					c.before, c.limit, got, h.HasMore, h.Snapshot != nil, c.want, c.more, c.snapshot)
			}
			for _, e := range h.Events {
				if !reflect.DeepEqual(e, all[e.Seq-1]) {
					t.Errorf("history event %+v differs from the log's %+v", e, all[e.Seq-1])
				}
			}
		}
		// The tail page's snapshot carries the plan set far outside the page.
		h, _ := st.History(ctx, id, 0, 1)
		todos, _ := st.Todos(ctx, id)
		want := projection.Snapshot{LastSeq: 10, Turn: projection.Turn{Number: 1, Open: true}, Todos: todos.Todos, TodosVersion: 2, Standing: true}
		if !reflect.DeepEqual(*h.Snapshot, want) {
			t.Fatalf("snapshot %+v, want %+v", *h.Snapshot, want)
		}
	})
}

func testEventsPaging(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		id := seedLog(t, st, 10)
		cases := []struct {
			after int64
			limit int
			want  []int64
			more  bool
		}{
			{0, 3, seqRange(1, 3), true},
			{0, 1, []int64{1}, true},
			{0, 10, seqRange(1, 10), false},
			{3, 3, seqRange(4, 6), true},
			{8, 2, []int64{9, 10}, false},
			{9, 1, []int64{10}, false},
			{9, 5, []int64{10}, false},
			{10, 5, []int64{}, false},
			{1000, 5, []int64{}, false},
		}
		for _, c := range cases {
			events, more, err := st.Events(ctx, id, c.after, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := seqs(events); !slices.Equal(got, c.want) || more != c.more {
				t.Errorf("after %d limit %d: seqs %v more %v; want %v %v", c.after, c.limit, got, more, c.want, c.more)
			}
		}
	})
}

func testMessagesSurface(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s := newSession(t, st)
		res := mustAppend(t, st, s.ID,
			userMsg("plan the fix"),
			evTurnStart,
			ev(projection.TypeMessageAssistant, `{"text":"planning","toolCalls":[{"id":"c1","name":"todo_write","args":{"todos":[]}}]}`),
			writeTodos("reproduce", "in_progress"),
			ev(projection.TypeToolResult, `{"callId":"c1","name":"todo_write","isError":false,"content":"Updated todo list: 0 pending, 1 in progress, 0 completed."}`),
			evTurnEnd,
		)
		page, err := st.Messages(ctx, s.ID, 0, 100)
		if err != nil {
			t.Fatal(err)
		}
		msgs := page.Messages
		surface := []projection.Event{res.Events[0], res.Events[2], res.Events[4]}
		if want := projection.DeriveMessages(surface); !reflect.DeepEqual(msgs, want) {
			t.Fatalf("messages %+v, want %+v", msgs, want)
		}
		if roles := []string{msgs[0].Role, msgs[1].Role, msgs[2].Role}; !slices.Equal(roles, []string{"user", "assistant", "tool"}) {
			t.Fatalf("roles %v", roles)
		}
		// A later todo/write never changes the surface.
		mustAppend(t, st, s.ID, evTurnStart, writeTodos("reproduce", "completed"))
		again, err := st.Messages(ctx, s.ID, 0, 100)
		if err != nil || !reflect.DeepEqual(again.Messages, msgs) {
			t.Fatalf("a todo/write changed the messages: %+v (%v)", again, err)
		}
	})
}

func testNotFound(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		newSession(t, st)
		const id = "ses_doesnotexist"
		check := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("%s: got %v, want ErrNotFound", what, err)
			}
		}
		_, err := st.Session(ctx, id)
		check("Session", err)
		_, err = st.Append(ctx, id, store.AppendRequest{Events: []projection.NewEvent{userMsg("x")}})
		check("Append", err)
		_, err = st.Append(ctx, id, store.AppendRequest{Events: []projection.NewEvent{userMsg("x")}, IdempotencyKey: "k", RequestHash: "h"})
		check("Append with a key", err)
		_, _, err = st.Events(ctx, id, 0, 10)
		check("Events", err)
		_, err = st.History(ctx, id, 0, 10)
		check("History tail", err)
		_, err = st.History(ctx, id, 5, 10)
		check("History before", err)
		_, err = st.Todos(ctx, id)
		check("Todos", err)
		_, err = st.Messages(ctx, id, 0, 10)
		check("Messages", err)
	})
}

// testConcurrentAppends has many writers race todo_writes into one
// session: every one lands, with distinct versions and gapless seqs.
func testConcurrentAppends(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s := newSession(t, st)
		mustAppend(t, st, s.ID, evTurnStart)
		const writers, each = 16, 10
		versions := make(chan int64, writers*each)
		errs := make(chan error, writers*each)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for i := range each {
					res, err := st.Append(ctx, s.ID, store.AppendRequest{Events: []projection.NewEvent{
						writeTodos(fmt.Sprintf("writer %d step %d", w, i), "in_progress"),
					}})
					if err != nil {
						errs <- err
						return
					}
					versions <- res.Todos.Version
				}
			})
		}
		wg.Wait()
		close(versions)
		close(errs)
		for err := range errs {
			t.Fatalf("concurrent append: %v", err)
		}
		got := slices.Sorted(func(yield func(int64) bool) {
			for v := range versions {
				if !yield(v) {
					return
				}
			}
		})
		if want := seqRange(2, 1+writers*each); !slices.Equal(got, want) {
			t.Fatalf("versions %v, want each of 2..%d once", got, 1+writers*each)
		}
		if got := seqs(allEvents(t, st, s.ID)); !slices.Equal(got, seqRange(1, 1+writers*each)) {
			t.Fatalf("log seqs not gapless: %v", got)
		}
		todos, _ := st.Todos(ctx, s.ID)
		if todos.Version != 1+writers*each {
			t.Fatalf("final version %d, want %d", todos.Version, 1+writers*each)
		}
		checkAgainstReplay(t, st, s.ID)
	})
}
