package hook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestSendEarly: a hook that syncs its transcript itself (a server
// elsewhere, or one that does not read it) lets a tool's PreToolUse go on
// without waiting for its call's line, which Claude Code writes after it
// starts the hook: it tells the server how many calls its lines lack. Yet
// what the server shows the model is counted on steps that hold those
// calls' messages (a reminder of a person's edit waits for them: the
// server answers "wait" and the hook sends again with the lines), a
// permission prompt is about the call it holds, a list call of the
// reminder's message is denied, and the live session reads as the
// transcript's import.
func TestSendEarly(t *testing.T) {
	t.Parallel()
	tack := api.New(storetest.SQLite(t, projection.Config{}), api.Options{NoTranscriptReads: true}).Handler()
	dir := t.TempDir()
	path := filepath.Join(dir, "ea.jsonl")
	var (
		mu     sync.Mutex
		lags   []string // the Tack-Lag of each hook request, and of its answer
		onWait func()   // run before an answer of "wait" goes back
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tack.ServeHTTP(w, r)
		if strings.HasPrefix(r.URL.Path, "/hooks/") {
			mu.Lock()
			defer mu.Unlock()
			lags = append(lags, r.Header.Get(hook.LagHeader)+">"+w.Header().Get(hook.LagHeader))
			if w.Header().Get(hook.LagHeader) == hook.LagWait && onWait != nil {
				onWait()
			}
		}
	}))
	t.Cleanup(srv.Close)
	took := func() []string {
		mu.Lock()
		defer mu.Unlock()
		got := lags
		lags = nil
		return got
	}
	c := hook.Client{Server: srv.URL, StateDir: filepath.Join(dir, "states")}
	write := func(lines ...string) { appendTo(t, path, lines...) }
	n := 0
	line := func(typ, message string) string {
		n++
		return transcriptLine("ea", typ, fmt.Sprintf("u%03d", n), "p1", message)
	}
	call := func(msg, id, tool string, input map[string]any) string {
		raw, _ := json.Marshal(map[string]any{"id": msg, "role": "assistant", "content": []any{map[string]any{"type": "tool_use", "id": id, "name": tool, "input": input}}})
		return line("assistant", string(raw))
	}
	result := func(id, text string, isError bool) string {
		raw, _ := json.Marshal(map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": text, "is_error": isError}}})
		return line("user", string(raw))
	}
	type answer struct {
		HookSpecificOutput *struct {
			AdditionalContext        string `json:"additionalContext"`
			PermissionDecision       string `json:"permissionDecision"`
			PermissionDecisionReason string `json:"permissionDecisionReason"`
		} `json:"hookSpecificOutput"`
	}
	send := func(event string, fields map[string]any) answer {
		t.Helper()
		fields["prompt_id"] = "p1"
		out := hook.Send(context.Background(), c, "claude-code", bytes.NewReader(hookPayload("ea", path, event, fields)), 10*time.Second)
		var a answer
		if err := json.Unmarshal(out, &a); err != nil {
			t.Fatalf("%s answered %q: %v", event, out, err)
		}
		return a
	}
	pre := func(id, tool string, input map[string]any) answer {
		return send("PreToolUse", map[string]any{"tool_name": tool, "tool_use_id": id, "tool_input": input})
	}
	post := func(id, tool string, input map[string]any) {
		send("PostToolUse", map[string]any{"tool_name": tool, "tool_use_id": id, "tool_input": input, "tool_response": map[string]any{"stdout": ""}})
	}
	ic := &importer.Client{Server: srv.URL}
	do := func(method, path string, body, v any) {
		t.Helper()
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, srv.URL+path, bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s %s: %s", method, path, resp.Status)
		}
		if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
			t.Fatal(err)
		}
	}

	send("UserPromptSubmit", map[string]any{"prompt": "Go"})
	write(line("user", `{"role":"user","content":"Go"}`))
	plan := map[string]any{"todos": []any{map[string]any{"content": "Write the test", "status": "in_progress", "activeForm": "Writing the test"}}}
	write(call("msg_1", "w1", "TodoWrite", plan))
	pre("w1", "TodoWrite", plan)
	write(result("w1", "Todos have been modified successfully.", false))
	post("w1", "TodoWrite", plan)
	if got := took(); strings.Join(got, " ") != ">early >early >early" {
		t.Errorf("the first hooks' Tack-Lag, sent>answered: %q, want none sent, each answered early", got)
	}

	// A Bash call answered before its line is written: nothing to show.
	ls := map[string]any{"command": "ls"}
	if a := pre("b1", "Bash", ls); a.HookSpecificOutput != nil {
		t.Errorf("Bash's PreToolUse: %+v, want nothing", a.HookSpecificOutput)
	}
	if got := took(); strings.Join(got, " ") != "1>early" {
		t.Errorf("Bash's PreToolUse, its line not written: Tack-Lag %q, want 1>early", got)
	}
	// Its permission prompt, the line coming while it waits: about b1.
	rm := map[string]any{"command": "rm -rf build"}
	time.AfterFunc(30*time.Millisecond, func() { write(call("msg_2", "b1", "Bash", rm)) })
	send("Notification", map[string]any{"notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash"})
	sess, err := ic.OpenSession(context.Background(), importer.NewSession{ExternalKey: "claude-code:ea"})
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		NeedsYou *struct{ Tool, Input string } `json:"needsYou"`
	}
	do("GET", "/sessions/"+sess.ID, nil, &s)
	if s.NeedsYou == nil || s.NeedsYou.Tool != "Bash" || s.NeedsYou.Input != "rm -rf build" {
		t.Errorf("the permission prompt after an early PreToolUse: needsYou %+v, want Bash's rm -rf build", s.NeedsYou)
	}
	write(result("b1", "", false))
	post("b1", "Bash", rm)
	took()

	// A person edits the list. The next call's PreToolUse, its line not
	// written, would show the model the edit: the server answers "wait",
	// the line is written then, and the hook sends again.
	var todos struct{ Version int64 }
	do("GET", "/sessions/"+sess.ID+"/todos", nil, &todos)
	do("PUT", "/sessions/"+sess.ID+"/todos", map[string]any{"baseVersion": todos.Version, "todos": []any{
		map[string]any{"content": "Write the test", "status": "in_progress"}, map[string]any{"content": "Ship it", "status": "pending"}}}, &todos)
	write2 := map[string]any{"todos": []any{map[string]any{"content": "Write the test", "status": "completed", "activeForm": "Writing the test"}}}
	mu.Lock()
	onWait = func() { write(call("msg_3", "b2", "Bash", ls)) }
	mu.Unlock()
	if a := pre("b2", "Bash", ls); a.HookSpecificOutput == nil || !strings.Contains(a.HookSpecificOutput.AdditionalContext, "changed by") {
		t.Fatalf("Bash's PreToolUse after the edit: %+v, want the reminder", a.HookSpecificOutput)
	}
	if got := took(); strings.Join(got, " ") != "1>wait >early" {
		t.Errorf("the PreToolUse that shows the edit: Tack-Lag %q, want 1>wait, then sent again with its line", got)
	}
	// The TodoWrite of that same message, its line written after Bash's
	// hook: it never saw the reminder.
	write(call("msg_3", "w2", "TodoWrite", write2))
	a := pre("w2", "TodoWrite", write2)
	if a.HookSpecificOutput == nil || a.HookSpecificOutput.PermissionDecision != "deny" {
		t.Fatalf("the TodoWrite of the reminder's message: %+v, want denied", a.HookSpecificOutput)
	}
	write(result("b2", "", false), result("w2", "PreToolUse:TodoWrite hook error: "+a.HookSpecificOutput.PermissionDecisionReason, true))
	post("b2", "Bash", ls)
	closing := "Both done."
	write(line("assistant", fmt.Sprintf(`{"id":"msg_4","role":"assistant","content":[{"type":"text","text":%q}],"stop_reason":"end_turn"}`, closing)))
	send("Stop", map[string]any{"stop_hook_active": false, "last_assistant_message": closing})

	checkLiveIsImport(t, srv.URL, path, "ea", closing)
}

