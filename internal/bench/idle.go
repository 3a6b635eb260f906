package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

var addrRe = regexp.MustCompile(`addr=http://(\S+)`)

// IdleConfig is a run of Idle.
type IdleConfig struct {
	LiveConfig
	ServerBin string        // the server binary (go build -o tack ./cmd/server)
	Conns     int           // idle sockets to open
	Settle    time.Duration // wait before reading RSS
}

// Idle measures resident memory per idle socket: it starts the server
// binary, opens conns idle sockets spread over 100 sessions, and prints the
// server's resident memory before and after to out.
func Idle(ctx context.Context, cfg IdleConfig, out io.Writer) error {
	if cfg.ServerBin == "" {
		return errors.New("-server-bin is required")
	}
	return cfg.inFreshSchema(ctx, func(schema string) error { return idle(ctx, cfg, schema, out) })
}

func idle(ctx context.Context, cfg IdleConfig, schema string, out io.Writer) error {
	dbURL := cfg.DatabaseURL
	sep := "?"
	if strings.Contains(dbURL, "?") {
		sep = "&"
	}
	// Every socket is the same principal's (-auth local): its cap, 1000
	// by default, is lifted.
	cmd := exec.CommandContext(ctx, cfg.ServerBin, "-addr", "127.0.0.1:0", "-max-sockets-per-principal", "0")
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

	tc := tack("http://" + addr)
	ids := make([]string, 100)
	for i := range ids {
		if ids[i], err = createSession(ctx, tc); err != nil {
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
	time.Sleep(cfg.Settle)
	before, err := rssKB(pid)
	if err != nil {
		return err
	}

	open := make([]*websocket.Conn, 0, cfg.Conns)
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64)
	var failed atomic.Int64
	var firstErr atomic.Value
	for i := range cfg.Conns {
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
		return fmt.Errorf("%d of %d sockets failed; first: %v (raise ulimit -n?)", failed.Load(), cfg.Conns, firstErr.Load())
	}
	time.Sleep(cfg.Settle)
	after, err := rssKB(pid)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "idle: %d sockets over %d sessions; server RSS %d KiB before, %d KiB after: %.1f KiB per idle subscriber\n",
		len(open), len(ids), before, after, float64(after-before)/float64(len(open)))
	for _, c := range open {
		c.CloseNow()
	}
	return nil
}
