package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// The MCP tests speak to the real server over real HTTP with the SDK's own
// client, through the bundle's client (every exchange held to
// api.openapi.yaml), on every store.

// bearer adds a token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpClient is an MCP client session of bundle b at path (with any token),
// and the URIs of the resources/updated notifications it gets.
func (b *bundle) mcpClient(path, token string) (*mcp.ClientSession, <-chan string) {
	b.t.Helper()
	updated := make(chan string, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "tack-test"}, &mcp.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			updated <- req.Params.URI
		},
	})
	hc := b.client
	if token != "" {
		hc = &http.Client{Transport: bearer{token: token, next: b.client.Transport}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: b.url + path, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		b.t.Fatalf("connect to %s: %v", path, err)
	}
	b.t.Cleanup(func() { _ = cs.Close() })
	return cs, updated
}

// call calls a tool with raw JSON arguments.
func call(t *testing.T, cs *mcp.ClientSession, tool, args string) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
}

// text is a tool result's one text.
func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content %v, want one text", res.Content)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T, want text", res.Content[0])
	}
	return tc.Text
}

func TestMCP(t *testing.T) {
	runSuite(t, []suite{
		{name: "ToolsListed", run: testMCPToolsListed},
		{name: "WriteAndReadAnswerTheRESTTexts", run: testMCPWriteRead},
		{name: "RejectionsAreIsErrorAndWriteNothing", run: testMCPRejections},
		{name: "UnboundCallIsTold", run: testMCPUnbound},
		{name: "CallsLandInTheAgentsHookSession", run: testMCPHookSession},
		{name: "SubscriptionHearsRESTWrites", run: testMCPSubscription},
		{name: "ResourceOfAnotherSessionIsNotFound", run: testMCPResourceNotFound},
	})
}

func testMCPToolsListed(t *testing.T, b *bundle) {
	cs, _ := b.mcpClient("/mcp", "")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, tool := range res.Tools {
		schema, _ := json.Marshal(tool.InputSchema)
		var m map[string]any
		_ = json.Unmarshal(schema, &m)
		got[tool.Name] = m
	}
	if len(got) != 2 || got["todo_write"] == nil || got["todo_read"] == nil {
		t.Fatalf("tools %v, want todo_write and todo_read", got)
	}
	w := got["todo_write"]
	if !reflect.DeepEqual(w["required"], []any{"todos"}) || w["additionalProperties"] != false {
		t.Errorf("todo_write's schema %v", w)
	}
	item := w["properties"].(map[string]any)["todos"].(map[string]any)["items"].(map[string]any)
	status := item["properties"].(map[string]any)["status"].(map[string]any)
	if !reflect.DeepEqual(status["enum"], []any{"pending", "in_progress", "completed"}) || !reflect.DeepEqual(item["required"], []any{"content", "status"}) {
		t.Errorf("todo_write's item schema %v", item)
	}
	if r := got["todo_read"]; r["type"] != "object" || r["additionalProperties"] != false {
		t.Errorf("todo_read's schema %v", r)
	}
	tmpl, err := cs.ListResourceTemplates(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate != "tack://sessions/{id}/todos" {
		t.Errorf("resource templates %v", tmpl.ResourceTemplates)
	}
	if caps := cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe {
		t.Errorf("capabilities %+v, want resources with subscribe", caps)
	}
}

func testMCPWriteRead(t *testing.T, b *bundle) {
	id := b.openSession()
	cs, _ := b.mcpClient("/mcp?session="+id, "")
	args := `{"todos":[{"content":"Reproduce the failure","status":"in_progress"},{"content":"Fix the race","status":"pending"}]}`
	res, err := call(t, cs, "todo_write", args)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || text(t, res) != "Updated todo list: 1 pending, 1 in progress, 0 completed." {
		t.Fatalf("todo_write: %v %q", res.IsError, text(t, res))
	}
	// The text alone: of structured content the agents would give the
	// model that instead (internal/agenttest, Test*MCPContract).
	if res.StructuredContent != nil || len(res.Content) != 1 {
		t.Fatalf("todo_write answered %d contents and structured content %v, want the text alone", len(res.Content), res.StructuredContent)
	}
	// The REST tool answers the same text for the same list.
	rest := b.read(id)
	got, err := call(t, cs, "todo_read", `{}`)
	if err != nil {
		t.Fatal(err)
	}
	if got.IsError || text(t, got) != rest.Content {
		t.Errorf("todo_read over MCP %q, over REST %q", text(t, got), rest.Content)
	}
	// Arguments left out are an empty object.
	if got, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "todo_read"}); err != nil || got.IsError {
		t.Errorf("todo_read without arguments: %v %v", got, err)
	}
	// The header binds as the query parameter does.
	other := b.openSession()
	byHeader := &http.Client{Transport: headerTransport{api.MCPSessionHeader, other, b.client.Transport}}
	client := mcp.NewClient(&mcp.Implementation{Name: "tack-test"}, nil)
	cs2, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: b.url + "/mcp", HTTPClient: byHeader}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs2.Close()
	if res, err := call(t, cs2, "todo_write", `{"todos":[{"content":"one","status":"pending"}]}`); err != nil || res.IsError {
		t.Fatalf("todo_write bound by header: %v %v", res, err)
	}
	if n := len(b.todos(other).Todos); n != 1 {
		t.Errorf("the header's session holds %d items, want 1", n)
	}
	if n := len(b.todos(id).Todos); n != 2 {
		t.Errorf("the first session holds %d items, want its 2", n)
	}
}

