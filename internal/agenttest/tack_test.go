package agenttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// bins holds cmd/server, cmd/tack, cmd/tack-hook and cmd/tack-hook-local,
// built once for the whole test binary: the hooks beside tack, as `go
// install ./cmd/...` puts them, so that the hooks installed for the local
// server run tack-hook-local, which hands what it does not cover to
// tack-hook.
var bins struct {
	once sync.Once
	dir  string
	err  error
}

// TestMain removes the built binaries at the end.
func TestMain(m *testing.M) {
	code := m.Run()
	if bins.dir != "" {
		_ = os.RemoveAll(bins.dir)
	}
	os.Exit(code)
}

// binary is the path of Tack's command name (server, tack), built with go
// build as a user would build it; or, with TACK_AGENTTEST_BIN=DIR, the one
// in DIR, built elsewhere (another commit's, for scripts/screenshots-live).
func binary(t testing.TB, name string) string {
	t.Helper()
	if dir := os.Getenv("TACK_AGENTTEST_BIN"); dir != "" {
		return filepath.Join(dir, name)
	}
	bins.once.Do(func() {
		bins.dir, bins.err = os.MkdirTemp("", "tack-agenttest-")
		if bins.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-o", bins.dir, "github.com/tack-dev/tack/cmd/server", "github.com/tack-dev/tack/cmd/tack", "github.com/tack-dev/tack/cmd/tack-hook", "github.com/tack-dev/tack/cmd/tack-hook-local")
		if out, err := cmd.CombinedOutput(); err != nil {
			bins.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if bins.err != nil {
		t.Fatal(bins.err)
	}
	return filepath.Join(bins.dir, name)
}

// A daemon is a long-running process of Tack's (the server, tack watch)
// started for the test, its output kept for when the test fails.
type daemon struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
	stop sync.Once
	mu   sync.Mutex
	log  bytes.Buffer
}

// startDaemon starts bin with args in env, handing each line of its output
// to line (when not nil), and stops it when the test ends.
func startDaemon(t testing.TB, name string, env []string, line func(string), bin string, args ...string) *daemon {
	t.Helper()
	d := &daemon{name: name, done: make(chan struct{})}
	d.cmd = exec.Command(bin, args...)
	d.cmd.Env = env
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	d.cmd.Stderr = d.cmd.Stdout
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(d.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			d.mu.Lock()
			d.log.WriteString(sc.Text() + "\n")
			d.mu.Unlock()
			if line != nil {
				line(sc.Text())
			}
		}
		_ = d.cmd.Wait()
	}()
	t.Cleanup(func() {
		d.Stop()
		if t.Failed() {
			t.Logf("%s log:\n%s", name, tail([]byte(d.Log())))
		}
	})
	return d
}

// Log is what the process has printed so far.
func (d *daemon) Log() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// Stop ends the process as an operator would, SIGTERM, and waits for it.
func (d *daemon) Stop() {
	d.stop.Do(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.done:
		case <-time.After(10 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.done
		}
	})
}

// A tack is a real Tack server, the built cmd/server on a port of its own
// with a SQLite store in the test's temporary directory.
type tack struct {
	*daemon
	URL string
	// Token is the agent's write token when Tack runs in -auth token.
	Token string
}

var addrLine = regexp.MustCompile(`addr=(http://127\.0\.0\.1:[0-9]+)`)

// startTack starts Tack for the user: in -auth local, or with tokens in
// -auth token, where the agent's write token is made first with tack token
// create on the store (which a first start of the server creates).
func startTack(t testing.TB, u user, tokens bool, args ...string) *tack {
	t.Helper()
	data := t.TempDir()
	if !tokens {
		return serve(t, u, append([]string{"-data-dir", data}, args...)...)
	}
	serve(t, u, "-data-dir", data).Stop()
	cmd := exec.Command(binary(t, "tack"), "token", "create", "-name", "dev-laptop", "-data-dir", data)
	cmd.Env = u.env()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("tack token create: %v\n%s", err, stderr.Bytes())
	}
	k := serve(t, u, append([]string{"-data-dir", data, "-auth", "token"}, args...)...)
	k.Token = strings.TrimSpace(string(out))
	return k
}

