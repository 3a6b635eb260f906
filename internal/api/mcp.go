package api

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/sizedcache"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/transcript"
)

// The MCP server (docs/agents.md, "MCP"): the model's todo_write and
// todo_read as Model Context Protocol tools over streamable HTTP, and each
// session's todos as a resource a client reads and subscribes to. It is a
// transport of the REST tools, not a copy: a call runs callTodoWrite or
// callTodoRead (todos.go), and every list write, whichever route made it,
// notifies the subscribers (append, events.go).

const (
	mcpPath = "/mcp"
	// MCPSessionHeader names the Tack session an MCP request's tool calls
	// land in; the query parameter MCPSessionParam does the same for a
	// client that can only be given a URL.
	MCPSessionHeader = "Tack-Session"
	MCPSessionParam  = "session"
	// MCPSessionTimeout is how long an idle MCP session is kept; a client
	// that comes back later is answered 404 and starts a new one, as the
	// protocol has it.
	MCPSessionTimeout = time.Hour
	// MaxMCPSessionsPerPrincipal bounds the MCP sessions one principal
	// keeps open on an instance: opening one more ends its oldest.
	MaxMCPSessionsPerPrincipal = 100
	// MaxMCPBatch bounds the messages of one JSON-RPC batch (protocol
	// versions before 2025-06-18; later ones have none).
	MaxMCPBatch = 20
	// todosURITemplate names a session's todos view as a resource.
	todosURITemplate = "tack://sessions/{id}/todos"
)

// mcpProtocolVersions are the MCP versions /mcp speaks, newest first.
var mcpProtocolVersions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

// todosURI is the resource of session id's todos.
func todosURI(id string) string { return "tack://sessions/" + id + "/todos" }

// todoWriteSchema is todo_write's input, as api.openapi.yaml has it for
// POST /sessions/{id}/tools/todo_write (TestMCPToolSchemas holds them to
// one another). The handler checks the arguments itself, with the REST
// texts: the schema is what the model is shown.
var todoWriteSchema = json.RawMessage(`{
  "type": "object",
  "additionalProperties": false,
  "required": ["todos"],
  "properties": {
    "todos": {
      "type": "array",
      "maxItems": 200,
      "items": {
        "type": "object",
        "additionalProperties": false,
        "required": ["content", "status"],
        "properties": {
          "content": {"type": "string", "minLength": 1, "maxLength": 1000},
          "status": {"type": "string", "enum": ["pending", "in_progress", "completed"]}
        }
      }
    },
    "baseVersion": {
      "type": ["integer", "null"],
      "minimum": 0,
      "description": "The version the list was written against; older than the current version is stale."
    }
  }
}`)

// todoReadSchema is todo_read's input: nothing.
var todoReadSchema = json.RawMessage(`{"type": "object", "additionalProperties": false}`)

// mcpServer is the MCP server of a Server.
//
// It serves any request of any client, whichever instance behind a balancer
// got the client's earlier ones: a request naming an MCP session this
// instance does not hold (another instance started it, or this one before
// a restart) is served statelessly, as a session of its own (the SDK's
// StreamableHTTPOptions.Stateless), which is all a tool call or a read
// needs; only the stream of notifications (GET) is the holder's, and is
// refused elsewhere with 405, as a server with no stream refuses it.
type mcpServer struct {
	api *Server
	srv *mcp.Server
	// handler serves the MCP sessions this instance holds, stateless the
	// requests of the others.
	handler, stateless http.Handler
	// held are the MCP sessions this instance started (GetSessionID); a
	// session the SDK has ended since is answered 404 by it.
	held *sizedcache.Cache[string, struct{}]
	// subscribed are the Tack sessions whose todos a client of this
	// instance subscribed to, with the list's version last told of: the
	// other instances' writes to them are told here too (remoteChanged).
	subscribed   *sizedcache.Cache[string, int64]
	subscribedMu sync.Mutex
	// rereads are the subscribed sessions other instances changed that
	// are still to be read again, each once however many notices named
	// it; rereading is true while the one goroutine that reads them runs.
	rereads   map[string]bool
	rereading bool
	// readers counts the reading goroutines running, and readersMost the
	// most that ever ran at once: one, by the rule above (a test reads it).
	readers, readersMost atomic.Int32

	// opened lists each principal's MCP sessions, oldest first, some of
	// them perhaps ended since (idle, or by DELETE): the SDK keeps them,
	// and these lists bound how many (MaxMCPSessionsPerPrincipal).
	openedMu sync.Mutex
	opened   map[string][]string
}

