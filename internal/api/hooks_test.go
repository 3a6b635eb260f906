package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

func TestHooks(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "Lifecycle", run: testHooksLifecycle},
		{name: "ContextBack", run: testHooksContextBack},
		{name: "BadInput", run: testHooksBadInput},
		{name: "HookFirst", run: func(t *testing.T, b *bundle) { testHooksDedup(t, b, true) }},
		{name: "TranscriptFirst", run: func(t *testing.T, b *bundle) { testHooksDedup(t, b, false) }},
	})
}

type hookAnswer struct {
	HookSpecificOutput *struct {
		HookEventName     string `json:"hookEventName"`
		AdditionalContext string `json:"additionalContext"`
	} `json:"hookSpecificOutput"`
}

// hook sends one hook event of the session sid and returns the answer.
func (b *bundle) hook(agent, sid, event string, fields map[string]any) hookAnswer {
	b.t.Helper()
	body := map[string]any{"session_id": sid, "hook_event_name": event, "cwd": "/work/app", "transcript_path": "/tmp/" + sid + ".jsonl"}
	for k, v := range fields {
		body[k] = v
	}
	var a hookAnswer
	b.want(b.do("POST", "/hooks/"+agent, body), http.StatusOK, &a)
	return a
}

// keyed finds the session of an external key (it makes none when found).
func (b *bundle) keyed(key string) store.Session {
	b.t.Helper()
	var s store.Session
	b.want(b.do("POST", "/sessions", map[string]any{"externalKey": key}), http.StatusOK, &s)
	return s
}

