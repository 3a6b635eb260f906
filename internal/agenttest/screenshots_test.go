//go:build screenshots

package agenttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/eventually"
)

// TestLiveScreenshots photographs one real session heard live: Claude
// Code with Tack's hooks installed and tack watch running, three prompts,
// a plan with TodoWrite, a Write, a Bash call and a closing text after the
// tools, then the board and the session's page in headless Chromium at
// 1440×900 (web/e2e/screenshots.js). It runs only when asked for, with
// TACK_SCREENSHOTS=DIR and the build tag screenshots (it is no test of
// the suite, which never builds it): the PNGs go to DIR/NAME-board.png and
// DIR/NAME-session.png, NAME being TACK_SCREENSHOTS_NAME (default "live").
// With TACK_AGENTTEST_BIN it photographs another build's Tack;
// scripts/screenshots-live makes docs/agents.md's before and after so.
func TestLiveScreenshots(t *testing.T) {
	dir := os.Getenv("TACK_SCREENSHOTS")
	if dir == "" {
		t.Fatal("TACK_SCREENSHOTS=DIR names where the screenshots go (scripts/screenshots-live)")
	}
	requireAgent(t, claudeBinary())
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("the screenshots need node: ", err)
	}
	shoot := abs(filepath.Join("..", "..", "web", "e2e", "screenshots.js"))
	if _, err := os.Stat(filepath.Join(filepath.Dir(shoot), "node_modules", "playwright-core")); err != nil {
		t.Fatal("the screenshots need playwright-core (npm ci --prefix web/e2e): ", err)
	}
	name := os.Getenv("TACK_SCREENSHOTS_NAME")
	if name == "" {
		name = "live"
	}
	dir = abs(dir)

	u := newUser(t)
	k := startTack(t, u, false)
	k.installHooks(t, u, "claude-code")
	// A Claude Code user has its projects folder before tack watch starts.
	if err := os.MkdirAll(filepath.Join(u.Home, ".claude", "projects"), 0o755); err != nil {
		t.Fatal(err)
	}
	k.startWatch(t, u)
	const closing = "Glad to help." // greetTurns' last answer
	m := NewAnthropic(t, greetTurns(filepath.Join(u.Project, "greet.sh"))...)
	r := u.claudeTalk(t, m, greetPrompts)
	if r.Err != nil {
		t.Fatalf("claude: %v", r.Err)
	}
	if m.Left() != 0 {
		t.Fatalf("%d turns of the script were never asked for", m.Left())
	}
	// The session as a person finds it once the agent has exited: ended
	// (its SessionEnd hook has been heard), and, when the build brings it,
	// its closing text in; the watcher may still be reading the transcript.
	// An older build may never bring it: the shots show what it does.
	key := "claude-code:" + streamID(r)
	var s session
	eventually.True(t, 10*time.Second, "end of the session", func() bool {
		var ok bool
		s, ok = k.sessionByKey(t, key)
		return ok && s.State == "ended"
	}, func() string { return "its state: " + s.State })
	closed := func() bool {
		for _, e := range k.events(t, s.ID) {
			if e.Type == "message/assistant" && strings.Contains(string(e.Data), closing) {
				return true
			}
		}
		return false
	}
	if !eventually.Within(10*time.Second, closed) {
		t.Logf("the session's log never held the closing text %q", closing)
	}

	board := filepath.Join(dir, name+"-board.png")
	page := filepath.Join(dir, name+"-session.png")
	cmd := exec.CommandContext(t.Context(), node, shoot)
	cmd.Env = append(os.Environ(),
		"TACK_URL="+k.URL,
		"TACK_SHOT_SESSION="+s.ID,
		"TACK_SHOT_BOARD="+board,
		"TACK_SHOT_PAGE="+page,
	)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node %s: %v\n%s", shoot, err, out)
	}
	for _, p := range []string{board, page} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("no screenshot at %s: %v", p, err)
		}
	}
	t.Logf("session %s, titled %q, %d turns for 3 prompts: %s, %s", s.ID, s.Title, s.Turn.Number, board, page)
}