func newMCP(s *Server) *mcpServer {
	m := &mcpServer{api: s, opened: map[string][]string{},
		held:       sizedcache.New[string, struct{}](OwnerCacheSize, ownerCacheBytes),
		subscribed: sizedcache.New[string, int64](OwnerCacheSize, ownerCacheBytes)}
	m.srv = mcp.NewServer(&mcp.Implementation{Name: "tack", Title: "Tack"}, &mcp.ServerOptions{
		Instructions: "Keep your todo list in Tack with todo_write (the whole list each time) and read it back with todo_read. " +
			"tack://sessions/{id}/todos is the session's list; subscribe to hear of every change, a person's edits among them.",
		SubscribeHandler:   m.subscribe,
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		Capabilities:       &mcp.ServerCapabilities{},
		// The handshake-era versions, the ones the agents speak: under
		// 2026-07-28 a subscription is a long-lived subscriptions/listen
		// request, whose subscribe the SDK makes without the request's
		// identity, so it could not be held to the caller's sessions.
		SupportedProtocolVersions: mcpProtocolVersions,
		GetSessionID: func() string {
			id := rand.Text()
			m.held.Add(id, struct{}{}, 64+len(id))
			return id
		},
	})
	m.srv.AddTool(&mcp.Tool{
		Name:        "todo_write",
		Description: "Replace this session's whole todo list. Each item has exactly `content` and `status` (pending, in_progress, completed); at most one in_progress.",
		InputSchema: todoWriteSchema,
	}, m.todoWrite)
	m.srv.AddTool(&mcp.Tool{
		Name:        "todo_read",
		Description: "Read this session's current todo list.",
		InputSchema: todoReadSchema,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, m.todoRead)
	m.srv.AddResourceTemplate(&mcp.ResourceTemplate{
		Name:        "todos",
		Title:       "A session's todo list",
		Description: "The todos view of a session, as GET /sessions/{id}/todos answers it.",
		URITemplate: todosURITemplate,
		MIMEType:    "application/json",
	}, m.readTodos)

	handler := func(stateless bool) http.Handler {
		streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return m.srv }, &mcp.StreamableHTTPOptions{
			JSONResponse: true,
			// guard has checked Host and Origin already, by Options.Hosts.
			DisableLocalhostProtection: true,
			MaxRequestBodyBytes:        MaxBodyBytes,
			SessionTimeout:             MCPSessionTimeout,
			Stateless:                  stateless,
		})
		// The SDK hands each call the request's identity as its TokenInfo,
		// which also keeps an MCP session to the principal that opened it.
		return sdkauth.RequireBearerToken(m.verify, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(streamable)
	}
	m.handler, m.stateless = handler(false), handler(true)
	return m
}

