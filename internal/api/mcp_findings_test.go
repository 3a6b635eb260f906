package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
	"github.com/tack-dev/tack/internal/transcript"
)

// The findings of probing /mcp from outside, each held by a test that
// failed before its fix.

// mcpAccept is the Accept a streamable HTTP client sends with a POST.
const mcpAccept = "application/json, text/event-stream"

// mcpInit opens an MCP session with token by hand, as a client would, and
// returns its id.
func (a *authBundle) mcpInit(token string) string {
	a.t.Helper()
	hdr := []string{"Authorization", "Bearer " + token, "Accept", mcpAccept}
	r := a.do("POST", "/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}`, hdr...)
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Status != http.StatusOK || sid == "" {
		a.t.Fatalf("initialize: %d %s", r.Status, r.Body)
	}
	hdr = append(hdr, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18")
	if r := a.do("POST", "/mcp", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, hdr...); r.Status != http.StatusAccepted {
		a.t.Fatalf("initialized: %d %s", r.Status, r.Body)
	}
	return sid
}

// mcpStreamed is an open GET /mcp stream; ended is closed when it ends.
type mcpStreamed struct {
	ended chan struct{}
	body  io.Closer
}

// mcpStream opens the stream of MCP session sid with token; want is the
// status it must answer (200 for a stream, which is then read until it
// ends).
func (a *authBundle) mcpStream(token, sid string, want int) *mcpStreamed {
	a.t.Helper()
	hdr := []string{"Authorization", "Bearer " + token, "Accept", "text/event-stream", "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18"}
	req, _ := http.NewRequest("GET", a.url+"/mcp", nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	if want != http.StatusOK {
		// A refusal is held to the contract; a stream let through where
		// none may be would never end.
		c := *a.client
		c.Timeout = 5 * time.Second
		resp, err := c.Do(req)
		if err != nil {
			a.t.Fatalf("GET /mcp: %v, want %d", err, want)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			a.t.Fatalf("GET /mcp: %d, want %d", resp.StatusCode, want)
		}
		return nil
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		a.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		a.t.Fatalf("GET /mcp: %d %s, want a stream", resp.StatusCode, b)
	}
	s := &mcpStreamed{ended: make(chan struct{}), body: resp.Body}
	go func() { defer close(s.ended); _, _ = io.Copy(io.Discard, resp.Body) }()
	a.t.Cleanup(func() { resp.Body.Close() })
	return s
}

// wantEnded waits for the stream to end.
func (s *mcpStreamed) wantEnded(t *testing.T, why string) {
	t.Helper()
	select {
	case <-s.ended:
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: the MCP stream is still open", why)
	}
}

// TestMCPStreamsCountAsSockets: a GET /mcp stream holds a descriptor as a
// socket does: it counts against the principal's socket cap and the
// server's reserve, alongside the websockets, and ends when its token is
// revoked, by another process or through the server.
func TestMCPStreamsCountAsSockets(t *testing.T) {
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			st := f.Open(t, projection.Config{})
			a := setupAuth(t, st, 0, 0, func(_ *api.AuthOptions, o *live.Options) {
				o.MaxSocketsPerPrincipal, o.MaxSockets = 2, 3
			})
			ctx := context.Background()
			reader, tok, err := a.svc.CreateToken(ctx, "alice", auth.Read)
			if err != nil {
				t.Fatal(err)
			}
			first := a.mcpStream(reader, a.mcpInit(reader), http.StatusOK)
			feed, _, err := a.dial("/live", []string{"Authorization", "Bearer " + reader})
			if err != nil {
				t.Fatal(err)
			}
			defer feed.CloseNow()
			// Alice holds two: a third stream is refused, as a socket is.
			a.mcpStream(reader, a.mcpInit(reader), http.StatusTooManyRequests)
			if _, status, err := a.dial("/live", []string{"Authorization", "Bearer " + reader}); err == nil || status != http.StatusTooManyRequests {
				t.Fatalf("a third socket: %d %v, want 429", status, err)
			}
			// Bob's one fills the server's three.
			bob := a.mcpStream(a.other, a.mcpInit(a.other), http.StatusOK)
			a.mcpStream(a.other, a.mcpInit(a.other), http.StatusServiceUnavailable)

			// Revoked by another process: the stream ends with the socket.
			if _, err := st.RevokeToken(ctx, tok.ID); err != nil {
				t.Fatal(err)
			}
			a.svc.CloseStale(ctx, a.hub)
			first.wantEnded(t, "revoked in the store")
			if code := closeCode(t, feed); code != live.CodeRevoked {
				t.Errorf("the socket closed with %d, want %d", code, live.CodeRevoked)
			}
			// Their places are free again: the feed's socket is off the
			// books (bob's stream holds a place, but is no socket).
			waitSockets(t, a, 0)
			writer, wtok, err := a.svc.CreateToken(ctx, "alice", auth.Write)
			if err != nil {
				t.Fatal(err)
			}
			second := a.mcpStream(writer, a.mcpInit(writer), http.StatusOK)
			// Revoked through the server: it ends at once.
			a.want(a.do("DELETE", "/tokens/"+wtok.ID, nil, "Authorization", "Bearer "+a.write), http.StatusOK, nil)
			second.wantEnded(t, "revoked through the server")
			select {
			case <-bob.ended:
				t.Error("bob's stream ended with alice's token")
			default:
			}
		})
	}
}

