package bench

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strings"

	"github.com/tack-dev/tack/internal/store/postgres"
)

// Serve is the child process of Write: a Tack instance (instance.go) on a
// loopback port it prints as its first line, with the metrics on and, with
// -live, the hub, logging warnings, as cmd/server at -log-level warn. It
// stops when stdin closes, so it never outlives the parent.
func Serve(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("tackbench "+ServeCommand, flag.ContinueOnError)
	databaseURL := fs.String("database-url", "", "Postgres URL")
	maxConns := fs.Int("max-conns", 16, "Postgres pool size")
	cpuProfile := fs.String("cpuprofile", "", "write the server's CPU profile to this file")
	withLive := fs.Bool("live", true, "run the live hub and its Postgres carrier, as cmd/server does")
	waitProfile := fs.String("waitprofile", "", "write the server's blocking profile (where goroutines waited: channels, selects, locks) to this file, and its mutex contention profile to this file.mutex")
	procs := fs.Int("procs", 0, "GOMAXPROCS of the server, which sizes the group commit as on a machine of that many cores; 0 keeps the runtime's")
	warmConns := fs.Int("warm-conns", postgres.DefaultWarmConns, "connections opened and warmed before serving, as cmd/server's -min-conns; 0 opens them on demand, cold")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
		defer writeAllocs(*cpuProfile + ".allocs")
	}
	if *procs > 0 {
		runtime.GOMAXPROCS(*procs)
	}
	if *waitProfile != "" {
		// One sample per 10 µs blocked on average, and one contention of
		// ten: enough to rank the waits at a few thousand appends a second
		// without slowing them measurably.
		runtime.SetBlockProfileRate(10_000)
		runtime.SetMutexProfileFraction(10)
		defer writeProfile("mutex", *waitProfile+".mutex")
		defer writeProfile("block", *waitProfile)
	}
	pc, err := postgres.PoolConfig(*databaseURL, int32(*maxConns))
	if err != nil {
		return err
	}
	if *warmConns > 0 {
		postgres.WarmPool(pc, int32(*warmConns))
	}
	o := instanceOptions{live: *withLive, metrics: true}
	if *withLive {
		o.logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
	in, err := startInstance(ctx, pc, o)
	if err != nil {
		return err
	}
	defer in.stop()
	fmt.Fprintln(stdout, in.addr)
	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, stdin); close(eof) }()
	select {
	case <-ctx.Done():
	case <-eof:
	}
	return nil
}

// writeAllocs writes the allocation profile beside the CPU profile: what
// the collector's share of the CPU profile comes from.
func writeAllocs(path string) { writeProfile("allocs", path) }

// writeProfile writes the runtime profile name to path.
func writeProfile(name, path string) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tackbench serve:", err)
		return
	}
	defer f.Close()
	_ = pprof.Lookup(name).WriteTo(f, 0)
}

// server is the running child.
type server struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	pid   int
}

func startServer(ctx context.Context, databaseURL string, maxConns int, cpuProfile string, withLive bool, extra ...string) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := append([]string{ServeCommand, "-database-url", databaseURL, "-max-conns", fmt.Sprint(maxConns), "-cpuprofile", cpuProfile, fmt.Sprintf("-live=%t", withLive)}, extra...)
	cmd := exec.CommandContext(ctx, self, args...)
	stdin, _, line, err := startChild(cmd)
	if err != nil {
		return nil, fmt.Errorf("the server child exited before listening: %w", err)
	}
	return &server{cmd: cmd, stdin: stdin, pid: cmd.Process.Pid, addr: line}, nil
}

// startChild starts cmd, its stderr this process's, and reads the first
// line it prints: a child of the measurements says it is ready so. Its
// stdin stays open, for the child to stop when it closes, and the rest of
// what it prints is read from the reader returned; on an error the child is
// gone.
func startChild(cmd *exec.Cmd) (io.WriteCloser, *bufio.Reader, string, error) {
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, "", err
	}
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		_ = stdin.Close()
		_ = cmd.Wait()
		return nil, nil, "", errors.New("it printed no line")
	}
	return stdin, out, strings.TrimSpace(line), nil
}

func (s *server) stop() {
	_ = s.stdin.Close()
	_ = s.cmd.Wait()
}
