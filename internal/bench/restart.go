package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// RestartConfig is a run of Restart.
type RestartConfig struct {
	DatabaseURL string // a fresh schema is made in it
	Events      int    // events in the session read
	EventBytes  int    // the text of each message, bytes
	Readers     int    // concurrent readers of the first pages
	Limit       int    // the pages' limit
	Path        string // the read: "events" (GET …/events?limit=) or "messages" (GET …/messages?limit=)
	Rounds      int    // server starts
	Warm        int    // warm reads of each reader after each start's first
	Hogs        int    // busy processes beside the run, started by it
	MaxConns    int    // the server's Postgres pool size
	WarmConns   int    // connections the server opens and warms before it serves (postgres.WarmPool); 0 opens them on demand, cold
	CPUProfile  string // the server's CPU profile, of its last start
}

// HogCommand is the subcommand of the command that runs one CPU hog (Hog).
const HogCommand = "cpu-hog"

// Hog spins one core until stdin closes: the other work of a loaded
// machine, as a process of its own.
func Hog(stdin io.Reader) {
	runtime.GOMAXPROCS(1)
	go func() { _, _ = io.Copy(io.Discard, stdin); os.Exit(0) }()
	x := 0
	for {
		x++
	}
}

// Restart measures the first pages a freshly started server reads: it
// seeds one session of cfg.Events messages of cfg.EventBytes over the API,
// starts cfg.Hogs busy processes, then, each round, starts the server
// anew (a child process, as Write's) and sends cfg.Readers concurrent reads
// of the session's first page the moment it listens, then cfg.Warm more
// rounds of them on the pool they warmed. It prints the latency of the
// first reads and of the warm ones, p50 and max, their ratio, and how many
// answered other than 200 (a 503 is the 4 s store deadline).
func Restart(ctx context.Context, cfg RestartConfig, out io.Writer) error {
	if cfg.Events < 1 || cfg.EventBytes < 1 || cfg.Readers < 1 || cfg.Limit < 1 || cfg.Rounds < 1 || cfg.Warm < 1 || cfg.Hogs < 0 || cfg.MaxConns < 1 || cfg.WarmConns < 0 {
		return errors.New("need events, event-bytes, readers, limit, rounds, warm, max-conns ≥ 1 and hogs, warm-conns ≥ 0")
	}
	if cfg.Path != "events" && cfg.Path != "messages" {
		return fmt.Errorf("path %q: want events or messages", cfg.Path)
	}
	db, err := newDatabase(ctx, cfg.DatabaseURL, "")
	if err != nil {
		return err
	}
	defer db.drop()
	srv, err := startServer(ctx, db.schemaURL(), cfg.MaxConns, "", true, "-warm-conns=0")
	if err != nil {
		return err
	}
	id, err := seedLarge(ctx, "http://"+srv.addr, cfg.Events, cfg.EventBytes)
	srv.stop()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "tackbench restart: one session of %d messages of %d KiB; %d readers of GET /sessions/{id}/%s?limit=%d; %d rounds of a fresh server start, %d warm reads a reader after each; %d CPU hogs; server MaxConns %d, %d connections warmed before serving\n",
		cfg.Events, cfg.EventBytes>>10, cfg.Readers, cfg.Path, cfg.Limit, cfg.Rounds, cfg.Warm, cfg.Hogs, cfg.MaxConns, cfg.WarmConns)
	fmt.Fprintf(out, "postgres: %s ssl=%s\n", db.settings(ctx), db.setting(ctx, "ssl"))

	stopHogs, err := startHogs(ctx, cfg.Hogs)
	if err != nil {
		return err
	}
	defer stopHogs()
	if err := sleep(ctx, 2*time.Second); err != nil { // the hogs settle in
		return err
	}
	fmt.Fprintf(out, "load average before: %s\n", loadAverage())

	path := fmt.Sprintf("/sessions/%s/%s?limit=%d", id, cfg.Path, cfg.Limit)
	var firstAll, warmAll []time.Duration
	failedAll := 0
	for round := 1; round <= cfg.Rounds; round++ {
		profile := ""
		if round == cfg.Rounds {
			profile = cfg.CPUProfile
		}
		start := time.Now()
		srv, err := startServer(ctx, db.schemaURL(), cfg.MaxConns, profile, true, fmt.Sprint("-warm-conns=", cfg.WarmConns))
		if err != nil {
			return err
		}
		up := time.Since(start)
		base := "http://" + srv.addr
		// The backends opened by the first reads count from nothing: the
		// second sample takes them in.
		u0 := usageOf(append([]int{srv.pid}, db.serverBackends(ctx, srv.pid).pids...))
		first, failed := readTogether(ctx, base+path, cfg.Readers)
		procs := append([]int{srv.pid}, db.serverBackends(ctx, srv.pid).pids...)
		u1 := usageOf(procs)
		var warm []time.Duration
		for range cfg.Warm {
			w, f := readTogether(ctx, base+path, cfg.Readers)
			warm = append(warm, w...)
			failed += f
		}
		u2 := usageOf(procs)
		srv.stop()
		slices.Sort(first)
		slices.Sort(warm)
		fmt.Fprintf(out, "round %d: start %s | first reads p50 %s max %s | warm p50 %s max %s | first/warm p50 %.1f max %.1f | not 200: %d | load %s\n",
			round, ms(up), ms(percentile(first, 0.5)), ms(first[len(first)-1]), ms(percentile(warm, 0.5)), ms(warm[len(warm)-1]),
			ratio(percentile(first, 0.5), percentile(warm, 0.5)), ratio(first[len(first)-1], warm[len(warm)-1]), failed, loadAverage())
		fmt.Fprintf(out, "  a read's CPU and minor page faults: first %s | warm %s\n", u1.sub(u0).per(cfg.Readers), u2.sub(u1).per(cfg.Readers*cfg.Warm))
		firstAll, warmAll, failedAll = append(firstAll, first...), append(warmAll, warm...), failedAll+failed
	}
	slices.Sort(firstAll)
	slices.Sort(warmAll)
	fmt.Fprintf(out, "all rounds: first reads p50 %s max %s | warm p50 %s max %s | first/warm p50 %.1f max %.1f | not 200: %d of %d first and %d warm reads\n",
		ms(percentile(firstAll, 0.5)), ms(firstAll[len(firstAll)-1]), ms(percentile(warmAll, 0.5)), ms(warmAll[len(warmAll)-1]),
		ratio(percentile(firstAll, 0.5), percentile(warmAll, 0.5)), ratio(firstAll[len(firstAll)-1], warmAll[len(warmAll)-1]),
		failedAll, len(firstAll), len(warmAll))
	fmt.Fprintf(out, "load average after: %s\n", loadAverage())
	return nil
}

