package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestHookReadRefused: the server reads a hook's transcript only for a
// hook from its own machine (loopback) that shows its user's key; any
// other ask is refused with 409 and Tack-Read-Transcript: refused before
// anything of the hook is applied, and only a hook it would read for is
// told that it reads.
func TestHookReadRefused(t *testing.T) {
	t.Parallel()
	h := api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler()
	_, key, err := hook.ReadKey()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "rf.jsonl")
	if err := os.WriteFile(path, []byte(`{"type":"user","sessionId":"rf","uuid":"u1","promptId":"p1","cwd":"/w","timestamp":"2026-01-02T10:00:00Z","message":{"role":"user","content":"Hello"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]any{"session_id": "rf", "hook_event_name": "UserPromptSubmit", "cwd": "/w",
		"transcript_path": path, "prompt_id": "p1", "prompt": "Hello"})
	send := func(from, ask, key string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/hooks/claude-code", strings.NewReader(string(payload)))
		r.RemoteAddr = from
		r.Header.Set("Content-Type", "application/json")
		if ask != "" {
			r.Header.Set(hook.ReadHeader, ask)
			r.Header.Set(hook.KeyHeader, key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	sessions := func() int {
		r := httptest.NewRequest(http.MethodGet, "http://127.0.0.1/sessions", nil)
		r.RemoteAddr = "127.0.0.1:5000"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var page struct{ Sessions []json.RawMessage }
		if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil {
			t.Fatalf("GET /sessions: %d %s", w.Code, w.Body)
		}
		return len(page.Sessions)
	}
	for _, c := range []struct{ name, from, key string }{
		{"another machine, through a proxy on this one", "192.0.2.7:4000", key},
		{"a wrong key", "127.0.0.1:4000", strings.Repeat("0", len(key))},
		{"no key", "127.0.0.1:4000", ""},
	} {
		w := send(c.from, hook.ReadAsk, c.key)
		if w.Code != http.StatusConflict || w.Header().Get(hook.ReadHeader) != hook.ReadRefused {
			t.Errorf("%s: %d %s %q, want 409 refused", c.name, w.Code, w.Header().Get(hook.ReadHeader), w.Body)
		}
		if n := sessions(); n != 0 {
			t.Fatalf("%s: %d sessions after a refused hook, want none", c.name, n)
		}
	}
	if w := send("192.0.2.7:4000", "", ""); w.Code != http.StatusOK || w.Header().Get(hook.ReadHeader) != "" || w.Header().Get(hook.KeyFileHeader) != "" {
		t.Errorf("a hook from another machine: %d, told %q %q; want 200, told nothing", w.Code, w.Header().Get(hook.ReadHeader), w.Header().Get(hook.KeyFileHeader))
	}
	w := send("127.0.0.1:4000", hook.ReadAsk, key)
	if w.Code != http.StatusOK || w.Header().Get(hook.ReadHeader) != hook.ReadLocal {
		t.Fatalf("a hook of this machine with the key: %d %q %s", w.Code, w.Header().Get(hook.ReadHeader), w.Body)
	}
	if n := sessions(); n != 1 {
		t.Errorf("%d sessions after the hook read here, want 1", n)
	}
	// A prompt and a tool's hook that name no transcript, asking: nothing
	// to read, the hooks' own payloads mapped.
	for _, p := range []map[string]any{
		{"session_id": "bare", "hook_event_name": "UserPromptSubmit", "cwd": "/w", "prompt_id": "p1", "prompt": "Hello"},
		{"session_id": "bare", "hook_event_name": "PreToolUse", "cwd": "/w", "prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "tu1", "tool_input": map[string]any{"command": "ls"}},
	} {
		payload, _ = json.Marshal(p)
		if w := send("127.0.0.1:4000", hook.ReadAsk, key); w.Code != http.StatusOK || w.Header().Get(hook.ReadHeader) != hook.ReadLocal {
			t.Errorf("%s with no transcript, asking: %d %q %s", p["hook_event_name"], w.Code, w.Header().Get(hook.ReadHeader), w.Body)
		}
	}
}

// FuzzHookRead sends fuzzed hook payloads from this machine, asking the
// server to read the transcript with the user's key (or not): no hook
// panics or answers 5xx, and every refusal is the JSON error shape.
func FuzzHookRead(f *testing.F) {
	h := api.New(storetest.SQLite(f, projection.Config{}), api.Options{}).Handler()
	_, key, err := hook.ReadKey()
	if err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(f.TempDir(), "fz.jsonl")
	if err := os.WriteFile(path, []byte(`{"type":"user","sessionId":"fz","uuid":"u1","promptId":"p1","cwd":"/w","timestamp":"2026-01-02T10:00:00Z","message":{"role":"user","content":"Hello"}}`+"\n"+
		`{"type":"assistant","sessionId":"fz","uuid":"u2","promptId":"p1","cwd":"/w","timestamp":"2026-01-02T10:00:01Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"tu1","name":"Bash","input":{"command":"ls"}}]}}`+"\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	for _, p := range []map[string]any{
		{"session_id": "fz", "hook_event_name": "UserPromptSubmit", "cwd": "/w", "transcript_path": path, "prompt_id": "p1", "prompt": "Hello"},
		{"session_id": "fz", "hook_event_name": "PreToolUse", "cwd": "/w", "transcript_path": path, "prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "tu1", "tool_input": map[string]any{}},
		{"session_id": "fz", "hook_event_name": "PostToolUse", "cwd": "/w", "prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "tu2", "tool_input": map[string]any{}},
		{"session_id": "fz", "hook_event_name": "Notification", "cwd": "/w", "transcript_path": path, "message": "Claude needs your permission", "notification_type": "permission_prompt"},
		{"session_id": "fz", "hook_event_name": "Stop", "cwd": "/w", "transcript_path": path, "last_assistant_message": "Done."},
		{"session_id": "fz", "hook_event_name": "SubagentStop", "cwd": "/w", "transcript_path": path, "agent_id": "a1", "agent_transcript_path": path + ".x.jsonl"},
	} {
		raw, _ := json.Marshal(p)
		f.Add(raw, true)
		f.Add(raw, false)
	}
	f.Fuzz(func(t *testing.T, body []byte, ask bool) {
		r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/hooks/claude-code", bytes.NewReader(body))
		r.RemoteAddr = "127.0.0.1:4000"
		r.Header.Set("Content-Type", "application/json")
		if ask {
			r.Header.Set(hook.ReadHeader, hook.ReadAsk)
			r.Header.Set(hook.KeyHeader, key)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code >= 500 {
			t.Fatalf("%q = %d %s", body, w.Code, w.Body)
		}
		if w.Code >= 400 {
			var shape struct {
				Error *struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal(w.Body.Bytes(), &shape); err != nil || shape.Error == nil || shape.Error.Code == "" {
				t.Fatalf("%q = %d without the error shape: %s", body, w.Code, w.Body)
			}
		}
	})
}
