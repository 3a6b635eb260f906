package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FleetConfig is one `tackbench fleet` run: a person's fleet of Claude Code
// agents on one workstation, heard the way `tack connect` sets it up (every
// hook through the real tack-hook-local, which hands what it does not cover
// to tack-hook beside it, one `tack watch` following the transcripts),
// with the board open in browsers, on a store that already holds many
// ended sessions.
type FleetConfig struct {
	Server, Tack string // the built cmd/server and cmd/tack (for tack watch)
	Hook         string // the built cmd/tack-hook-local (cmd/tack-hook beside it), which tack connect installs for a server on this machine
	// DatabaseURL is the Postgres the server uses, in a fresh schema; ""
	// runs it on SQLite in a temporary folder.
	DatabaseURL string
	Agents      int           // agents working at once
	Ended       int           // ended sessions in the store before they start
	Every       time.Duration // mean time between an agent's tool calls
	Warmup      time.Duration // agents working before the window opens
	Window      time.Duration // the measured span
	Browsers    int           // browsers holding the board open
	Paints      int           // board loads timed before the fleet starts
	BoardScript string        // web/e2e/bench/board.js
	Node        string
}

// Fleet measures what a fleet costs the server: its CPU per agent-minute,
// beside the same server idle over an equal span with the same store; the
// board's first paint with Ended ended sessions, beside an empty store's,
// in the same run; and what following the fleet live costs the boards held
// open: their main thread a minute and a message.
func Fleet(ctx context.Context, cfg FleetConfig, out io.Writer) error {
	tmp, err := os.MkdirTemp("", "tackbench-fleet-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	storeName := "SQLite"
	if cfg.DatabaseURL != "" {
		storeName = "Postgres"
	}
	fmt.Fprintf(out, "fleet: %d Claude Code agents (every hook through tack-hook-local, one `tack watch`), a tool call every %v each, the board open in %d browsers, %d ended sessions, %s; %d cores, load %s\n",
		cfg.Agents, cfg.Every, cfg.Browsers, cfg.Ended, storeName, numCPU(), loadAverage())

	srv, err := startFleetServer(ctx, cfg, tmp)
	if err != nil {
		return err
	}
	defer srv.stop()

	// The board's first paint: a store of a few sessions, then the same
	// store after the rest of the ended sessions are in.
	const few = 100 // one page of the board: what it shows before any scrolling
	if err := seedEnded(ctx, srv.url, 0, few); err != nil {
		return err
	}
	small, err := paints(ctx, cfg, srv.url)
	if err != nil {
		return err
	}
	t0 := time.Now()
	if err := seedEnded(ctx, srv.url, few, cfg.Ended); err != nil {
		return err
	}
	fmt.Fprintf(out, "seeded %d ended sessions in %v\n", cfg.Ended, time.Since(t0).Round(time.Millisecond))
	full, err := paints(ctx, cfg, srv.url)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "board first paint, %d loads each: %d ended sessions FCP p50 %s, rows p50 %s | %d ended sessions FCP p50 %s, rows p50 %s (%.2f× the small store's rows)\n",
		cfg.Paints, few, fmtMS(median(small.fcp)), fmtMS(median(small.rows)), cfg.Ended,
		fmtMS(median(full.fcp)), fmtMS(median(full.rows)), median(full.rows)/median(small.rows))

	// The baseline: the same server, nobody connected, over the window.
	idle := measureCPU(ctx, cfg.Window, srv.pid)

	home := filepath.Join(tmp, "home")
	projects := filepath.Join(home, ".claude", "projects")
	if err := os.MkdirAll(projects, 0o755); err != nil {
		return err
	}
	env := append(os.Environ(), "HOME="+home, "XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "TACK_SERVER="+srv.url)
	watch := exec.CommandContext(ctx, cfg.Tack, "watch", "-registry", "", projects)
	watch.Env = env
	watch.Stderr = os.Stderr
	if err := watch.Start(); err != nil {
		return err
	}
	defer func() { _ = watch.Process.Kill(); _ = watch.Wait() }()

	hold, err := holdBoard(ctx, cfg, srv.url)
	if err != nil {
		return err
	}
	defer hold.stop()

	fleetCtx, stopFleet := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stats := &hookStats{}
	for i := range cfg.Agents {
		a := &fleetAgent{i: i, cfg: cfg, env: env, stats: stats,
			id: uuid(), cwd: fmt.Sprintf("/home/dev/src/project-%02d", i%12)}
		a.transcript = filepath.Join(projects, strings.ReplaceAll(a.cwd, "/", "-"), a.id+".jsonl")
		wg.Add(1)
		go func() { defer wg.Done(); a.run(fleetCtx) }()
	}
	if err := sleep(ctx, cfg.Warmup); err != nil {
		stopFleet()
		wg.Wait()
		return err
	}
	stats.reset()
	board0, err0 := hold.mark()
	busy := measureCPU(ctx, cfg.Window, srv.pid, watch.Process.Pid)
	n, lat, failed := stats.take()
	board1, err1 := hold.mark()
	stopFleet()
	wg.Wait()
	if err := errors.Join(err0, err1); err != nil {
		return err
	}

	minutes := cfg.Window.Minutes() * float64(cfg.Agents)
	fmt.Fprintf(out, "window %v: %d hooks (%.1f/s), a hook's p50 %s p99 %s, %d failed\n",
		cfg.Window, n, float64(n)/cfg.Window.Seconds(), fmtDur(percentile(lat, 0.50)), fmtDur(percentile(lat, 0.99)), failed)
	fmt.Fprintf(out, "server CPU: idle %s in %v (%.3f cores) | fleet %s (%.3f cores) = %s per agent-minute, %s above idle\n",
		idle[0], cfg.Window, idle[0].Seconds()/cfg.Window.Seconds(), busy[0], busy[0].Seconds()/cfg.Window.Seconds(),
		fmtMS(float64(busy[0].Milliseconds())/minutes), fmtMS(float64((busy[0]-idle[0]).Milliseconds())/minutes))
	fmt.Fprintf(out, "tack watch CPU (on the agents' machine): %s = %s per agent-minute\n", busy[1], fmtMS(float64(busy[1].Milliseconds())/minutes))
	// The browser's side: what following the fleet live costs a board.
	perMinute := func(a, b float64) string {
		return fmtMS((b - a) / float64(cfg.Browsers) / cfg.Window.Minutes())
	}
	perMessage := "no message"
	if heard := board1.Messages - board0.Messages; heard > 0 {
		perMessage = fmtMS((board1.Task-board0.Task)/heard) + " a message"
	}
	fmt.Fprintf(out, "board main thread, a browser following the fleet: %s a minute (script %s, layout %s, style %s), %.0f messages heard a minute, %s; %.0f reconnects in all\n",
		perMinute(board0.Task, board1.Task), perMinute(board0.Script, board1.Script),
		perMinute(board0.Layout, board1.Layout), perMinute(board0.Style, board1.Style),
		(board1.Messages-board0.Messages)/float64(cfg.Browsers)/cfg.Window.Minutes(), perMessage, board1.Sockets-board0.Sockets)
	if rss, err := rssKB(srv.pid); err == nil {
		fmt.Fprintf(out, "server resident memory: %.1f MiB\n", float64(rss)/1024)
	}
	return nil
}

func fmtMS(ms float64) string { return strconv.FormatFloat(ms, 'f', 1, 64) + " ms" }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// measureCPU is the CPU time each process spent over span.
func measureCPU(ctx context.Context, span time.Duration, pids ...int) []time.Duration {
	before := make([]int64, len(pids))
	for i, pid := range pids {
		before[i], _ = processUsage(pid)
	}
	_ = sleep(ctx, span)
	used := make([]time.Duration, len(pids))
	for i, pid := range pids {
		after, _ := processUsage(pid)
		used[i] = time.Duration(after-before[i]) * time.Second / clockTicks
	}
	return used
}

type fleetServer struct {
	cmd *exec.Cmd
	url string
	pid int
	db  *database
}

func startFleetServer(ctx context.Context, cfg FleetConfig, tmp string) (*fleetServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &fleetServer{url: "http://" + addr}
	args := []string{"-addr", addr, "-log-level", "warn"}
	if cfg.DatabaseURL != "" {
		if s.db, err = newDatabase(ctx, cfg.DatabaseURL, ""); err != nil {
			return nil, err
		}
		args = append(args, "-database-url", s.db.schemaURL())
	} else {
		args = append(args, "-data-dir", filepath.Join(tmp, "data"))
	}
	s.cmd = exec.CommandContext(ctx, cfg.Server, args...)
	s.cmd.Stderr = os.Stderr
	if err := s.cmd.Start(); err != nil {
		s.stop()
		return nil, err
	}
	s.pid = s.cmd.Process.Pid
	for deadline := time.Now().Add(30 * time.Second); ; {
		resp, err := httpClient.Get(s.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, errors.New("fleet: the server was not ready within 30s")
		}
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			s.stop()
			return nil, err
		}
	}
}

