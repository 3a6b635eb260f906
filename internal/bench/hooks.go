package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tack-dev/tack/internal/hook"
)

// HooksConfig is a run of Hooks.
type HooksConfig struct {
	// DatabaseURL is the Postgres the postgres store's server uses, in a
	// fresh schema.
	DatabaseURL string
	// Stores are the stores measured, one server each: sqlite, postgres.
	Stores []string
	// Agents are the counts of agents measured, one after another.
	Agents []int
	// Duration is the length of each phase: one command, one count.
	Duration time.Duration
	// Rounds of (floor, each hook command) phases, interleaved so that
	// what else loads the machine falls on each alike.
	Rounds int
	// TackBin, HookBin and ServerBin are the tack CLI, the hook's own
	// binary and the server (cmd/tack, cmd/tack-hook, cmd/server); ""
	// builds them from the module in the working directory. The local
	// hook (cmd/tack-hook-local) is the one beside HookBin, built with it
	// when HookBin is.
	TackBin, HookBin, ServerBin string
	// Hooks are the hook commands measured against the floor, each a
	// command line split at spaces in which {tack} is TackBin, {tack-hook}
	// HookBin, {tack-hook-local} the local hook and {server} the server's
	// URL; none measures DefaultHooks.
	Hooks []string
}

// DefaultHooks are the command lines `tack connect` installs for Claude
// Code: `tack hook`, tack-hook where it lies beside tack, tack-hook-local
// for a server on this machine where it lies beside tack, and the HTTP
// hooks of -hooks http.
var DefaultHooks = []string{"{tack} hook -agent claude-code -server {server}", "{tack-hook} -agent claude-code -server {server}", "{tack-hook-local} -agent claude-code -server {server}", HTTPHook}

// HTTPHook, as a hook command, is Claude Code's HTTP hook as `tack connect
// -hooks http` installs it: no process, the agent posts the payload to
// the server itself (on a kept-alive connection), asking it to read the
// transcript with the user's key.
const HTTPHook = "http"

// floorSource is the floor: the least a command hook can cost. It reads
// the hook's JSON, posts it over a fresh loopback connection and prints
// the answer, in a binary that links nothing else.
const floorSource = `package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
)

func main() {
	body, _ := io.ReadAll(os.Stdin)
	resp, err := http.Post(os.Args[1], "application/json", bytes.NewReader(body))
	if err != nil {
		return
	}
	out, _ := io.ReadAll(resp.Body)
	_, _ = os.Stdout.Write(out)
}
`

// Hooks measures what an agent waits for on each tool call: agents at once,
// each firing a PreToolUse and a PostToolUse hook per call, with Claude
// Code's payload and a transcript that grows by the call's lines before
// each hook, as Claude Code's does. Each hook command runs as Claude Code
// runs it, a fresh process per hook with the payload on stdin, against a
// server of each store (the real cmd/server), and the floor (floorSource,
// against a static handler in a process of its own) in the same rounds.
// It prints, per store and count, each command's p50 and p99, hooks/s, its
// CPU per hook (the hook process's user and system time, and the
// server's with its Postgres backends), and the ratios to the floor.
func Hooks(ctx context.Context, cfg HooksConfig, out io.Writer) error {
	dir, err := os.MkdirTemp("", "tackbench-hooks-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if cfg.TackBin == "" || cfg.HookBin == "" || cfg.ServerBin == "" {
		fmt.Fprintln(out, "hooks: building cmd/tack, cmd/tack-hook, cmd/tack-hook-local and cmd/server")
	}
	if cfg.TackBin == "" {
		if cfg.TackBin, err = goBuild(ctx, dir, "tack", "./cmd/tack", ""); err != nil {
			return err
		}
	}
	if cfg.HookBin == "" {
		if cfg.HookBin, err = goBuild(ctx, dir, "tack-hook", "./cmd/tack-hook", ""); err != nil {
			return err
		}
		if _, err = goBuild(ctx, dir, "tack-hook-local", "./cmd/tack-hook-local", ""); err != nil {
			return err
		}
	}
	if cfg.ServerBin == "" {
		if cfg.ServerBin, err = goBuild(ctx, dir, "server", "./cmd/server", ""); err != nil {
			return err
		}
	}
	floorDir := filepath.Join(dir, "floor-src")
	if err := os.MkdirAll(floorDir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(floorDir, "main.go"), []byte(floorSource), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(floorDir, "go.mod"), []byte("module floor\n\ngo 1.24\n"), 0o644); err != nil {
		return err
	}
	floorBin, err := goBuild(ctx, dir, "floor", ".", floorDir)
	if err != nil {
		return err
	}
	static, err := startStatic(ctx, dir)
	if err != nil {
		return err
	}
	defer static.stop()
	if len(cfg.Hooks) == 0 {
		cfg.Hooks = DefaultHooks
	}
	fmt.Fprintf(out, "hooks: Pre/PostToolUse pairs, a fresh process per hook, %s a phase, %d rounds; %d cores, load %s\n",
		cfg.Duration, cfg.Rounds, numCPU(), loadAverage())
	fmt.Fprintf(out, "floor: %s {static handler}\n", floorBin)
	for _, h := range cfg.Hooks {
		fmt.Fprintf(out, "hook: %s\n", h)
	}
	for _, st := range cfg.Stores {
		srv, err := startTackServer(ctx, cfg, st, dir)
		if err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
		err = hooksOnStore(ctx, cfg, st, dir, floorBin, static, srv, out)
		srv.stop()
		if err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
	}
	return nil
}

