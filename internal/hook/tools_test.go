package hook_test

import (
	"testing"

	"github.com/tack-dev/tack/internal/hook"
)

// TestModelHasTodoTools: Claude Code's models with a list tool of their
// own, as observed on Claude Code 2.1.328.
func TestModelHasTodoTools(t *testing.T) {
	t.Parallel()
	for model, want := range map[string]bool{
		"claude-sonnet-4-5": true, "claude-sonnet-4-5-20250929": true, "claude-3-5-sonnet-20241022": true, "claude-opus-4-1": true,
		"claude-opus-4-8": false, "claude-sonnet-5": false, "claude-opus-5": false, "opus": false, "": false,
	} {
		if got := hook.ModelHasTodoTools(model); got != want {
			t.Errorf("%q: %v, want %v", model, got, want)
		}
	}
}

// TestTodoTools: the environment decides where the process tree does not.
func TestTodoTools(t *testing.T) {
	t.Parallel()
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	if got := hook.TodoTools("claude-code", env(map[string]string{"CLAUDE_CODE_ENABLE_TODO_TOOLS": "1"})); got != "native" {
		t.Errorf("todo tools on: %s", got)
	}
	if got := hook.TodoTools("claude-code", env(map[string]string{"ANTHROPIC_MODEL": "claude-sonnet-4-5"})); got != "native" {
		t.Errorf("claude-sonnet-4-5: %s", got)
	}
	if got := hook.TodoTools("codex", env(map[string]string{"CODEX_HOME": t.TempDir()})); got != "none" {
		t.Errorf("codex without update_plan: %s", got)
	}
}
