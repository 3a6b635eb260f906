package sqlite_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/sqlite"
	"github.com/tack-dev/tack/internal/storetest"
)

// agentEvent is the i-th event of a plausible agent log: turns of ten events
// (turn/start, user, assistant, tool result, todo/write, assistant, tool
// result, assistant, tool result, turn/end), so a deep log has many plans.
func agentEvent(i int) projection.NewEvent {
	turn := i / 10
	switch i % 10 {
	case 0:
		return evTurnStart
	case 1:
		return userMsg(fmt.Sprintf("turn %d: keep going with the refactor", turn))
	case 2, 5, 7:
		return ev(projection.TypeMessageAssistant, `{"text":"Looking at the failing test.","toolCalls":[{"id":"c1","name":"bash","args":{"cmd":"go test ./..."}}]}`)
	case 3, 6, 8:
		return ev(projection.TypeToolResult, `{"callId":"c1","name":"bash","isError":false,"content":"ok  \tgithub.com/acme/app\t0.412s"}`)
	case 4:
		return writeTodos("read the code", "completed", fmt.Sprintf("fix bug %d", turn), "in_progress", "run the suite", "pending")
	default:
		return evTurnEnd
	}
}

// BenchmarkSQLite measures the embedded store over real HTTP (httptest, the
// real router, keep-alive connections on loopback): GET /sessions/{id}/todos
// and todo_write calls, on a session of 10 events and one of 1,000,000. Run
// it with
//
//	go test ./internal/store -bench SQLite -run '^$' -benchtime 3s
func BenchmarkSQLite(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "tack.db")
	st, err := sqlite.Open(ctx, path, projection.Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ts := httptest.NewServer(api.New(st, api.Options{}).Handler())
	defer ts.Close()
	ts.Client().Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	do := func(b *testing.B, method, path, body string) {
		req, _ := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, out)
		}
	}

	for _, depth := range []int{10, storetest.BenchDepth(b, 1_000_000)} {
		sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		// Leave the last turn open so that todo_write is allowed.
		if err := sqlite.SeedSQLite(ctx, st, sess.ID, depth, func(i int) projection.NewEvent {
			if i == depth-1 && i%10 == 9 {
				return userMsg("one more")
			}
			return agentEvent(i)
		}); err != nil {
			b.Fatal(err)
		}
		seeded, _ := st.Session(ctx, sess.ID)
		if !seeded.Turn.Open {
			mustAppendB(b, st, sess.ID, evTurnStart)
		}
		info, _ := os.Stat(path)
		b.Logf("seeded %d events in %v (database file %d MiB)", seeded.LastSeq, time.Since(start).Round(time.Millisecond), info.Size()>>20)

		b.Run(fmt.Sprintf("GetTodos/events=%d", depth), func(b *testing.B) {
			benchLatency(b, func() { do(b, http.MethodGet, "/sessions/"+sess.ID+"/todos", "") })
		})
		var n atomic.Int64
		callTodoWrite := func(b *testing.B) {
			i := n.Add(1)
			body := fmt.Sprintf(`{"todos":[{"content":"read the code","status":"completed"},{"content":"step %d","status":"in_progress"},{"content":"run the suite","status":"pending"}]}`, i)
			do(b, http.MethodPost, "/sessions/"+sess.ID+"/tools/todo_write", body)
		}
		b.Run(fmt.Sprintf("TodoWrite/events=%d", depth), func(b *testing.B) {
			benchLatency(b, func() { callTodoWrite(b) })
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
		b.Run(fmt.Sprintf("TodoWriteParallel/events=%d", depth), func(b *testing.B) {
			b.SetParallelism(4) // 4×GOMAXPROCS callers queue for the one writer
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					callTodoWrite(b)
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}

// benchLatency runs op b.N times and reports its p50 and p99 latency.
func benchLatency(b *testing.B, op func()) {
	lat := make([]time.Duration, 0, 1024)
	for b.Loop() {
		t := time.Now()
		op()
		lat = append(lat, time.Since(t))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
