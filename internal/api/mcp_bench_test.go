package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// BenchmarkMCPVsREST measures the model's todo_write as an MCP tools/call
// (the SDK's client, streamable HTTP, an MCP session already open) beside
// the same write over REST (POST /sessions/{id}/tools/todo_write), one
// client over real HTTP against real Postgres, each writing a list that
// differs from the last, in alternation so both share the machine's load;
// it reports each one's µs per call and their ratio (mcp/rest).
//
//	go test ./internal/api/ -run '^$' -bench MCPVsREST -benchtime 2000x -count 3
func BenchmarkMCPVsREST(b *testing.B) {
	st := storetest.Postgres(b, projection.Config{})
	ts := httptest.NewServer(api.New(st, api.Options{}).Handler())
	b.Cleanup(ts.Close)
	client := ts.Client()
	post := func(path, body string) []byte {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		defer resp.Body.Close()
		var raw json.RawMessage
		if err := json.NewDecoder(resp.Body).Decode(&raw); err != nil || resp.StatusCode >= 300 {
			b.Fatalf("POST %s: %d %s %v", path, resp.StatusCode, raw, err)
		}
		return raw
	}
	var sess struct{ ID string }
	_ = json.Unmarshal(post("/sessions", `{}`), &sess)
	post("/sessions/"+sess.ID+"/events", `{"events":[{"type":"turn/start"}]}`)
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp?session=" + sess.ID, HTTPClient: client, DisableStandaloneSSE: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cs.Close() })
	list := func(i int) string {
		return fmt.Sprintf(`{"todos":[{"content":"step %d","status":"in_progress"},{"content":"next","status":"pending"}]}`, i)
	}
	var spent [2]time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "todo_write", Arguments: json.RawMessage(list(2 * i))})
		if err != nil || res.IsError {
			b.Fatalf("tools/call todo_write: %v %v", res, err)
		}
		spent[0] += time.Since(start)
		start = time.Now()
		post("/sessions/"+sess.ID+"/tools/todo_write", list(2*i+1))
		spent[1] += time.Since(start)
	}
	viaMCP := float64(spent[0].Microseconds()) / float64(b.N)
	viaREST := float64(spent[1].Microseconds()) / float64(b.N)
	b.ReportMetric(viaMCP, "µs/mcp-call")
	b.ReportMetric(viaREST, "µs/rest-call")
	b.ReportMetric(viaMCP/viaREST, "mcp/rest")
}
