package api_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

func TestProposedPlan(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{{name: "HookEqualsTranscript", run: testProposedPlanRoutes}, {name: "Goal", run: testGoalRoutes}})
}

// proposalPlan is the plan both routes carry: Claude Code's ExitPlanMode
// input holds it (read from the plan file), and so does its result.
const proposalPlan = "# Fix the bug\n\nContext first.\n\n1. Reproduce it\n2. Fix the parser\n3. Run the tests\n"

// testProposedPlanRoutes: an approved ExitPlanMode call makes the same
// list, by "plan", whether the session is heard by hooks alone or read
// from its transcript; a rejected one makes none. Only the session heard
// by hooks is hooked.
func testProposedPlanRoutes(t *testing.T, b *bundle) {
	result := map[string]any{"plan": proposalPlan, "isAgent": false, "filePath": "/root/.claude/plans/p.md"}
	// By hooks alone (no transcript).
	hooks := []struct {
		event  string
		fields map[string]any
	}{
		{"UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Plan the fix"}},
		{"PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "ExitPlanMode", "tool_use_id": "tu0", "tool_input": map[string]any{"plan": "1. Rejected step"}}},
		{"PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "ExitPlanMode", "tool_use_id": "tu1", "tool_input": map[string]any{}}},
		{"PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "ExitPlanMode", "tool_use_id": "tu1", "tool_input": map[string]any{}, "tool_response": result}},
		{"Stop", map[string]any{"prompt_id": "p1"}},
	}
	for _, h := range hooks {
		b.hook("claude-code", "sp-hook", h.event, h.fields)
	}
	byHook := b.keyed("claude-code:sp-hook")

	// By its transcript: the rejected call's result is an error.
	lines := []string{
		`{"type":"user","sessionId":"sp-file","uuid":"u1","promptId":"p1","cwd":"/work/app","timestamp":"2026-01-02T10:00:00Z","message":{"role":"user","content":"Plan the fix"}}`,
		`{"type":"assistant","sessionId":"sp-file","uuid":"u2","timestamp":"2026-01-02T10:00:01Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"tu0","name":"ExitPlanMode","input":{"plan":"1. Rejected step"}}]}}`,
		`{"type":"user","sessionId":"sp-file","uuid":"u3","timestamp":"2026-01-02T10:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu0","is_error":true,"content":"The user doesn't want to proceed with this tool use."}]}}`,
		fmt.Sprintf(`{"type":"assistant","sessionId":"sp-file","uuid":"u4","timestamp":"2026-01-02T10:00:03Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"tu1","name":"ExitPlanMode","input":{"plan":%q,"planFilePath":"/root/.claude/plans/p.md"}}]}}`, proposalPlan),
		fmt.Sprintf(`{"type":"user","sessionId":"sp-file","uuid":"u5","timestamp":"2026-01-02T10:00:04Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"User has approved your plan."}]},"toolUseResult":{"plan":%q,"isAgent":false}}`, proposalPlan),
		`{"type":"assistant","sessionId":"sp-file","uuid":"u6","timestamp":"2026-01-02T10:00:05Z","message":{"role":"assistant","content":[{"type":"text","text":"On it"}],"stop_reason":"end_turn"}}`,
	}
	path := filepath.Join(t.TempDir(), "sp-file.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := importer.Import(context.Background(), &importer.Client{Server: b.url, HTTP: b.client}, []string{path}, &out); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	byFile := b.keyed("claude-code:sp-file")

	if !byHook.Hooked || byFile.Hooked {
		t.Errorf("hooked: by hooks %v, by its transcript %v", byHook.Hooked, byFile.Hooked)
	}
	want := []string{"Reproduce it pending", "Fix the parser pending", "Run the tests pending"}
	for name, id := range map[string]string{"hooks": byHook.ID, "transcript": byFile.ID} {
		var got []string
		for _, it := range b.todos(id).Todos {
			got = append(got, it.Content+" "+it.Status)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: list %q, want %q", name, got, want)
		}
		var page struct{ Versions []projection.Version }
		b.want(b.do("GET", "/sessions/"+id+"/todos/history", nil), http.StatusOK, &page)
		if len(page.Versions) != 1 || page.Versions[0].By != projection.PlanAuthor {
			t.Errorf("%s: history %+v, want one version by plan", name, page.Versions)
		}
	}
}

// testGoalRoutes: Claude Code's /goal sets the same goal whether a hook's
// prompt or the transcript's command line brings it, and /goal clear ends
// it; the session's goal is in its reads and outlives a resume.
func testGoalRoutes(t *testing.T, b *bundle) {
	b.hook("claude-code", "sg-hook", "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "/goal All tests pass"})
	b.hook("claude-code", "sg-hook", "Stop", map[string]any{"prompt_id": "p1"})
	byHook := b.keyed("claude-code:sg-hook")

	lines := []string{
		`{"type":"user","sessionId":"sg-file","uuid":"u1","promptId":"p1","cwd":"/work/app","timestamp":"2026-01-02T10:00:00Z","message":{"role":"user","content":"<command-name>/goal</command-name>\n<command-message>goal</command-message>\n<command-args>All tests pass</command-args>"}}`,
		`{"type":"assistant","sessionId":"sg-file","uuid":"u2","timestamp":"2026-01-02T10:00:01Z","message":{"role":"assistant","content":[{"type":"text","text":"Working on it"}],"stop_reason":"end_turn"}}`,
	}
	path := filepath.Join(t.TempDir(), "sg-file.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := importer.Import(context.Background(), &importer.Client{Server: b.url, HTTP: b.client}, []string{path}, &out); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	byFile := b.keyed("claude-code:sg-file")
	for name, s := range map[string]store.Session{"hooks": b.session(byHook.ID), "transcript": b.session(byFile.ID)} {
		if g := s.Goal; g == nil || g.Text != "All tests pass" || g.Status != projection.GoalActive || g.By != projection.GoalByUser {
			t.Errorf("%s: goal %+v", name, g)
		}
	}
	// Resumed, and cleared.
	b.hook("claude-code", "sg-hook", "SessionStart", map[string]any{"source": "resume"})
	if g := b.session(byHook.ID).Goal; g == nil || g.Status != projection.GoalActive {
		t.Errorf("after a resume: %+v", g)
	}
	b.hook("claude-code", "sg-hook", "UserPromptSubmit", map[string]any{"prompt_id": "p2", "prompt": "/goal clear"})
	if g := b.session(byHook.ID).Goal; g == nil || g.Status != projection.GoalCleared {
		t.Errorf("after /goal clear: %+v", g)
	}
}
