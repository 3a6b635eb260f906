package agenttest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// The MCP contract Tack's /mcp stands on, checked with no Tack: the agent
// connects to a streamable HTTP MCP server named in its config, with the
// bearer token configured; the model's call of one of its tools reaches the
// server as tools/call; and of a result with structuredContent the model is
// given that, not the text content. The
// stand-in server below is the least that protocol asks.

// mcpStub is a minimal streamable HTTP MCP server with one tool, note,
// keeping every tools/call it gets.
type mcpStub struct {
	URL   string
	mu    sync.Mutex
	calls []mcpCall
}

type mcpCall struct {
	Params  json.RawMessage
	Headers http.Header
}

func newMCPStub(t *testing.T) *mcpStub {
	s := &mcpStub{}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL + "/mcp"
	return s
}

func (s *mcpStub) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		// No server-to-client stream.
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	b, _ := io.ReadAll(r.Body)
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(b, &msg) != nil {
		http.Error(w, "not JSON-RPC", http.StatusBadRequest)
		return
	}
	if msg.ID == nil { // a notification
		w.WriteHeader(http.StatusAccepted)
		return
	}
	var result any
	switch msg.Method {
	case "initialize":
		var p struct {
			ProtocolVersion string `json:"protocolVersion"`
		}
		_ = json.Unmarshal(msg.Params, &p)
		result = map[string]any{"protocolVersion": p.ProtocolVersion,
			"capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo":   map[string]any{"name": "stub", "version": "1"}}
	case "tools/list":
		result = map[string]any{"tools": []any{map[string]any{
			"name": "note", "description": "Keep a note.",
			"inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}},
		}}}
	case "tools/call":
		s.mu.Lock()
		s.calls = append(s.calls, mcpCall{Params: msg.Params, Headers: r.Header.Clone()})
		s.mu.Unlock()
		// The text is what the model is to read; the structured content
		// is for programs, yet both agents show the model that instead
		// when there is one (checked below).
		result = map[string]any{"content": []any{map[string]any{"type": "text", "text": "Noted."}}, "isError": false,
			"structuredContent": map[string]any{"noted": true}}
	case "ping":
		result = map[string]any{}
	default:
		result = map[string]any{}
		if msg.Method == "resources/list" {
			result = map[string]any{"resources": []any{}}
		} else if msg.Method == "prompts/list" {
			result = map[string]any{"prompts": []any{}}
		} else if msg.Method == "resources/templates/list" {
			result = map[string]any{"resourceTemplates": []any{}}
		}
	}
	writeJSON(w, map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": result})
}

func (s *mcpStub) Calls() []mcpCall {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]mcpCall(nil), s.calls...)
}

// stubToken is the bearer token the agents are configured to send, as
// they would send a Tack token.
const stubToken = "tack_stub"

// checkMCPContract asserts the one tools/call and returns its _meta, what
// ties a call to the agent's session.
func checkMCPContract(t *testing.T, s *mcpStub, reqs []Request) map[string]any {
	t.Helper()
	calls := s.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d tools/call at the MCP server, want 1", len(calls))
	}
	t.Logf("tools/call params %s; headers %v", calls[0].Params, calls[0].Headers)
	if got := calls[0].Headers.Get("Authorization"); got != "Bearer "+stubToken {
		t.Errorf("tools/call Authorization %q, want the configured bearer token", got)
	}
	var p struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
		Meta      map[string]any `json:"_meta"`
	}
	_ = json.Unmarshal(calls[0].Params, &p)
	if p.Name != "note" || p.Arguments["text"] != "remember this" {
		t.Errorf("tools/call %s, want note {text: remember this}", calls[0].Params)
	}
	if len(reqs) < 2 {
		t.Fatalf("%d requests to the model, want 2", len(reqs))
	}
	results := reqs[len(reqs)-1].ToolResults()
	t.Logf("the model was given: %q", results)
	given := strings.Join(results, " ")
	if !strings.Contains(given, `{"noted":true}`) {
		t.Errorf("the tool's answer is not in the model's next request")
	}
	// What a server puts in content beside structuredContent the model
	// never reads.
	if strings.Contains(given, "Noted.") {
		t.Errorf("the model was given the text content beside the structured one: revisit what /mcp answers")
	}
	return p.Meta
}

func TestClaudeMCPContract(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	s := newMCPStub(t)
	cfg := writeMCPConfig(t, u, "stub", s.URL, stubToken)
	m := NewAnthropic(t,
		Turn{Tools: []Call{{Name: "mcp__stub__note", Input: map[string]any{"text": "remember this"}}}},
		Turn{Text: "Done."},
	)
	if r := u.claude(t, m, "Note it.", "--mcp-config", cfg, "--allowedTools", "mcp__stub__note"); r.Err != nil {
		t.Fatalf("claude: %v", r.Err)
	}
	// Claude Code names the model's tool_use id, which its PreToolUse hook
	// carries too.
	if meta := checkMCPContract(t, s, m.Scripted()); meta["claudecode/toolUseId"] != "toolu_01_0" {
		t.Errorf("tools/call _meta %v, want claudecode/toolUseId toolu_01_0", meta)
	}
}

func TestCodexMCPContract(t *testing.T) {
	requireAgent(t, codexBinary())
	t.Parallel()
	u := newUser(t)
	s := newMCPStub(t)
	m := NewResponses(t,
		Turn{Tools: []Call{{Namespace: "mcp__stub", Name: "note", Input: map[string]any{"text": "remember this"}}}},
		Turn{Text: "Done."},
	)
	u.writeCodexConfig(t, m, codexMCP("stub", s.URL, stubToken))
	r := u.codex(t, "Note it.")
	if r.Err != nil {
		t.Fatalf("codex: %v", r.Err)
	}
	// The MCP tools are deferred (not among the request's tools, found
	// through tool_search), yet a namespaced call reaches the server, and
	// it names codex's thread, the session id its hooks carry.
	thread := streamID(r)
	if meta := checkMCPContract(t, s, m.Scripted()); thread == "" || meta["threadId"] != thread {
		t.Errorf("tools/call _meta %v, want threadId %q", meta, thread)
	}
}