func testHooksLifecycle(t *testing.T, b *bundle) {
	b.hook("claude-code", "s1", "SessionStart", map[string]any{"source": "startup"})
	s := b.keyed("claude-code:s1")
	if s.Agent == nil || *s.Agent != "claude-code" || s.Cwd == nil || *s.Cwd != "/work/app" || s.PlanLifetime != projection.PlanSession || !s.ParallelInProgress {
		t.Fatalf("session %+v", s)
	}
	b.hook("claude-code", "s1", "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Fix the flaky test"})
	if s = b.session(s.ID); !s.Turn.Open || s.State != projection.StateWorking {
		t.Fatalf("after the prompt: %+v", s)
	}
	b.hook("claude-code", "s1", "PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "tu1", "tool_input": map[string]any{"command": "go test"}})
	b.hook("claude-code", "s1", "Notification", map[string]any{"prompt_id": "p1", "notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash"})
	if s = b.session(s.ID); s.State != projection.StateNeedsYou {
		t.Fatalf("after a permission prompt: %s", s.State)
	}
	b.hook("claude-code", "s1", "PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "tu1", "tool_input": map[string]any{"command": "go test"}, "tool_response": map[string]any{"stdout": "ok"}, "duration_ms": 1234})
	if s = b.session(s.ID); s.State != projection.StateWorking {
		t.Fatalf("after the next event: %s", s.State)
	}
	b.hook("claude-code", "s1", "PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "TaskCreate", "tool_use_id": "tu2", "tool_input": map[string]any{"subject": "Reproduce", "description": "Run it ten times"}, "tool_response": "Task #1 created successfully: Reproduce"})
	b.hook("claude-code", "s1", "PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "TaskUpdate", "tool_use_id": "tu3", "tool_input": map[string]any{"taskId": "1", "status": "in_progress"}, "tool_response": "Updated task #1 status"})
	todos := b.todos(s.ID)
	if len(todos.Todos) != 1 || todos.Todos[0].Content != "Reproduce" || todos.Todos[0].Status != "in_progress" || todos.Todos[0].TaskID != "1" {
		t.Fatalf("list %+v", todos.Todos)
	}
	b.hook("claude-code", "s1", "Stop", map[string]any{"prompt_id": "p1", "stop_hook_active": false})
	b.hook("claude-code", "s1", "SubagentStop", map[string]any{"prompt_id": "p1", "agent_id": "a7", "agent_type": "Explore"})
	b.hook("claude-code", "s1", "SessionEnd", map[string]any{"prompt_id": "p1", "reason": "exit"})

	var types []string
	var result map[string]any
	for _, ev := range b.events(s.ID) {
		types = append(types, ev.Type)
		if ev.Type == "tool/result" && result == nil {
			_ = json.Unmarshal(ev.Data, &result)
		}
	}
	want := "turn/start message/user message/assistant tool/result message/assistant todo/write tool/result message/assistant todo/write tool/result turn/end session/end"
	if got := strings.Join(types, " "); got != want {
		t.Errorf("log\n%s\nwant\n%s", got, want)
	}
	if result["durationMs"] != float64(1234) || result["content"] != `{"stdout":"ok"}` {
		t.Errorf("result %v", result)
	}
	if s = b.session(s.ID); s.State != projection.StateEnded || s.Turn.EndReason != projection.EndCompleted {
		t.Errorf("after SessionEnd: %+v", s)
	}
	child := b.keyed("claude-code:s1/agent-a7")
	if child.ParentID == nil || *child.ParentID != s.ID || child.State != projection.StateEnded {
		t.Errorf("child %+v", child)
	}

	// A codex session, its first hook a prompt: made then, by its thread.
	b.hook("codex", "th1", "UserPromptSubmit", map[string]any{"turn_id": "t1", "prompt": "Plan the release\nplease"})
	c := b.keyed("codex:th1")
	if c.Title != "Plan the release" || c.Agent == nil || *c.Agent != "codex" || !c.Turn.Open {
		t.Errorf("codex session %+v", c)
	}
	b.hook("codex", "th1", "PostToolUse", map[string]any{"turn_id": "t1", "tool_name": "update_plan", "tool_use_id": "call_1", "tool_input": map[string]any{"plan": []any{map[string]any{"step": "Tag", "status": "in_progress"}}}, "tool_response": "Plan updated"})
	if got := b.todos(c.ID); len(got.Todos) != 1 || got.Todos[0].Content != "Tag" {
		t.Errorf("codex list %+v", got.Todos)
	}
}

func testHooksContextBack(t *testing.T, b *bundle) {
	b.hook("claude-code", "s2", "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Go"})
	s := b.keyed("claude-code:s2")
	if a := b.hook("claude-code", "s2", "PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "TodoWrite", "tool_use_id": "tu1",
		"tool_input": map[string]any{"todos": []any{map[string]any{"content": "Write the test", "status": "in_progress", "activeForm": "Writing the test"}}}}); a.HookSpecificOutput != nil {
		t.Fatalf("context before any edit: %+v", a)
	}
	todos := b.todos(s.ID)
	b.editOK(s.ID, todos.Version, todo("Write the test", "completed"), todo("Ship it", "pending"))
	var due projection.Reminder
	b.want(b.do("GET", "/sessions/"+s.ID+"/todos/reminder", nil), http.StatusOK, &due)
	if !due.Due || *due.Reason != projection.ReasonEdited {
		t.Fatalf("reminder %+v", due)
	}
	a := b.hook("claude-code", "s2", "PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "tu2", "tool_input": map[string]any{}})
	if a.HookSpecificOutput == nil || a.HookSpecificOutput.HookEventName != "PreToolUse" || a.HookSpecificOutput.AdditionalContext != due.Text {
		t.Fatalf("answer %+v, want the reminder %q", a, due.Text)
	}
	if !strings.Contains(due.Text, "changed by") {
		t.Errorf("reminder text %q names no editor", due.Text)
	}
	if a := b.hook("claude-code", "s2", "PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "tu2", "tool_input": map[string]any{}}); a.HookSpecificOutput != nil {
		t.Errorf("the reminder came twice: %+v", a)
	}
	// Events that cannot carry context answer nothing.
	if a := b.hook("claude-code", "s2", "Stop", map[string]any{"prompt_id": "p1"}); a.HookSpecificOutput != nil {
		t.Errorf("Stop answered %+v", a)
	}
	// A resume, and a compaction, give the plan again.
	var again projection.Reminder
	b.want(b.do("GET", "/sessions/"+s.ID+"/todos/reminder?reason=compaction", nil), http.StatusOK, &again)
	if a := b.hook("claude-code", "s2", "SessionStart", map[string]any{"source": "resume"}); a.HookSpecificOutput == nil || a.HookSpecificOutput.AdditionalContext != again.Text {
		t.Errorf("resume answered %+v, want %q", a, again.Text)
	}
	if a := b.hook("claude-code", "s2", "SessionStart", map[string]any{"source": "startup"}); a.HookSpecificOutput != nil {
		t.Errorf("startup answered %+v", a)
	}
	b.hook("claude-code", "s2", "PreCompact", map[string]any{"trigger": "auto"})
	if a := b.hook("claude-code", "s2", "UserPromptSubmit", map[string]any{"prompt_id": "p2", "prompt": "Go on"}); a.HookSpecificOutput == nil || a.HookSpecificOutput.AdditionalContext != again.Text {
		t.Errorf("after PreCompact: %+v, want %q", a, again.Text)
	}
}

func testHooksBadInput(t *testing.T, b *bundle) {
	for _, body := range []string{`{`, `[]`, `"x"`, `{}`, `{"session_id":"s"}`, `{"hook_event_name":"Stop"}`,
		`{"session_id":1,"hook_event_name":"Stop"}`, `{"session_id":"s","hook_event_name":"Stop","duration_ms":"x"}`,
		`{"session_id":"s","session_id":"t","hook_event_name":"Stop"}`, `{"session_id":"` + strings.Repeat("x", 101) + `","hook_event_name":"Stop"}`,
		`{"session_id":"s\u0000","hook_event_name":"Stop"}`} {
		b.wantError(b.do("POST", "/hooks/claude-code", body), http.StatusBadRequest, "invalid")
	}
	// The plan mode tack connect recorded: one of three, or none.
	stop := map[string]any{"session_id": "s5", "hook_event_name": "Stop"}
	for _, plan := range []string{"sometimes", "AUTO", "auto,off"} {
		b.wantError(b.do("POST", "/hooks/codex?plan="+plan, stop), http.StatusBadRequest, "invalid")
	}
	var list struct{ Sessions []store.Session }
	b.want(b.do("GET", "/sessions", nil), http.StatusOK, &list)
	if len(list.Sessions) != 0 {
		t.Errorf("bad hooks made %d sessions", len(list.Sessions))
	}
	// A list write Tack refuses is left out; the call and its result stay.
	b.hook("claude-code", "s4", "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Go"})
	b.hook("claude-code", "s4", "PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "TodoWrite", "tool_use_id": "tu1",
		"tool_input": map[string]any{"todos": []any{map[string]any{"content": " ", "status": "pending", "activeForm": "x"}}}})
	var types []string
	for _, ev := range b.events(b.keyed("claude-code:s4").ID) {
		types = append(types, ev.Type)
	}
	if got := strings.Join(types, " "); got != "turn/start message/user message/assistant tool/result" {
		t.Errorf("log %s", got)
	}
	for _, plan := range []string{"auto", "always", "off"} {
		b.want(b.do("POST", "/hooks/codex?plan="+plan, stop), http.StatusOK, nil)
	}
	// An event Tack does not map finds the session and adds nothing.
	b.hook("claude-code", "s3", "SomethingNew", nil)
	if s := b.keyed("claude-code:s3"); s.LastSeq != 0 {
		t.Errorf("an unknown event appended: %+v", s)
	}
}