// usage is the CPU ticks and minor faults of the server (first) and of
// the Postgres backends of its connections.
type usage struct{ ticks, faults [2]int64 }

func usageOf(pids []int) usage {
	var u usage
	for i, pid := range pids {
		t, f := processUsage(pid)
		k := min(i, 1)
		u.ticks[k] += t
		u.faults[k] += f
	}
	return u
}

func (u usage) sub(o usage) usage {
	for k := range 2 {
		u.ticks[k] -= o.ticks[k]
		u.faults[k] -= o.faults[k]
	}
	return u
}

// per is u shared out over n reads.
func (u usage) per(n int) string {
	return fmt.Sprintf("server %.0f ms %d faults, postgres %.0f ms %d faults",
		float64(u.ticks[0])*1000/clockTicks/float64(n), u.faults[0]/int64(n),
		float64(u.ticks[1])*1000/clockTicks/float64(n), u.faults[1]/int64(n))
}

// seedLarge makes a session of n user messages of size bytes each over the
// API, a few to a batch. The text is words of a small vocabulary in random
// order, as compressible as prose: Postgres stores each compressed, out of
// line (TOAST).
func seedLarge(ctx context.Context, base string, n, size int) (string, error) {
	c := tack(base)
	id, err := createSession(ctx, c)
	if err != nil {
		return "", err
	}
	words := strings.Fields("the a of to in and is it for on with as that this file test go func return error nil if else " +
		"struct type package import string int slice map range append len make read write open close lock query row page")
	r := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		var b strings.Builder
		for b.Len() < size-16 {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	per := max(1, min(n, (1<<20)/size)) // a body of 1 MiB, well within the store's deadline on a loaded machine
	for done := 0; done < n; {
		k := min(per, n-done)
		type event struct {
			Type string `json:"type"`
			Data any    `json:"data"`
		}
		batch := struct {
			Events []event `json:"events"`
		}{}
		for range k {
			batch.Events = append(batch.Events, event{Type: "message/user", Data: map[string]string{"text": text()}})
		}
		body, _ := json.Marshal(batch)
		// A write answered 503 (the deadline, on a loaded machine) is
		// retried: should it have committed, the session holds a batch
		// more, which the page read does not mind.
		var err error
		for try := 0; try < 5; try++ {
			if err = c.Do(ctx, http.MethodPost, "/sessions/"+id+"/events", json.RawMessage(body), nil); err == nil {
				break
			}
		}
		if err != nil {
			return "", fmt.Errorf("seed: %w", err)
		}
		done += k
	}
	return id, nil
}

// readTogether sends n GETs of url at once, on fresh connections, and
// returns their latencies and how many answered other than 200.
func readTogether(ctx context.Context, url string, n int) ([]time.Duration, int) {
	client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	lat := make([]time.Duration, n)
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := client.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes[i] = resp.StatusCode
			}
			lat[i] = time.Since(start)
		}()
	}
	wg.Wait()
	failed := 0
	for _, c := range codes {
		if c != http.StatusOK {
			failed++
		}
	}
	return lat, failed
}

// startHogs starts n busy child processes and returns what stops them.
func startHogs(ctx context.Context, n int) (func(), error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var pipes []io.WriteCloser
	var cmds []*exec.Cmd
	stop := func() {
		for i, p := range pipes {
			_ = p.Close()
			_ = cmds[i].Wait()
		}
	}
	for range n {
		cmd := exec.CommandContext(ctx, self, HogCommand)
		stdin, err := cmd.StdinPipe()
		if err != nil {
			stop()
			return nil, err
		}
		if err := cmd.Start(); err != nil {
			stop()
			return nil, err
		}
		pipes, cmds = append(pipes, stdin), append(cmds, cmd)
	}
	return stop, nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }

func ratio(a, b time.Duration) float64 {
	if b <= 0 {
		return 0
	}
	return float64(a) / float64(b)
}
