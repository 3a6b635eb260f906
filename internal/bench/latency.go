package bench

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tack-dev/tack/internal/store"
)

// LatencyConfig is a run of Latency.
type LatencyConfig struct {
	LiveConfig
	Subscribers    []int         // the subscriber counts measured, one after another
	Rate           int           // appends per second
	Duration       time.Duration // how long to write for each count
	Remote         bool          // subscribe on a second instance (the NOTIFY path) instead of the writer's
	ClientsProcess bool          // run the subscribers in a child process instead of beside the server
}

// Latency measures commit-to-receive latency: one writer appends at a
// steady rate to one session watched by n subscribers; each receive is
// timed from the moment the append committed (OnAppend, before the hub sees
// it) to the moment the client has read the whole message. Both instants
// are read from the wall clock (one machine, one clock), so that the
// clients may run in a child process. It prints a row a count to out.
func Latency(ctx context.Context, cfg LatencyConfig, out io.Writer) error {
	return cfg.inFreshSchema(ctx, func(schema string) error { return latency(ctx, cfg, schema, out) })
}

func latency(ctx context.Context, cfg LatencyConfig, schema string, out io.Writer) error {
	var commits sync.Map // seq -> wall-clock UnixNano, of the session being measured
	var measured atomic.Value
	measured.Store("")
	writer, err := cfg.startLiveInstance(ctx, schema, true, func(res store.AppendResult) {
		if len(res.Events) > 0 && res.Session.ID == measured.Load().(string) {
			commits.Store(res.Events[0].Seq, time.Now().UnixNano())
		}
	})
	if err != nil {
		return err
	}
	defer writer.stop()
	reader := writer
	if cfg.Remote {
		if reader, err = cfg.startLiveInstance(ctx, schema, true, nil); err != nil {
			return err
		}
		defer reader.stop()
	}
	where := "the writer's instance"
	if cfg.Remote {
		where = "another instance (via NOTIFY)"
	}
	clientsIn := "this process (they share its CPU)"
	if cfg.ClientsProcess {
		clientsIn = "a child process"
	}
	fmt.Fprintf(out, "latency: commit -> client receive, %d appends/s for %s, subscribers on %s, clients in %s\n", cfg.Rate, cfg.Duration, where, clientsIn)
	fmt.Fprintf(out, "%12s %9s %8s %8s %8s %8s %10s %8s %11s %11s %11s\n", "subscribers", "appends/s", "p50", "p90", "p99", "max", "samples", "tooSlow", "cpu/sample", "server", "clients")

	tc := tack(writer.url)
	for _, n := range cfg.Subscribers {
		id, err := createSession(ctx, tc)
		if err != nil {
			return err
		}
		measured.Store(id)
		wsURL := strings.Replace(reader.url, "http", "ws", 1) + "/sessions/" + id + "/live"
		var cl clients
		if cfg.ClientsProcess {
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
		tick := time.NewTicker(time.Second / time.Duration(cfg.Rate))
		end := time.After(cfg.Duration)
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
					if err := appendMessage(ctx, tc, id); err != nil {
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
		q := func(p float64) string { return fmtDur(percentile(samples, p)) }
		per := func(d time.Duration) string {
			return fmt.Sprintf("%.1fus", float64(d.Microseconds())/float64(len(samples)))
		}
		total, server, cli := per(cpu), "-", "-"
		if cfg.ClientsProcess {
			total, server, cli = per(cpu+res.cpu), per(cpu), per(res.cpu)
		}
		fmt.Fprintf(out, "%12d %9.1f %8s %8s %8s %8s %10d %8d %11s %11s %11s\n", n, achieved, q(0.50), q(0.90), q(0.99), fmtDur(samples[len(samples)-1]), len(samples), res.tooSlow,
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

// startChildClients runs the clients as this command's ClientsCommand in a
// child process: it says "ready" on stdout, reads until its stdin is
// closed, then writes a "done" line and its receipts.
func startChildClients(url string, n int) (clients, error) {
	self, err := os.Executable()
	if err != nil {
		return clients{}, err
	}
	cmd := exec.Command(self, ClientsCommand, "-url", url, "-n", strconv.Itoa(n))
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

// Clients is the child side of startChildClients: the subscribers of
// Latency in a process of their own, so that their CPU is not the server's.
func Clients(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("tackbench "+ClientsCommand, flag.ExitOnError)
	url := fs.String("url", "", "the session's live URL")
	n := fs.Int("n", 1, "sockets")
	_ = fs.Parse(args)
	raiseFileLimit()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _, _ = io.Copy(io.Discard, stdin); cancel() }()
	out := bufio.NewWriterSize(stdout, 1<<20)
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