// ServeHTTP serves /mcp to a request authenticate has let through.
func (m *mcpServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// A request naming an MCP session another instance (or this one before
	// a restart) started: its POSTs are served statelessly.
	_, held := m.held.Get(r.Header.Get(mcpSessionIDHeader))
	foreign := r.Header.Get(mcpSessionIDHeader) != "" && !held
	if foreign && r.Method != http.MethodPost {
		if r.Method == http.MethodDelete {
			// Nothing of it here to end; its holder ends it idle.
			w.WriteHeader(http.StatusNoContent)
			return
		}
		// Its stream is its holder's: here there is none, as the protocol
		// lets a server answer.
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	if r.Method == http.MethodGet {
		// The stream of the server's notifications lives as long as the
		// MCP session, past connDeadlines' bounds on a request (a read
		// deadline, passed, would end it as a client gone).
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Time{})
		_ = rc.SetWriteDeadline(time.Time{})
		// It holds a descriptor as long as a live socket does: it counts
		// as one against the principal's cap and the server's reserve, and
		// ends as one closes. Ended so, its MCP session ends too: the
		// subscriptions it made were checked against who the caller was
		// then (an admin's, of sessions of others).
		if l := m.api.opts.Live; l != nil {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			mcpSession := r.Header.Get(mcpSessionIDHeader)
			release, err := l.Hold(w, r, func() {
				cancel()
				m.closeSession(mcpSession)
			})
			if err != nil {
				m.api.writeError(w, r, err)
				return
			}
			defer release()
			r = r.WithContext(ctx)
		}
	}
	if r.Method == http.MethodPost && !m.batchBounded(w, r) {
		return
	}
	if q := r.URL.Query().Get(MCPSessionParam); q != "" && r.Header.Get(MCPSessionHeader) == "" {
		r.Header.Set(MCPSessionHeader, q)
	}
	if !strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		// -auth local and signed-in browsers send no token; authenticate
		// has decided who they are all the same (verify).
		r.Header.Set("Authorization", "Bearer authenticated")
	}
	if foreign {
		m.stateless.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost || r.Header.Get(mcpSessionIDHeader) != "" {
		m.handler.ServeHTTP(w, r)
		return
	}
	// A POST without an MCP session opens one (initialize).
	who, _ := auth.From(r.Context())
	m.makeRoom(who.Principal.ID)
	m.handler.ServeHTTP(w, r)
	if id := w.Header().Get(mcpSessionIDHeader); id != "" {
		m.openedMu.Lock()
		m.opened[who.Principal.ID] = append(m.opened[who.Principal.ID], id)
		m.openedMu.Unlock()
	}
}

// makeRoom ends principal's oldest MCP sessions while it has
// MaxMCPSessionsPerPrincipal open, so that the one it opens next is within
// the bound: a client whose session ended is answered 404, and starts a new
// one, as the protocol has it.
func (m *mcpServer) makeRoom(principal string) {
	m.openedMu.Lock()
	list := m.opened[principal]
	if len(list) < MaxMCPSessionsPerPrincipal {
		m.openedMu.Unlock()
		return
	}
	open := map[string]bool{}
	for ss := range m.srv.Sessions() {
		open[ss.ID()] = true
	}
	kept := list[:0]
	for _, id := range list {
		if open[id] {
			kept = append(kept, id)
		}
	}
	var evict []string
	if n := len(kept) - MaxMCPSessionsPerPrincipal + 1; n > 0 {
		evict = append(evict, kept[:n]...)
		kept = kept[n:]
	}
	m.opened[principal] = append([]string(nil), kept...)
	m.openedMu.Unlock()
	for _, id := range evict {
		m.closeSession(id)
	}
}

// batchBounded refuses, with 400 and a JSON-RPC error, a POST whose body
// is a JSON-RPC batch of more than MaxMCPBatch messages: the protocol
// versions before 2025-06-18 have batches, and each message of one is a
// call run and an answer held until the last is done. What it lets
// through, the SDK reads again: the body, at most MaxBodyBytes (past it
// the SDK answers 413), is read here once and handed on.
func (m *mcpServer) batchBounded(w http.ResponseWriter, r *http.Request) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil || len(body) > MaxBodyBytes {
		return true
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '[' {
		return true
	}
	var batch []json.RawMessage
	if json.Unmarshal(body, &batch) != nil || len(batch) <= MaxMCPBatch {
		return true // a malformed one is the SDK's to answer
	}
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{
		"code":    jsonrpc.CodeInvalidRequest,
		"message": fmt.Sprintf("a JSON-RPC batch carries at most %d messages; this one has %d", MaxMCPBatch, len(batch)),
	}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(msg)
	return false
}

// mcpSessionIDHeader names the MCP session of a request, as the protocol has it.
const mcpSessionIDHeader = "Mcp-Session-Id"

// closeSession ends the MCP session id, if it is open.
func (m *mcpServer) closeSession(id string) {
	if id == "" {
		return
	}
	for ss := range m.srv.Sessions() {
		if ss.ID() == id {
			_ = ss.Close()
			return
		}
	}
}

