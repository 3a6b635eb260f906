package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// Two instances of the fast store on one schema, each seeing what the
// other wrote.

// An agent's status set on one instance moves no head, yet another
// instance's cached state must not answer the state from before it: its
// guard finds the status changed, in the one-statement append and in the
// general one.
func TestAgentStatusSeenByAnotherInstance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := TwoInstances(t)
	old := projection.NewTime(time.Now().Add(-time.Minute))
	at := func(ne projection.NewEvent) projection.NewEvent { ne.At = &old; return ne }
	for _, next := range []projection.NewEvent{writeTodos("one", "completed"), ev(projection.TypeMessageAssistant, `{"text":"more"}`)} {
		sess, _, err := a.CreateSession(ctx, store.NewSession{Title: "status"})
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, a, sess.ID, at(evTurnStart), at(writeTodos("one", "pending")))
		// a caches the session, working (its turn open a minute ago).
		if res := mustAppend(t, a, sess.ID, at(writeTodos("one", "in_progress"))); res.Session.State != projection.StateWorking {
			t.Fatalf("state %s before the status", res.Session.State)
		}
		if _, err := b.SetAgentStatus(ctx, sess.ID, projection.AgentStatus{Status: projection.AgentIdle, At: projection.NewTime(time.Now())}); err != nil {
			t.Fatal(err)
		}
		// An event older than the status, as a transcript line read late.
		if res := mustAppend(t, a, sess.ID, at(next)); res.Session.State != projection.StateIdle {
			t.Fatalf("%s appended on the other instance answered %s after the agent went idle", next.Type, res.Session.State)
		}
	}
}

// A rename on one instance moves no head, yet another instance's cached
// state must not answer the title from before it: its guard finds the
// title changed, in the one-statement append and in the general one.
func TestRenameSeenByAnotherInstance(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := TwoInstances(t)
	sess, _, err := a.CreateSession(ctx, store.NewSession{Title: "before"})
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, a, sess.ID, evTurnStart, writeTodos("one", "pending"))
	mustAppend(t, a, sess.ID, writeTodos("one", "in_progress")) // a caches the session
	if _, err := b.Rename(ctx, sess.ID, "after"); err != nil {
		t.Fatal(err)
	}
	if res := mustAppend(t, a, sess.ID, writeTodos("one", "completed")); res.Session.Title != "after" {
		t.Fatalf("one-statement append answered title %q after the rename", res.Session.Title)
	}
	if _, err := b.Rename(ctx, sess.ID, "again"); err != nil {
		t.Fatal(err)
	}
	if res := mustAppend(t, a, sess.ID, userMsg("more")); res.Session.Title != "again" {
		t.Fatalf("append answered title %q after the second rename", res.Session.Title)
	}
}
