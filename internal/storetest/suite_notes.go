package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/store"
)

// testSessionNotes: a session's note is a JSON object patched
// key by key, whichever writer patches it, so no patch made at once with
// another is lost.
func testSessionNotes(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		sess := newSession(t, st)
		if note, err := st.SessionNote(ctx, sess.ID); err != nil || note != nil {
			t.Fatalf("no note: %s, %v", note, err)
		}
		for _, p := range []string{`{"tool":"TodoWrite","shown":3}`, `{"shown":4,"compacted":true}`} {
			if err := st.PatchSessionNote(ctx, sess.ID, json.RawMessage(p)); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				if err := st.PatchSessionNote(ctx, sess.ID, json.RawMessage(fmt.Sprintf(`{"k%d":%d}`, i, i))); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		note, err := st.SessionNote(ctx, sess.ID)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(note, &got); err != nil {
			t.Fatalf("%s: %v", note, err)
		}
		if got["tool"] != "TodoWrite" || got["shown"] != 4.0 || got["compacted"] != true || len(got) != 11 {
			t.Fatalf("note %s", note)
		}
		if note, err := st.SessionNote(ctx, newSession(t, st).ID); err != nil || note != nil {
			t.Fatalf("another session's note: %s, %v", note, err)
		}
	})
}

// testRememberCall: a tool call's session is kept per owner;
// one never remembered is not found.
func testRememberCall(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		a, b := newSession(t, st), newSession(t, st)
		if _, err := st.CallSession(ctx, "alice", "toolu_1"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("unknown call: %v", err)
		}
		if err := st.RememberCall(ctx, "alice", "toolu_1", a.ID); err != nil {
			t.Fatal(err)
		}
		if err := st.RememberCall(ctx, "bob", "toolu_1", b.ID); err != nil {
			t.Fatal(err)
		}
		for owner, want := range map[string]string{"alice": a.ID, "bob": b.ID} {
			if got, err := st.CallSession(ctx, owner, "toolu_1"); err != nil || got != want {
				t.Fatalf("%s's call: %q, %v; want %q", owner, got, err, want)
			}
		}
		// A hook sent again names the same session: kept, not an error.
		if err := st.RememberCall(ctx, "alice", "toolu_1", a.ID); err != nil {
			t.Fatal(err)
		}
	})
}

// testNoteRetention: a note and a remembered call are kept for
// store.NoteRetention after their last write, then read as none, a patch
// starts the note anew, and later RememberCalls prune what expired.
func testNoteRetention(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		a, b := newSession(t, st), newSession(t, st)
		for _, s := range []store.Session{a, b} {
			if err := st.PatchSessionNote(ctx, s.ID, json.RawMessage(`{"tool":"TodoWrite","shown":2}`)); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.RememberCall(ctx, "alice", "toolu_old", a.ID); err != nil {
			t.Fatal(err)
		}
		if err := AgeNotes(ctx, st, store.NoteRetention+time.Second); err != nil {
			t.Fatal(err)
		}
		if note, err := st.SessionNote(ctx, a.ID); err != nil || note != nil {
			t.Fatalf("expired note: %s, %v", note, err)
		}
		if _, err := st.CallSession(ctx, "alice", "toolu_old"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("expired call: %v", err)
		}
		// A patch of an expired note is the whole note.
		if err := st.PatchSessionNote(ctx, a.ID, json.RawMessage(`{"stale":3}`)); err != nil {
			t.Fatal(err)
		}
		if note, err := st.SessionNote(ctx, a.ID); err != nil || string(note) != `{"stale":3}` && string(note) != `{"stale": 3}` {
			t.Fatalf("note after its expiry: %s, %v", note, err)
		}
		// A call remembered now prunes the expired call and note (b's).
		if err := st.RememberCall(ctx, "alice", "toolu_new", a.ID); err != nil {
			t.Fatal(err)
		}
		if notes, calls, err := NoteCount(ctx, st); err != nil || notes != 1 || calls != 1 {
			t.Fatalf("kept %d notes and %d calls (%v), want 1 and 1", notes, calls, err)
		}
	})
}
