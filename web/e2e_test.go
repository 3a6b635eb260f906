package web_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/demo"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
	"github.com/tack-dev/tack/web"
)

// chromium is the browser the tests drive: Debian's, never a downloaded one.
func chromium() string {
	if p := os.Getenv("TACK_CHROMIUM"); p != "" {
		return p
	}
	return "/usr/bin/chromium"
}

// TestBrowser runs the browser tests in web/e2e/ (node's test runner driving
// headless Chromium through playwright-core) against a real Tack: Postgres,
// the API, the live sockets and the UI, on a port of its own.
func TestBrowser(t *testing.T) {
	if testing.Short() {
		t.Skip("browser tests are not short")
	}
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	case !exists(filepath.Join("e2e", "node_modules", "playwright-core")):
		missing = "web/e2e/node_modules is missing (npm ci --prefix web/e2e)"
	case !exists(chromium()):
		missing = chromium() + " is missing (apt-get install chromium)"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("browser tests need what is missing under CI: %s", missing)
		}
		t.Skip(missing)
	}

	base := startServer(t, projection.Config{})
	// A Tack in -auth token, for the sign-in flow, and a one-time sign-in
	// link's code.
	tokenBase, token, linkCode := startTokenServer(t)
	// A second Tack that allows several todos in progress at once.
	parallel := startServer(t, projection.Config{AllowParallel: true})
	// A third that holds only the fleet web/e2e/fleet.test.js makes, for
	// the board's screenshot and its counts.
	fleet := startServer(t, projection.Config{})

	// A realistic session, stopped mid-plan, for the screenshot.
	demoID, err := demo.Run(t.Context(), base, demo.Options{StopAfter: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Real transcripts, imported as a user would: a Claude Code session and
	// a codex rollout (real), and a Claude Code 2.1 session with the task
	// tools and a subagent's own file.
	imported := importFixtures(t, base)

	// TACK_E2E=follow runs web/e2e/follow.test.js alone, while working on it.
	only := os.Getenv("TACK_E2E")
	if only == "" {
		only = "*"
	}
	tests, err := filepath.Glob(filepath.Join("e2e", only+".test.js"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no browser tests in web/e2e: %v", err)
	}
	shots := t.TempDir()
	if os.Getenv("TACK_UPDATE_SCREENSHOT") == "1" {
		shots, _ = filepath.Abs(filepath.Join("..", "docs"))
	}
	screenshot := filepath.Join(shots, "screenshot.png")
	phone := filepath.Join(shots, "screenshot-phone.png")
	edit := filepath.Join(shots, "screenshot-edit.png")
	board := filepath.Join(shots, "screenshot-board.png")

	// The browser tests take minutes, more on a busy machine: they get what
	// is left of go test's -timeout, less a margin to report a hang in.
	ctx := t.Context()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-30*time.Second))
		defer cancel()
	}
	cmd := exec.CommandContext(ctx, node, append([]string{"--test", "--test-concurrency=1"}, tests...)...)
	cmd.Env = append(os.Environ(),
		"TACK_URL="+base,
		"TACK_PARALLEL_URL="+parallel,
		"TACK_FLEET_URL="+fleet,
		"TACK_TOKEN_URL="+tokenBase,
		"TACK_TOKEN="+token,
		"TACK_LINK_CODE="+linkCode,
		"TACK_CHROMIUM="+chromium(),
		"TACK_DEMO_SESSION="+demoID,
		"TACK_SCREENSHOT="+screenshot,
		"TACK_SCREENSHOT_PHONE="+phone,
		"TACK_SCREENSHOT_EDIT="+edit,
		"TACK_SCREENSHOT_BOARD="+board,
		"TACK_IMPORTED_CLAUDE="+imported["claude-code-session.jsonl"],
		"TACK_IMPORTED_CODEX="+imported["codex-session.jsonl"],
		"TACK_IMPORTED_TASKS="+imported["claude-code-tasks.jsonl"],
	)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node --test: %v", err)
	}
	if os.Getenv("TACK_E2E") == "" {
		for _, p := range []string{screenshot, phone, edit, board} {
			if !exists(p) {
				t.Errorf("no screenshot was saved at %s", p)
			}
		}
	}
}

