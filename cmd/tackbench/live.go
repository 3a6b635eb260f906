// The live subcommand measures Tack's live updates: commit-to-receive
// latency with many subscribers on one session, resident memory per idle
// socket, and append throughput with live fanout on and off. It prints
// figures; it asserts nothing. See docs/performance.md.
//
//	tackbench live latency    -subscribers 1,100,2000 -rate 20 -duration 15s [-remote]
//	tackbench live throughput -writers 8 -duration 10s -rounds 3
//	tackbench live idle       -server-bin /tmp/tack -conns 10000
//
// Every mode works in a fresh schema of the database, dropped at the end.
// The tool raises its descriptor limit to the hard limit (ulimit -Hn); idle
// opens -conns sockets from this process, so that must be above -conns + 100.
// latency and throughput run the server in process on real sockets; idle
// starts the server binary as a child so that its RSS is the server's alone.

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// runLive runs one mode of the live subcommand in a fresh schema.
func runLive(ctx context.Context, args []string) error {
	if len(args) < 1 {
		return errors.New("usage: tackbench live latency|throughput|idle [flags]")
	}
	raiseFileLimit()
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		dbURL = defaultURL
	}
	if prof := os.Getenv("TACKBENCH_CPUPROFILE"); prof != "" {
		f, err := os.Create(prof)
		if err != nil {
			return err
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	db, err := newDatabase(ctx, dbURL, "")
	if err != nil {
		return err
	}
	defer db.drop()
	switch args[0] {
	case "latency":
		return latency(ctx, dbURL, db.schema, args[1:])
	case "throughput":
		return throughput(ctx, dbURL, db.schema, args[1:])
	case "idle":
		return idle(ctx, dbURL, db.schema, args[1:])
	}
	return fmt.Errorf("unknown live mode %q: want latency, throughput or idle", args[0])
}

// liveServer is an in-process Tack instance on a real listener.
type liveServer struct {
	url   string
	hub   *live.Hub
	close func()
}

// startLiveServer starts an instance; withLive false serves the REST API alone.
// onCommit, when set, is called after each committed append, before the hub.
func startLiveServer(ctx context.Context, dbURL, schema string, withLive bool, onCommit func(store.AppendResult)) (*liveServer, error) {
	pc, err := store.PoolConfig(dbURL, 16)
	if err != nil {
		return nil, err
	}
	pc.ConnConfig.RuntimeParams["search_path"] = schema
	st, err := store.OpenPostgres(ctx, pc, projection.Config{})
	if err != nil {
		return nil, err
	}
	opts := api.Options{}
	s := &liveServer{}
	runCtx, cancel := context.WithCancel(ctx)
	if withLive {
		s.hub = live.New(st, live.Options{Carrier: live.NewPGNotify(pc.ConnConfig, live.PGNotifyOptions{})})
		go func() { _ = s.hub.Run(runCtx) }()
		opts.Live = s.hub
		opts.OnAppend = func(id string, res store.AppendResult) {
			if onCommit != nil {
				onCommit(res)
			}
			s.hub.OnAppend(id, res)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		st.Close()
		return nil, err
	}
	hs := &http.Server{Handler: api.New(st, opts).Handler()}
	go func() { _ = hs.Serve(ln) }()
	s.url = "http://" + ln.Addr().String()
	s.close = func() {
		if s.hub != nil {
			c, done := context.WithTimeout(ctx, 5*time.Second)
			s.hub.Close(c)
			done()
		}
		_ = hs.Close()
		cancel()
		st.Close()
	}
	return s, nil
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

func createSession(url string) (string, error) {
	var s struct{ ID string }
	err := postJSON(context.Background(), client, url+"/sessions", []byte(`{"title":"tackbench"}`), http.StatusCreated, &s)
	return s.ID, err
}

var userMessage = []byte(`{"events":[{"type":"message/user","data":{"text":"load test message"}}]}`)

func appendOne(url, id string) error {
	return postJSON(context.Background(), client, url+"/sessions/"+id+"/events", userMessage, http.StatusCreated, nil)
}

var seqField = []byte(`"seq":`)

// seqOf finds the event seq in a message without decoding it all: the
// load tool's clients must cost as little as they can.
func seqOf(b []byte) int64 {
	i := bytes.Index(b, seqField)
	if i < 0 {
		return 0
	}
	b = b[i+len(seqField):]
	j := bytes.IndexAny(b, ",}")
	n, _ := strconv.ParseInt(string(b[:j]), 10, 64)
	return n
}

func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// latency: one writer appends at a steady rate to one session watched by
// n subscribers; each receive is timed from the moment the append committed
// (OnAppend, before the hub sees it) to the moment the client has read the
// whole message. Both instants are read from the wall clock (one machine,
// one clock), so that the clients may run in a child process.
func latency(ctx context.Context, dbURL, schema string, args []string) error {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	subsFlag := fs.String("subscribers", "1,100,2000", "subscriber counts to measure")
	rate := fs.Int("rate", 20, "appends per second")
	duration := fs.Duration("duration", 15*time.Second, "how long to write for each count")
	remote := fs.Bool("remote", false, "subscribe on a second instance (the NOTIFY path) instead of the writer's")
	child := fs.Bool("clients-process", false, "run the subscribers in a child process instead of beside the server")
	_ = fs.Parse(args)
	counts, err := parseCounts(*subsFlag)
	if err != nil {
		return err
	}

	var commits sync.Map // seq -> wall-clock UnixNano, of the session being measured
	var measured atomic.Value
	measured.Store("")
	writer, err := startLiveServer(ctx, dbURL, schema, true, func(res store.AppendResult) {
		if len(res.Events) > 0 && res.Session.ID == measured.Load().(string) {
			commits.Store(res.Events[0].Seq, time.Now().UnixNano())
		}
	})
	if err != nil {
		return err
	}
	defer writer.close()
	reader := writer
	if *remote {
		if reader, err = startLiveServer(ctx, dbURL, schema, true, nil); err != nil {
			return err
		}
		defer reader.close()
	}
	where := "the writer's instance"
	if *remote {
		where = "another instance (via NOTIFY)"
	}
	clientsIn := "this process (they share its CPU)"
	if *child {
		clientsIn = "a child process"
	}
	fmt.Printf("latency: commit -> client receive, %d appends/s for %s, subscribers on %s, clients in %s\n", *rate, *duration, where, clientsIn)
	fmt.Printf("%12s %9s %8s %8s %8s %8s %10s %8s %11s %11s %11s\n", "subscribers", "appends/s", "p50", "p90", "p99", "max", "samples", "tooSlow", "cpu/sample", "server", "clients")

	for _, n := range counts {
		id, err := createSession(writer.url)
		if err != nil {
			return err
		}
		measured.Store(id)
		wsURL := strings.Replace(reader.url, "http", "ws", 1) + "/sessions/" + id + "/live"
		var cl clients
		if *child {
			cl, err = startChildClients(wsURL, n)
		} else {
			cl, err = startLocalClients(ctx, wsURL, n)
		}
		if err != nil {
			return err
		}
		cpu0 := cpuTime()
		// Appends go out on schedule, each on its own (at most 64 in
		// flight), so that a slow append does not lower the rate: the rate
		// printed is what committed.
		tick := time.NewTicker(time.Second / time.Duration(*rate))
		end := time.After(*duration)
		var appends sync.WaitGroup
		var appended atomic.Int64
		appendErr := make(chan error, 1)
		inflight := make(chan struct{}, 64)
		start := time.Now()
	write:
		for {
			select {
			case <-tick.C:
				select {
				case inflight <- struct{}{}:
				default:
					continue // 64 in flight: this tick is skipped
				}
				appends.Go(func() {
					defer func() { <-inflight }()
					if err := appendOne(writer.url, id); err != nil {
						select {
						case appendErr <- err:
						default:
						}
						return
					}
					appended.Add(1)
				})
			case <-end:
				break write
			}
		}
		tick.Stop()
		appends.Wait()
		achieved := float64(appended.Load()) / time.Since(start).Seconds()
		select {
		case err := <-appendErr:
			_, _ = cl.stop()
			return err
		default:
		}
		time.Sleep(500 * time.Millisecond) // let the last frames arrive
		cpu := cpuTime() - cpu0
		res, err := cl.stop()
		if err != nil {
			return err
		}
		samples := make([]time.Duration, 0, len(res.receipts))
		for _, r := range res.receipts {
			if at, ok := commits.Load(r.seq); ok {
				samples = append(samples, time.Duration(r.at-at.(int64)))
			}
		}
		commits.Clear()
		slices.Sort(samples)
		if len(samples) == 0 {
			return errors.New("no samples")
		}
		q := func(p float64) string { return fmtDur(samples[int(p*float64(len(samples)-1))]) }
		per := func(d time.Duration) string {
			return fmt.Sprintf("%.1fus", float64(d.Microseconds())/float64(len(samples)))
		}
		total, server, cli := per(cpu), "-", "-"
		if *child {
			total, server, cli = per(cpu+res.cpu), per(cpu), per(res.cpu)
		}
		fmt.Printf("%12d %9.1f %8s %8s %8s %8s %10d %8d %11s %11s %11s\n", n, achieved, q(0.50), q(0.90), q(0.99), fmtDur(samples[len(samples)-1]), len(samples), res.tooSlow,
			total, server, cli)
	}
	return nil
}

// receipt is one event message read by one client: its seq and the
// wall-clock UnixNano at which the client had read all of it.
type receipt struct{ seq, at int64 }

// clientResult is what a round of clients read; cpu is the clients' own CPU
// from the moment all were ready, when they ran in a child process.
type clientResult struct {
	receipts []receipt
	tooSlow  int64
	cpu      time.Duration
}

// clients is a round of subscribers, ready when started; stop ends them and
// returns what they read.
type clients struct {
	stop func() (clientResult, error)
}

func startLocalClients(ctx context.Context, url string, n int) (clients, error) {
	cctx, cancel := context.WithCancel(ctx)
	ready := make(chan struct{})
	done := make(chan clientResult, 1)
	errc := make(chan error, 1)
	go func() {
		res, err := readClients(cctx, url, n, func() { close(ready) })
		if err != nil {
			errc <- err
			return
		}
		done <- res
	}()
	select {
	case <-ready:
	case err := <-errc:
		cancel()
		return clients{}, err
	}
	return clients{stop: func() (clientResult, error) {
		cancel()
		select {
		case res := <-done:
			return res, nil
		case err := <-errc:
			return clientResult{}, err
		}
	}}, nil
}

// startChildClients runs the clients as "tackbench live-clients" in a
// child process: it says "ready" on stdout, reads until its stdin is
// closed, then writes a "done" line and its receipts.
func startChildClients(url string, n int) (clients, error) {
	self, err := os.Executable()
	if err != nil {
		return clients{}, err
	}
	cmd := exec.Command(self, "live-clients", "-url", url, "-n", strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return clients{}, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return clients{}, err
	}
	if err := cmd.Start(); err != nil {
		return clients{}, err
	}
	out := bufio.NewReaderSize(stdout, 1<<20)
	line, err := out.ReadString('\n')
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return clients{}, fmt.Errorf("clients process: %q %v", line, err)
	}
	return clients{stop: func() (clientResult, error) {
		_ = stdin.Close()
		var res clientResult
		var count int64
		var cpuUS int64
		if _, err := fmt.Fscanf(out, "done %d %d %d\n", &res.tooSlow, &cpuUS, &count); err != nil {
			_ = cmd.Wait()
			return res, fmt.Errorf("clients process: %w", err)
		}
		res.cpu = time.Duration(cpuUS) * time.Microsecond
		res.receipts = make([]receipt, count)
		var b [16]byte
		for i := range res.receipts {
			if _, err := io.ReadFull(out, b[:]); err != nil {
				_ = cmd.Wait()
				return res, fmt.Errorf("clients process: %w", err)
			}
			res.receipts[i] = receipt{int64(binary.LittleEndian.Uint64(b[:8])), int64(binary.LittleEndian.Uint64(b[8:]))}
		}
		return res, cmd.Wait()
	}}, nil
}

// latencyClients is the child side of startChildClients.
func latencyClients(args []string) error {
	fs := flag.NewFlagSet("live-clients", flag.ExitOnError)
	url := fs.String("url", "", "the session's live URL")
	n := fs.Int("n", 1, "sockets")
	_ = fs.Parse(args)
	raiseFileLimit()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
	out := bufio.NewWriterSize(os.Stdout, 1<<20)
	var cpu0 time.Duration
	res, err := readClients(ctx, *url, *n, func() {
		cpu0 = cpuTime()
		fmt.Fprintln(out, "ready")
		_ = out.Flush()
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "done %d %d %d\n", res.tooSlow, (cpuTime() - cpu0).Microseconds(), len(res.receipts))
	var b [16]byte
	for _, r := range res.receipts {
		binary.LittleEndian.PutUint64(b[:8], uint64(r.seq))
		binary.LittleEndian.PutUint64(b[8:], uint64(r.at))
		_, _ = out.Write(b[:])
	}
	return out.Flush()
}

func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.1fms", float64(d.Microseconds())/1000)
}

// throughput: writers append single events as fast as they can, each to its
// own session, with the live hub off and on (on: the hub, the NOTIFY carrier
// and one subscriber reading every session). Rounds alternate off and on so
// that a noisy neighbour hurts both alike.
func throughput(ctx context.Context, dbURL, schema string, args []string) error {
	fs := flag.NewFlagSet("throughput", flag.ExitOnError)
	writers := fs.Int("writers", 8, "concurrent writers, one session each")
	duration := fs.Duration("duration", 10*time.Second, "length of each run")
	rounds := fs.Int("rounds", 3, "off/on pairs")
	_ = fs.Parse(args)
	fmt.Printf("throughput: %d writers, one session each, single-event appends over HTTP, %s a run\n", *writers, *duration)
	var off, on, ratios []float64
	var cpuOff, cpuOn time.Duration
	var nOff, nOn int64
	for r := range *rounds {
		var pair [2]float64
		for i, withLive := range []bool{false, true} {
			cpu0 := cpuTime()
			n, secs, err := throughputRun(ctx, dbURL, schema, withLive, *writers, *duration)
			if err != nil {
				return err
			}
			cpu := cpuTime() - cpu0
			pair[i] = float64(n) / secs
			if withLive {
				on, cpuOn, nOn = append(on, pair[i]), cpuOn+cpu, nOn+n
			} else {
				off, cpuOff, nOff = append(off, pair[i]), cpuOff+cpu, nOff+n
			}
		}
		ratios = append(ratios, pair[1]/pair[0])
		fmt.Printf("round %2d  off %6.0f/s  on %6.0f/s  on/off %.2f\n", r+1, pair[0], pair[1], pair[1]/pair[0])
	}
	mean := func(xs []float64) float64 {
		s := 0.0
		for _, x := range xs {
			s += x
		}
		return s / float64(len(xs))
	}
	slices.Sort(ratios)
	fmt.Printf("mean off %.0f/s, on %.0f/s: ratio of means %.2f, median of round ratios %.2f\n",
		mean(off), mean(on), mean(on)/mean(off), ratios[len(ratios)/2])
	fmt.Printf("CPU of this process (server and clients) per append: off %.0fus, on %.0fus\n",
		float64(cpuOff.Microseconds())/float64(nOff), float64(cpuOn.Microseconds())/float64(nOn))
	return nil
}

func throughputRun(ctx context.Context, dbURL, schema string, withLive bool, writers int, d time.Duration) (int64, float64, error) {
	srv, err := startLiveServer(ctx, dbURL, schema, withLive, nil)
	if err != nil {
		return 0, 0, err
	}
	defer srv.close()
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	ids := make([]string, writers)
	var readers sync.WaitGroup
	for i := range ids {
		if ids[i], err = createSession(srv.url); err != nil {
			return 0, 0, err
		}
		if withLive {
			c, _, err := websocket.Dial(cctx, strings.Replace(srv.url, "http", "ws", 1)+"/sessions/"+ids[i]+"/live", nil)
			if err != nil {
				return 0, 0, err
			}
			readers.Go(func() {
				defer c.CloseNow()
				for {
					if _, _, err := c.Read(cctx); err != nil {
						return
					}
				}
			})
		}
	}
	var n atomic.Int64
	var wg sync.WaitGroup
	deadline := time.Now().Add(d)
	start := time.Now()
	errc := make(chan error, writers)
	for _, id := range ids {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if err := appendOne(srv.url, id); err != nil {
					errc <- err
					return
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	stop()
	readers.Wait()
	select {
	case err := <-errc:
		return 0, 0, err
	default:
	}
	return n.Load(), elapsed.Seconds(), nil
}

var addrRe = regexp.MustCompile(`addr=http://(\S+)`)

// idle: start the server binary, open conns idle sockets spread over 100
// sessions, and compare the server's resident memory before and after.
func idle(ctx context.Context, dbURL, schema string, args []string) error {
	fs := flag.NewFlagSet("idle", flag.ExitOnError)
	bin := fs.String("server-bin", "", "the server binary (go build -o /tmp/tack ./cmd/server)")
	conns := fs.Int("conns", 10000, "idle sockets to open")
	settle := fs.Duration("settle", 5*time.Second, "wait before reading RSS")
	_ = fs.Parse(args)
	if *bin == "" {
		return errors.New("-server-bin is required")
	}
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	cmd := exec.CommandContext(ctx, *bin, "-addr", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dbURL+sep+"search_path="+schema)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	var addr string
	for sc.Scan() {
		if m := addrRe.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
			break
		}
	}
	if addr == "" {
		return errors.New("the server did not print its address")
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	pid := cmd.Process.Pid

	ids := make([]string, 100)
	for i := range ids {
		if ids[i], err = createSession("http://" + addr); err != nil {
			return err
		}
	}
	// Warm up: one socket, so that the baseline includes the code paths.
	warm, _, err := websocket.Dial(ctx, "ws://"+addr+"/sessions/"+ids[0]+"/live", nil)
	if err != nil {
		return err
	}
	_, _, _ = warm.Read(ctx)
	_ = warm.Close(websocket.StatusNormalClosure, "")
	time.Sleep(*settle)
	before := rssKB(pid)

	open := make([]*websocket.Conn, 0, *conns)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	var failed atomic.Int64
	var firstErr atomic.Value
	for i := range *conns {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			c, _, err := websocket.Dial(ctx, "ws://"+addr+"/sessions/"+ids[i%len(ids)]+"/live", nil)
			if err == nil {
				_, _, err = c.Read(ctx) // the todos view: the socket is served
			}
			if err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
				return
			}
			mu.Lock()
			open = append(open, c)
			mu.Unlock()
		})
	}
	wg.Wait()
	if failed.Load() > 0 {
		return fmt.Errorf("%d of %d sockets failed; first: %v (raise ulimit -n?)", failed.Load(), *conns, firstErr.Load())
	}
	time.Sleep(*settle)
	after := rssKB(pid)
	fmt.Printf("idle: %d sockets over %d sessions; server RSS %d KiB before, %d KiB after: %.1f KiB per idle subscriber\n",
		len(open), len(ids), before, after, float64(after-before)/float64(len(open)))
	for _, c := range open {
		c.CloseNow()
	}
	return nil
}

// raiseFileLimit raises this process's descriptor limit to its hard limit:
// 10,000 sockets need 10,000 descriptors on each side, and a child (the
// server of idle, the clients of latency) inherits the limit.
func raiseFileLimit() {
	var l syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l) == nil && l.Cur < l.Max {
		l.Cur = l.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l)
	}
}

// cpuTime is the user and system CPU time this process has used: server and
// clients together, since latency runs both in process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssKB reads VmRSS of a process from /proc.
func rssKB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
