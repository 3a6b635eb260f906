package mcpbridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/mcpbridge"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestBridge runs the bridge between an SDK client on a pipe and the real
// server: the server's tools and resources, bound to the session the flags
// name, under a token, with the server's notices passed back.
func TestBridge(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			st := f.Open(t, projection.Config{})
			svc := &auth.Service{Store: st}
			srv := httptest.NewServer(api.New(st, api.Options{Auth: api.AuthOptions{Service: svc}}).Handler())
			defer srv.Close()
			token, _, err := svc.CreateToken(ctx, "harness", auth.Write)
			if err != nil {
				t.Fatal(err)
			}
			me, _, _ := st.EnsurePrincipal(ctx, "harness")
			sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "bridged", Owner: me.ID})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{{Type: projection.TypeTurnStart, Data: json.RawMessage(`{}`)}}}); err != nil {
				t.Fatal(err)
			}

			// The agent's end and the bridge's end of stdio.
			bridgeIn, agentOut := io.Pipe()
			agentIn, bridgeOut := io.Pipe()
			done := make(chan error, 1)
			go func() {
				done <- mcpbridge.Run(ctx, &mcp.IOTransport{Reader: bridgeIn, Writer: bridgeOut}, mcpbridge.Options{Server: srv.URL, Token: token, Session: sess.ID})
			}()
			updated := make(chan string, 4)
			client := mcp.NewClient(&mcp.Implementation{Name: "agent"}, &mcp.ClientOptions{
				ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
			})
			cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: agentIn, Writer: agentOut}, nil)
			if err != nil {
				t.Fatal(err)
			}
			tools, err := cs.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 2 {
				t.Fatalf("tools %v %v, want the server's two", tools, err)
			}
			uri := "tack://sessions/" + sess.ID + "/todos"
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "todo_write", Arguments: json.RawMessage(`{"todos":[{"content":"a","status":"in_progress"}]}`)})
			if err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "Updated todo list: 0 pending, 1 in progress, 0 completed." {
				t.Fatalf("todo_write through the bridge: %+v %v", res, err)
			}
			if todos, _ := st.Todos(ctx, sess.ID); len(todos.Todos) != 1 {
				t.Errorf("the session holds %d items, want 1", len(todos.Todos))
			}
			select {
			case got := <-updated:
				if got != uri {
					t.Errorf("updated %q, want %q", got, uri)
				}
			case <-time.After(5 * time.Second):
				t.Error("no resources/updated through the bridge")
			}
			read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
			if err != nil || !strings.Contains(read.Contents[0].Text, `"content":"a"`) {
				t.Errorf("read through the bridge: %v %v", read, err)
			}
			_ = cs.Close()
			_ = agentOut.Close()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) && !errors.Is(err, mcp.ErrConnectionClosed) {
					t.Errorf("the bridge ended with %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Error("the bridge outlived its stdin")
			}
		})
	}
}

// TestBridgeRefused: a server that refuses the token fails the bridge at
// once, with the reason.
func TestBridgeRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusUnauthorized)
	}))
	defer srv.Close()
	r, w := io.Pipe()
	defer w.Close()
	err := mcpbridge.Run(context.Background(), &mcp.IOTransport{Reader: r, Writer: w}, mcpbridge.Options{Server: srv.URL})
	if err == nil {
		t.Fatal("bridged a server that refuses")
	}
	if _, err := mcpbridge.Endpoint("ftp://x"); err == nil {
		t.Error("an ftp URL is no server")
	}
}