// TestServerReadsLagAcrossInstances: two instances that read this user's
// transcripts (behind one address, or one restarted): a tool's
// PreToolUse answered by one before its call's line was written, then the
// permission prompt's Notification on the other, the line coming while it
// runs. The second waits for the line the first answered without, and the
// prompt is about that call: the record is the user's lag file, not one
// instance's memory.
func TestServerReadsLagAcrossInstances(t *testing.T) {
	t.Parallel()
	st := storetest.SQLite(t, projection.Config{})
	one, two := api.New(st, api.Options{}).Handler(), api.New(st, api.Options{}).Handler()
	var to sync.Mutex
	handler := one
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		to.Lock()
		h := handler
		to.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "li.jsonl")
	c := hook.Client{Server: srv.URL, StateDir: filepath.Join(dir, "states")}
	send := func(event string, fields map[string]any) { sendHook(t, c, "li", path, event, fields) }
	write := func(lines ...string) { appendTo(t, path, lines...) }
	send("UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Go"})
	write(transcriptLine("li", "user", "u1", "p1", `{"role":"user","content":"Go"}`))
	send("PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "b0", "tool_input": map[string]any{"command": "ls"}})
	// Answered from the transcript by the server: b0's line never came
	// before the answer.
	rm := map[string]any{"command": "rm -rf build"}
	send("PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "b1", "tool_input": rm})
	to.Lock()
	handler = two
	to.Unlock()
	time.AfterFunc(30*time.Millisecond, func() {
		write(transcriptLine("li", "assistant", "u2", "p1", `{"id":"msg_1","role":"assistant","content":[{"type":"tool_use","id":"b0","name":"Bash","input":{"command":"ls"}}]}`) +
			transcriptLine("li", "user", "u3", "p1", `{"role":"user","content":[{"type":"tool_result","tool_use_id":"b0","content":""}]}`) +
			transcriptLine("li", "assistant", "u4", "p1", `{"id":"msg_2","role":"assistant","content":[{"type":"tool_use","id":"b1","name":"Bash","input":{"command":"rm -rf build"}}]}`))
	})
	send("Notification", map[string]any{"prompt_id": "p1", "notification_type": "permission_prompt", "message": "Claude needs your permission to use Bash"})
	ic := &importer.Client{Server: srv.URL}
	sess, err := ic.OpenSession(context.Background(), importer.NewSession{ExternalKey: "claude-code:li"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/sessions/" + sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct {
		NeedsYou *struct{ Tool, Input string } `json:"needsYou"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	if s.NeedsYou == nil || s.NeedsYou.Tool != "Bash" || s.NeedsYou.Input != "rm -rf build" {
		t.Errorf("the permission prompt on the other instance: needsYou %+v, want Bash's rm -rf build", s.NeedsYou)
	}
}
