package api_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestTitles: a session is titled by its first real prompt, whichever
// route brings it, reads from its agent, project and time before, and is
// renamed by a person for good; a session an agent's hooks made and that
// never said anything is in no list.
func TestTitles(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "HookPromptTitles", run: testHookPromptTitles},
		{name: "TranscriptFirstKeepsItsTitle", run: testTranscriptFirstTitle},
		{name: "EventsPromptTitles", run: testEventsPromptTitles},
		{name: "Rename", run: testRename},
		{name: "NoPhantomSessions", run: testNoPhantomSessions},
	})
}

// listed reports whether GET /sessions (or a parent's children) holds id.
func (b *bundle) listed(id, query string) bool {
	b.t.Helper()
	var list struct{ Sessions []store.Session }
	b.want(b.do("GET", "/sessions"+query, nil), http.StatusOK, &list)
	for _, s := range list.Sessions {
		if s.ID == id {
			return true
		}
	}
	return false
}

func testHookPromptTitles(t *testing.T, b *bundle) {
	b.hook("claude-code", "989c7a9c-1", "SessionStart", map[string]any{"source": "startup", "cwd": "/home/ana/webapp"})
	s := b.keyed("claude-code:989c7a9c-1")
	want := "Claude Code · webapp · " + s.CreatedAt.UTC().Format("15:04") + " UTC"
	if s.Title != want || !s.Untitled {
		t.Fatalf("before any prompt the session reads %q (untitled %v), want %q", s.Title, s.Untitled, want)
	}
	// A prompt with a line break, a bell and a right-to-left override
	// titles it with its first line, made plain.
	b.hook("claude-code", "989c7a9c-1", "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "\n Fix the \u202eflaky\a test\nin CI"})
	if s = b.session(s.ID); s.Title != "Fix the  flaky  test" || s.Untitled {
		t.Fatalf("after the prompt the session reads %q (untitled %v)", s.Title, s.Untitled)
	}
	b.hook("claude-code", "989c7a9c-1", "Stop", map[string]any{"prompt_id": "p1"})
	b.hook("claude-code", "989c7a9c-1", "UserPromptSubmit", map[string]any{"prompt_id": "p2", "prompt": "Now the docs"})
	if s = b.session(s.ID); s.Title != "Fix the  flaky  test" {
		t.Fatalf("a second prompt retitled the session %q", s.Title)
	}
	// A subagent started in the background is titled by the task the
	// parent's Agent call gave it.
	b.hook("claude-code", "989c7a9c-1", "PostToolUse", map[string]any{"prompt_id": "p2", "tool_name": "Agent", "tool_use_id": "tu9",
		"tool_input":    map[string]any{"description": "Find the config\nloader", "prompt": "Look for where the config is read", "subagent_type": "Explore"},
		"tool_response": map[string]any{"isAsync": true, "status": "async_launched", "agentId": "bg42"}})
	if kid := b.keyed("claude-code:989c7a9c-1/agent-bg42"); kid.Title != "Explore: Find the config" || kid.Untitled || kid.ParentID == nil || *kid.ParentID != s.ID {
		t.Fatalf("a background subagent reads %q (untitled %v, parent %v)", kid.Title, kid.Untitled, kid.ParentID)
	}
	// A subagent the hooks made is no key either.
	b.hook("claude-code", "989c7a9c-1", "SubagentStop", map[string]any{"prompt_id": "p2", "agent_id": "aeb56", "agent_type": "Explore"})
	child := b.keyed("claude-code:989c7a9c-1/agent-aeb56")
	if strings.Contains(child.Title, "agent-aeb56") || !child.Untitled || !strings.HasPrefix(child.Title, "Claude Code · ") {
		t.Fatalf("a hook-made subagent reads %q", child.Title)
	}
}

// A session the transcript made first (import, watch) is titled by the
// transcript's first prompt; the hooks' later prompts leave it.
func testTranscriptFirstTitle(t *testing.T, b *bundle) {
	var s store.Session
	b.want(b.do("POST", "/sessions", map[string]any{"externalKey": "claude-code:t-1", "title": "Port the parser", "agent": "claude-code"}), http.StatusCreated, &s)
	b.appendOK(s.ID, turnStart(), userMsg("Port the parser\nto Go"))
	b.hook("claude-code", "t-1", "UserPromptSubmit", map[string]any{"prompt_id": "p9", "prompt": "Something else"})
	if got := b.session(s.ID); got.Title != "Port the parser" || got.Untitled {
		t.Fatalf("the hooks retitled a transcript's session: %q", got.Title)
	}
	// Hooks first, the transcript's lines after: the transcript's prompt
	// (the same one) titles it when its lines land.
	b.hook("claude-code", "t-2", "SessionStart", map[string]any{"source": "startup"})
	s = b.keyed("claude-code:t-2")
	b.appendOK(s.ID, turnStart(), ev("message/user", map[string]any{"text": "<command-name>/clear</command-name>", "source": "harness", "kind": "command"}))
	if got := b.session(s.ID); !got.Untitled {
		t.Fatalf("a harness line titled the session %q", got.Title)
	}
	b.appendOK(s.ID, userMsg("Review the migration"))
	if got := b.session(s.ID); got.Title != "Review the migration" || got.Untitled {
		t.Fatalf("the transcript's prompt left the title %q", got.Title)
	}
}

// A person's message/user through POST /events titles an untitled
// session; POST /sessions without a title reads from agent and project.
func testEventsPromptTitles(t *testing.T, b *bundle) {
	var s store.Session
	b.want(b.do("POST", "/sessions", map[string]any{"agent": "my-harness", "cwd": "/srv/shop/"}), http.StatusCreated, &s)
	if !s.Untitled || s.Title != "my-harness · shop · "+s.CreatedAt.UTC().Format("15:04")+" UTC" {
		t.Fatalf("an untitled session reads %q (untitled %v)", s.Title, s.Untitled)
	}
	b.appendOK(s.ID, turnStart(), userMsg("Ship the cart page"))
	if got := b.session(s.ID); got.Title != "Ship the cart page" || got.Untitled {
		t.Fatalf("a prompt through POST /events titled it %q", got.Title)
	}
}

func testRename(t *testing.T, b *bundle) {
	b.hook("codex", "r-1", "UserPromptSubmit", map[string]any{"turn_id": "t1", "prompt": "Plan the release"})
	s := b.keyed("codex:r-1")
	var got store.Session
	b.want(b.do("PATCH", "/sessions/"+s.ID, map[string]any{"title": "  Release 2.4  "}), http.StatusOK, &got)
	if got.Title != "Release 2.4" || got.Untitled || got.ID != s.ID {
		t.Fatalf("renamed %+v", got)
	}
	// Final: a later prompt leaves it, by any route.
	b.hook("codex", "r-1", "Stop", map[string]any{"turn_id": "t1"})
	b.hook("codex", "r-1", "UserPromptSubmit", map[string]any{"turn_id": "t2", "prompt": "Tag it"})
	if got = b.session(s.ID); got.Title != "Release 2.4" {
		t.Fatalf("a prompt after the rename retitled it %q", got.Title)
	}
	// An untitled session renamed stays so too.
	var u store.Session
	b.want(b.do("POST", "/sessions", nil), http.StatusCreated, &u)
	b.want(b.do("PATCH", "/sessions/"+u.ID, map[string]any{"title": "Named first"}), http.StatusOK, nil)
	b.appendOK(u.ID, turnStart(), userMsg("A prompt"))
	if got = b.session(u.ID); got.Title != "Named first" {
		t.Fatalf("a prompt after the rename of an untitled session retitled it %q", got.Title)
	}
	for _, bad := range []string{`{"title":"two\nlines"}`, `{"title":"evil \u202e txt"}`, `{"title":"bell\u0007"}`, `{"title":"   "}`, `{}`,
		`{"title":null}`, `{"title":"` + strings.Repeat("é", 201) + `"}`} {
		b.wantError(b.do("PATCH", "/sessions/"+s.ID, bad), http.StatusUnprocessableEntity, "invalid")
	}
	b.wantError(b.do("PATCH", "/sessions/"+s.ID, `{"title":"x","extra":1}`), http.StatusBadRequest, "invalid")
	b.wantError(b.do("PATCH", "/sessions/"+s.ID, `not json`), http.StatusBadRequest, "invalid")
	b.wantError(b.do("PATCH", "/sessions/ses_nosuchsession", map[string]any{"title": "x"}), http.StatusNotFound, "not_found")
	if got = b.session(s.ID); got.Title != "Release 2.4" {
		t.Fatalf("a refused rename changed the title to %q", got.Title)
	}
	// POST /sessions holds a title to the same rules.
	b.wantError(b.do("POST", "/sessions", `{"title":"evil \u202e txt"}`), http.StatusUnprocessableEntity, "invalid")
}

// A session whose agent started and ended without a word (`claude mcp
// list`) is in no list; one that said something is.
func testNoPhantomSessions(t *testing.T, b *bundle) {
	b.hook("claude-code", "mcp-list", "SessionStart", map[string]any{"source": "startup"})
	b.hook("claude-code", "mcp-list", "SessionEnd", map[string]any{"reason": "other"})
	quiet := b.keyed("claude-code:mcp-list")
	if b.listed(quiet.ID, "") || b.listed(quiet.ID, "?q=Claude") {
		t.Fatal("a session with only SessionStart and SessionEnd is listed")
	}
	if got := b.session(quiet.ID); got.State != projection.StateEnded {
		t.Fatalf("the quiet session is %s, want ended", got.State)
	}
	b.hook("claude-code", "busy", "SessionStart", map[string]any{"source": "startup"})
	busy := b.keyed("claude-code:busy")
	if b.listed(busy.ID, "") {
		t.Fatal("a session listed before its agent said anything")
	}
	b.hook("claude-code", "busy", "PreToolUse", map[string]any{"tool_name": "Bash", "tool_use_id": "tu1", "tool_input": map[string]any{"command": "ls"}})
	if !b.listed(busy.ID, "") {
		t.Fatal("a session with a tool call is not listed")
	}
	// A session a harness made itself is listed at once.
	id := b.newSession()
	if !b.listed(id, "") {
		t.Fatal("a session made through POST /sessions is not listed")
	}
}

// TestRenameReachesTheFeed: a rename reaches the owner's feed (GET /live)
// as a session message; an admin renames another's session, which its
// owner's feed hears of too, and bob's rename of it is not found.
func TestRenameReachesTheFeed(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			a := setupAuth(t, f.Open(t, projection.Config{}), 0, 0)
			alice := []string{"Authorization", "Bearer " + a.write}
			await := ownersFeed(t, a)
			next := func(title string) {
				t.Helper()
				await(title, func(s store.Session) bool { return s.Title == title })
			}
			a.want(a.do("PATCH", "/sessions/"+a.session, map[string]string{"title": "By alice"}, alice...), http.StatusOK, nil)
			next("By alice")
			a.want(a.do("PATCH", "/sessions/"+a.session, map[string]string{"title": "By the admin"}, "Authorization", "Bearer "+a.admin), http.StatusOK, nil)
			next("By the admin")
			a.wantError(a.do("PATCH", "/sessions/"+a.session, map[string]string{"title": "By bob"}, "Authorization", "Bearer "+a.other), http.StatusNotFound, "not_found")
			a.wantError(a.do("PATCH", "/sessions/"+a.session, map[string]string{"title": "Read"}, "Authorization", "Bearer "+a.read), http.StatusForbidden, "forbidden")
		})
	}
}
