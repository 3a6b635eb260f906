package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/transcript"
)

func TestHooks(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "Lifecycle", run: testHooksLifecycle},
		{name: "ContextBack", run: testHooksContextBack},
		{name: "BadInput", run: testHooksBadInput},
		{name: "HookFirst", run: func(t *testing.T, b *bundle) { testHooksDedup(t, b, true) }},
		{name: "TranscriptFirst", run: func(t *testing.T, b *bundle) { testHooksDedup(t, b, false) }},
		{name: "LiveEqualsImport", run: testHooksLiveEqualsImport},
		{name: "Subagent", run: testHooksSubagent},
		{name: "LateLines", run: testHooksLateLines},
		{name: "NativeDenied", run: testHooksNativeDenied},
		{name: "LateCall", run: testHooksLateCall},
		{name: "EarlyPreToolUse", run: testHooksEarlyPreToolUse},
		{name: "SplitMessage", run: testHooksSplitMessage},
		{name: "EarlyThenNotification", run: testHooksEarlyThenNotification},
		{name: "Stale", run: testHooksStale},
		{name: "Intro", run: testHooksIntro},
		{name: "CallsRemembered", run: testHooksCallsRemembered},
	})
}

// testHooksCallsRemembered: a PreToolUse keeps which session its call is
// of for an MCP tool's call alone, the only kind that reaches Tack's MCP
// server and asks.
func testHooksCallsRemembered(t *testing.T, b *bundle) {
	ctx := context.Background()
	b.hook("claude-code", "remember", "PreToolUse", map[string]any{"tool_name": "Bash", "tool_use_id": "toolu_bash", "tool_input": map[string]any{"command": "ls"}})
	b.hook("claude-code", "remember", "PreToolUse", map[string]any{"tool_name": "mcp__tack__todo_read", "tool_use_id": "toolu_mcp", "tool_input": map[string]any{}})
	sess := b.keyed("claude-code:remember")
	if id, err := b.store.CallSession(ctx, store.LocalPrincipal, "toolu_mcp"); err != nil || id != sess.ID {
		t.Errorf("the MCP call's session: %q %v, want %q", id, err, sess.ID)
	}
	if id, err := b.store.CallSession(ctx, store.LocalPrincipal, "toolu_bash"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Bash's call was kept: %q %v", id, err)
	}
}

type hookAnswer struct {
	HookSpecificOutput *struct {
		HookEventName            string `json:"hookEventName"`
		AdditionalContext        string `json:"additionalContext"`
		PermissionDecision       string `json:"permissionDecision"`
		PermissionDecisionReason string `json:"permissionDecisionReason"`
	} `json:"hookSpecificOutput"`
}