// TestDemotedAdminsSocketsClose: the sockets and MCP streams an admin
// opened carry sessions of others; when the principal is an admin no
// longer (`tack principal create -admin=false`, another process), they
// close as a revoked token's do, and the others' stay open.
func TestDemotedAdminsSocketsClose(t *testing.T) {
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			st := f.Open(t, projection.Config{})
			a := setupAuth(t, st, 0, 0)
			ctx := context.Background()
			root := []string{"Authorization", "Bearer " + a.admin}
			feed, _, err := a.dial("/live", root)
			if err != nil {
				t.Fatal(err)
			}
			defer feed.CloseNow()
			alices, _, err := a.dial("/sessions/"+a.session+"/live", root)
			if err != nil {
				t.Fatal(err)
			}
			defer alices.CloseNow()
			stream := a.mcpStream(a.admin, a.mcpInit(a.admin), http.StatusOK)
			bobs, _, err := a.dial("/live", []string{"Authorization", "Bearer " + a.other})
			if err != nil {
				t.Fatal(err)
			}
			defer bobs.CloseNow()
			waitSockets(t, a, 3)
			a.svc.CloseStale(ctx, a.hub)
			select {
			case <-stream.ended:
				t.Fatal("the admin's stream ended while it is an admin")
			default:
			}

			p, _, err := st.EnsurePrincipal(ctx, "root")
			if err != nil {
				t.Fatal(err)
			}
			if err := st.SetAdmin(ctx, p.ID, false); err != nil {
				t.Fatal(err)
			}
			a.svc.CloseStale(ctx, a.hub) // what the server runs every 5 s
			for name, c := range map[string]*websocket.Conn{"feed": feed, "alice's session": alices} {
				if code := closeCode(t, c); code != live.CodeRevoked {
					t.Errorf("the demoted admin's %s socket closed with %d, want %d", name, code, live.CodeRevoked)
				}
			}
			stream.wantEnded(t, "demoted")
			waitSockets(t, a, 1)
			// Opened again, its feed is its own: alice's socket is not found.
			if _, status, err := a.dial("/sessions/"+a.session+"/live", root); err == nil || status != http.StatusNotFound {
				t.Errorf("alice's session after the demotion: %d %v, want 404", status, err)
			}
		})
	}
}

// TestMCPBatchBounded: a JSON-RPC batch (protocol versions before
// 2025-06-18) carries at most api.MaxMCPBatch messages; a larger one, even
// a read token's, is refused whole with 400 and a JSON-RPC error, none of
// its calls run.
func TestMCPBatchBounded(t *testing.T) {
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			a := setupAuth(t, f.Open(t, projection.Config{}), 0, 0)
			sid := a.mcpInit(a.read)
			batch := func(n int) string {
				calls := make([]string, n)
				for i := range calls {
					calls[i] = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i+1)
				}
				return "[" + strings.Join(calls, ",") + "]"
			}
			// No Mcp-Protocol-Version: the oldest version, which has batches.
			hdr := []string{"Authorization", "Bearer " + a.read, "Accept", mcpAccept, "Mcp-Session-Id", sid}
			var answers []json.RawMessage
			a.want(a.do("POST", "/mcp", batch(api.MaxMCPBatch), hdr...), http.StatusOK, &answers)
			if len(answers) != api.MaxMCPBatch {
				t.Fatalf("%d answers to a batch of %d", len(answers), api.MaxMCPBatch)
			}
			var refused struct {
				Error struct {
					Code    int64
					Message string
				}
			}
			a.want(a.do("POST", "/mcp", batch(20000), hdr...), http.StatusBadRequest, &refused)
			if refused.Error.Code != -32600 || !strings.Contains(refused.Error.Message, "at most") {
				t.Errorf("a batch of 20,000: %+v, want a JSON-RPC invalid request", refused)
			}
		})
	}
}