// verify is the identity authenticate put on the request, as the SDK keeps
// it: the token was checked there, whichever credential it was.
func (m *mcpServer) verify(_ context.Context, _ string, r *http.Request) (*sdkauth.TokenInfo, error) {
	id, ok := auth.From(r.Context())
	if !ok {
		return nil, sdkauth.ErrInvalidToken
	}
	return &sdkauth.TokenInfo{UserID: id.Principal.ID, Extra: map[string]any{identityKey: id}}, nil
}

const identityKey = "tack.identity"

// listWritten tells the subscribers of session id's todos that they
// changed, to version.
func (m *mcpServer) listWritten(id string, version int64) {
	m.subscribedMu.Lock()
	if _, ok := m.subscribed.Get(id); ok {
		m.subscribed.Add(id, version, 64+len(id))
	}
	m.subscribedMu.Unlock()
	go m.updated(id)
}

// updated tells the subscribers of session id's todos that they changed.
func (m *mcpServer) updated(id string) {
	_ = m.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: todosURI(id)})
}

// remoteChanged hears of sessions other instances wrote (nil: any may
// have): those whose todos a client here subscribed to are read again, and
// their subscribers told when the list's version moved.
func (m *mcpServer) remoteChanged(ids []string) {
	if ids == nil {
		ids = m.subscribed.Keys()
	}
	var check []string
	for _, id := range ids {
		if _, ok := m.subscribed.Get(id); ok {
			check = append(check, id)
		}
	}
	if len(check) == 0 {
		return
	}
	// One goroutine reads them again, each session once however many
	// notices name it meanwhile: a burst of other instances' writes costs
	// a read per session, never a goroutine per notice.
	m.subscribedMu.Lock()
	if m.rereads == nil {
		m.rereads = map[string]bool{}
	}
	for _, id := range check {
		m.rereads[id] = true
	}
	start := !m.rereading
	m.rereading = true
	m.subscribedMu.Unlock()
	if start {
		go m.reread()
	}
}

// reread reads again the subscribed lists other instances changed until
// none is left, and tells the subscribers of those whose version moved.
func (m *mcpServer) reread() {
	n := m.readers.Add(1)
	defer m.readers.Add(-1)
	for most := m.readersMost.Load(); n > most && !m.readersMost.CompareAndSwap(most, n); most = m.readersMost.Load() {
	}
	for {
		m.subscribedMu.Lock()
		var id string
		for id = range m.rereads {
			break
		}
		if id == "" {
			m.rereading = false
			m.subscribedMu.Unlock()
			return
		}
		delete(m.rereads, id)
		m.subscribedMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), m.api.opts.RequestTimeout)
		st, err := m.api.store.TodoList(ctx, id)
		cancel()
		if err != nil {
			m.api.log.Warn("mcp: read a subscribed list", "session", id, "err", err)
			continue
		}
		m.subscribedMu.Lock()
		known, ok := m.subscribed.Get(id)
		moved := ok && known != st.Version
		if moved {
			m.subscribed.Add(id, st.Version, 64+len(id))
		}
		m.subscribedMu.Unlock()
		if moved {
			m.updated(id)
		}
	}
}

// call is what a tool call or a resource read acts as: the caller's
// identity on ctx, bounded as a REST request's store work is.
func (m *mcpServer) call(ctx context.Context, extra *mcp.RequestExtra) (context.Context, context.CancelFunc, auth.Identity) {
	var id auth.Identity
	if extra != nil && extra.TokenInfo != nil {
		id, _ = extra.TokenInfo.Extra[identityKey].(auth.Identity)
	}
	ctx, cancel := context.WithTimeout(auth.With(ctx, id), m.api.opts.RequestTimeout)
	return ctx, cancel, id
}

