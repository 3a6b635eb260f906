package storetest

import (
	"context"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// harnessLine is a message/user the agent's harness wrote, never a title.
var harnessLine = ev(projection.TypeMessageUser, `{"text":"<command-name>/clear</command-name>","source":"harness","kind":"command"}`)

// An untitled session reads from its agent, project and time until the
// first person's prompt titles it, in the append's transaction: a harness
// line does not, a later prompt does not, and the answer says so too.
func testPromptTitlesUntitled(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		created, _, err := st.CreateSession(ctx, store.NewSession{ExternalKey: "claude-code:989c7a9c", Agent: "claude-code", Cwd: "/home/ana/webapp"})
		if err != nil {
			t.Fatal(err)
		}
		want := "Claude Code · webapp · " + created.CreatedAt.UTC().Format("15:04") + " UTC"
		if !created.Untitled || created.Title != want {
			t.Fatalf("untitled session reads %q (untitled %v), want %q", created.Title, created.Untitled, want)
		}
		res := mustAppend(t, st, created.ID, evTurnStart, harnessLine)
		if !res.Session.Untitled || res.Session.Title != want {
			t.Fatalf("a harness line titled the session %q", res.Session.Title)
		}
		res = mustAppend(t, st, created.ID, userMsg("\n  Fix the \u202eflaky\a test\nand more lines"), evTurnEnd)
		if res.Session.Untitled || res.Session.Title != "Fix the  flaky  test" {
			t.Fatalf("append answered title %q (untitled %v)", res.Session.Title, res.Session.Untitled)
		}
		mustAppend(t, st, created.ID, evTurnStart, userMsg("A second prompt"))
		got, err := st.Session(ctx, created.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Untitled || got.Title != "Fix the  flaky  test" {
			t.Fatalf("stored title %q (untitled %v), want the first prompt's", got.Title, got.Untitled)
		}
		// The title is searched like any other.
		list, _, err := st.FindSessions(ctx, store.SessionQuery{Title: "flaky", Limit: 10})
		if err != nil || len(list) != 1 || list[0].ID != created.ID {
			t.Fatalf("search by the prompt's title found %+v, %v", list, err)
		}
	})
}

// A title given at creation or by a rename is final: no prompt replaces it.
func testRenameIsFinal(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		given := newSession(t, st)
		if given.Untitled {
			t.Fatal("a session made with a title is untitled")
		}
		if res := mustAppend(t, st, given.ID, evTurnStart, userMsg("a prompt")); res.Session.Title != "conformance" {
			t.Fatalf("a prompt replaced a given title: %q", res.Session.Title)
		}
		s, _, err := st.CreateSession(ctx, store.NewSession{Agent: "codex"})
		if err != nil {
			t.Fatal(err)
		}
		// A write first, so that the fast layer holds the session's state
		// from before the rename.
		mustAppend(t, st, s.ID, evTurnStart, writeTodos("one", "pending"))
		renamed, err := st.Rename(ctx, s.ID, "Release checklist")
		if err != nil {
			t.Fatal(err)
		}
		if renamed.Title != "Release checklist" || renamed.Untitled || renamed.ID != s.ID {
			t.Fatalf("rename answered %+v", renamed)
		}
		res := mustAppend(t, st, s.ID, writeTodos("one", "completed"))
		if res.Session.Title != "Release checklist" {
			t.Fatalf("an append after the rename answered title %q", res.Session.Title)
		}
		res = mustAppend(t, st, s.ID, evTurnEnd, evTurnStart, userMsg("Do the release"))
		if res.Session.Title != "Release checklist" || res.Session.Untitled {
			t.Fatalf("a prompt after the rename answered title %q", res.Session.Title)
		}
		if got, err := st.Session(ctx, s.ID); err != nil || got.Title != "Release checklist" {
			t.Fatalf("stored title %q, %v", got.Title, err)
		}
		if _, err := st.Rename(ctx, "ses_nosuchsession", "x"); err != store.ErrNotFound {
			t.Fatalf("renaming no session: %v, want ErrNotFound", err)
		}
	})
}

// A session made unlisted (an agent's hook, before the agent said
// anything) is in no list while it holds nothing but a session/end, and
// joins the list with its first content.
func testUnlistedUntilContent(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		parent := newSession(t, st)
		quiet, _, err := st.CreateSession(ctx, store.NewSession{ExternalKey: "claude-code:mcp-list", Agent: "claude-code", Unlisted: true})
		if err != nil {
			t.Fatal(err)
		}
		child, _, err := st.CreateSession(ctx, store.NewSession{ExternalKey: "claude-code:p/agent-1", ParentID: parent.ID, Unlisted: true})
		if err != nil {
			t.Fatal(err)
		}
		if res := mustAppend(t, st, quiet.ID, ev(projection.TypeSessionEnd, `{"reason":"other"}`)); res.Session.Listed {
			t.Fatal("a session/end listed the session")
		}
		ids := func(q store.SessionQuery) string {
			t.Helper()
			q.Limit = 50
			list, _, err := st.FindSessions(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, s := range list {
				out = append(out, s.ID)
			}
			return strings.Join(out, ",")
		}
		if got := ids(store.SessionQuery{}); got != parent.ID {
			t.Fatalf("list holds %s, want only %s", got, parent.ID)
		}
		if got := ids(store.SessionQuery{Owner: store.LocalPrincipal}); got != parent.ID {
			t.Fatalf("the owner's list holds %s, want only %s", got, parent.ID)
		}
		if got := ids(store.SessionQuery{Title: "Claude"}); got != "" {
			t.Fatalf("search finds unlisted sessions: %s", got)
		}
		if got := ids(store.SessionQuery{Parent: parent.ID}); got != "" {
			t.Fatalf("children list holds unlisted %s", got)
		}
		// Still found by its id and by its key.
		if _, err := st.Session(ctx, quiet.ID); err != nil {
			t.Fatal(err)
		}
		res := mustAppend(t, st, child.ID, evTurnStart, userMsg("find the config loader"))
		if !res.Session.Listed {
			t.Fatal("content left the session unlisted")
		}
		if got := ids(store.SessionQuery{Parent: parent.ID}); got != child.ID {
			t.Fatalf("children list holds %q, want %s", got, child.ID)
		}
		if got := ids(store.SessionQuery{}); !strings.Contains(got, child.ID) || strings.Contains(got, quiet.ID) {
			t.Fatalf("list holds %s", got)
		}
	})
}