// TestMCPReadTokenChangesNothing: a read token's todo_read over MCP reads
// the list, but neither makes a session for a codex thread it names nor
// marks a person's edit as seen by the model (that is the agent's own
// todo_read, with its write token).
func TestMCPReadTokenChangesNothing(t *testing.T) {
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			st := f.Open(t, projection.Config{})
			a := setupAuth(t, st, 0, 0)
			ctx := context.Background()
			a.want(a.do("PUT", "/sessions/"+a.session+"/todos", map[string]any{"todos": []map[string]string{{"content": "a person's item", "status": "pending"}}, "baseVersion": 0},
				"Authorization", "Bearer "+a.write), http.StatusOK, nil)
			before, err := st.TodoList(ctx, a.session)
			if err != nil || before.LastEdit == 0 || before.Seen >= before.LastEdit {
				t.Fatalf("after the edit: %+v %v", before, err)
			}
			ro, _ := a.mcpClient("/mcp?session="+a.session, a.read)
			res, err := call(t, ro, "todo_read", `{}`)
			if err != nil || res.IsError || !strings.Contains(text(t, res), "a person's item") {
				t.Fatalf("todo_read with a read token: %v %v", res, err)
			}
			if after, err := st.TodoList(ctx, a.session); err != nil || after.Seen != before.Seen {
				t.Errorf("a read token's todo_read moved seen from %d to %d (%v)", before.Seen, after.Seen, err)
			}

			unbound, _ := a.mcpClient("/mcp", a.read)
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			res, err = unbound.CallTool(cctx, &mcp.CallToolParams{Name: "todo_read", Arguments: json.RawMessage(`{}`), Meta: mcp.Meta{"threadId": "thread-of-nobody"}})
			if err != nil || !res.IsError {
				t.Errorf("a read token's todo_read of an unknown thread: %v %v, want told it has no session", res, err)
			}
			alice, _, _ := st.EnsurePrincipal(ctx, "alice")
			key := transcript.Hook{SessionID: "thread-of-nobody"}.SessionKey(transcript.Codex)
			if _, created, err := st.CreateSession(ctx, store.NewSession{ExternalKey: key, Owner: alice.ID}); err != nil || !created {
				t.Errorf("the read token's call made the thread's session (%v)", err)
			}
			// The agent's own token makes it, as the hooks would.
			rw, _ := a.mcpClient("/mcp", a.write)
			res, err = rw.CallTool(cctx, &mcp.CallToolParams{Name: "todo_read", Arguments: json.RawMessage(`{}`), Meta: mcp.Meta{"threadId": "thread-of-alice"}})
			if err != nil || res.IsError {
				t.Errorf("the write token's todo_read of a new thread: %v %v", res, err)
			}
		})
	}
}

// TestMCPSessionsBounded: a principal keeps at most
// api.MaxMCPSessionsPerPrincipal MCP sessions; opening one more ends its
// oldest (answered 404 from then on, as an MCP session that timed out),
// and leaves the others' alone.
func TestMCPSessionsBounded(t *testing.T) {
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			a := setupAuth(t, f.Open(t, projection.Config{}), 0, 0)
			ping := func(token, sid string) int {
				return a.do("POST", "/mcp", `{"jsonrpc":"2.0","id":7,"method":"ping"}`, "Authorization", "Bearer "+token,
					"Accept", mcpAccept, "Mcp-Session-Id", sid, "Mcp-Protocol-Version", "2025-06-18").Status
			}
			bobs := a.mcpInit(a.other)
			var alices []string
			for range api.MaxMCPSessionsPerPrincipal + 1 {
				alices = append(alices, a.mcpInit(a.read))
			}
			if got := ping(a.read, alices[0]); got != http.StatusNotFound {
				t.Errorf("alice's oldest MCP session past the bound: %d, want 404", got)
			}
			for _, sid := range []string{alices[1], alices[len(alices)-1]} {
				if got := ping(a.read, sid); got != http.StatusOK {
					t.Errorf("alice's MCP session %s: %d, want 200", sid, got)
				}
			}
			if got := ping(a.other, bobs); got != http.StatusOK {
				t.Errorf("bob's MCP session: %d, want 200", got)
			}
		})
	}
}
