package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// discard is a ResponseWriter that keeps the headers and drops the body,
// as a socket would take it.
type discard struct {
	h      http.Header
	status int
}

func (d *discard) Header() http.Header         { return d.h }
func (d *discard) WriteHeader(s int)           { d.status = s }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }

// The connection's deadlines, as net/http's own writer has them.
func (d *discard) SetReadDeadline(time.Time) error  { return nil }
func (d *discard) SetWriteDeadline(time.Time) error { return nil }

// BenchmarkTodosHandler measures what the router and its middleware cost a
// GET /sessions/{id}/todos answered from memory, in process, without a
// socket: the handler called with a request, on each store, in -auth local
// and -auth token (where every request looks its token up). It reports
// allocations and the process's CPU time per request (cpu-ns/op, from
// getrusage), which hold still on a loaded machine where ns/op does not.
// scripts/bench-wrk measures the same read from outside, beside a static
// handler (docs/performance.md).
//
//	go test ./internal/api/ -run '^$' -bench TodosHandler -benchtime 100000x
func BenchmarkTodosHandler(b *testing.B) {
	for _, f := range storetest.Factories {
		for _, mode := range []string{"local", "token"} {
			b.Run(f.Name+"/"+mode, func(b *testing.B) {
				ctx := context.Background()
				st := f.Open(b, projection.Config{})
				opts := api.Options{Hosts: []string{"example.com"}, Registerer: prometheus.NewRegistry(), Auth: api.AuthOptions{WriteRate: 100, WriteBurst: 100}}
				owner := ""
				var secret string
				if mode == "token" {
					svc := &auth.Service{Store: st}
					opts.Auth.Service = svc
					var err error
					secret, _, err = svc.CreateToken(ctx, "alice", auth.Write)
					if err != nil {
						b.Fatal(err)
					}
					p, _, _ := st.EnsurePrincipal(ctx, "alice")
					owner = p.ID
				}
				h := api.New(st, opts).Handler()
				sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "reads", Owner: owner})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{{Type: projection.TypeTurnStart, Data: json.RawMessage(`{}`)}}}); err != nil {
					b.Fatal(err)
				}
				args := `{"todos":[{"content":"read the code","status":"completed"},{"content":"fix the bug","status":"in_progress"},{"content":"ship it","status":"pending"}]}`
				wr := httptest.NewRequest("POST", "/sessions/"+sess.ID+"/tools/todo_write", bytes.NewBufferString(args))
				wr.Header.Set("Content-Type", "application/json")
				if secret != "" {
					wr.Header.Set("Authorization", "Bearer "+secret)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, wr)
				if rec.Code != 200 {
					b.Fatal(rec.Code, rec.Body)
				}
				req := httptest.NewRequest("GET", "/sessions/"+sess.ID+"/todos", nil)
				req.RemoteAddr = "127.0.0.1:40000"
				if secret != "" {
					req.Header.Set("Authorization", "Bearer "+secret)
				}
				w := &discard{h: http.Header{}}
				// A second of reads first: the store's copy (a Postgres read
				// lease is sought in the background) and the answer settle.
				for start := time.Now(); time.Since(start) < time.Second; {
					clear(w.h)
					h.ServeHTTP(w, req)
				}
				if w.status != http.StatusOK || w.h.Get("ETag") == "" {
					b.Fatalf("GET /todos: %d %v", w.status, w.h)
				}
				b.ReportAllocs()
				cpu0 := cpuTime()
				for b.Loop() {
					clear(w.h)
					h.ServeHTTP(w, req)
				}
				b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