// boundSession is the Tack session a tool call lands in: the one the
// request names (MCPSessionHeader, or MCPSessionParam on the URL), which
// must be the caller's; else the agent's own session, as its call's _meta
// ties it to the session its hooks write: codex's threadId is the hooks'
// session_id (transcript.Agent.MCPThreadMeta), and Claude Code's claudecode/toolUseId the tool_use_id its
// PreToolUse hook told of. A call tied to none is the model's to hear of,
// as todo_write's check 6 has it.
func (m *mcpServer) boundSession(ctx context.Context, req *mcp.CallToolRequest, tool string, who auth.Identity) (string, error) {
	var id string
	if req.Extra != nil {
		id = req.Extra.Header.Get(MCPSessionHeader)
	}
	if id == "" && req.Params != nil {
		meta := func(k string) string { v, _ := req.Params.Meta[k].(string); return v }
		if use := meta("claudecode/toolUseId"); use != "" {
			var err error
			if id, err = m.api.store.CallSession(ctx, who.Principal.ID, use); err != nil && !errors.Is(err, store.ErrNotFound) {
				return "", err
			}
		}
		for _, a := range transcript.Agents() {
			thread := ""
			if a.MCPThreadMeta != "" {
				thread = meta(a.MCPThreadMeta)
			}
			if id != "" || thread == "" {
				continue
			}
			key := transcript.Hook{SessionID: thread}.SessionKey(a.Name)
			if who.CanWrite() {
				sess, err := m.api.hookSession(ctx, a.Name, store.NewSession{ExternalKey: key, Owner: who.Principal.ID})
				if err != nil {
					return "", err
				}
				id = sess.ID
			} else {
				// A read token creates nothing: its call lands in the
				// thread's session only when this instance has it already.
				id, _ = m.api.hookSessions.Get(who.Principal.ID + "\x00" + key)
			}
		}
	}
	if id == "" {
		return "", &projection.Error{Code: projection.CodeConflict, Message: tool + " requires an owning agent session"}
	}
	return id, m.api.ownSession(ctx, id, who, tool == "todo_write")
}

func (m *mcpServer) todoWrite(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx, cancel, who := m.call(ctx, req.Extra)
	defer cancel()
	if err := readOnly(who); err != nil {
		return m.failed(ctx, err)
	}
	if _, err := m.api.writeLimited(who); err != nil {
		return m.failed(ctx, err)
	}
	id, err := m.boundSession(ctx, req, "todo_write", who)
	if err != nil {
		return m.failed(ctx, err)
	}
	// Keyed by the agent's id of the call, as the transcript keys the same
	// write (transcript.WriteKey): read later by tack watch or an import,
	// the call's line stores nothing twice.
	keyed := func(r *store.AppendRequest) error {
		if use := callID(req); use != "" {
			r.Events[0].Keys = []string{transcript.WriteKey(use)}
		}
		return nil
	}
	res, err := m.api.callTodoWrite(ctx, id, arguments(req), nil, keyed)
	if err != nil {
		return m.failed(ctx, err)
	}
	return toolAnswer(projection.WriteText(res.Todos.Counts)), nil
}

func (m *mcpServer) todoRead(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	ctx, cancel, who := m.call(ctx, req.Extra)
	defer cancel()
	id, err := m.boundSession(ctx, req, "todo_read", who)
	if err != nil {
		return m.failed(ctx, err)
	}
	todos, err := m.api.callTodoRead(ctx, id, arguments(req), who.CanWrite())
	if err != nil {
		return m.failed(ctx, err)
	}
	return toolAnswer(projection.ReadText(todos.Todos)), nil
}

// callID is the agent's own id of a tool call, from its _meta: Claude
// Code's claudecode/toolUseId, codex's callId; "" when it gives none.
func callID(req *mcp.CallToolRequest) string {
	if req.Params == nil {
		return ""
	}
	for _, k := range []string{"claudecode/toolUseId", "callId"} {
		if v, _ := req.Params.Meta[k].(string); v != "" && len(v) <= projection.MaxToolCallIDLen {
			return v
		}
	}
	return ""
}

// arguments are a call's arguments; MCP lets a call without any leave them
// out, which is an empty object.
func arguments(req *mcp.CallToolRequest) json.RawMessage {
	if req.Params == nil || len(req.Params.Arguments) == 0 {
		return json.RawMessage(`{}`)
	}
	return req.Params.Arguments
}