func (s *fleetServer) stop() {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(os.Interrupt)
		_ = s.cmd.Wait()
	}
	if s.db != nil {
		s.db.drop()
	}
}

// seedEnded makes ended sessions from..to-1, each a turn with a finished plan, the
// way a month of a fleet's work leaves the store.
func seedEnded(ctx context.Context, base string, from, to int) error {
	c := tack(base)
	var next atomic.Int64
	next.Store(int64(from))
	errs := make(chan error, 16)
	for range 16 {
		go func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(to) {
					errs <- nil
					return
				}
				var made struct {
					ID string `json:"id"`
				}
				body := map[string]any{"title": fmt.Sprintf("Past task %d", i), "agent": "claude-code", "cwd": fmt.Sprintf("/home/dev/src/project-%02d", i%12)}
				if err := c.Do(ctx, http.MethodPost, "/sessions", body, &made); err != nil {
					errs <- err
					return
				}
				todos := []map[string]string{
					{"content": "Read the code", "activeForm": "Reading the code", "status": "completed"},
					{"content": "Make the change", "activeForm": "Making the change", "status": "completed"},
					{"content": "Run the tests", "activeForm": "Running the tests", "status": "completed"},
				}
				events := []map[string]any{
					{"type": "turn/start", "data": map[string]any{}},
					{"type": "message/user", "data": map[string]any{"text": fmt.Sprintf("Past task %d", i)}},
					{"type": "todo/write", "data": map[string]any{"todos": todos}},
					{"type": "message/assistant", "data": map[string]any{"text": "Done."}},
					{"type": "turn/end", "data": map[string]any{"reason": "completed"}},
					{"type": "session/end", "data": map[string]any{}},
				}
				if err := c.Do(ctx, http.MethodPost, "/sessions/"+made.ID+"/events", map[string]any{"events": events}, nil); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	var first error
	for range 16 {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

type paintTimes struct{ fcp, rows []float64 }

func paints(ctx context.Context, cfg FleetConfig, url string) (paintTimes, error) {
	cmd := exec.CommandContext(ctx, cfg.Node, cfg.BoardScript, "paint", url, strconv.Itoa(cfg.Paints))
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		return paintTimes{}, fmt.Errorf("board.js paint: %w", err)
	}
	var p paintTimes
	for line := range strings.Lines(string(outb)) {
		var r struct{ FCP, Rows float64 }
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			return p, fmt.Errorf("board.js paint: %q: %w", line, err)
		}
		p.fcp = append(p.fcp, r.FCP)
		p.rows = append(p.rows, r.Rows)
	}
	if len(p.rows) == 0 {
		return p, errors.New("board.js paint printed nothing")
	}
	return p, nil
}

type heldBoard struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func holdBoard(ctx context.Context, cfg FleetConfig, url string) (*heldBoard, error) {
	cmd := exec.CommandContext(ctx, cfg.Node, cfg.BoardScript, "hold", url, strconv.Itoa(cfg.Browsers))
	stdin, out, line, err := startChild(cmd)
	if err != nil {
		return nil, fmt.Errorf("board.js hold: %w", err)
	}
	h := &heldBoard{cmd: cmd, stdin: stdin, out: out}
	if line != "open" {
		h.stop()
		return nil, fmt.Errorf("board.js hold did not open the board: %q", line)
	}
	return h, nil
}

// mainThread is the time the boards' pages have kept their browsers' main
// threads busy since they opened, summed over the browsers (Chromium's own
// counts, in thread CPU time): all of it, and the script, layout and style
// recalculation in it; the websocket messages they have heard and the
// sockets they have opened (a page reconnects when the server drops it as
// too slow).
type mainThread struct{ Task, Script, Layout, Style, Messages, Sockets float64 }

func (h *heldBoard) mark() (mainThread, error) {
	var m mainThread
	if _, err := io.WriteString(h.stdin, "mark\n"); err != nil {
		return m, fmt.Errorf("board.js hold: %w", err)
	}
	line, err := h.out.ReadString('\n')
	if err != nil {
		return m, fmt.Errorf("board.js hold: no answer to mark: %w", err)
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		return m, fmt.Errorf("board.js hold: %q: %w", line, err)
	}
	return m, nil
}

func (h *heldBoard) stop() {
	_ = h.stdin.Close()
	_ = h.cmd.Wait()
}

// hookStats gathers every hook's time, as the agent waits for it.
type hookStats struct {
	mu      sync.Mutex
	lat     []time.Duration
	failed  int
	counted bool
}

func (s *hookStats) add(d time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.counted {
		return
	}
	if err != nil {
		s.failed++
		return
	}
	s.lat = append(s.lat, d)
}

func (s *hookStats) reset() {
	s.mu.Lock()
	s.lat, s.failed, s.counted = nil, 0, true
	s.mu.Unlock()
}

func (s *hookStats) take() (int, []time.Duration, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counted = false
	lat := slices.Clone(s.lat)
	slices.Sort(lat)
	return len(lat), lat, s.failed
}

// fleetAgent plays one Claude Code session: it writes the transcript as
// Claude Code does, a line before the hook that needs it, and runs the
// real hook for each of Claude Code's hook events.
type fleetAgent struct {
	i          int
	cfg        FleetConfig
	env        []string
	stats      *hookStats
	id, cwd    string
	transcript string
	last       string // the last line's uuid
	calls      int
}

func (a *fleetAgent) run(ctx context.Context) {
	if err := os.MkdirAll(filepath.Dir(a.transcript), 0o755); err != nil {
		return
	}
	// The agents start spread over one call's time, as a fleet does.
	if sleep(ctx, jitter(a.cfg.Every)) != nil {
		return
	}
	a.hook(ctx, map[string]any{"hook_event_name": "SessionStart", "source": "startup"})
	for turn := 0; ctx.Err() == nil; turn++ {
		prompt := fmt.Sprintf("Task %d of agent %d: make the change and run the tests", turn, a.i)
		a.line(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})
		a.hook(ctx, map[string]any{"hook_event_name": "UserPromptSubmit", "prompt": prompt})
		for step := 0; step < 6 && ctx.Err() == nil; step++ {
			if sleep(ctx, jitter(a.cfg.Every)) != nil {
				return
			}
			name, input := "Bash", map[string]any{"command": fmt.Sprintf("go test ./pkg%d/...", step)}
			if step%2 == 0 {
				name, input = "TodoWrite", map[string]any{"todos": fleetPlan(step / 2)}
			}
			a.call(ctx, name, input)
		}
		said := fmt.Sprintf("Task %d is done.", turn)
		a.line(map[string]any{"type": "assistant", "message": map[string]any{"id": "msg_" + rand.Text(), "role": "assistant", "type": "message",
			"content": []any{map[string]any{"type": "text", "text": said}}}, "requestId": "req_" + rand.Text()})
		a.hook(ctx, map[string]any{"hook_event_name": "Stop", "stop_hook_active": false, "last_assistant_message": said})
		if sleep(ctx, jitter(a.cfg.Every)) != nil {
			return
		}
	}
}