type headerTransport struct {
	name, value string
	next        http.RoundTripper
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return h.next.RoundTrip(r)
}

func testMCPRejections(t *testing.T, b *bundle) {
	id := b.openSession()
	cs, _ := b.mcpClient("/mcp?session="+id, "")
	before := len(b.events(id))
	for _, tc := range []struct{ args, rest string }{
		{`{"todos":[{"content":"  ","status":"pending"}]}`, ""},
		{`{"todos":[{"content":"a","status":"done"}]}`, ""},
		{`{"todos":[{"content":"a","status":"pending"},{"content":"a","status":"pending"}]}`, ""},
		{`{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`, ""},
		{`{"todos":[{"content":"a","status":"pending","priority":"high"}]}`, ""},
		{`{"todos":"none"}`, ""},
		{`{}`, ""},
		{`{"todos":[],"extra":1}`, ""},
		{`{"todos":[],"baseVersion":-1}`, ""},
	} {
		res, err := call(t, cs, "todo_write", tc.args)
		if err != nil {
			t.Errorf("%s: %v, want an isError result", tc.args, err)
			continue
		}
		rest := b.do(http.MethodPost, "/sessions/"+id+"/tools/todo_write", tc.args)
		var want struct {
			IsError bool   `json:"isError"`
			Content string `json:"content"`
		}
		if err := json.Unmarshal(rest.Body, &want); err != nil || !want.IsError {
			t.Fatalf("%s: REST answered %d %s", tc.args, rest.Status, rest.Body)
		}
		if !res.IsError || text(t, res) != want.Content {
			t.Errorf("%s: MCP %v %q, REST %q", tc.args, res.IsError, text(t, res), want.Content)
		}
	}
	if after := len(b.events(id)); after != before {
		t.Errorf("rejected writes appended %d events", after-before)
	}
	// todo_read takes no arguments, as over REST.
	res, err := call(t, cs, "todo_read", `{"x":1}`)
	if err != nil || !res.IsError || !strings.HasPrefix(text(t, res), "Error: invalid arguments") {
		t.Errorf("todo_read with an argument: %v %v", res, err)
	}
	// A session that is not the caller's is a JSON-RPC error, as REST's 404.
	cs2, _ := b.mcpClient("/mcp?session=s_nosuchsession", "")
	_, err = call(t, cs2, "todo_write", `{"todos":[]}`)
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || !strings.Contains(rpc.Message, "session not found") {
		t.Errorf("a write to no session: %v, want a JSON-RPC error naming it", err)
	}
}