func hooksOnStore(ctx context.Context, cfg HooksConfig, store, dir, floorBin string, static, srv *hookServer, out io.Writer) error {
	cmds := []hookCommand{{name: "floor", argv: []string{floorBin, static.url + "/hooks/claude-code"}, server: static}}
	for i, h := range cfg.Hooks {
		local := filepath.Join(filepath.Dir(cfg.HookBin), "tack-hook-local")
		argv := strings.Fields(strings.NewReplacer("{tack}", cfg.TackBin, "{tack-hook-local}", local, "{tack-hook}", cfg.HookBin, "{server}", srv.url).Replace(h))
		c := hookCommand{name: fmt.Sprintf("hook %d", i+1), argv: argv, server: srv}
		if h == HTTPHook {
			_, key, err := hook.ReadKey()
			if err != nil {
				return fmt.Errorf("the HTTP hook's key: %w", err)
			}
			c.post = &httpHook{url: srv.url + "/hooks/claude-code", key: key, client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
		}
		cmds = append(cmds, c)
	}
	fmt.Fprintf(out, "\n%s store:\n", store)
	fmt.Fprintf(out, "%6s %-7s %8s %8s %8s %8s %9s %10s %10s %9s %9s\n", "agents", "command", "hooks", "gave up", "p50", "p99", "hooks/s", "hook cpu", "server cpu", "p50/floor", "rate/floor")
	for _, n := range cfg.Agents {
		results := make([]hookResult, len(cmds))
		for i := range cmds {
			cmds[i].agents = newAgents(filepath.Join(dir, "projects", store, fmt.Sprintf("%d-%d", n, i)), fmt.Sprintf("%s-%d-%d", store, n, i), n)
		}
		for range cfg.Rounds {
			for i := range cmds {
				r, err := cmds[i].phase(ctx, cfg.Duration, dir)
				if err != nil {
					return err
				}
				results[i].add(r)
			}
		}
		floor := results[0]
		for i, c := range cmds {
			r := results[i]
			fmt.Fprintf(out, "%6d %-7s %8d %8d %8s %8s %9.0f %8.0fµs %8.0fµs %9.2f %9.2f\n", n, c.name, len(r.lat), r.empty,
				msTenths(r.p(0.5)), msTenths(r.p(0.99)), r.rate(), r.hookCPU(), r.serverCPU(), float64(r.p(0.5))/float64(floor.p(0.5)), r.rate()/floor.rate())
		}
	}
	return nil
}

func msTenths(d time.Duration) string { return fmt.Sprintf("%.1fms", float64(d)/1e6) }

// hookResult is what the phases of one command at one count measured.
type hookResult struct {
	lat        []time.Duration
	span       time.Duration
	hookTime   time.Duration // user+system of the hook processes
	serverTick int64         // CPU ticks of the server and its Postgres backends
	failed     int
	// empty counts the hooks that printed nothing: the hook gave up on
	// the server (its -timeout), as it does rather than hold the agent up.
	empty int
}

func (r *hookResult) add(o hookResult) {
	r.lat = append(r.lat, o.lat...)
	r.span += o.span
	r.hookTime += o.hookTime
	r.serverTick += o.serverTick
	r.failed += o.failed
	r.empty += o.empty
}

func (r *hookResult) p(q float64) time.Duration {
	slices.Sort(r.lat)
	return percentile(r.lat, q)
}

func (r *hookResult) rate() float64 { return float64(len(r.lat)) / r.span.Seconds() }

func (r *hookResult) hookCPU() float64 {
	return float64(r.hookTime.Microseconds()) / float64(len(r.lat))
}

func (r *hookResult) serverCPU() float64 {
	return float64(r.serverTick) / clockTicks * 1e6 / float64(len(r.lat))
}

// hookCommand is one command measured, with its agents, which keep their
// sessions and transcripts from one round to the next.
type hookCommand struct {
	name   string
	argv   []string
	post   *httpHook // an HTTP hook rather than a command (argv unused)
	server *hookServer
	agents []*hookAgent
}

// httpHook posts each hook's payload as Claude Code's HTTP hooks do.
type httpHook struct {
	url, key string
	client   *http.Client
}

// send posts payload and answers the answer's body, which it requires to
// be the server's 200.
func (h *httpHook) send(ctx context.Context, payload []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(hook.ReadHeader, hook.ReadAsk)
	req.Header.Set(hook.KeyHeader, h.key)
	resp, err := h.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", resp.Status, body)
	}
	return body, err
}

