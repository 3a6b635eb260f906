package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// serve is the child process: the Tack API over Postgres, wired as
// cmd/server wires it, on a loopback port it prints as its first line. It
// stops when its standard input closes, so it never outlives the parent.
func serve(ctx context.Context, args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("tackbench serve", flag.ContinueOnError)
	databaseURL := fs.String("database-url", defaultURL, "Postgres URL")
	maxConns := fs.Int("max-conns", 16, "Postgres pool size")
	cpuProfile := fs.String("cpuprofile", "", "write the server's CPU profile to this file")
	withLive := fs.Bool("live", true, "run the live hub and its Postgres carrier, as cmd/server does")
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
	pc, err := store.PoolConfig(*databaseURL, int32(*maxConns))
	if err != nil {
		return err
	}
	st, err := store.OpenPostgres(ctx, pc, projection.Config{})
	if err != nil {
		return err
	}
	defer st.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	// The live hub hangs on every append in cmd/server (OnAppend announces
	// the change to other instances through Postgres), so it is wired here
	// the same way: a figure without it would flatter the server.
	// The metrics are on in cmd/server too: every request is timed.
	reg := prometheus.NewRegistry()
	opts := api.Options{Registerer: reg}
	if *withLive {
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		carrier := live.NewPGNotify(pc.ConnConfig, live.PGNotifyOptions{Logger: log})
		hub := live.New(st, live.Options{Logger: log, Carrier: carrier})
		hubCtx, stopHub := context.WithCancel(context.Background())
		hubDone := make(chan struct{})
		go func() { defer close(hubDone); _ = hub.Run(hubCtx) }()
		defer func() { stopHub(); <-hubDone }()
		opts = api.Options{Logger: log, OnAppend: hub.OnAppend, Live: hub, Registerer: reg}
	}
	srv := &http.Server{Handler: api.New(st, opts).Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Fprintln(stdout, ln.Addr().String())

	eof := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, stdin); close(eof) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	case <-eof:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

// writeAllocs writes the allocation profile beside the CPU profile: what
// the collector's share of the CPU profile comes from.
func writeAllocs(path string) {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tackbench serve:", err)
		return
	}
	defer f.Close()
	_ = pprof.Lookup("allocs").WriteTo(f, 0)
}

// server is the running child.
type server struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	pid   int
}

func startServer(ctx context.Context, databaseURL string, maxConns int, cpuProfile string, withLive bool) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, "serve", "-database-url", databaseURL, "-max-conns", fmt.Sprint(maxConns), "-cpuprofile", cpuProfile, fmt.Sprintf("-live=%t", withLive))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, stdin: stdin, pid: cmd.Process.Pid}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		s.stop()
		return nil, errors.New("the server child exited before listening")
	}
	s.addr = strings.TrimSpace(line)
	return s, nil
}

func (s *server) stop() {
	_ = s.stdin.Close()
	_ = s.cmd.Wait()
}