// testMCPHookSession: a call that names no session lands in its agent's,
// as its _meta ties it to the session the agent's hooks write: codex's
// threadId is the hooks' session_id, Claude Code's claudecode/toolUseId
// the tool_use_id of the PreToolUse hook that came before the call.
func testMCPHookSession(t *testing.T, b *bundle) {
	hook := func(agent string, body map[string]any) store.Session {
		b.t.Helper()
		b.want(b.do("POST", "/hooks/"+agent, body), http.StatusOK, nil)
		var list struct{ Sessions []store.Session }
		b.want(b.do("GET", "/sessions", nil), http.StatusOK, &list)
		for _, s := range list.Sessions {
			if s.ExternalKey == agent+":"+body["session_id"].(string) {
				return s
			}
		}
		t.Fatalf("no session of %s %v", agent, body)
		return store.Session{}
	}
	cs, _ := b.mcpClient("/mcp", "")
	write := func(meta mcp.Meta, content string) *mcp.CallToolResult {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: "todo_write",
			Arguments: json.RawMessage(`{"todos":[{"content":"` + content + `","status":"in_progress"}]}`)})
		if err != nil || res.IsError {
			t.Fatalf("todo_write with _meta %v: %v %v", meta, res, err)
		}
		return res
	}

	// Claude Code: the PreToolUse of the MCP call comes first.
	claude := hook("claude-code", map[string]any{"session_id": "c-1", "hook_event_name": "UserPromptSubmit", "prompt": "Plan it", "prompt_id": "p1", "cwd": "/src"})
	hook("claude-code", map[string]any{"session_id": "c-1", "hook_event_name": "PreToolUse", "prompt_id": "p1", "cwd": "/src",
		"tool_name": "mcp__tack__todo_write", "tool_use_id": "toolu_01", "tool_input": map[string]any{}})
	write(mcp.Meta{"claudecode/toolUseId": "toolu_01"}, "From Claude Code")
	if td := b.todos(claude.ID); len(td.Todos) != 1 || td.Todos[0].Content != "From Claude Code" {
		t.Errorf("Claude Code's session lists %+v", td.Todos)
	}
	// codex: its thread is the hooks' session.
	codex := hook("codex", map[string]any{"session_id": "019a-thread", "hook_event_name": "UserPromptSubmit", "prompt": "Plan it", "turn_id": "t1", "cwd": "/src"})
	write(mcp.Meta{"threadId": "019a-thread"}, "From codex")
	if td := b.todos(codex.ID); len(td.Todos) != 1 || td.Todos[0].Content != "From codex" {
		t.Errorf("codex's session lists %+v", td.Todos)
	}
	// A thread id is a key, never a title: one with a line break, a bell
	// and a right-to-left override titles nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"threadId": "019b\n\u202eevil\a"}, Name: "todo_read", Arguments: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	thread := b.keyed("codex:019b\n\u202eevil\a")
	if !thread.Untitled || !projection.TitleText(thread.Title) || strings.Contains(thread.Title, "evil") || !strings.HasPrefix(thread.Title, "Codex · ") {
		t.Errorf("a thread's session is titled %q (untitled %v)", thread.Title, thread.Untitled)
	}
	// A call tied to nothing is told so.
	res, err := call(t, cs, "todo_read", `{}`)
	if err != nil || text(t, res) != "Error: todo_read requires an owning agent session" {
		t.Errorf("a call tied to nothing: %v %v", res, err)
	}
}

func testMCPUnbound(t *testing.T, b *bundle) {
	cs, _ := b.mcpClient("/mcp", "")
	res, err := call(t, cs, "todo_write", `{"todos":[{"content":"a","status":"pending"}]}`)
	if err != nil || !res.IsError || text(t, res) != "Error: todo_write requires an owning agent session" {
		t.Errorf("an unbound todo_write: %v %v", res, err)
	}
}

func testMCPSubscription(t *testing.T, b *bundle) {
	id := b.openSession()
	cs, updated := b.mcpClient("/mcp", "")
	uri := "tack://sessions/" + id + "/todos"
	ctx := context.Background()
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	// A write through REST is heard.
	w := b.writeOK(id, todo("Reproduce the failure", "in_progress"))
	select {
	case got := <-updated:
		if got != uri {
			t.Errorf("updated %q, want %q", got, uri)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no resources/updated after a REST todo_write")
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatal(err)
	}
	var view projection.Todos
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &view); err != nil || view.Version != *w.Version || len(view.Todos) != 1 || res.Contents[0].MIMEType != "application/json" {
		t.Errorf("resource %+v (%v), want the list at version %d", res.Contents[0], err, *w.Version)
	}
	// A person's edit is a list write too.
	b.editOK(id, view.Version, todo("Reproduce the failure", "completed"))
	select {
	case <-updated:
	case <-time.After(5 * time.Second):
		t.Fatal("no resources/updated after a person's edit")
	}
}

