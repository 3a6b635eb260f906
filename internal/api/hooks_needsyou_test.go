package api_test

import (
	"net/url"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// TestHooksNeedsYou: a session waiting on its person says what for, from
// the hook that began the wait, on the session and in the list, and says
// nothing of it once the agent moves on.
func TestHooksNeedsYou(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{{name: "Reasons", run: testHooksNeedsYou}})
}

func testHooksNeedsYou(t *testing.T, b *bundle) {
	want := func(s store.Session, need *projection.NeedsYou) {
		t.Helper()
		if need == nil {
			if s.State == projection.StateNeedsYou || s.NeedsYou != nil {
				t.Fatalf("state %s, needsYou %+v: want neither", s.State, s.NeedsYou)
			}
			return
		}
		if s.State != projection.StateNeedsYou || s.NeedsYou == nil || *s.NeedsYou != *need {
			t.Fatalf("state %s, needsYou %+v: want needs_you for %+v", s.State, s.NeedsYou, *need)
		}
	}
	call := func(event, id, tool string, input map[string]any) {
		b.hook("claude-code", "n1", event, map[string]any{"prompt_id": "p1", "tool_name": tool, "tool_use_id": id, "tool_input": input, "tool_response": "done"})
	}

	// A permission prompt names no tool: it is about the latest call with
	// no result, here the second of two parallel calls, the first answered.
	b.hook("claude-code", "n1", "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Clean the build"})
	s := b.keyed("claude-code:n1")
	call("PreToolUse", "tu1", "Read", map[string]any{"file_path": "/work/app/Makefile"})
	call("PreToolUse", "tu2", "Bash", map[string]any{"command": "rm -rf build", "description": "Remove the build"})
	call("PostToolUse", "tu1", "Read", map[string]any{"file_path": "/work/app/Makefile"})
	b.hook("claude-code", "n1", "Notification", map[string]any{"prompt_id": "p1", "notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash"})
	perm := &projection.NeedsYou{Kind: "permission", Message: "Claude needs your permission to use Bash", Tool: "Bash", Input: "rm -rf build"}
	want(b.session(s.ID), perm)
	list := b.sessionsPage(url.Values{"q": {"Clean the build"}}).Sessions
	if len(list) != 1 {
		t.Fatalf("list %+v", list)
	}
	want(list[0], perm)
	call("PostToolUse", "tu2", "Bash", map[string]any{"command": "rm -rf build"})
	want(b.session(s.ID), nil)

	// A question: its own PreToolUse begins the wait, its result ends it.
	call("PreToolUse", "tu3", "AskUserQuestion", map[string]any{"questions": []any{map[string]any{
		"question": "Which target?", "header": "Target", "multiSelect": false,
		"options": []any{map[string]any{"label": "debug", "description": "fast"}, map[string]any{"label": "release", "description": "small"}}}}})
	want(b.session(s.ID), &projection.NeedsYou{Kind: "question", Message: "Which target?", Tool: "AskUserQuestion", Input: "debug · release"})
	call("PostToolUse", "tu3", "AskUserQuestion", map[string]any{})
	want(b.session(s.ID), nil)

	// A plan to approve: its first lines.
	call("PreToolUse", "tu4", "ExitPlanMode", map[string]any{"plan": "# Clean build\n\n1. Remove build/\n2. Rebuild\n3. Test\n4. Ship"})
	want(b.session(s.ID), &projection.NeedsYou{Kind: "plan", Message: "# Clean build\n1. Remove build/\n2. Rebuild", Tool: "ExitPlanMode"})
	// Any other tool's call asks nothing of the person.
	call("PostToolUse", "tu4", "ExitPlanMode", map[string]any{})
	call("PreToolUse", "tu5", "Bash", map[string]any{"command": "make"})
	want(b.session(s.ID), nil)

	// codex names the tool in its PermissionRequest; a command may be argv.
	b.hook("codex", "n2", "UserPromptSubmit", map[string]any{"turn_id": "t1", "prompt": "Tag the release"})
	b.hook("codex", "n2", "PermissionRequest", map[string]any{"turn_id": "t1", "tool_name": "shell", "tool_input": map[string]any{"command": []string{"git", "tag", "v1.2"}}})
	want(b.keyed("codex:n2"), &projection.NeedsYou{Kind: "permission", Message: "Asks permission to use shell", Tool: "shell", Input: "git tag v1.2"})
}