func fleetPlan(done int) []map[string]string {
	items := [][2]string{{"Read the code", "Reading the code"}, {"Make the change", "Making the change"}, {"Run the tests", "Running the tests"}}
	todos := make([]map[string]string, len(items))
	for i, it := range items {
		status := "pending"
		switch {
		case i < done:
			status = "completed"
		case i == done:
			status = "in_progress"
		}
		todos[i] = map[string]string{"content": it[0], "activeForm": it[1], "status": status}
	}
	return todos
}

// call is one tool call: its line, PreToolUse, the result's line,
// PostToolUse.
func (a *fleetAgent) call(ctx context.Context, name string, input map[string]any) {
	a.calls++
	id := fmt.Sprintf("toolu_%s_%d", a.id[:8], a.calls)
	a.line(map[string]any{"type": "assistant", "message": map[string]any{"id": "msg_" + rand.Text(), "role": "assistant", "type": "message",
		"content": []any{map[string]any{"type": "tool_use", "id": id, "name": name, "input": input}}}, "requestId": "req_" + rand.Text()})
	a.hook(ctx, map[string]any{"hook_event_name": "PreToolUse", "tool_name": name, "tool_input": input, "tool_use_id": id})
	result := "ok"
	a.line(map[string]any{"type": "user", "message": map[string]any{"role": "user",
		"content": []any{map[string]any{"type": "tool_result", "tool_use_id": id, "content": result}}}})
	a.hook(ctx, map[string]any{"hook_event_name": "PostToolUse", "tool_name": name, "tool_input": input, "tool_use_id": id,
		"tool_response": map[string]any{"stdout": result}})
}

