package transcript_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/go-chi/chi/v5"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/transcript"
	"github.com/tack-dev/tack/web"
)

// TestAFileIsAnAgent: an agent is one file. The tests' own agent
// (export_test.go) is registered as claudecode.go and codex.go register
// theirs, and nothing else of Tack names it; yet the server serves its
// hooks and its list tool, which the contract describes and the UI's page
// tells the browser of, projection derives list writes from its
// tool's calls and titles its sessions by its name, and `tack connect`
// writes its hooks, under its own names, and Tack's MCP server into its
// settings.
func TestAFileIsAnAgent(t *testing.T) {
	t.Parallel()
	a := transcript.Lookup(string(transcript.FakeAgent))
	if a == nil {
		t.Fatal("the fake agent is not registered")
	}

	// The server's routes: its hooks and its list tool.
	routes, ok := api.New(nil, api.Options{Metrics: http.NotFoundHandler()}).Handler().(chi.Routes)
	if !ok {
		t.Fatal("the handler is not a chi router")
	}
	served := map[string]bool{}
	_ = chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		served[method+" "+strings.ReplaceAll(route, "/*/", "/")] = true
		return nil
	})
	for _, r := range []string{"POST /hooks/fake-agent", "POST /sessions/{id}/tools/write_todos"} {
		if !served[r] {
			t.Errorf("%s is not served", r)
		}
	}

	// The contract describes both, at the agents' templated paths.
	doc, err := openapi3.NewLoader().LoadFromFile("../../api.openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	router, err := legacy.NewRouter(doc)
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"/hooks/fake-agent": "/hooks/{agent}", "/sessions/ses_1/tools/write_todos": "/sessions/{id}/tools/{tool}"} {
		req, _ := http.NewRequest("POST", "http://tack.test"+path, nil)
		if r, _, err := router.FindRoute(req); err != nil || r.Path != want {
			t.Errorf("the contract reads POST %s as %v (%v), want %s", path, r, err, want)
		}
	}

	// The browser's page tells the UI of its list tool and that tool's shape.
	rec := httptest.NewRecorder()
	web.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if !strings.Contains(rec.Body.String(), `{"tool":"write_todos","list":"todos","item":"description"}`) {
		t.Errorf("the page does not tell the UI of write_todos")
	}

	// Its list tool: a call is a list write, in its terms.
	if !transcript.IsTodoTool("write_todos") {
		t.Error("write_todos is no todo tool")
	}
	d, ok := projection.DialectOf("write_todos")
	if !ok {
		t.Fatal("write_todos is no dialect")
	}
	if _, _, err := d.Parse(json.RawMessage(`{"todos":[{"description":"Fix it","status":"in_progress"}]}`)); err != nil {
		t.Errorf("a write_todos call: %v", err)
	}
	if _, _, err := d.Parse(json.RawMessage(`{"todos":[{"content":"Fix it","status":"pending"}]}`)); err == nil || !strings.Contains(err.Error(), "`description` and `status`") {
		t.Errorf("a write_todos call in todo_write's shape: %v, want the error in its terms", err)
	}
	if !projection.Derivable("write_todos", json.RawMessage(`{"todos":[]}`)) {
		t.Error("no list write is derived from a write_todos call")
	}

	// Its sessions' titles.
	if got := projection.DefaultTitle("fake-agent", "/src/webapp", projection.Time{}); got != "Fake Agent · webapp · 00:00 UTC" {
		t.Errorf("a new session's title %q", got)
	}

	// Its hooks, named as it names them.
	h, err := a.ParseHook([]byte(`{"session_id":"s1","hook_event_name":"BeforeTool","tool_name":"write_todos","tool_use_id":"c1"}`))
	if err != nil || h.Event != transcript.HookPreToolUse || h.AgentEvent != "BeforeTool" {
		t.Errorf("a BeforeTool hook reads as %q (%q), %v", h.Event, h.AgentEvent, err)
	}

	// `tack connect -agent fake-agent` in a project: one file, its
	// settings, with its hooks and Tack's MCP server.
	dir := t.TempDir()
	c := hook.Connection{Settings: hook.Settings{Agent: transcript.FakeAgent, Tack: "/usr/bin/tack", Server: "http://tack.test", Token: "tok"}, Project: dir}
	env := func(string) string { return "" }
	if _, err := hook.Connect(c, env); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, ".fake-agent", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	var settings struct {
		Hooks      map[string]json.RawMessage
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(raw, &settings); err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{"SessionStart", "BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent", "SessionEnd"} {
		if !strings.Contains(string(settings.Hooks[e]), "hook -agent fake-agent") {
			t.Errorf("no hook for %s: %s", e, raw)
		}
	}
	if len(settings.Hooks) != 6 {
		t.Errorf("hooks for %d events: %s", len(settings.Hooks), raw)
	}
	tack := settings.MCPServers["tack"]
	if tack["httpUrl"] != "http://tack.test/mcp" || tack["trust"] != true || tack["headers"].(map[string]any)["Authorization"] != "Bearer tok" || len(tack) != 3 {
		t.Errorf("Tack's MCP server %v", tack)
	}
	if _, err := hook.Disconnect(c, env); err != nil {
		t.Fatal(err)
	}
	if raw, err := os.ReadFile(filepath.Join(dir, ".fake-agent", "settings.json")); err != nil || strings.TrimSpace(string(raw)) != "{}" && len(raw) != 0 {
		t.Errorf("after disconnecting: %q, %v", raw, err)
	}
}
