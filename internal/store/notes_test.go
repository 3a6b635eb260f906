package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/tack-dev/tack/internal/store"
)

// TestConformanceSessionNotes: a session's note is a JSON object patched
// key by key, whichever writer patches it, so no patch made at once with
// another is lost.
func TestConformanceSessionNotes(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
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

// TestConformanceRememberCall: a tool call's session is kept per owner;
// one never remembered is not found.
func TestConformanceRememberCall(t *testing.T) {
	forEachStore(t, func(t *testing.T, st store.Store) {
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