// serve starts the server and waits for the address it listens on.
func serve(t testing.TB, u user, args ...string) *tack {
	t.Helper()
	found := make(chan string, 1)
	k := &tack{}
	k.daemon = startDaemon(t, "tack server", u.env(), func(line string) {
		if m := addrLine.FindStringSubmatch(line); m != nil {
			select {
			case found <- m[1]:
			default:
			}
		}
	}, binary(t, "server"), append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	select {
	case k.URL = <-found:
	case <-k.done:
		t.Fatalf("tack server exited:\n%s", k.Log())
	case <-time.After(30 * time.Second):
		t.Fatalf("tack server did not start:\n%s", k.Log())
	}
	return k
}

// installHooks runs `tack hook install` for the agent as the user would,
// with their HOME (and CODEX_HOME), pointing the hooks at this Tack.
func (k *tack) installHooks(t testing.TB, u user, agent string, more ...string) {
	t.Helper()
	k.installHooksWith(t, u, binary(t, "tack"), agent, more...)
}

// hookOnlyTack is a tack binary with tack-hook alone beside it, as a
// machine has them for a server elsewhere: the hooks it installs are
// tack-hook's, never tack-hook-local's (which, for a server that does not
// read the transcript, would hand each hook on to tack-hook).
func hookOnlyTack(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"tack", "tack-hook"} {
		if err := os.Link(binary(t, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "tack")
}

// installHooksWith is installHooks by the tack binary at tackPath, which
// installs the hook binaries that lie beside it.
func (k *tack) installHooksWith(t testing.TB, u user, tackPath, agent string, more ...string) {
	t.Helper()
	args := append([]string{"hook", "install", "-agent", agent, "-server", k.URL}, more...)
	if k.Token != "" {
		args = append(args, "-token", k.Token)
	}
	cmd := exec.Command(tackPath, args...)
	cmd.Dir = u.Project
	cmd.Env = u.env("CODEX_HOME=" + u.CodexHome)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tack hook install -agent %s: %v\n%s", agent, err, out)
	}
	t.Logf("tack hook install -agent %s:\n%s", agent, out)
}

func (k *tack) authorize(h http.Header) {
	if k.Token != "" {
		h.Set("Authorization", "Bearer "+k.Token)
	}
}

func (k *tack) do(t *testing.T, method, path string, body, out any) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		r = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, k.URL+path, r)
	req.Header.Set("Content-Type", "application/json")
	k.authorize(req.Header)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %s: %s", method, path, resp.Status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

// The parts of Tack's answers the tests read.
type (
	session struct {
		ID          string  `json:"id"`
		Title       string  `json:"title"`
		ExternalKey string  `json:"externalKey"`
		ParentID    *string `json:"parentId"`
		Agent       *string `json:"agent"`
		Cwd         *string `json:"cwd"`
		State       string  `json:"state"`
		Turn        struct {
			Number    int     `json:"number"`
			Open      bool    `json:"open"`
			EndReason *string `json:"endReason"`
		} `json:"turn"`
		LastSeq int64 `json:"lastSeq"`
		// NeedsYou is why a session in needs_you waits on a person.
		NeedsYou *struct {
			Kind    string `json:"kind"`
			Message string `json:"message"`
			Tool    string `json:"tool"`
		} `json:"needsYou"`
	}
	todos struct {
		Version int64 `json:"version"`
		Todos   []struct {
			Content string `json:"content"`
			Status  string `json:"status"`
		} `json:"todos"`
	}
	event struct {
		Seq  int64           `json:"seq"`
		Turn int             `json:"turn"`
		Type string          `json:"type"`
		At   string          `json:"at"`
		Data json.RawMessage `json:"data"`
	}
)

// sessionOf is the one Tack session of the agent in the user's project.
func (k *tack) sessionOf(t *testing.T, u user, agent string) (session, bool) {
	t.Helper()
	var list struct {
		Sessions []session `json:"sessions"`
	}
	k.do(t, http.MethodGet, "/sessions", nil, &list)
	var found []session
	for _, s := range list.Sessions {
		if s.Agent != nil && *s.Agent == agent && s.Cwd != nil && sameDir(*s.Cwd, u.Project) {
			found = append(found, s)
		}
	}
	if len(found) > 1 {
		t.Fatalf("%d sessions of %s in %s, want one", len(found), agent, u.Project)
	}
	if len(found) == 0 {
		return session{}, false
	}
	return found[0], true
}

func sameDir(a, b string) bool {
	ra, _ := filepath.EvalSymlinks(a)
	rb, _ := filepath.EvalSymlinks(b)
	return filepath.Clean(a) == filepath.Clean(b) || (ra != "" && ra == rb)
}

// events is the session's whole log, read page by page.
func (k *tack) events(t *testing.T, id string) []event {
	t.Helper()
	var all []event
	for {
		var page struct {
			Events  []event `json:"events"`
			HasMore bool    `json:"hasMore"`
		}
		after := int64(0)
		if len(all) > 0 {
			after = all[len(all)-1].Seq
		}
		k.do(t, http.MethodGet, fmt.Sprintf("/sessions/%s/events?limit=1000&after=%d", id, after), nil, &page)
		all = append(all, page.Events...)
		if !page.HasMore || len(page.Events) == 0 {
			return all
		}
	}
}

// A feed is Tack's live feed of session summaries (GET /live), read from
// before the agent starts, keeping each session's states in the order they
// were sent.
type feed struct {
	mu     sync.Mutex
	states map[string][]string
}

func (k *tack) watch(t *testing.T) *feed {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := http.Header{}
	k.authorize(h)
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(k.URL, "http")+"/live", &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		cancel()
		t.Fatalf("GET /live: %v", err)
	}
	c.SetReadLimit(1 << 20)
	f := &feed{states: map[string][]string{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			var msg struct {
				Type    string  `json:"type"`
				Session session `json:"session"`
			}
			if json.Unmarshal(b, &msg) != nil || msg.Type != "session" {
				continue
			}
			f.mu.Lock()
			s := f.states[msg.Session.ID]
			if len(s) == 0 || s[len(s)-1] != msg.Session.State {
				f.states[msg.Session.ID] = append(s, msg.Session.State)
			}
			f.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); <-done; _ = c.CloseNow() })
	return f
}

// States are the states the feed showed the session in, repeats dropped.
func (f *feed) States(id string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.states[id]...)
}

// inOrder reports whether want appears in got in that order (others may
// come between).
func inOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}