// importFixtures imports transcripts of internal/transcript/testdata into
// the Tack at base with `tack import`'s own code, and returns each file's
// session id by name.
func importFixtures(t *testing.T, base string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join("..", "internal", "transcript", "testdata")
	for _, name := range []string{"claude-code-session.jsonl", "codex-session.jsonl", "claude-code-tasks.jsonl", filepath.Join("claude-code-tasks", "subagents", "agent-cd34.jsonl")} {
		raw, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := importer.Import(t.Context(), &importer.Client{Server: base}, []string{dir}, &out); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	ids := map[string]string{}
	for _, line := range strings.Split(out.String(), "\n") {
		if m := regexp.MustCompile(`^\S*/([^/:]+\.jsonl): \S+/s/(ses_[a-z0-9]+)`).FindStringSubmatch(line); m != nil {
			ids[m[1]] = m[2]
		}
	}
	for _, name := range []string{"claude-code-session.jsonl", "codex-session.jsonl", "claude-code-tasks.jsonl"} {
		if ids[name] == "" {
			t.Fatalf("import said nothing of %s:\n%s", name, out.String())
		}
	}
	return ids
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// startServer serves a real Tack on a port of its own and returns its URL.
// Besides the product's routes it has one test hook, POST /_test/drop, which
// cuts every other open connection as a network drop would, websockets
// included.
func startServer(t *testing.T, cfg projection.Config) string {
	t.Helper()
	st := storetest.Postgres(t, cfg)
	conns := &connSet{m: map[net.Conn]struct{}{}}
	hub := live.New(st, live.Options{})
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = hub.Run(hubCtx) }()
	t.Cleanup(func() { stopHub(); <-hubDone })
	srv := api.New(st, api.Options{OnAppend: hub.OnAppend, UI: web.Handler(), Live: hub})
	h := srv.Handler()
	// The hook stands in front of the router: it is the test's, not a route.
	hooked := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/_test/drop" {
			conns.closeAllBut(r.Context().Value(connKey{}).(net.Conn))
			w.WriteHeader(http.StatusNoContent)
			return
		}
		h.ServeHTTP(w, r)
	})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{
		Handler: hooked,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		},
		ConnState: conns.track,
	}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		conns.closeAllBut(nil) // hijacked sockets are not closed by Close
		_ = hs.Close()
	})
	return "http://" + ln.Addr().String()
}

// startTokenServer serves a Tack in -auth token, routed as cmd/server
// routes it, and returns its URL, a write token of principal e2e-alice and
// the code of a one-time sign-in link for e2e-alice.
func startTokenServer(t *testing.T) (string, string, string) {
	t.Helper()
	st := storetest.Postgres(t, projection.Config{})
	svc := &auth.Service{Store: st}
	token, _, err := svc.CreateToken(t.Context(), "e2e-alice", auth.Write)
	if err != nil {
		t.Fatal(err)
	}
	code, _, err := svc.NewLink(t.Context(), "e2e-alice", auth.Write)
	if err != nil {
		t.Fatal(err)
	}
	hub := live.New(st, live.Options{})
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = hub.Run(hubCtx) }()
	t.Cleanup(func() { stopHub(); <-hubDone })
	ui := web.Handler()
	srv := api.New(st, api.Options{
		OnAppend: hub.OnAppend,
		Auth:     api.AuthOptions{Service: svc, OnSignOut: hub.CloseCredential},
		UI:       ui,
		Live:     hub,
	})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hub.Close(ctx)
		ts.Close()
	})
	return ts.URL, token, code
}

type connKey struct{}

// connSet tracks the server's open connections, hijacked ones included
// (http.Server forgets those, which is why it cannot drop a websocket).
type connSet struct {
	mu sync.Mutex
	m  map[net.Conn]struct{}
}

func (s *connSet) track(c net.Conn, state http.ConnState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch state {
	case http.StateNew:
		s.m[c] = struct{}{}
	case http.StateClosed:
		delete(s.m, c)
	}
}

func (s *connSet) closeAllBut(keep net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.m {
		if c != keep {
			_ = c.Close()
			delete(s.m, c)
		}
	}
}
