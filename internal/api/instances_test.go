package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestHooksAcrossInstances: two instances on one database, each request of
// one agent's run served by either, as a round-robin balancer sends them.
// What a hook needs of an earlier one (the reminder it already gave, the
// compaction it heard of, the session of a tool call its PreToolUse told
// of) is in the store, not in the instance that heard it.
func TestHooksAcrossInstances(t *testing.T) {
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			st := f.Open(t, projection.Config{})
			a, b := setup(t, st, api.Options{}), setup(t, st, api.Options{})

			a.hook("claude-code", "lb", "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Go"})
			s := a.keyed("claude-code:lb")
			b.hook("claude-code", "lb", "PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "TodoWrite", "tool_use_id": "tu1",
				"tool_input": map[string]any{"todos": []any{map[string]any{"content": "Write the test", "status": "in_progress", "activeForm": "Writing the test"}}}})
			a.editOK(s.ID, a.todos(s.ID).Version, todo("Write the test", "completed"), todo("Ship it", "pending"))
			var due projection.Reminder
			a.want(a.do("GET", "/sessions/"+s.ID+"/todos/reminder", nil), http.StatusOK, &due)
			due.Text = strings.Replace(due.Text, "with todo_write", "with TodoWrite", 1)
			if r := b.hook("claude-code", "lb", "PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "tu2", "tool_input": map[string]any{}}); r.HookSpecificOutput == nil || r.HookSpecificOutput.AdditionalContext != due.Text {
				t.Fatalf("answer %+v, want the reminder %q", r, due.Text)
			}
			// The other instance knows the model was shown it.
			if r := a.hook("claude-code", "lb", "PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "tu2", "tool_input": map[string]any{}}); r.HookSpecificOutput != nil {
				t.Errorf("the reminder came twice, once from each instance: %+v", r)
			}
			// A compaction heard by one gives the plan again through the other.
			var again projection.Reminder
			a.want(a.do("GET", "/sessions/"+s.ID+"/todos/reminder?reason=compaction", nil), http.StatusOK, &again)
			again.Text = strings.Replace(again.Text, "with todo_write", "with TodoWrite", 1)
			a.hook("claude-code", "lb", "PreCompact", map[string]any{"trigger": "auto"})
			if r := b.hook("claude-code", "lb", "UserPromptSubmit", map[string]any{"prompt_id": "p2", "prompt": "Go on"}); r.HookSpecificOutput == nil || r.HookSpecificOutput.AdditionalContext != again.Text {
				t.Errorf("after PreCompact on the other instance: %+v, want %q", r, again.Text)
			}
			if r := a.hook("claude-code", "lb", "UserPromptSubmit", map[string]any{"prompt_id": "p3", "prompt": "And on"}); r.HookSpecificOutput != nil {
				t.Errorf("a compaction's plan came twice: %+v", r)
			}
			// Claude Code's MCP call lands where its PreToolUse, served by
			// the other instance, said.
			a.hook("claude-code", "lb", "PreToolUse", map[string]any{"prompt_id": "p3", "tool_name": "mcp__tack__todo_write", "tool_use_id": "toolu_lb", "tool_input": map[string]any{}})
			cs, _ := b.mcpClient("/mcp", "")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// The model reads the list a person changed, then writes it.
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"claudecode/toolUseId": "toolu_lb"}, Name: "todo_read", Arguments: json.RawMessage(`{}`)}); err != nil || res.IsError {
				t.Fatalf("todo_read: %v %v", res, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"claudecode/toolUseId": "toolu_lb"}, Name: "todo_write",
				Arguments: json.RawMessage(`{"todos":[{"content":"Through the other instance","status":"in_progress"}]}`)})
			if err != nil {
				t.Fatalf("todo_write: %v", err)
			}
			if res.IsError {
				t.Fatalf("todo_write: %s", text(t, res))
			}
			if td := a.todos(s.ID); len(td.Todos) != 1 || td.Todos[0].Content != "Through the other instance" {
				t.Errorf("the session lists %+v", td.Todos)
			}
		})
	}
}
