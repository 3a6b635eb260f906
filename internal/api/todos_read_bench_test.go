package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// BenchmarkTodosReadVsMemory measures GET /sessions/{id}/todos (real router,
// real Postgres, over loopback HTTP) beside a Go handler that writes the very
// same bytes from memory, and, when TACK_BENCH_PEER_URL names one, beside a
// peer's URL (opencode's GET /session/:id/todo, see docs/performance.md):
// the same load generator, the same number of keep-alive connections (one
// per client), in alternating phases of one run. It prints requests per
// second of each, p99, and the ratios; it ignores b.N (run it -benchtime 1x).
//
//	go test ./internal/api/ -run '^$' -bench TodosReadVsMemory -benchtime 1x
//
// TACK_BENCH_CLIENTS (default 32), TACK_BENCH_PHASE (default 5s) and
// TACK_BENCH_ROUNDS (default 3) set the load.
func BenchmarkTodosReadVsMemory(b *testing.B) {
	clients := storetest.EnvInt(b, "TACK_BENCH_CLIENTS", 32, 1)
	rounds := storetest.EnvInt(b, "TACK_BENCH_ROUNDS", 3, 1)
	phase := 5 * time.Second
	if v := os.Getenv("TACK_BENCH_PHASE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatal(err)
		}
		phase = d
	}
	st := storetest.Postgres(b, projection.Config{})
	// Metrics on, as cmd/server wires them; request lines off, as at
	// -log-level warn.
	tack := httptest.NewServer(api.New(st, api.Options{Registerer: prometheus.NewRegistry()}).Handler())
	b.Cleanup(tack.Close)
	c := tack.Client()
	post := func(path, body string) []byte {
		resp, err := c.Post(tack.URL+path, "application/json", bytes.NewBufferString(body))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			b.Fatalf("POST %s: %d %s", path, resp.StatusCode, out)
		}
		return out
	}
	var sess struct{ ID string }
	mustJSON(b, post("/sessions", `{"title":"reads"}`), &sess)
	post("/sessions/"+sess.ID+"/events", `{"events":[{"type":"turn/start"}]}`)
	post("/sessions/"+sess.ID+"/tools/todo_write", `{"todos":[
		{"content":"read the code","status":"completed"},{"content":"write the test","status":"completed"},
		{"content":"fix the bug","status":"in_progress"},{"content":"run the suite","status":"pending"},
		{"content":"ship it","status":"pending"}]}`)
	tackURL := tack.URL + "/sessions/" + sess.ID + "/todos"
	resp, err := c.Get(tackURL)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ctype := resp.Header.Get("Content-Type")
	mem := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.Write(body)
	}))
	b.Cleanup(mem.Close)

	targets := []struct{ name, url string }{{"tack", tackURL}, {"memory", mem.URL}}
	if peer := os.Getenv("TACK_BENCH_PEER_URL"); peer != "" {
		targets = append(targets, struct{ name, url string }{"peer", peer})
	}
	// One unmeasured phase of each first, so that round 1 does not pay for
	// the pool's connections, the caches and a peer just started (without
	// it, round 1 of scripts/bench-opencode read 0.25-0.31 of memory, the
	// rounds after it 0.39-0.45).
	for _, t := range targets {
		readPhase(b, t.url, clients, time.Second)
	}
	b.ResetTimer()
	for range b.N {
		sums := map[string][]float64{}
		for round := range rounds {
			load, _ := os.ReadFile("/proc/loadavg")
			res := map[string]readLoad{}
			for _, t := range targets {
				res[t.name] = readPhase(b, t.url, clients, phase)
				sums[t.name] = append(sums[t.name], res[t.name].perSecond)
			}
			line := ""
			for _, t := range targets {
				r := res[t.name]
				line += " | " + t.name + " " + fmtF(r.perSecond) + " req/s (p99 " + r.p99.Round(10*time.Microsecond).String() + ")"
			}
			line += " | tack/memory " + fmtR(res["tack"].perSecond/res["memory"].perSecond)
			if p, ok := res["peer"]; ok {
				line += " | tack/peer " + fmtR(res["tack"].perSecond/p.perSecond)
			}
			b.Logf("round %d, load %s%s", round+1, bytes.TrimSpace(load[:14]), line)
		}
		b.ReportMetric(median(sums["tack"]), "tack-req/s")
		b.ReportMetric(median(sums["memory"]), "memory-req/s")
		b.ReportMetric(median(ratios(sums["tack"], sums["memory"])), "tack/memory")
		if _, ok := sums["peer"]; ok {
			b.ReportMetric(median(sums["peer"]), "peer-req/s")
			b.ReportMetric(median(ratios(sums["tack"], sums["peer"])), "tack/peer")
		}
	}
}

type readLoad struct {
	perSecond float64
	p99       time.Duration
}

// readPhase runs clients keep-alive GET loops on url for d (after a short
// warmup) and reports requests per second and the p99 latency.
func readPhase(b *testing.B, url string, clients int, d time.Duration) readLoad {
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr}
	var (
		measuring atomic.Bool
		count     atomic.Int64
		mu        sync.Mutex
		lat       []time.Duration
		failed    atomic.Value
	)
	ctx, cancel := context.WithTimeout(context.Background(), d+time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	var wg sync.WaitGroup
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 32<<10)
			mine := make([]time.Duration, 0, 1<<16)
			for ctx.Err() == nil {
				start := time.Now()
				resp, err := hc.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						failed.Store(err)
					}
					break
				}
				for {
					if _, err := resp.Body.Read(buf); err != nil {
						break
					}
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed.Store(resp.Status)
					break
				}
				if measuring.Load() {
					count.Add(1)
					mine = append(mine, time.Since(start))
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	// The readers warm up, then are counted over a span of real time: the
	// figure is reads per second of the wall clock, which no test clock
	// can stand in for.
	time.Sleep(time.Second / 2)
	measuring.Store(true)
	start := time.Now()
	time.Sleep(d - time.Second/2)
	measuring.Store(false)
	spent := time.Since(start)
	n := count.Load()
	cancel()
	wg.Wait()
	if f := failed.Load(); f != nil {
		b.Fatalf("GET %s: %v", url, f)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	var p99 time.Duration
	if len(lat) > 0 {
		p99 = lat[len(lat)*99/100]
	}
	return readLoad{perSecond: float64(n) / spent.Seconds(), p99: p99}
}

func mustJSON(b *testing.B, data []byte, v any) {
	if err := json.Unmarshal(data, v); err != nil {
		b.Fatalf("%s: %v", data, err)
	}
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func ratios(a, b []float64) []float64 {
	r := make([]float64, len(a))
	for i := range a {
		r[i] = a[i] / b[i]
	}
	return r
}

func fmtF(x float64) string { return strconv.FormatFloat(x, 'f', 0, 64) }
func fmtR(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }
