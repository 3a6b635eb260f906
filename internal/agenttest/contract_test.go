package agenttest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The agent contract Tack's hooks stand on, checked against the CLIs with
// no Tack at all, so that a moved pin that breaks it fails here first: a
// command hook gets each event's JSON on stdin, with the agent's session id,
// and additionalContext from a PreToolUse hook is in the model's next
// request.

const hookContext = "A note from the PreToolUse hook."

// writeHookScript writes a command hook that keeps each event's JSON in
// dir and answers PreToolUse with hookContext.
func writeHookScript(t *testing.T, dir string) string {
	t.Helper()
	script := filepath.Join(dir, "hook.sh")
	body := `#!/bin/sh
in=$(cat)
n=$(printf %03d "$(ls "` + dir + `" | wc -l)")
printf '%s' "$in" > "` + dir + `/event-$n.json"
case "$in" in
*'"hook_event_name":"PreToolUse"'*) printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","additionalContext":"` + hookContext + `"}}' ;;
esac
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	return script
}

func hooksConfig(command string, events ...string) []byte {
	hooks := map[string]any{}
	for _, e := range events {
		hooks[e] = []any{map[string]any{"matcher": "*", "hooks": []any{map[string]any{"type": "command", "command": command}}}}
	}
	b, _ := json.Marshal(map[string]any{"hooks": hooks})
	return b
}

// hookEvents are the events the hook script kept, by hook_event_name,
// each checked to carry the agent's session id.
func hookEvents(t *testing.T, dir, sessionID string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "event-*.json"))
	var names []string
	for _, f := range files {
		b, _ := os.ReadFile(f)
		var e struct {
			Name      string `json:"hook_event_name"`
			SessionID string `json:"session_id"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			t.Errorf("%s: %v: %s", f, err, b)
		}
		if sessionID == "" || e.SessionID != sessionID {
			t.Errorf("hook %s: session_id %q, want the agent's %q", e.Name, e.SessionID, sessionID)
		}
		names = append(names, e.Name)
	}
	return names
}

// streamID is the session id the agent printed: Claude Code's init line's
// session_id, codex's thread.started thread_id.
func streamID(r run) string {
	for _, l := range r.Lines() {
		if id, ok := l["session_id"].(string); ok && l["type"] == "system" {
			return id
		}
		if id, ok := l["thread_id"].(string); ok && l["type"] == "thread.started" {
			return id
		}
	}
	return ""
}

func checkHookContract(t *testing.T, reqs []Request, events []string) {
	t.Helper()
	if len(reqs) != 2 {
		t.Fatalf("%d requests to the model, want 2", len(reqs))
	}
	if reqs[0].Contains(hookContext) || !reqs[1].Contains(hookContext) {
		t.Errorf("the PreToolUse hook's additionalContext is not (only) in the model's next request")
	}
	for _, want := range []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"} {
		if !strings.Contains(strings.Join(events, " "), want) {
			t.Errorf("hook events %v lack %s", events, want)
		}
	}
}

func TestClaudeHookContract(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	dir := t.TempDir()
	events := []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"}
	if err := os.MkdirAll(filepath.Join(u.Home, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(u.Home, ".claude", "settings.json"), hooksConfig(writeHookScript(t, dir), events...), 0o644); err != nil {
		t.Fatal(err)
	}
	m := NewAnthropic(t,
		Turn{Tools: []Call{{Name: "Bash", Input: map[string]any{"command": "echo hi", "description": "Say hi"}}}},
		Turn{Text: "Done."},
	)
	r := u.claude(t, m, "Say hi.")
	if r.Err != nil {
		t.Fatalf("claude: %v", r.Err)
	}
	got := hookEvents(t, dir, streamID(r))
	t.Logf("hook events: %v", got)
	checkHookContract(t, m.Scripted(), got)
}

func TestCodexHookContract(t *testing.T) {
	requireAgent(t, codexBinary())
	t.Parallel()
	u := newUser(t)
	dir := t.TempDir()
	events := []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionEnd"}
	if err := os.WriteFile(filepath.Join(u.CodexHome, "hooks.json"), hooksConfig(writeHookScript(t, dir), events...), 0o644); err != nil {
		t.Fatal(err)
	}
	m := NewResponses(t,
		Turn{Tools: []Call{{Name: "exec_command", Input: map[string]any{"cmd": "echo hi"}}}},
		Turn{Text: "Done."},
	)
	u.writeCodexConfig(t, m, "")
	r := u.codex(t, "Say hi.", "--dangerously-bypass-hook-trust")
	if r.Err != nil {
		t.Fatalf("codex: %v", r.Err)
	}
	got := hookEvents(t, dir, streamID(r))
	t.Logf("hook events: %v", got)
	checkHookContract(t, m.Scripted(), got)
}