// hook sends one hook event of the session sid and returns the answer.
func (b *bundle) hook(agent, sid, event string, fields map[string]any, hdr ...string) hookAnswer {
	b.t.Helper()
	body := map[string]any{"session_id": sid, "hook_event_name": event, "cwd": "/work/app", "transcript_path": "/tmp/" + sid + ".jsonl"}
	for k, v := range fields {
		body[k] = v
	}
	var a hookAnswer
	b.want(b.do("POST", "/hooks/"+agent, body, hdr...), http.StatusOK, &a)
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
	if result["durationMs"] != float64(1234) || result["content"] != "ok" {
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
	// The model's tool is TodoWrite: the texts name it.
	due.Text = strings.Replace(due.Text, "with todo_write", "with TodoWrite", 1)
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
	again.Text = strings.Replace(again.Text, "with todo_write", "with TodoWrite", 1)
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
	// Tack-Lag: a count of calls, from a hook that syncs its transcript
	// itself; checked before anything is applied.
	pre := map[string]any{"session_id": "s6", "hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_use_id": "b1", "tool_input": map[string]any{}}
	for _, hdr := range [][]string{{"Tack-Lag", "0"}, {"Tack-Lag", "-1"}, {"Tack-Lag", "x"}, {"Tack-Lag", "257"},
		{"Tack-Lag", "1", "Tack-Read-Transcript", "read"}} {
		b.wantError(b.do("POST", "/hooks/claude-code", pre, hdr...), http.StatusBadRequest, "invalid")
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

// appendLines appends lines to the transcript at path, as the agent
// writes it (from any goroutine: it fails the test without stopping it).
func appendLines(t *testing.T, path string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Error(err)
		return
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := f.WriteString(l + "\n"); err != nil {
			t.Error(err)
			return
		}
	}
}

// sendHook sends one hook of Claude Code's session sid, whose transcript
// is at path, as `tack hook` sends it (the transcript first), and returns
// its answer.
func (b *bundle) sendHook(sid, path, event string, fields map[string]any) hookAnswer {
	b.t.Helper()
	body := map[string]any{"session_id": sid, "hook_event_name": event, "cwd": "/work/app", "transcript_path": path}
	for k, v := range fields {
		body[k] = v
	}
	raw, _ := json.Marshal(body)
	var a hookAnswer
	// Each hook resumes the transcript where the last left it, as `tack
	// hook` does from the user's cache folder.
	states := filepath.Join(filepath.Dir(path), ".tack-hooks")
	if out := hook.Send(context.Background(), hook.Client{Server: b.url, HTTP: b.client, StateDir: states}, "claude-code", bytes.NewReader(raw), 10*time.Second); len(out) > 0 {
		if err := json.Unmarshal(out, &a); err != nil {
			b.t.Fatalf("%s answered %s: %v", event, out, err)
		}
	}
	return a
}

// claudeLine is a line of Claude Code's transcript of session sid.
func claudeLine(sid, typ, uuid, prompt, message string) string {
	return fmt.Sprintf(`{"type":%q,"sessionId":%q,"uuid":%q,"promptId":%q,"cwd":"/work/app","timestamp":"2026-01-02T10:00:%02dZ","message":%s}`, typ, sid, uuid, prompt, len(uuid), message)
}

// testHooksLiveEqualsImport plays a Claude Code session as the agent runs
// it, each hook sent by `tack hook`'s own client while the transcript
// grows the way Claude Code writes it (the prompt after its
// UserPromptSubmit, the closing text after Stop), and requires the live
// session to read exactly as an import of the finished transcript into a
// session of its own: the same events, turns and texts in the same order.
func testHooksLiveEqualsImport(t *testing.T, b *bundle) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lv.jsonl")
	write := func(lines ...string) { appendLines(t, path, lines...) }
	send := func(event string, fields map[string]any) { b.sendHook("lv", path, event, fields) }
	line := func(typ, uuid, prompt string, message string) string {
		return claudeLine("lv", typ, uuid, prompt, message)
	}
	// Counted: the transcript's lines the hooks sent apart (POST
	// /sessions/{id}/events) and in their own requests, and the hooks
	// that asked the server to read the transcript itself.
	var apart, within, asked atomic.Int32
	next := b.client.Transport
	b.client = &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/events"):
			apart.Add(1)
		case r.Header.Get(transcript.AppendHeader) != "":
			within.Add(1)
		case r.Header.Get(hook.ReadHeader) == hook.ReadAsk:
			asked.Add(1)
		}
		return next.RoundTrip(r)
	})}
	send("SessionStart", map[string]any{"source": "startup"})
	for i, p := range []string{"p1", "p2"} {
		prompt := fmt.Sprintf("Prompt %d", i+1)
		tu := "tu" + p
		send("UserPromptSubmit", map[string]any{"prompt_id": p, "prompt": prompt})
		write(line("user", p+"a", p, fmt.Sprintf(`{"role":"user","content":%q}`, prompt)),
			line("assistant", p+"bb", p, `{"role":"assistant","content":[{"type":"text","text":"Let me look."}]}`),
			line("assistant", p+"ccc", p, fmt.Sprintf(`{"role":"assistant","content":[{"type":"tool_use","id":%q,"name":"Bash","input":{"command":"echo hello"}}]}`, tu)))
		send("PreToolUse", map[string]any{"prompt_id": p, "tool_name": "Bash", "tool_use_id": tu, "tool_input": map[string]any{"command": "echo hello"}})
		send("PostToolUse", map[string]any{"prompt_id": p, "tool_name": "Bash", "tool_use_id": tu, "tool_input": map[string]any{"command": "echo hello"},
			"tool_response": map[string]any{"stdout": "hello", "stderr": "", "interrupted": false, "isImage": false}})
		write(line("user", p+"dddd", p, fmt.Sprintf(`{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"hello"}]}`, tu)))
		closing := fmt.Sprintf("All done with %d.", i+1)
		send("Stop", map[string]any{"prompt_id": p, "stop_hook_active": false, "last_assistant_message": closing})
		write(line("assistant", p+"eeeee", p, fmt.Sprintf(`{"role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":"end_turn"}`, closing)))
	}
	send("SessionEnd", map[string]any{"reason": "exit"})
	sentApart, sentWithin, reads := apart.Load(), within.Load(), asked.Load()

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	oracle := filepath.Join(dir, "oracle.jsonl")
	if err := os.WriteFile(oracle, bytes.ReplaceAll(raw, []byte(`"sessionId":"lv"`), []byte(`"sessionId":"oracle"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := importer.Import(context.Background(), &importer.Client{Server: b.url, HTTP: b.client}, []string{oracle}, &out); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	shape := func(key string) []string {
		var got []string
		for _, ev := range b.events(b.keyed(key).ID) {
			got = append(got, fmt.Sprintf("%d %s %s", ev.Turn, ev.Type, ev.Data))
		}
		return got
	}
	live, imported := shape("claude-code:lv"), shape("claude-code:oracle")
	// The live session ended (SessionEnd); the import knows no end.
	if n := len(live); n == 0 || !strings.Contains(live[n-1], "session/end") {
		t.Fatalf("live log does not end with the session's end:\n%s", strings.Join(live, "\n"))
	}
	live = live[:len(live)-1]
	if strings.Join(live, "\n") != strings.Join(imported, "\n") {
		t.Errorf("live log\n%s\nimport\n%s", strings.Join(live, "\n"), strings.Join(imported, "\n"))
	}
	// The hooks come from the server's own machine and user: the first
	// (SessionStart, before the transcript is written) learns that the
	// server reads the transcript itself, and the nine after it ask it
	// to, sending none of its lines. (A hook that syncs the transcript
	// itself is internal/hook's TestSendLinesInHook.)
	if a, w, r := sentApart, sentWithin, reads; a != 0 || w != 0 || r != 9 {
		t.Errorf("lines sent apart %d times and within a hook %d times, %d hooks asked the server to read; want 0, 0 and 9", a, w, r)
	}
	// A watcher that starts afterwards (or restarts) reads the whole file
	// and finds every line held.
	before := b.keyed("claude-code:lv").LastSeq
	out.Reset()
	if err := importer.Import(context.Background(), &importer.Client{Server: b.url, HTTP: b.client}, []string{path}, &out); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	if after := b.keyed("claude-code:lv").LastSeq; after != before {
		t.Errorf("a late watcher moved the live log from %d to %d events", before, after)
	}
}

// testHooksSubagent: a subagent's hooks carry its parent's session id and
// its own agent_id; its calls are the child's alone, and its SubagentStop
// ends the child.
func testHooksSubagent(t *testing.T, b *bundle) {
	b.hook("claude-code", "sp", "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Explore"})
	b.hook("claude-code", "sp", "PreToolUse", map[string]any{"prompt_id": "p1", "agent_id": "a1", "tool_name": "Read", "tool_use_id": "r1", "tool_input": map[string]any{"file_path": "/a"}})
	b.hook("claude-code", "sp", "PostToolUse", map[string]any{"prompt_id": "p1", "agent_id": "a1", "tool_name": "Read", "tool_use_id": "r1", "tool_input": map[string]any{"file_path": "/a"},
		"tool_response": map[string]any{"type": "text", "file": map[string]any{"filePath": "/a", "content": "package a"}}})
	parent, child := b.keyed("claude-code:sp"), b.keyed("claude-code:sp/agent-a1")
	for _, ev := range b.events(parent.ID) {
		if ev.Type == "message/assistant" || ev.Type == "tool/result" {
			t.Errorf("the parent holds the subagent's %s %s", ev.Type, ev.Data)
		}
	}
	var result string
	for _, ev := range b.events(child.ID) {
		if ev.Type == "tool/result" {
			var d struct{ Content string }
			_ = json.Unmarshal(ev.Data, &d)
			result = d.Content
		}
	}
	if result != "package a" {
		t.Errorf("the child's Read result %q, want the text read", result)
	}
	b.hook("claude-code", "sp", "SubagentStop", map[string]any{"prompt_id": "p1", "agent_id": "a1", "agent_type": "Explore"})
	if child = b.session(child.ID); child.State != projection.StateEnded || child.ParentID == nil || *child.ParentID != parent.ID {
		t.Errorf("child after SubagentStop %+v", child)
	}
}

// testHooksNativeDenied: after a person's edit the model has not seen, the
// agent's own list call is denied with the rejection Tack's todo_write
// gives, so the model writes the list again with the change. A reminder
// that reached the model with a call counts as seen only from its next
// step: a list call of the same message is still denied.
func testHooksNativeDenied(t *testing.T, b *bundle) {
	// The transcript is sent before each hook (as `tack hook` does): the
	// test appends its calls as the transcript's.
	synced := []string{"Tack-Transcript", "synced"}
	args := map[string]any{"todos": []any{map[string]any{"content": "Write the test", "status": "in_progress", "activeForm": "Writing"}}}
	pre := func(id, tool string) hookAnswer {
		return b.hook("claude-code", "nd", "PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": tool, "tool_use_id": id, "tool_input": args}, synced...)
	}
	step := func(s string, calls ...string) {
		for _, c := range calls {
			name, id, _ := strings.Cut(c, ":")
			b.appendOK(s, map[string]any{"type": "message/assistant", "data": map[string]any{"text": "", "toolCalls": []any{map[string]any{"id": id, "name": name, "args": args}}}})
		}
	}
	b.hook("claude-code", "nd", "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Go"}, synced...)
	s := b.keyed("claude-code:nd")
	b.hook("claude-code", "nd", "PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "TodoWrite", "tool_use_id": "w1", "tool_input": args})
	edited := b.editOK(s.ID, b.todos(s.ID).Version, todo("Write the test", "completed"), todo("Ship it", "pending"))
	// One message: a Bash call and a TodoWrite. Bash's PreToolUse carries
	// the reminder...
	step(s.ID, "Bash:b1", "TodoWrite:w2")
	if a := pre("b1", "Bash"); a.HookSpecificOutput == nil || !strings.Contains(a.HookSpecificOutput.AdditionalContext, "changed by") {
		t.Fatalf("Bash's PreToolUse %+v, want the reminder", a)
	}
	// ... but the TodoWrite the model made beside it never saw it.
	a := pre("w2", "TodoWrite")
	want := "Error: the todo list was changed by local since you last read it (version 4 → " + fmt.Sprint(edited.Version) + "). It is now:\n[x] Write the test\n[ ] Ship it\nWrite the list again with their changes."
	if a.HookSpecificOutput == nil || a.HookSpecificOutput.PermissionDecision != "deny" || a.HookSpecificOutput.PermissionDecisionReason != want {
		t.Fatalf("TodoWrite's PreToolUse %+v, want denied with\n%s", a.HookSpecificOutput, want)
	}
	// Its next message has seen the list: its write goes through.
	step(s.ID, "TodoWrite:w3")
	if a := pre("w3", "TodoWrite"); a.HookSpecificOutput != nil {
		t.Fatalf("a later TodoWrite's PreToolUse %+v, want nothing", a.HookSpecificOutput)
	}
	// Tack's own tool rejects or takes its call itself.
	b.editOK(s.ID, b.todos(s.ID).Version, todo("Ship it", "pending"))
	step(s.ID, "mcp__tack__todo_write:m1")
	if a := pre("m1", "mcp__tack__todo_write"); a.HookSpecificOutput != nil {
		t.Fatalf("mcp__tack__todo_write's PreToolUse %+v, want nothing", a.HookSpecificOutput)
	}
}

// A lateTranscript is a Claude Code session whose transcript the test
// writes as Claude Code does, each hook sent by `tack hook`'s client.
type lateTranscript struct {
	t         *testing.T
	b         *bundle
	sid, path string
	n         int
}

func newLateTranscript(t *testing.T, b *bundle, sid string) *lateTranscript {
	l := &lateTranscript{t: t, b: b, sid: sid, path: filepath.Join(t.TempDir(), sid+".jsonl")}
	l.send("UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Go"})
	l.write(l.line("user", `{"role":"user","content":"Go"}`))
	return l
}

func (l *lateTranscript) send(event string, fields map[string]any) hookAnswer {
	return l.b.sendHook(l.sid, l.path, event, fields)
}

func (l *lateTranscript) write(lines ...string) { appendLines(l.t, l.path, lines...) }

func (l *lateTranscript) line(typ, message string) string {
	l.n++
	return claudeLine(l.sid, typ, fmt.Sprintf("%s%02d", typ, l.n), "p1", message)
}

// call is the transcript line of the model's call id of tool, the one
// block of a message of its own.
func (l *lateTranscript) call(tool, id string, input map[string]any) string {
	return l.callIn("msg_"+id, tool, id, input)
}

// callIn is the line of the call as a block of the model's message msg:
// Claude Code writes each block of a message as a line of its own, all
// with the message's id.
func (l *lateTranscript) callIn(msg, tool, id string, input map[string]any) string {
	raw, _ := json.Marshal(map[string]any{"id": msg, "role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": tool, "input": input}}})
	return l.line("assistant", string(raw))
}

func (l *lateTranscript) result(id, text string, isError bool) string {
	raw, _ := json.Marshal(map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": isError}}})
	return l.line("user", string(raw))
}

// pre is the call's PreToolUse, its line written first.
func (l *lateTranscript) pre(tool, id string, input map[string]any) hookAnswer {
	l.write(l.call(tool, id, input))
	return l.send("PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": tool, "tool_use_id": id, "tool_input": input})
}

// preLate is the call's PreToolUse with its line written while the hook
// runs, as Claude Code writes it at times.
func (l *lateTranscript) preLate(tool, id string, input map[string]any) hookAnswer {
	line := l.call(tool, id, input)
	written := make(chan struct{})
	time.AfterFunc(100*time.Millisecond, func() { l.write(line); close(written) })
	a := l.send("PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": tool, "tool_use_id": id, "tool_input": input})
	<-written
	return a
}

// done is the call's PostToolUse and its result's line.
func (l *lateTranscript) done(tool, id string, input map[string]any, response any, text string) {
	l.send("PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": tool, "tool_use_id": id, "tool_input": input, "tool_response": response})
	l.write(l.result(id, text, false))
}

// testHooksLateCall: Claude Code writes a call's transcript line lazily,
// at times after the call's PreToolUse hook has started. A list call the
// model makes after Tack showed it a person's edit (a denial of its
// previous list call, a reminder) is made having read it, and goes
// through even when its line comes late: the denied call's retry, and
// Tack's own todo_write.
func testHooksLateCall(t *testing.T, b *bundle) {
	todos := func(items ...map[string]any) map[string]any {
		for _, it := range items {
			it["activeForm"] = it["content"]
		}
		return map[string]any{"todos": items}
	}
	planned := func(sid string) (*lateTranscript, store.Session) {
		l := newLateTranscript(t, b, sid)
		plan := todos(todo("Write the test", "in_progress"))
		l.pre("TodoWrite", "w1", plan)
		l.done("TodoWrite", "w1", plan, map[string]any{"oldTodos": []any{}, "newTodos": plan["todos"]}, "Todos have been modified successfully.")
		s := b.keyed("claude-code:" + sid)
		b.editOK(s.ID, b.todos(s.ID).Version, todo("Write the test", "in_progress"), todo("Ship it", "pending"))
		return l, s
	}

	l, _ := planned("retry")
	a := l.pre("TodoWrite", "w2", todos(todo("Write the test", "completed")))
	if a.HookSpecificOutput == nil || a.HookSpecificOutput.PermissionDecision != "deny" {
		t.Fatalf("the list call after the edit: %+v, want denied", a.HookSpecificOutput)
	}
	l.write(l.result("w2", "PreToolUse:TodoWrite hook error: "+a.HookSpecificOutput.PermissionDecisionReason, true))
	if a := l.preLate("TodoWrite", "w3", todos(todo("Write the test", "completed"), todo("Ship it", "pending"))); a.HookSpecificOutput != nil && a.HookSpecificOutput.PermissionDecision == "deny" {
		t.Errorf("the retry, its line late: denied (%s)", a.HookSpecificOutput.PermissionDecisionReason)
	}

	l, s := planned("mcp")
	bash := map[string]any{"command": "ls"}
	if a := l.pre("Bash", "b1", bash); a.HookSpecificOutput == nil || !strings.Contains(a.HookSpecificOutput.AdditionalContext, "changed by") {
		t.Fatalf("Bash's PreToolUse after the edit: %+v, want the reminder", a.HookSpecificOutput)
	}
	l.done("Bash", "b1", bash, map[string]any{"stdout": "", "stderr": ""}, "")
	write := map[string]any{"todos": []any{todo("Write the test", "completed"), todo("Ship it", "pending")}}
	l.preLate("mcp__tack__todo_write", "m1", write)
	// Tack's MCP todo_write is the REST tool's.
	b.want(b.do("POST", "/sessions/"+s.ID+"/tools/todo_write", write), http.StatusOK, nil)
}

// testHooksEarlyPreToolUse: the server reads the transcript itself and
// answers a tool's PreToolUse without waiting for its call's line, unless
// the answer shows the model the list: then it waits for the line, so that
// the reminder is noted on steps that hold the call's message, and a list
// call of that same message, which never saw the reminder, is denied. The
// message's lines come while the PreToolUse runs, before or after the
// server first looks (rounds: either order).
func testHooksEarlyPreToolUse(t *testing.T, b *bundle) {
	todos := func(items ...map[string]any) map[string]any {
		for _, it := range items {
			it["activeForm"] = it["content"]
		}
		return map[string]any{"todos": items}
	}
	for round := range 4 {
		l := newLateTranscript(t, b, fmt.Sprintf("early%d", round))
		plan := todos(todo("Write the test", "in_progress"))
		l.pre("TodoWrite", "w1", plan)
		l.done("TodoWrite", "w1", plan, map[string]any{"oldTodos": []any{}, "newTodos": plan["todos"]}, "Todos have been modified successfully.")
		s := b.keyed(fmt.Sprintf("claude-code:early%d", round))
		b.editOK(s.ID, b.todos(s.ID).Version, todo("Write the test", "in_progress"), todo("Ship it", "pending"))
		// One message: a Bash call and a TodoWrite, its lines written
		// while Bash's PreToolUse runs.
		bash, write := map[string]any{"command": "ls"}, todos(todo("Write the test", "completed"))
		lines := []string{l.callIn("msg_b1", "Bash", "b1", bash), l.callIn("msg_b1", "TodoWrite", "w2", write)}
		written := make(chan struct{})
		time.AfterFunc(time.Duration(round)*10*time.Millisecond, func() { l.write(lines...); close(written) })
		a := l.send("PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "b1", "tool_input": bash})
		<-written
		if a.HookSpecificOutput == nil || !strings.Contains(a.HookSpecificOutput.AdditionalContext, "changed by") {
			t.Fatalf("round %d: Bash's PreToolUse %+v, want the reminder", round, a.HookSpecificOutput)
		}
		a = l.send("PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "TodoWrite", "tool_use_id": "w2", "tool_input": write})
		if a.HookSpecificOutput == nil || a.HookSpecificOutput.PermissionDecision != "deny" {
			t.Errorf("round %d: the TodoWrite of the reminder's message: %+v, want denied", round, a.HookSpecificOutput)
		}
	}
}

// testHooksSplitMessage: the model's message holds a Bash call and a
// TodoWrite, and Claude Code writes the TodoWrite's line only after
// Bash's PreToolUse read the transcript (it streams a message's blocks
// and starts a call before the next block is written). The reminder
// Bash's PreToolUse showed reached the model after that message, so the
// TodoWrite, a line later but no step later, never saw it and is denied;
// the next message has seen it.
func testHooksSplitMessage(t *testing.T, b *bundle) {
	todos := func(items ...map[string]any) map[string]any {
		for _, it := range items {
			it["activeForm"] = it["content"]
		}
		return map[string]any{"todos": items}
	}
	l := newLateTranscript(t, b, "split")
	plan := todos(todo("Write the test", "in_progress"))
	l.pre("TodoWrite", "w1", plan)
	l.done("TodoWrite", "w1", plan, map[string]any{"oldTodos": []any{}, "newTodos": plan["todos"]}, "Todos have been modified successfully.")
	s := b.keyed("claude-code:split")
	b.editOK(s.ID, b.todos(s.ID).Version, todo("Write the test", "in_progress"), todo("Ship it", "pending"))
	bash, write := map[string]any{"command": "ls"}, todos(todo("Write the test", "completed"))
	l.write(l.callIn("msg_2", "Bash", "b1", bash))
	a := l.send("PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "b1", "tool_input": bash})
	if a.HookSpecificOutput == nil || !strings.Contains(a.HookSpecificOutput.AdditionalContext, "changed by") {
		t.Fatalf("Bash's PreToolUse %+v, want the reminder", a.HookSpecificOutput)
	}
	l.write(l.callIn("msg_2", "TodoWrite", "w2", write))
	a = l.send("PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "TodoWrite", "tool_use_id": "w2", "tool_input": write})
	if a.HookSpecificOutput == nil || a.HookSpecificOutput.PermissionDecision != "deny" {
		t.Fatalf("the TodoWrite of the reminder's message, its line written after Bash's hook: %+v, want denied", a.HookSpecificOutput)
	}
	l.done("Bash", "b1", bash, map[string]any{"stdout": "", "stderr": ""}, "")
	l.write(l.result("w2", "PreToolUse:TodoWrite hook error: "+a.HookSpecificOutput.PermissionDecisionReason, true))
	if a := l.pre("TodoWrite", "w3", todos(todo("Write the test", "completed"), todo("Ship it", "pending"))); a.HookSpecificOutput != nil {
		t.Errorf("the next message's TodoWrite: %+v, want nothing", a.HookSpecificOutput)
	}
}

// testHooksEarlyThenNotification: a tool's PreToolUse answered before its
// call's line is in the transcript, then the permission prompt's
// Notification, with the line coming while it runs: the Notification
// waits for the line, so that the prompt is about that call, the latest
// in the log with no result.
func testHooksEarlyThenNotification(t *testing.T, b *bundle) {
	l := newLateTranscript(t, b, "en")
	ls := map[string]any{"command": "ls"}
	l.pre("Bash", "b0", ls)
	l.done("Bash", "b0", ls, map[string]any{"stdout": "", "stderr": ""}, "")
	rm := map[string]any{"command": "rm -rf build", "description": "Remove the build"}
	line := l.call("Bash", "b1", rm)
	l.send("PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "b1", "tool_input": rm})
	written := make(chan struct{})
	time.AfterFunc(30*time.Millisecond, func() { l.write(line); close(written) })
	l.send("Notification", map[string]any{"prompt_id": "p1", "notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash"})
	<-written
	s := b.session(b.keyed("claude-code:en").ID)
	if s.NeedsYou == nil || s.NeedsYou.Tool != "Bash" || s.NeedsYou.Input != "rm -rf build" {
		t.Errorf("after the permission prompt: needsYou %+v, want Bash's rm -rf build", s.NeedsYou)
	}
}

// testHooksStale: open items and -reminder-after assistant steps since the
// last list write: the next PreToolUse or PostToolUse carries the
// reminder, naming the model's tool, once per staleness.
func testHooksStale(t *testing.T, b *bundle) {
	b.hook("codex", "st", "UserPromptSubmit", map[string]any{"turn_id": "t1", "prompt": "Go"})
	b.hook("codex", "st", "PostToolUse", map[string]any{"turn_id": "t1", "tool_name": "update_plan", "tool_use_id": "c0", "tool_input": map[string]any{"plan": []any{map[string]any{"step": "Tag", "status": "in_progress"}}}, "tool_response": "Plan updated"})
	var reminders []string
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("c%d", i)
		a := b.hook("codex", "st", "PreToolUse", map[string]any{"turn_id": "t1", "tool_name": "Bash", "tool_use_id": id, "tool_input": map[string]any{}})
		if a.HookSpecificOutput != nil {
			reminders = append(reminders, fmt.Sprintf("%d: %s", i, a.HookSpecificOutput.AdditionalContext))
		}
	}
	v := b.todos(b.keyed("codex:st").ID).Version
	want := fmt.Sprintf("3: <system-reminder>\nYour todo list (version %d):\n[>] Tag\nKeep it current with update_plan: mark each item completed as soon as it is done.\n</system-reminder>", v)
	if len(reminders) != 1 || reminders[0] != want {
		t.Errorf("reminders %q, want once, at the third step:\n%s", reminders, want)
	}
}

// testHooksIntro: a connected agent with no list tool of its own is told
// of Tack's on SessionStart; one with its own tool, or hooks without Tack's
// MCP server (no plan choice), hear nothing.
func testHooksIntro(t *testing.T, b *bundle) {
	start := func(sid, query string, hdr ...string) string {
		body := map[string]any{"session_id": sid, "hook_event_name": "SessionStart", "source": "startup", "cwd": "/work/app"}
		var a hookAnswer
		b.want(b.do("POST", "/hooks/claude-code?"+query, body, hdr...), http.StatusOK, &a)
		if a.HookSpecificOutput == nil {
			return ""
		}
		return a.HookSpecificOutput.AdditionalContext
	}
	if got := start("i1", "plan=auto", "Tack-Todo-Tools", "none"); got != projection.IntroText || len(got) >= 400 {
		t.Errorf("no tool of its own: %q, want the introduction (under 400 characters)", got)
	}
	if got := start("i2", "plan=auto", "Tack-Todo-Tools", "native"); got != "" {
		t.Errorf("its own tool: %q", got)
	}
	if got := start("i3", "plan=always", "Tack-Todo-Tools", "native"); got != projection.IntroText {
		t.Errorf("plan always: %q", got)
	}
	if got := start("i4", "", "Tack-Todo-Tools", "none"); got != "" {
		t.Errorf("hooks without Tack's MCP server: %q", got)
	}
	// The introduction's session names Tack's tool in its reminders.
	b.hook("claude-code", "i1", "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Go"})
	s := b.keyed("claude-code:i1")
	b.editOK(s.ID, 0, todo("Plan", "pending"))
	if a := b.hook("claude-code", "i1", "PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "x1", "tool_input": map[string]any{}}); a.HookSpecificOutput == nil || !strings.Contains(a.HookSpecificOutput.AdditionalContext, "Keep it current with mcp__tack__todo_write") {
		t.Errorf("reminder %+v, want it to name mcp__tack__todo_write", a.HookSpecificOutput)
	}
}

// testHooksLateLines: lines a watcher reads after the hooks ended their
// turn and the session (the hook could not send them: Tack was away) join
// that turn: no turn of their own, and the session stays ended.
func testHooksLateLines(t *testing.T, b *bundle) {
	b.hook("claude-code", "late", "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Fix it"})
	b.hook("claude-code", "late", "Stop", map[string]any{"prompt_id": "p1"})
	b.hook("claude-code", "late", "SessionEnd", map[string]any{"reason": "exit"})
	path := filepath.Join(t.TempDir(), "late.jsonl")
	lines := strings.Join([]string{
		`{"type":"user","sessionId":"late","uuid":"u1","promptId":"p1","timestamp":"2026-01-02T10:00:00Z","message":{"role":"user","content":"Fix it"}}`,
		`{"type":"assistant","sessionId":"late","uuid":"u2","timestamp":"2026-01-02T10:00:01Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"user","sessionId":"late","uuid":"u3","promptId":"p1","timestamp":"2026-01-02T10:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a.go"}]}}`,
		`{"type":"assistant","sessionId":"late","uuid":"u4","timestamp":"2026-01-02T10:00:03Z","message":{"role":"assistant","content":[{"type":"text","text":"Fixed."}]}}`,
	}, "\n") + "\n"
	if err := os.WriteFile(path, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := importer.Import(context.Background(), &importer.Client{Server: b.url, HTTP: b.client}, []string{path}, &out); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	s := b.keyed("claude-code:late")
	var got []string
	for _, ev := range b.events(s.ID) {
		got = append(got, fmt.Sprintf("%d %s", ev.Turn, ev.Type))
	}
	want := "1 turn/start, 1 message/user, 1 turn/end, 0 session/end, 1 message/assistant, 1 tool/result, 1 message/assistant"
	if strings.Join(got, ", ") != want {
		t.Errorf("log %s\nwant %s", strings.Join(got, ", "), want)
	}
	if s.Turn.Number != 1 || s.Turn.Open || s.State != projection.StateEnded {
		t.Errorf("session after the late lines %+v, want turn 1 closed and ended", s)
	}
}

// roundTripper is a function as an http.RoundTripper.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
