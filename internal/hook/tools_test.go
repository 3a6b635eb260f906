package hook_test

import (
	"testing"

	"github.com/tack-dev/tack/internal/hook"
)

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