// line appends one transcript line with the fields every line of Claude
// Code's carries.
func (a *fleetAgent) line(l map[string]any) {
	id := uuid()
	l["uuid"], l["sessionId"], l["cwd"], l["timestamp"] = id, a.id, a.cwd, time.Now().UTC().Format(time.RFC3339Nano)
	l["isSidechain"], l["userType"], l["version"] = false, "external", "2.1.0"
	if a.last != "" {
		l["parentUuid"] = a.last
	} else {
		l["parentUuid"] = nil
	}
	a.last = id
	b, _ := json.Marshal(l)
	f, err := os.OpenFile(a.transcript, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	_, _ = f.Write(append(b, '\n'))
	_ = f.Close()
}

// hook runs the hook with the event's JSON on stdin, as Claude Code does.
func (a *fleetAgent) hook(ctx context.Context, ev map[string]any) {
	ev["session_id"], ev["transcript_path"], ev["cwd"] = a.id, a.transcript, a.cwd
	b, _ := json.Marshal(ev)
	cmd := exec.CommandContext(ctx, a.cfg.Hook)
	cmd.Env = a.env
	cmd.Dir = os.TempDir()
	cmd.Stdin = bytes.NewReader(b)
	t0 := time.Now()
	err := cmd.Run()
	if ctx.Err() == nil {
		a.stats.add(time.Since(t0), err)
	}
}

// uuid is a random UUID, as Claude Code names sessions and lines.
func uuid() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// jitter is d ± half, uniformly.
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	n, _ := rand.Int(rand.Reader, big.NewInt(int64(d)))
	return d/2 + time.Duration(n.Int64())
}
