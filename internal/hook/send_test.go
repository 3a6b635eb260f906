package hook_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

func payload(sid, event string) string {
	b, _ := json.Marshal(map[string]any{"session_id": sid, "hook_event_name": event, "cwd": "/w", "prompt_id": "p1", "prompt": "Go",
		"tool_name": "Bash", "tool_use_id": "tu-" + sid, "tool_input": map[string]any{"command": "ls"}})
	return string(b)
}

// TestSend: a hook reaches a real Tack, with the plan mode, and hands
// back its answer; when Tack is down, slow or refuses, nothing, and
// quickly.
func TestSend(t *testing.T) {
	t.Parallel()
	tack := api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler()
	plans := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case plans <- r.URL.Query().Get("plan"):
		default:
		}
		tack.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	c := hook.Client{Server: srv.URL, Plan: "always"}
	if got := hook.Send(ctx, c, "claude-code", strings.NewReader(payload("s1", "UserPromptSubmit")), time.Second); strings.TrimSpace(string(got)) != "{}" {
		t.Errorf("answer %q, want {}", got)
	}
	if got := <-plans; got != "always" {
		t.Errorf("plan %q reached the server, want always", got)
	}
	c.Plan = ""

	// Refused: a bad payload, a token the server does not know.
	if got := hook.Send(ctx, c, "claude-code", strings.NewReader(`{`), time.Second); got != nil {
		t.Errorf("bad payload answered %q", got)
	}
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":{}}`, http.StatusInternalServerError)
	}))
	t.Cleanup(refusing.Close)
	if got := hook.Send(ctx, hook.Client{Server: refusing.URL}, "claude-code", strings.NewReader(payload("s1", "Stop")), time.Second); got != nil {
		t.Errorf("a 500 answered %q", got)
	}

	// Down: nobody listens.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close()
	if got := hook.Send(ctx, hook.Client{Server: down}, "claude-code", strings.NewReader(payload("s1", "Stop")), time.Second); got != nil {
		t.Errorf("down answered %q", got)
	}

	// Slow: past the timeout, nothing, at the timeout.
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
		}
		w.Write([]byte(`{"hookSpecificOutput":{}}`))
	}))
	t.Cleanup(slow.Close)
	start := time.Now()
	if got := hook.Send(ctx, hook.Client{Server: slow.URL}, "claude-code", strings.NewReader(payload("s1", "Stop")), 100*time.Millisecond); got != nil {
		t.Errorf("slow answered %q", got)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("a slow server held the hook %s", d)
	}
}

// BenchmarkHookRoundTrip is a local hook's round trip, the way `tack
// hook` makes it: the payload to a real server on loopback (SQLite, the
// default store) and its answer back. It reports the p99.
func BenchmarkHookRoundTrip(b *testing.B) {
	srv := httptest.NewServer(api.New(storetest.SQLite(b, projection.Config{}), api.Options{}).Handler())
	b.Cleanup(srv.Close)
	c := hook.Client{Server: srv.URL}
	ctx := context.Background()
	if got := hook.Send(ctx, c, "claude-code", strings.NewReader(payload("bench", "UserPromptSubmit")), time.Second); got == nil {
		b.Fatal("no answer")
	}
	events := []string{"PreToolUse", "PostToolUse"}
	times := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		var p map[string]any
		_ = json.Unmarshal([]byte(payload("bench", events[i%2])), &p)
		p["tool_use_id"] = "tu" + string(rune('a'+i%26)) + strings.Repeat("x", i/26%50) + time.Now().Format("150405.000000000")
		raw, _ := json.Marshal(p)
		start := time.Now()
		if got := hook.Send(ctx, c, "claude-code", strings.NewReader(string(raw)), time.Second); got == nil {
			b.Fatal("no answer")
		}
		times = append(times, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(times)
	if len(times) > 0 {
		b.ReportMetric(float64(times[len(times)*99/100].Microseconds())/1000, "p99-ms")
		b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "p50-ms")
	}
}