// phase runs every agent for d, each firing its calls' hooks one after
// another, and measures them.
func (c *hookCommand) phase(ctx context.Context, d time.Duration, dir string) (hookResult, error) {
	env := hookEnv(dir)
	before := pidTicks(c.server.groups(ctx))
	start := time.Now()
	deadline := start.Add(d)
	var mu sync.Mutex
	var res hookResult
	var firstErr error
	var wg sync.WaitGroup
	for _, a := range c.agents {
		wg.Go(func() {
			for time.Now().Before(deadline) && ctx.Err() == nil {
				lat, cpu, empty, err := a.call(ctx, c.argv, c.post, env)
				mu.Lock()
				res.empty += empty
				if err != nil {
					res.failed++
					if firstErr == nil {
						firstErr = err
					}
				}
				res.lat = append(res.lat, lat...)
				res.hookTime += cpu
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	res.span = time.Since(start)
	// The pool's backends come and go: one that came during the phase
	// spent all its time in it; one gone by its end is not counted.
	for pid, t := range pidTicks(c.server.groups(ctx)) {
		res.serverTick += t - before[pid]
	}
	if firstErr != nil {
		return res, fmt.Errorf("%s: %d calls failed; first: %w", c.name, res.failed, firstErr)
	}
	return res, ctx.Err()
}

// hookEnv is the hook processes' environment: no Tack settings of the
// user's, and a cache folder of the run's own for the hooks' state.
func hookEnv(dir string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TACK_") && !strings.HasPrefix(kv, "XDG_CACHE_HOME=") {
			env = append(env, kv)
		}
	}
	return append(env, "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
}

// hookAgent is one agent: its session, and its transcript, which grows by
// each call's lines as Claude Code's does.
type hookAgent struct {
	session, transcript, cwd string
	calls                    int
	last                     string // the uuid of the transcript's last line
}

func newAgents(dir, prefix string, n int) []*hookAgent {
	agents := make([]*hookAgent, n)
	for i := range agents {
		sid := fmt.Sprintf("%08x-0000-4000-8000-%012d", hashString(prefix), i)
		agents[i] = &hookAgent{session: sid, transcript: filepath.Join(dir, sid+".jsonl"), cwd: "/work/project"}
	}
	return agents
}

func hashString(s string) uint32 {
	h := uint32(2166136261)
	for i := range len(s) {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// call is one tool call: its tool_use line, its PreToolUse hook, its
// tool_result line, its PostToolUse hook. It returns each hook's wall time
// and the hook processes' CPU time, and how many of them printed nothing.
func (a *hookAgent) call(ctx context.Context, argv []string, post *httpHook, env []string) (lats []time.Duration, cpu time.Duration, empty int, err error) {
	if a.calls == 0 {
		if err := os.MkdirAll(filepath.Dir(a.transcript), 0o755); err != nil {
			return nil, 0, 0, err
		}
		if err := a.appendLine(a.line("user", map[string]any{"role": "user", "content": "Look around the repository and tidy it."}, nil)); err != nil {
			return nil, 0, 0, err
		}
	}
	a.calls++
	id := fmt.Sprintf("toolu_%s_%06d", a.session[:8], a.calls)
	input := map[string]any{"command": fmt.Sprintf("ls -la src/%d", a.calls), "description": "List the folder"}
	steps := []struct {
		event string
		line  []byte
	}{
		{"PreToolUse", a.line("assistant", map[string]any{"model": "claude-opus-4-5", "id": "msg_" + id, "type": "message", "role": "assistant",
			"content":     []any{map[string]any{"type": "tool_use", "id": id, "name": "Bash", "input": input}},
			"stop_reason": nil, "usage": map[string]any{"input_tokens": 3, "cache_read_input_tokens": 11040, "output_tokens": 1}}, nil)},
		{"PostToolUse", a.line("user", map[string]any{"role": "user", "content": []any{map[string]any{"tool_use_id": id, "type": "tool_result",
			"content": "total 8\ndrwxr-xr-x 2 user user 4096 .\ndrwxr-xr-x 9 user user 4096 ..\n-rw-r--r-- 1 user user 1200 main.go"}}},
			map[string]any{"toolUseResult": map[string]any{"stdout": "total 8", "stderr": "", "interrupted": false}})},
	}
	for _, s := range steps {
		if err := a.appendLine(s.line); err != nil {
			return lats, cpu, empty, err
		}
		payload := map[string]any{"session_id": a.session, "transcript_path": a.transcript, "cwd": a.cwd, "hook_event_name": s.event,
			"permission_mode": "default", "tool_name": "Bash", "tool_input": input, "tool_use_id": id}
		if s.event == "PostToolUse" {
			payload["tool_response"] = map[string]any{"stdout": "total 8", "stderr": "", "interrupted": false}
			payload["duration_ms"] = 12
		}
		body, _ := json.Marshal(payload)
		if post != nil {
			start := time.Now()
			answer, err := post.send(ctx, body)
			lats = append(lats, time.Since(start))
			if err != nil {
				return lats, cpu, empty, fmt.Errorf("%s: %w", s.event, err)
			}
			if !json.Valid(answer) {
				return lats, cpu, empty, fmt.Errorf("%s answered %q, not JSON", s.event, answer)
			}
			continue
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Env, cmd.Stdin = env, bytes.NewReader(body)
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		start := time.Now()
		err := cmd.Run()
		lats = append(lats, time.Since(start))
		if cmd.ProcessState != nil {
			cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		if err != nil {
			return lats, cpu, empty, fmt.Errorf("%s: %w", s.event, err)
		}
		if stdout.Len() == 0 {
			empty++
		} else if !json.Valid(stdout.Bytes()) {
			return lats, cpu, empty, fmt.Errorf("%s answered %q, not JSON", s.event, stdout.Bytes())
		}
	}
	return lats, cpu, empty, nil
}

// line is a transcript line as Claude Code writes one.
func (a *hookAgent) line(typ string, message map[string]any, extra map[string]any) []byte {
	uuid := fmt.Sprintf("%s-%06d-%s", a.session[:8], a.calls, typ)
	l := map[string]any{"parentUuid": nilIfEmpty(a.last), "isSidechain": false, "userType": "external", "cwd": a.cwd,
		"sessionId": a.session, "version": "2.1.0", "gitBranch": "main", "type": typ, "message": message,
		"uuid": uuid, "timestamp": time.Now().UTC().Format(time.RFC3339Nano)}
	for k, v := range extra {
		l[k] = v
	}
	a.last = uuid
	raw, _ := json.Marshal(l)
	return append(raw, '\n')
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func (a *hookAgent) appendLine(line []byte) error {
	f, err := os.OpenFile(a.transcript, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// goBuild builds pkg, in src ("" is the working directory), into dir:
// without cgo, as the README builds tack and tack-hook for users (a
// process then starts with no dynamic loader), and the floor alike, so
// that the two sides start the same way.
func goBuild(ctx context.Context, dir, name, pkg, src string) (string, error) {
	bin := filepath.Join(dir, name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Dir = src
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if src != "" {
		cmd.Env = append(cmd.Env, "GOWORK=off", "GOFLAGS=")
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
	}
	return bin, nil
}

// hookServer is a server the hooks reach: the floor's static handler, or
// Tack.
type hookServer struct {
	url    string
	cmd    *exec.Cmd
	db     *database // the postgres store's schema; nil for the others
	stopFn func()
}

// groups are the processes whose CPU is the server's: it and its
// Postgres backends.
func (s *hookServer) groups(ctx context.Context) []group {
	g := []group{{name: "server", pids: []int{s.cmd.Process.Pid}}}
	if s.db != nil {
		g = append(g, s.db.serverBackends(ctx, s.cmd.Process.Pid))
	}
	return g
}

// pidTicks is the CPU time of each process of groups so far, in clock
// ticks.
func pidTicks(groups []group) map[int]int64 {
	ticks := map[int]int64{}
	for _, g := range groups {
		for _, pid := range g.pids {
			ticks[pid], _ = processUsage(pid)
		}
	}
	return ticks
}

func (s *hookServer) stop() {
	_ = s.cmd.Process.Signal(os.Interrupt)
	_ = s.cmd.Wait()
	if s.stopFn != nil {
		s.stopFn()
	}
}

// startStatic starts the floor's handler: this command's static mode, in
// a process of its own, answering every request with {}.
func startStatic(ctx context.Context, dir string) (*hookServer, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	body := filepath.Join(dir, "static.json")
	if err := os.WriteFile(body, []byte("{}\n"), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self, "static", "-body", body)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, errors.New("the static handler exited before listening")
	}
	return &hookServer{url: strings.TrimSpace(line), cmd: cmd}, nil
}

// startTackServer starts the real server on a store: SQLite in a folder of
// the run's, or Postgres in a fresh schema.
func startTackServer(ctx context.Context, cfg HooksConfig, store, dir string) (*hookServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "TACK_") || strings.HasPrefix(kv, "DATABASE_URL=")
	})
	s := &hookServer{url: "http://" + addr}
	switch store {
	case "sqlite":
		env = append(env, "TACK_DATA_DIR="+filepath.Join(dir, "data-"+store))
	case "postgres":
		db, err := newDatabase(ctx, cfg.DatabaseURL, "")
		if err != nil {
			return nil, err
		}
		s.db = db
		s.stopFn = func() { db.drop() }
		env = append(env, "DATABASE_URL="+db.schemaURL())
	default:
		return nil, fmt.Errorf("unknown store %q: want sqlite or postgres", store)
	}
	// The server logs as it does by default, a line per request, which it
	// pays for like any other work of a hook's.
	s.cmd = exec.CommandContext(ctx, cfg.ServerBin, "-addr", addr)
	s.cmd.Env = env
	if err := s.cmd.Start(); err != nil {
		if s.stopFn != nil {
			s.stopFn()
		}
		return nil, err
	}
	up := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		if time.Now().After(up) || s.cmd.ProcessState != nil {
			s.stop()
			return nil, fmt.Errorf("the server did not answer /healthz: %v", err)
		}
		if err := sleep(ctx, 20*time.Millisecond); err != nil {
			s.stop()
			return nil, err
		}
	}
}
