package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/api"
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
	srv := &http.Server{Handler: api.New(st, api.Options{}).Handler(), ReadHeaderTimeout: 10 * time.Second}
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

// server is the running child.
type server struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	pid   int
}

func startServer(ctx context.Context, databaseURL string, maxConns int, cpuProfile string) (*server, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, "serve", "-database-url", databaseURL, "-max-conns", fmt.Sprint(maxConns), "-cpuprofile", cpuProfile)
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