// A Claude Code session's transcript, and the hooks of the same session.
var (
	dedupTranscript = strings.Join([]string{
		`{"type":"user","sessionId":"sd","uuid":"u1","promptId":"p1","cwd":"/work/app","timestamp":"2026-01-02T10:00:00Z","message":{"role":"user","content":"Fix the bug"}}`,
		`{"type":"assistant","sessionId":"sd","uuid":"u2","timestamp":"2026-01-02T10:00:01Z","message":{"role":"assistant","content":[{"type":"text","text":"Looking"},{"type":"tool_use","id":"tu1","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"user","sessionId":"sd","uuid":"u3","timestamp":"2026-01-02T10:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"a.go"}]}}`,
		`{"type":"assistant","sessionId":"sd","uuid":"u4","timestamp":"2026-01-02T10:00:03Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"tu2","name":"TodoWrite","input":{"todos":[{"content":"Fix","status":"in_progress","activeForm":"Fixing"}]}}]}}`,
		`{"type":"user","sessionId":"sd","uuid":"u5","timestamp":"2026-01-02T10:00:04Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu2","content":"Todos have been modified successfully"}]}}`,
		`{"type":"assistant","sessionId":"sd","uuid":"u6","timestamp":"2026-01-02T10:00:05Z","message":{"role":"assistant","content":[{"type":"text","text":"Done"}],"stop_reason":"end_turn"}}`,
	}, "\n") + "\n"
	dedupHooks = []struct {
		event  string
		fields map[string]any
	}{
		{"SessionStart", map[string]any{"source": "startup"}},
		{"UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Fix the bug"}},
		{"PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "tu1", "tool_input": map[string]any{"command": "ls"}}},
		{"PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "tu1", "tool_input": map[string]any{"command": "ls"}, "tool_response": map[string]any{"stdout": "a.go"}, "duration_ms": 12}},
		{"PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "TodoWrite", "tool_use_id": "tu2", "tool_input": map[string]any{"todos": []any{map[string]any{"content": "Fix", "status": "in_progress", "activeForm": "Fixing"}}}}},
		{"PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "TodoWrite", "tool_use_id": "tu2", "tool_input": map[string]any{"todos": []any{map[string]any{"content": "Fix", "status": "in_progress", "activeForm": "Fixing"}}}, "tool_response": map[string]any{}}},
		{"Stop", map[string]any{"prompt_id": "p1", "stop_hook_active": false}},
	}
)

// testHooksDedup: the same session by hooks and by its transcript, in
// either order, stores each event once, and importing again stores nothing.
func testHooksDedup(t *testing.T, b *bundle, hookFirst bool) {
	path := filepath.Join(t.TempDir(), "sd.jsonl")
	if err := os.WriteFile(path, []byte(dedupTranscript), 0o644); err != nil {
		t.Fatal(err)
	}
	c := &importer.Client{Server: b.url, HTTP: b.client}
	imp := func() {
		var out bytes.Buffer
		if err := importer.Import(context.Background(), c, []string{path}, &out); err != nil {
			t.Fatalf("import: %v\n%s", err, out.String())
		}
	}
	hooks := func() {
		for _, h := range dedupHooks {
			b.hook("claude-code", "sd", h.event, h.fields)
		}
	}
	if hookFirst {
		hooks()
		imp()
	} else {
		imp()
		hooks()
	}
	s := b.keyed("claude-code:sd")
	count := map[string]int{}
	var users, texts []string
	for _, ev := range b.events(s.ID) {
		count[ev.Type]++
		var d struct {
			Text      string
			CallID    string
			ToolCalls []projection.ToolCall
		}
		_ = json.Unmarshal(ev.Data, &d)
		switch ev.Type {
		case "message/user":
			users = append(users, d.Text)
		case "message/assistant":
			for _, c := range d.ToolCalls {
				count["call "+c.ID]++
			}
			if d.Text != "" {
				texts = append(texts, d.Text)
			}
		case "tool/result":
			count["result "+d.CallID]++
		}
	}
	for k, want := range map[string]int{"message/user": 1, "todo/write": 1, "tool/result": 2, "call tu1": 1, "call tu2": 1, "result tu1": 1, "result tu2": 1} {
		if count[k] != want {
			t.Errorf("%s ×%d, want %d (log %v)", k, count[k], want, count)
		}
	}
	if len(users) != 1 || users[0] != "Fix the bug" || !strings.Contains(strings.Join(texts, "|"), "Done") {
		t.Errorf("prompts %q, texts %q", users, texts)
	}
	if s.Turn.Open {
		t.Errorf("the turn is left open: %+v", s)
	}
	before := s.LastSeq
	imp()
	hooks()
	if s = b.session(s.ID); s.LastSeq != before {
		t.Errorf("a second import and hooks moved lastSeq %d -> %d", before, s.LastSeq)
	}
}
