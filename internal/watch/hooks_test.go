package watch_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestWatchAfterHooks follows a transcript whose session its hooks wrote
// first, then a new line: every event once, and the new line's too.
func TestWatchAfterHooks(t *testing.T) {
	t.Parallel()
	client := serve(t, api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler())
	hook := func(body string) {
		t.Helper()
		var answer map[string]any
		if status, err := client.Call(context.Background(), http.MethodPost, "/hooks/claude-code", json.RawMessage(body), &answer); err != nil || status != http.StatusOK {
			t.Fatalf("hook %s: %d %v", body, status, err)
		}
	}
	hook(`{"session_id":"wh","hook_event_name":"UserPromptSubmit","prompt_id":"p1","prompt":"List the files"}`)
	hook(`{"session_id":"wh","hook_event_name":"PreToolUse","prompt_id":"p1","tool_name":"Bash","tool_use_id":"tu1","tool_input":{"command":"ls"}}`)
	hook(`{"session_id":"wh","hook_event_name":"PostToolUse","prompt_id":"p1","tool_name":"Bash","tool_use_id":"tu1","tool_input":{"command":"ls"},"tool_response":"a.go","duration_ms":5}`)

	dir := t.TempDir()
	path := filepath.Join(dir, "p", "wh.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	lines := []string{
		`{"type":"user","sessionId":"wh","uuid":"u1","promptId":"p1","timestamp":"2026-01-02T10:00:00Z","message":{"role":"user","content":"List the files"}}`,
		`{"type":"assistant","sessionId":"wh","uuid":"u2","timestamp":"2026-01-02T10:00:01Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"tu1","name":"Bash","input":{"command":"ls"}}]}}`,
		`{"type":"user","sessionId":"wh","uuid":"u3","timestamp":"2026-01-02T10:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu1","content":"a.go"}]}}`,
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var log storetest.LogBuffer
	startWatch(t, client, dir, &log)
	sess, err := client.OpenSession(context.Background(), importer.NewSession{ExternalKey: "claude-code:wh"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"assistant","sessionId":"wh","uuid":"u4","timestamp":"2026-01-02T10:00:03Z","message":{"role":"assistant","content":[{"type":"text","text":"One file."}],"stop_reason":"end_turn"}}` + "\n")
	f.Close()
	types := func() string {
		var out []string
		for _, ev := range stored(t, client, sess.ID) {
			out = append(out, ev.Type)
		}
		return strings.Join(out, " ")
	}
	want := "turn/start message/user message/assistant tool/result message/assistant turn/end"
	eventually.True(t, 5*time.Second, "the new line", func() bool { return types() == want }, func() string { return types() + "\n" + log.String() })
	// Nothing more from those lines: a later line's events come next, with
	// nothing stored twice before them.
	f, err = os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"user","sessionId":"wh","uuid":"u5","promptId":"p2","timestamp":"2026-01-02T10:00:04Z","message":{"role":"user","content":"Thanks"}}` + "\n")
	f.Close()
	want += " turn/start message/user"
	eventually.True(t, 5*time.Second, "the later line, and nothing before it", func() bool { return len(types()) >= len(want) }, func() string { return types() + "\n" + log.String() })
	if got := types(); got != want {
		t.Errorf("log %s, want %s", got, want)
	}
}
