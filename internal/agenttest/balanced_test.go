package agenttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/jackc/pgx/v5"

	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/faulttest"
	"github.com/tack-dev/tack/internal/storetest"
)

// Tack behind a real load balancer: HAProxy, round-robin with no
// stickiness, in front of three Tack instances on one Postgres. Claude Code
// and codex run through it with their hooks, Tack's MCP server and `tack
// watch`, a hook writer keeps one more session busy, and a live feed
// subscriber follows; one instance is killed (kill -9) mid-session and
// started again. Every hook and MCP call must land in its session, nothing
// stored twice or lost, and the subscriber must follow across its
// instance's death. The figures are printed as the fault suite prints its
// phases; LB_TIME (default 2s) is how long the hook writer writes before
// the kill and after the restart.

// haproxyBin is where Debian's haproxy package puts HAProxy.
const haproxyBin = "/usr/sbin/haproxy"

// requireHAProxy skips the test without HAProxy, and fails it under
// CI=true, where .ci/run installs it.
func requireHAProxy(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(haproxyBin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (%v): CI must run the balancer test (apt-get install haproxy)", haproxyBin, err)
		}
		t.Skipf("not run: %s is missing (apt-get install haproxy)", haproxyBin)
	}
}

// createDatabase creates a database of its own for the test on the local
// Postgres, dropped when the test ends, and returns its URL.
func createDatabase(t *testing.T) string {
	t.Helper()
	base := storetest.URL(t)
	name := "tack_lb_" + strings.ToLower(rand.Text()[:12])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP DATABASE "+name+" WITH (FORCE)")
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// A balancer is HAProxy in front of the instances, its request log kept.
type balancer struct {
	*daemon
	URL string
	mu  sync.Mutex
	// byServer counts the requests each instance answered, statuses the
	// answers by status; the answers of 400 and up are kept whole.
	byServer map[string]int
	statuses map[int]int
	failed   []string
}

// haproxyLog is one line of HAProxy's HTTP log: the server, the status
// and the request line.
var haproxyLog = regexp.MustCompile(` be/(\S+) \S+ (\d{3}) .*"(\S+) (\S+)`)

// startBalancer starts HAProxy on a free port: round-robin over addrs, each
// request on its own (no stickiness, no preference for the last server),
// health-checked on /readyz so a dead instance leaves the rotation, and a
// request refused by a dead one sent to another.
func startBalancer(t *testing.T, port int, addrs []string) *balancer {
	t.Helper()
	var servers strings.Builder
	for i, a := range addrs {
		fmt.Fprintf(&servers, "  server t%d %s check\n", i+1, a)
	}
	cfg := fmt.Sprintf(`global
  log stdout format raw local0
  maxconn 512
defaults
  mode http
  log global
  option httplog
  option redispatch
  retries 3
  retry-on conn-failure
  timeout connect 1s
  timeout client 5m
  timeout server 5m
  timeout tunnel 1h
frontend fe
  bind 127.0.0.1:%d
  default_backend be
backend be
  balance roundrobin
  option httpchk
  http-check send meth GET uri /readyz ver HTTP/1.1 hdr Host 127.0.0.1:%d
  http-check expect status 200
  default-server inter 200ms fall 1 rise 1
%s`, port, port, servers.String())
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &balancer{URL: fmt.Sprintf("http://127.0.0.1:%d", port), byServer: map[string]int{}, statuses: map[int]int{}}
	b.daemon = startDaemon(t, "haproxy", os.Environ(), func(line string) {
		m := haproxyLog.FindStringSubmatch(line)
		if m == nil {
			return
		}
		status, _ := strconv.Atoi(m[2])
		b.mu.Lock()
		defer b.mu.Unlock()
		b.byServer[m[1]]++
		b.statuses[status]++
		if status >= 400 {
			b.failed = append(b.failed, line)
		}
	}, haproxyBin, "-db", "-f", path)
	eventually.True(t, 10*time.Second, "answer from HAProxy", func() bool {
		resp, err := http.Get(b.URL + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return b
}

// figures are the balancer's counts so far.
func (b *balancer) figures() (byServer map[string]int, statuses map[int]int, failed []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return copyCounts(b.byServer), copyCounts(b.statuses), slices.Clone(b.failed)
}

func copyCounts[K comparable](m map[K]int) map[K]int {
	out := make(map[K]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// A liveFollower is a plain websocket subscriber of the live feed (GET
// /live) through the balancer: it dials again whenever its socket ends
// (its instance killed), and keeps the highest lastSeq and the states it
// saw of each session.
type liveFollower struct {
	mu       sync.Mutex
	last     map[string]int64
	states   map[string][]string
	redials  int
	lastDrop time.Time
	// back is how long after each drop the feed was open again.
	back []time.Duration
}

func followLive(t *testing.T, base string) *liveFollower {
	t.Helper()
	f := &liveFollower{last: map[string]int64{}, states: map[string][]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	opened := make(chan struct{})
	go func() {
		defer close(done)
		first := true
		for ctx.Err() == nil {
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/live", nil)
			if err != nil {
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond): // a retry's pace, not a wait for a result
				}
				continue
			}
			c.SetReadLimit(1 << 20)
			f.mu.Lock()
			if first {
				close(opened)
				first = false
			} else {
				f.back = append(f.back, time.Since(f.lastDrop))
			}
			f.mu.Unlock()
			for {
				_, b, err := c.Read(ctx)
				if err != nil {
					break
				}
				var msg struct {
					Type    string  `json:"type"`
					Session session `json:"session"`
				}
				if json.Unmarshal(b, &msg) != nil || msg.Type != "session" {
					continue
				}
				f.mu.Lock()
				id := msg.Session.ID
				f.last[id] = max(f.last[id], msg.Session.LastSeq)
				if s := f.states[id]; len(s) == 0 || s[len(s)-1] != msg.Session.State {
					f.states[id] = append(s, msg.Session.State)
				}
				f.mu.Unlock()
			}
			_ = c.CloseNow()
			f.mu.Lock()
			f.redials++
			f.lastDrop = time.Now()
			f.mu.Unlock()
		}
	}()
	select {
	case <-opened:
	case <-time.After(10 * time.Second):
		t.Fatal("the live feed never opened through the balancer")
	}
	t.Cleanup(func() { cancel(); <-done })
	return f
}

func (f *liveFollower) lastSeq(id string) int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last[id]
}

func (f *liveFollower) States(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.states[id])
}

// A hookWriter sends Claude Code's hooks of one session through the
// balancer as fast as they are answered: each tool call a PreToolUse and a
// PostToolUse, a hook not answered 200 sent again until it is (the call's
// keys make a repeat a no-op). It counts what it sent and how it was
// answered.
type hookWriter struct {
	base, sid string
	client    *http.Client
	acked     atomic.Int64 // calls whose both hooks were answered 200
	failures  atomic.Int64 // answers not 200, and requests that got no answer
	status5xx atomic.Int64
	calls     []string // the call ids acknowledged, in order
	mu        sync.Mutex
}

func (w *hookWriter) post(ctx context.Context, body map[string]any) error {
	b, _ := json.Marshal(body)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, w.base+"/hooks/claude-code", bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		resp, err := w.client.Do(req)
		if err == nil {
			answer, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case resp.StatusCode == http.StatusOK:
				return nil
			case resp.StatusCode < 500:
				return fmt.Errorf("%s: %s", resp.Status, answer)
			}
			w.status5xx.Add(1)
		}
		w.failures.Add(1)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// call sends call n's two hooks, and reports when both were acknowledged.
func (w *hookWriter) call(ctx context.Context, n int) error {
	id := fmt.Sprintf("toolu_lb_%05d", n)
	hook := func(event string) map[string]any {
		return map[string]any{"session_id": w.sid, "hook_event_name": event, "cwd": "/work/lb", "prompt_id": "p1",
			"tool_name": "Bash", "tool_use_id": id, "tool_input": map[string]any{"command": "echo " + id}, "tool_response": id}
	}
	if err := w.post(ctx, hook("PreToolUse")); err != nil {
		return err
	}
	if err := w.post(ctx, hook("PostToolUse")); err != nil {
		return err
	}
	w.acked.Add(1)
	w.mu.Lock()
	w.calls = append(w.calls, id)
	w.mu.Unlock()
	return nil
}

// TestBalanced: see the top of this file.
func TestBalanced(t *testing.T) {
	requireHAProxy(t)
	requireAgent(t, claudeBinary())
	requireAgent(t, codexBinary())
	writeFor := 2 * time.Second
	if v := os.Getenv("LB_TIME"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("LB_TIME=%q: want a duration such as 30s", v)
		}
		writeFor = d
	}
	db := createDatabase(t)
	bin := binary(t, "server")
	lbPort := faulttest.FreePort(t)
	// Every request names the balancer's address as its host. No sweep
	// within the test: the subscriber must follow by the instances'
	// notices alone.
	var insts []*faulttest.Instance
	var addrs []string
	for range 3 {
		in := faulttest.NewInstance(t, bin, "DATABASE_URL="+db, "TACK_AUTH=local", "TACK_WRITE_RATE=0",
			"TACK_LIVE_SWEEP=10m", "TACK_ALLOWED_HOSTS=127.0.0.1:"+strconv.Itoa(lbPort))
		in.Start()
		insts = append(insts, in)
		addrs = append(addrs, in.Addr)
	}
	lb := startBalancer(t, lbPort, addrs)
	k := &tack{daemon: lb.daemon, URL: lb.URL}
	feed := followLive(t, lb.URL)

	// The victim dies mid-session: when both agents have written their
	// plan and wait on the model for their next step, and the hook writer
	// has written for writeFor.
	victim := insts[1]
	var (
		killed    = make(chan struct{})
		restarted = make(chan struct{})
		killedAt  time.Time
		ready     sync.WaitGroup
	)
	ready.Add(3)
	go func() {
		ready.Wait()
		killedAt = time.Now()
		victim.Kill()
		close(killed)
		victim.Start()
		close(restarted)
	}()
	// atKill is the Before of an agent's turn after its plan: the kill
	// comes while the agent waits on the model.
	atKill := func() func(Request) {
		var once sync.Once
		return func(Request) {
			once.Do(ready.Done)
			<-killed
		}
	}

	// The hook writer: one more Claude Code session's hooks, as fast as
	// they are answered, before, across and after the kill.
	w := &hookWriter{base: lb.URL, sid: newUUID(t), client: &http.Client{Timeout: 10 * time.Second}}
	var (
		writerDone = make(chan struct{})
		recovery   time.Duration
	)
	go func() {
		defer close(writerDone)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		began, afterRestart := time.Now(), time.Time{}
		var signal sync.Once
		defer signal.Do(ready.Done) // a writer that failed kills nothing
		for n := 0; ; n++ {
			inFlightAtKill := !isClosed(killed)
			if err := w.call(ctx, n); err != nil {
				t.Errorf("hook writer: call %d never acknowledged: %v", n, err)
				return
			}
			if time.Since(began) >= writeFor {
				signal.Do(ready.Done)
			}
			if inFlightAtKill && isClosed(killed) && recovery == 0 {
				recovery = time.Since(killedAt)
			}
			if afterRestart.IsZero() && isClosed(restarted) {
				afterRestart = time.Now()
			}
			if !afterRestart.IsZero() && time.Since(afterRestart) >= writeFor {
				return
			}
		}
	}()

	// Claude Code and codex, each with its hooks, Tack's MCP server and
	// tack watch through the balancer.
	type agentRun struct {
		agent string
		u     user
		r     run
		m     scripted
	}
	runs := make([]agentRun, 2)
	t.Run("agents", func(t *testing.T) {
		t.Run("claude-code", func(t *testing.T) {
			t.Parallel()
			u := newUser(t)
			k.installHooks(t, u, "claude-code")
			k.startWatch(t, u)
			m := NewAnthropic(t,
				Turn{Text: "I'll plan this first.", Tools: []Call{{Name: "TodoWrite", Input: map[string]any{"todos": []any{
					map[string]any{"content": "Reproduce the failure", "status": "in_progress", "activeForm": "Reproducing the failure"},
					map[string]any{"content": "Fix the race", "status": "pending", "activeForm": "Fixing the race"},
				}}}}},
				Turn{Tools: []Call{{Name: "Bash", Input: map[string]any{"command": "echo scripted-tool-ran", "description": "Print a marker"}}}, Before: atKill()},
				Turn{Tools: []Call{{Name: "mcp__tack__todo_write", Input: map[string]any{"todos": finishedLB}}}},
				Turn{Text: "All done: the race is fixed."})
			r := u.claude(t, m, "The login test fails one run in ten: fix it.",
				"--mcp-config", writeMCPConfig(t, u, "tack", lb.URL+"/mcp", ""),
				"--allowedTools", "mcp__tack__todo_write,mcp__tack__todo_read")
			runs[0] = agentRun{"claude-code", u, r, m}
		})
		t.Run("codex", func(t *testing.T) {
			t.Parallel()
			u := newUser(t)
			k.installHooks(t, u, "codex")
			k.startWatch(t, u)
			m := NewResponses(t,
				Turn{Text: "I'll plan this first.", Tools: []Call{{Name: "update_plan", Input: map[string]any{"plan": []any{
					map[string]any{"step": "Reproduce the failure", "status": "in_progress"},
					map[string]any{"step": "Fix the race", "status": "pending"},
				}}}}},
				Turn{Tools: []Call{{Name: "exec_command", Input: map[string]any{"cmd": "echo scripted-tool-ran"}}}, Before: atKill()},
				Turn{Tools: []Call{{Namespace: "mcp__tack", Name: "todo_write", Input: map[string]any{"todos": finishedLB}}}},
				Turn{Text: "All done: the race is fixed."})
			u.writeCodexConfig(t, m, codexMCP("tack", lb.URL+"/mcp", ""))
			r := u.codex(t, "The login test fails one run in ten: fix it.", "--dangerously-bypass-hook-trust")
			runs[1] = agentRun{"codex", u, r, m}
		})
	})
	select {
	case <-restarted:
	case <-time.After(agentTimeout):
		t.Fatal("the victim was never killed and restarted: an agent never reached its second turn")
	}
	<-writerDone

	// Each agent's session: one, ended, every call of the script in it
	// once and in order with its result, the plan finished through MCP,
	// and the feed saw it work and end.
	type row struct {
		what                                 string
		acked, lost, dup, disorder, failures int
	}
	var rows []row
	for _, ar := range runs {
		if ar.r.Err != nil || !strings.Contains(string(ar.r.Stdout), "All done: the race is fixed.") {
			t.Errorf("%s did not finish: %v", ar.agent, ar.r.Err)
			continue
		}
		if ar.m.Left() != 0 {
			t.Errorf("%s: %d turns of the script were never asked for", ar.agent, ar.m.Left())
		}
		var s session
		eventually.True(t, 10*time.Second, "end of "+ar.agent+"'s session", func() bool {
			var ok bool
			s, ok = k.sessionOf(t, ar.u, ar.agent)
			return ok && s.State == "ended"
		}, func() string { return "its state: " + s.State })
		want := []string{"TodoWrite", "Bash", "mcp__tack__todo_write"}
		if ar.agent == "codex" {
			want = []string{"update_plan", "exec_command", "mcp__tack__todo_write"}
		}
		calls, results := callsOf(k.events(t, s.ID))
		r := row{what: ar.agent + " (hooks, MCP, watch)", acked: len(want)}
		r.lost, r.dup, r.disorder = compareCalls(want, names(calls))
		for _, c := range calls {
			if results[c.id] != 1 {
				t.Errorf("%s: call %s (%s) has %d results in the log", ar.agent, c.id, c.name, results[c.id])
			}
		}
		rows = append(rows, r)
		var cur todos
		k.do(t, http.MethodGet, "/sessions/"+s.ID+"/todos", nil, &cur)
		if len(cur.Todos) != 2 || cur.Todos[0].Status != "completed" || cur.Todos[1].Status != "completed" {
			// The MCP write did not land in the session its hooks write.
			t.Errorf("%s: the plan %+v, want both items completed by the MCP write", ar.agent, cur.Todos)
			rows[len(rows)-1].lost++
		}
		eventually.True(t, 10*time.Second, "catch-up of the feed with "+ar.agent+"'s session", func() bool { return feed.lastSeq(s.ID) >= s.LastSeq })
		if got := feed.States(s.ID); !inOrder(got, []string{"working", "ended"}) {
			t.Errorf("%s: the feed showed %v, want working then ended", ar.agent, got)
		}
	}

	// The hook writer's session: every acknowledged call once, in order.
	var ws session
	eventually.True(t, 10*time.Second, "session of the hook writer", func() bool {
		var ok bool
		ws, ok = k.sessionByKey(t, "claude-code:"+w.sid)
		return ok
	})
	calls, results := callsOf(k.events(t, ws.ID))
	wr := row{what: "hook writer (PreToolUse + PostToolUse)", acked: int(w.acked.Load()), failures: int(w.failures.Load())}
	wr.lost, wr.dup, wr.disorder = compareCalls(w.calls, ids(calls))
	for _, id := range w.calls {
		if results[id] != 1 {
			t.Errorf("hook writer: call %s has %d results in the log", id, results[id])
		}
	}
	rows = append(rows, wr)
	eventually.True(t, 10*time.Second, "catch-up of the feed with the hook writer's session", func() bool { return feed.lastSeq(ws.ID) >= ws.LastSeq })

	byServer, statuses, failed := lb.figures()
	five := 0
	for st, n := range statuses {
		if st >= 500 {
			five += n
		}
	}
	var table strings.Builder
	table.WriteString("| what | acknowledged | lost | duplicated | out of order | retried |\n|---|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&table, "| %s | %d | %d | %d | %d | %d |\n", r.what, r.acked, r.lost, r.dup, r.disorder, r.failures)
		if r.lost > 0 || r.dup > 0 || r.disorder > 0 {
			t.Errorf("%s: %d lost, %d duplicated, %d out of order", r.what, r.lost, r.dup, r.disorder)
		}
	}
	feed.mu.Lock()
	redials, back := feed.redials, slices.Clone(feed.back)
	feed.mu.Unlock()
	servers := slices.Sorted(func(yield func(string) bool) {
		for s := range byServer {
			if !yield(s) {
				return
			}
		}
	})
	var spread []string
	for _, s := range servers {
		spread = append(spread, fmt.Sprintf("%s %d", s, byServer[s]))
	}
	t.Logf("behind HAProxy round-robin (LB_TIME=%s, 3 instances, %s killed with -9 and restarted):\n%s"+
		"requests through the balancer by instance: %s; statuses %v; answers 500 and up: %d\n"+
		"hook writer: first in-flight call acknowledged %s after the kill; the feed's socket dropped %d times, open again after %v",
		writeFor, victim.Addr, table.String(), strings.Join(spread, ", "), statuses, five, recovery.Round(time.Millisecond), redials, back)
	for _, l := range failed {
		t.Logf("refused: %s", l)
	}
	if statuses[http.StatusInternalServerError] > 0 {
		t.Errorf("Tack answered 500 %d times", statuses[http.StatusInternalServerError])
	}
	if len(byServer) < 3 {
		t.Errorf("the balancer used %d instances, want all 3: %v", len(byServer), byServer)
	}
}

// finishedLB is the plan as the model finishes it through MCP todo_write.
var finishedLB = []any{
	map[string]any{"content": "Reproduce the failure", "status": "completed"},
	map[string]any{"content": "Fix the race", "status": "completed"},
}

// isClosed reports whether ch is closed.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

type loggedCall struct{ id, name string }

// callsOf are the tool calls of a session's log in order, and how many
// results each call id has.
func callsOf(evs []event) ([]loggedCall, map[string]int) {
	var calls []loggedCall
	results := map[string]int{}
	for _, e := range evs {
		var d struct {
			ToolCalls []struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"toolCalls"`
			CallID string `json:"callId"`
		}
		_ = json.Unmarshal(e.Data, &d)
		for _, c := range d.ToolCalls {
			calls = append(calls, loggedCall{c.ID, c.Name})
		}
		if e.Type == "tool/result" {
			results[d.CallID]++
		}
	}
	return calls, results
}

func names(calls []loggedCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.name
	}
	return out
}

func ids(calls []loggedCall) []string {
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.id
	}
	return out
}

// compareCalls counts, of want (in the order they were made), those not in
// got, those in it more than once, and those out of want's order.
func compareCalls(want, got []string) (lost, dup, disorder int) {
	seen := map[string]int{}
	for _, g := range got {
		seen[g]++
	}
	var order []string
	for _, w := range want {
		switch n := seen[w]; {
		case n == 0:
			lost++
		case n > 1:
			dup += n - 1
		}
	}
	in := map[string]bool{}
	for _, w := range want {
		in[w] = true
	}
	for _, g := range got {
		if in[g] && !slices.Contains(order, g) {
			order = append(order, g)
		}
	}
	kept := slices.DeleteFunc(slices.Clone(want), func(w string) bool { return seen[w] == 0 })
	for i := range order {
		if i < len(kept) && order[i] != kept[i] {
			disorder++
		}
	}
	return lost, dup, disorder
}