// toolAnswer is a call the tool took: the REST answer's text, and nothing
// else. Of a result with structured content both Claude Code and codex
// give the model that instead of the text, and the model is to read
// exactly the REST tools' texts.
func toolAnswer(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// failed answers a call that did not go through: a rejection the model is
// to see as isError with the REST text, anything else (a session not the
// caller's, a read scope, the rate limit, the database away) as a JSON-RPC
// error with the REST message, its status and code in the data.
func (m *mcpServer) failed(ctx context.Context, err error) (*mcp.CallToolResult, error) {
	if pe, ok := rejection(err); ok {
		return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: rejectionText(pe)}}}, nil
	}
	return nil, m.rpcError(ctx, err)
}

// rpcError is err as a JSON-RPC error, by httpError's table.
func (m *mcpServer) rpcError(ctx context.Context, err error) error {
	e := httpError(err)
	if e == nil {
		m.api.log.ErrorContext(ctx, "internal error", "route", mcpPath, "err", err)
		e = errorf(http.StatusInternalServerError, "internal", "internal error")
	}
	code := int64(jsonrpc.CodeInvalidParams)
	switch {
	case e.Status >= 500:
		code = jsonrpc.CodeInternalError
	case e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden || e.Status == http.StatusTooManyRequests:
		code = mcpCodeRefused
	}
	data, _ := json.Marshal(map[string]any{"status": e.Status, "code": e.Code})
	return &jsonrpc.Error{Code: code, Message: e.Message, Data: data}
}

// mcpCodeRefused is the JSON-RPC error code (of the range left to servers)
// of a call the caller may not make: a read scope's write, or past the
// write limit.
const mcpCodeRefused = -32001

// sessionOfURI is the session id a todos resource URI names.
func sessionOfURI(uri string) (string, bool) {
	id, ok := strings.CutPrefix(uri, "tack://sessions/")
	if !ok {
		return "", false
	}
	id, ok = strings.CutSuffix(id, "/todos")
	return id, ok && validSessionID(id) && !strings.Contains(id, "/")
}

// readTodos reads a session's todos resource: the body of GET
// /sessions/{id}/todos.
func (m *mcpServer) readTodos(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	ctx, cancel, who := m.call(ctx, req.Extra)
	defer cancel()
	uri := req.Params.URI
	id, ok := sessionOfURI(uri)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if err := m.api.ownSession(ctx, id, who, false); err != nil {
		return nil, m.resourceError(ctx, uri, err)
	}
	todos, err := m.api.store.Todos(ctx, id)
	if err != nil {
		return nil, m.resourceError(ctx, uri, err)
	}
	body, err := m.api.answers.body(todos)
	if err != nil {
		return nil, m.rpcError(ctx, fmt.Errorf("encode todos of %s: %w", id, err))
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(body)}}}, nil
}

// subscribe lets a client hear of a session's todos, when it is the
// caller's; the SDK keeps the subscription.
func (m *mcpServer) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	ctx, cancel, who := m.call(ctx, req.Extra)
	defer cancel()
	uri := req.Params.URI
	id, ok := sessionOfURI(uri)
	if !ok {
		return mcp.ResourceNotFoundError(uri)
	}
	if err := m.api.ownSession(ctx, id, who, false); err != nil {
		return m.resourceError(ctx, uri, err)
	}
	st, err := m.api.store.TodoList(ctx, id)
	if err != nil {
		return m.resourceError(ctx, uri, err)
	}
	m.subscribedMu.Lock()
	if _, ok := m.subscribed.Get(id); !ok {
		m.subscribed.Add(id, st.Version, 64+len(id))
	}
	m.subscribedMu.Unlock()
	return nil
}

// resourceError is a failed read of a resource: not found for a session
// that is not, or not the caller's.
func (m *mcpServer) resourceError(ctx context.Context, uri string, err error) error {
	if e := httpError(err); e != nil && e.Status == http.StatusNotFound {
		return mcp.ResourceNotFoundError(uri)
	}
	return m.rpcError(ctx, err)
}