func testMCPResourceNotFound(t *testing.T, b *bundle) {
	cs, _ := b.mcpClient("/mcp", "")
	ctx := context.Background()
	for _, uri := range []string{"tack://sessions/s_nosuchsession/todos", "tack://sessions/a/b/todos"} {
		if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("read %s: no error", uri)
		}
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err == nil {
			t.Errorf("subscribe %s: no error", uri)
		}
	}
}

// TestMCPTokenAuth holds /mcp to -auth token: no token is 401, a read token
// reads and subscribes but cannot write, another principal's session is
// not found.
func TestMCPTokenAuth(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			a := setupAuth(t, f.Open(t, projection.Config{}), 0, 0)
			r := a.do(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`,
				"Accept", "application/json, text/event-stream")
			if r.Status != http.StatusUnauthorized {
				t.Errorf("initialize without a token: %d %s", r.Status, r.Body)
			}
			path := "/mcp?session=" + a.session
			ro, _ := a.mcpClient(path, a.read)
			_, err := call(t, ro, "todo_write", `{"todos":[{"content":"a","status":"pending"}]}`)
			var rpc *jsonrpc.Error
			if !errors.As(err, &rpc) || !strings.Contains(rpc.Message, "read scope") {
				t.Errorf("todo_write with a read token: %v, want refused", err)
			}
			if res, err := call(t, ro, "todo_read", `{}`); err != nil || res.IsError {
				t.Errorf("todo_read with a read token: %v %v", res, err)
			}
			if err := ro.Subscribe(context.Background(), &mcp.SubscribeParams{URI: "tack://sessions/" + a.session + "/todos"}); err != nil {
				t.Errorf("subscribe with a read token: %v", err)
			}
			rw, _ := a.mcpClient(path, a.write)
			res, err := call(t, rw, "todo_write", `{"todos":[{"content":"a","status":"pending"}]}`)
			if err != nil || res.IsError {
				t.Fatalf("todo_write with a write token: %v %v", res, err)
			}
			// Alice's MCP session is hers: bob naming it is refused.
			r = a.do(http.MethodPost, "/mcp", `{"jsonrpc":"2.0","id":9,"method":"ping"}`, "Authorization", "Bearer "+a.other,
				"Mcp-Session-Id", rw.ID(), "Mcp-Protocol-Version", "2025-06-18", "Accept", "application/json, text/event-stream")
			if r.Status != http.StatusForbidden {
				t.Errorf("another principal in alice's MCP session: %d %s", r.Status, r.Body)
			}
			bob, _ := a.mcpClient(path, a.other)
			if _, err := call(t, bob, "todo_read", `{}`); !errors.As(err, &rpc) || !strings.Contains(rpc.Message, "not found") {
				t.Errorf("another principal's todo_read: %v, want not found", err)
			}
			if _, err := bob.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "tack://sessions/" + a.session + "/todos"}); err == nil {
				t.Errorf("another principal read the resource")
			}
		})
	}
}

// TestMCPToolSchemas holds the MCP tools' input schemas to the REST tools'
// request bodies in api.openapi.yaml: the keywords that decide what is
// valid are the same (descriptions and formats aside; OpenAPI's nullable
// is JSON Schema's null type).
func TestMCPToolSchemas(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromFile("../../api.openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b := setup(t, storetest.Factories[sqliteFactory(t)].Open(t, projection.Config{}), api.Options{})
	cs, _ := b.mcpClient("/mcp", "")
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		op := doc.Paths.Find("/sessions/{id}/tools/" + tool.Name)
		if op == nil || op.Post == nil {
			t.Fatalf("no REST tool %s in the contract", tool.Name)
		}
		want := jsonSchema(op.Post.RequestBody.Value.Content["application/json"].Schema.Value)
		raw, _ := json.Marshal(tool.InputSchema)
		var got any
		_ = json.Unmarshal(raw, &got)
		got = withoutDescriptions(got)
		if !reflect.DeepEqual(got, want) {
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(want)
			t.Errorf("%s: MCP input schema\n%s\nREST request body\n%s", tool.Name, gotJSON, wantJSON)
		}
	}
}

// jsonSchema is the JSON Schema of an OpenAPI schema's validation keywords.
func jsonSchema(s *openapi3.Schema) map[string]any {
	m := map[string]any{}
	if s.Type != nil {
		var types []any
		for _, typ := range *s.Type {
			types = append(types, typ)
		}
		if s.Nullable {
			types = append(types, "null")
		}
		if len(types) == 1 {
			m["type"] = types[0]
		} else {
			m["type"] = types
		}
	}
	if len(s.Enum) > 0 {
		m["enum"] = s.Enum
	}
	if s.MinLength > 0 {
		m["minLength"] = float64(s.MinLength)
	}
	if s.MaxLength != nil {
		m["maxLength"] = float64(*s.MaxLength)
	}
	if s.MaxItems != nil {
		m["maxItems"] = float64(*s.MaxItems)
	}
	if s.Min != nil {
		m["minimum"] = *s.Min
	}
	if len(s.Required) > 0 {
		var req []any
		for _, r := range s.Required {
			req = append(req, r)
		}
		m["required"] = req
	}
	if has := s.AdditionalProperties.Has; has != nil {
		m["additionalProperties"] = *has
	}
	if len(s.Properties) > 0 {
		props := map[string]any{}
		for name, p := range s.Properties {
			props[name] = jsonSchema(p.Value)
		}
		m["properties"] = props
	}
	if s.Items != nil {
		m["items"] = jsonSchema(s.Items.Value)
	}
	return m
}

func withoutDescriptions(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range v {
			if k != "description" {
				out[k] = withoutDescriptions(x)
			}
		}
		return out
	case []any:
		for i, x := range v {
			v[i] = withoutDescriptions(x)
		}
	}
	return v
}

// TestMCPMalformed sends /mcp what no client should: a body that is no
// JSON, a call whose arguments are no object, an unknown tool. Each is an
// error, and nothing is written.
func TestMCPMalformed(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Factories[sqliteFactory(t)].Open(t, projection.Config{}), api.Options{})
	id := b.openSession()
	before := len(b.events(id))
	accept := []string{"Accept", "application/json, text/event-stream"}
	if r := b.do(http.MethodPost, "/mcp?session="+id, `{"jsonrpc":"2.0","id":1,"method":`, accept...); r.Status != http.StatusBadRequest {
		t.Errorf("a body that is no JSON: %d %s", r.Status, r.Body)
	}
	init := b.do(http.MethodPost, "/mcp?session="+id, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`, accept...)
	sid := init.Header.Get("Mcp-Session-Id")
	if init.Status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %s", init.Status, init.Body)
	}
	hdr := append(accept, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18")
	b.do(http.MethodPost, "/mcp?session="+id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr...)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"todo_write","arguments":[{"content":"a","status":"pending"}]}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"todo_write","arguments":"todos"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"todo_delete","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"arguments":{"todos":[]}}}`,
	} {
		r := b.do(http.MethodPost, "/mcp?session="+id, body, hdr...)
		var msg struct {
			Error  *struct{ Message string } `json:"error"`
			Result *struct {
				IsError bool `json:"isError"`
				Content []struct{ Text string }
			} `json:"result"`
		}
		_ = json.Unmarshal(r.Body, &msg)
		refused := msg.Error != nil || msg.Result != nil && msg.Result.IsError
		if !refused {
			t.Errorf("%s: %d %s, want an error", body, r.Status, r.Body)
		}
	}
	if after := len(b.events(id)); after != before {
		t.Errorf("malformed calls appended %d events", after-before)
	}
}

// TestMCPStreamOutlivesRequestBounds: the stream of notifications (GET
// /mcp) lasts past the body and write timeouts that bound every request.
func TestMCPStreamOutlivesRequestBounds(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.Factories[sqliteFactory(t)].Open(t, projection.Config{}),
		api.Options{BodyTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	id := b.openSession()
	cs, updated := b.mcpClient("/mcp", "")
	uri := "tack://sessions/" + id + "/todos"
	if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	// A body begun after the stream and never completed ends when the body
	// time-out has run out, by the server's own clock (hung up on rather
	// than answered 408: the write time-out is as short). Then both bounds
	// are past for the stream.
	c := openUpload(t, b.url, 100)
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the stalled body was not ended: %v", err)
	}
	b.writeOK(id, todo("later", "pending"))
	select {
	case <-updated:
	case <-time.After(5 * time.Second):
		t.Fatal("no resources/updated once the request bounds had passed")
	}
}
