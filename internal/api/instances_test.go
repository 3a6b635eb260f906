package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestHooksAcrossInstances: two instances on one database, each request of
// one agent's run served by either, as a round-robin balancer sends them.
// What a hook needs of an earlier one (the reminder it already gave, the
// compaction it heard of, the session of a tool call its PreToolUse told
// of) is in the store, not in the instance that heard it.
func TestHooksAcrossInstances(t *testing.T) {
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			st := f.Open(t, projection.Config{})
			a, b := setup(t, st, api.Options{}), setup(t, st, api.Options{})

			a.hook("claude-code", "lb", "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Go"})
			s := a.keyed("claude-code:lb")
			b.hook("claude-code", "lb", "PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "TodoWrite", "tool_use_id": "tu1",
				"tool_input": map[string]any{"todos": []any{map[string]any{"content": "Write the test", "status": "in_progress", "activeForm": "Writing the test"}}}})
			a.editOK(s.ID, a.todos(s.ID).Version, todo("Write the test", "completed"), todo("Ship it", "pending"))
			var due projection.Reminder
			a.want(a.do("GET", "/sessions/"+s.ID+"/todos/reminder", nil), http.StatusOK, &due)
			due.Text = strings.Replace(due.Text, "with todo_write", "with TodoWrite", 1)
			if r := b.hook("claude-code", "lb", "PreToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "tu2", "tool_input": map[string]any{}}); r.HookSpecificOutput == nil || r.HookSpecificOutput.AdditionalContext != due.Text {
				t.Fatalf("answer %+v, want the reminder %q", r, due.Text)
			}
			// The other instance knows the model was shown it.
			if r := a.hook("claude-code", "lb", "PostToolUse", map[string]any{"prompt_id": "p1", "tool_name": "Bash", "tool_use_id": "tu2", "tool_input": map[string]any{}}); r.HookSpecificOutput != nil {
				t.Errorf("the reminder came twice, once from each instance: %+v", r)
			}
			// A compaction heard by one gives the plan again through the other.
			var again projection.Reminder
			a.want(a.do("GET", "/sessions/"+s.ID+"/todos/reminder?reason=compaction", nil), http.StatusOK, &again)
			again.Text = strings.Replace(again.Text, "with todo_write", "with TodoWrite", 1)
			a.hook("claude-code", "lb", "PreCompact", map[string]any{"trigger": "auto"})
			if r := b.hook("claude-code", "lb", "UserPromptSubmit", map[string]any{"prompt_id": "p2", "prompt": "Go on"}); r.HookSpecificOutput == nil || r.HookSpecificOutput.AdditionalContext != again.Text {
				t.Errorf("after PreCompact on the other instance: %+v, want %q", r, again.Text)
			}
			if r := a.hook("claude-code", "lb", "UserPromptSubmit", map[string]any{"prompt_id": "p3", "prompt": "And on"}); r.HookSpecificOutput != nil {
				t.Errorf("a compaction's plan came twice: %+v", r)
			}
			// Claude Code's MCP call lands where its PreToolUse, served by
			// the other instance, said.
			a.hook("claude-code", "lb", "PreToolUse", map[string]any{"prompt_id": "p3", "tool_name": "mcp__tack__todo_write", "tool_use_id": "toolu_lb", "tool_input": map[string]any{}})
			cs, _ := b.mcpClient("/mcp", "")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// The model reads the list a person changed, then writes it.
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"claudecode/toolUseId": "toolu_lb"}, Name: "todo_read", Arguments: json.RawMessage(`{}`)}); err != nil || res.IsError {
				t.Fatalf("todo_read: %v %v", res, err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"claudecode/toolUseId": "toolu_lb"}, Name: "todo_write",
				Arguments: json.RawMessage(`{"todos":[{"content":"Through the other instance","status":"in_progress"}]}`)})
			if err != nil {
				t.Fatalf("todo_write: %v", err)
			}
			if res.IsError {
				t.Fatalf("todo_write: %s", text(t, res))
			}
			if td := a.todos(s.ID); len(td.Todos) != 1 || td.Todos[0].Content != "Through the other instance" {
				t.Errorf("the session lists %+v", td.Todos)
			}
		})
	}
}

// roundRobin sends each request to the next of urls, as a balancer with no
// stickiness does.
type roundRobin struct {
	urls []string
	next atomic.Int64
	rt   http.RoundTripper
}

func (r *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	u, err := url.Parse(r.urls[int(r.next.Add(1))%len(r.urls)])
	if err != nil {
		return nil, err
	}
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host, req.Host = u.Scheme, u.Host, u.Host
	return r.rt.RoundTrip(req)
}

// pgInstance is an API server on its own Postgres store over the schema
// pc names, with a hub whose carrier hears the other instances.
func pgInstance(t *testing.T, pc *pgxpool.Config) *bundle {
	t.Helper()
	pg, err := postgres.Open(context.Background(), pc.Copy(), projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	st := fast.New(pg)
	t.Cleanup(st.Close)
	carrier := live.NewPGNotify(pc.ConnConfig, live.PGNotifyOptions{})
	hub := live.New(st, live.Options{Carrier: carrier})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = hub.Run(ctx) }()
	t.Cleanup(func() {
		c, stop := context.WithTimeout(context.Background(), 2*time.Second)
		defer stop()
		hub.Close(c)
		cancel()
		<-done
	})
	b := setup(t, st, api.Options{OnAppend: hub.OnAppend, Live: hub})
	eventually.True(t, 20*time.Second, "listener of the carrier", func() bool { return carrier.ListenerPID() != 0 })
	return b
}

// TestMCPAcrossInstances: an MCP client behind a round-robin balancer over
// two instances calls its tools through either, and a subscriber hears a
// list write made through the other instance.
func TestMCPAcrossInstances(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	a, b := pgInstance(t, pc), pgInstance(t, pc)
	id := a.openSession()

	// Each request of the client goes to the next instance: the MCP
	// session one started is served by the other too.
	rr := &mcp.StreamableClientTransport{Endpoint: a.url + "/mcp", MaxRetries: -1,
		HTTPClient: &http.Client{Transport: &roundRobin{urls: []string{a.url, b.url}, rt: a.client.Transport}}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "balanced"}, nil).Connect(ctx, rr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i := range 4 {
		body := fmt.Sprintf(`{"todos":[{"content":"step %d","status":"in_progress"}]}`, i)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "todo_write", Arguments: json.RawMessage(body)})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if text(t, res) != "Error: todo_write requires an owning agent session" {
			t.Fatalf("call %d: %s", i, text(t, res))
		}
	}

	// A subscriber of instance a hears b's write, carried between them.
	sub, updated := a.mcpClient("/mcp", "")
	uri := "tack://sessions/" + id + "/todos"
	if err := sub.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	b.writeOK(id, todo("through b", "pending"))
	select {
	case got := <-updated:
		if got != uri {
			t.Fatalf("updated %s, want %s", got, uri)
		}
	case <-ctx.Done():
		t.Fatal("a's subscriber never heard b's list write")
	}
	// Another event of the session is no list write: nothing is told.
	b.appendOK(id, userMsg("not a list write"))
	b.writeOK(id, todo("through b", "completed"))
	select {
	case <-updated:
	case <-ctx.Done():
		t.Fatal("a's subscriber never heard b's second list write")
	}
	select {
	case got := <-updated:
		t.Fatalf("told of %s once more than the list was written", got)
	default:
	}
}
