package agenttest

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/eventually"
)

// The oracle's runs (oracle_test.go): real agents with Tack's hooks
// installed and tack watch running, started before the agent has made its
// session folder, each then held to the import of its transcript.

// liveTack is the live side: Tack, its hooks installed for agent, and tack
// watch started before the agent's folders exist.
func liveTack(t *testing.T, u user, agent string) (*tack, *watch) {
	t.Helper()
	k := startTack(t, u, false)
	k.installHooks(t, u, agent)
	for _, dir := range []string{filepath.Join(u.Home, ".claude", "projects"), filepath.Join(u.CodexHome, "sessions")} {
		if _, err := os.Stat(dir); err == nil {
			t.Fatalf("%s exists before the agent ran", dir)
		}
	}
	return k, k.startWatch(t, u)
}

// checkFollowed asserts the watcher (its latest run) follows each file.
func checkFollowed(t *testing.T, w *watch, files []string) {
	t.Helper()
	for _, f := range files {
		if !w.Followed(f) {
			t.Errorf("tack watch never followed %s", f)
		}
	}
}

// TestClaudeOracleTodoWrite: a TodoWrite session of three prompts, with a
// Write, a Bash call, an Edit, list writes and a closing text after the
// tools.
func TestClaudeOracleTodoWrite(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	k, w := liveTack(t, u, "claude-code")
	stream, files := greetSession(t, u)
	checkFollowed(t, w, files)
	checkOracle(t, u, k, "claude-code:"+stream, files)
}

// greetSession runs Claude Code as u through the greet script's three
// prompts and answers its session's id and transcripts.
func greetSession(t *testing.T, u user) (string, []string) {
	t.Helper()
	m := NewAnthropic(t, greetTurns(filepath.Join(u.Project, "greet.sh"))...)
	r := u.claudeTalk(t, m, greetPrompts)
	if r.Err != nil {
		t.Fatalf("claude: %v", r.Err)
	}
	if m.Left() != 0 {
		t.Fatalf("%d turns of the script were never asked for", m.Left())
	}
	return streamID(r), claudeTranscripts(t, u, streamID(r))
}

// TestClaudeOracleHookSyncs: Tack's hooks as they run for a server on
// another machine (tack-hook alone, a server that does not read the
// transcript): each hook syncs the transcript itself, and a tool's goes
// on without waiting for its call's line once the server said it takes
// that (its marker among the hooks' states). The session reads as the
// import of its transcript.
func TestClaudeOracleHookSyncs(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	k := serve(t, u, "-data-dir", t.TempDir(), "-no-transcript-reads")
	k.installHooksWith(t, u, hookOnlyTack(t), "claude-code")
	stream, files := greetSession(t, u)
	if early, _ := filepath.Glob(filepath.Join(u.Home, ".cache", "tack", "hooks", "*.early")); len(early) != 1 {
		t.Errorf("the hooks' states hold %d markers of a server that takes early hooks, want 1", len(early))
	}
	checkOracle(t, u, k, "claude-code:"+stream, files)
}

// TestClaudeOracleNoTodoTool: a model Claude Code offers no list tool
// (claude-opus-5) after `tack connect` (hooks and MCP), tack watch started
// before the agent's folder exists: the model plans with Tack's own
// mcp__tack__todo_write, and the session heard live reads as the import
// of its transcript, the plan included.
func TestClaudeOracleNoTodoTool(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	u.ClaudeModel, u.ClaudeOwnTools = "claude-opus-5", true
	k := startTack(t, u, false)
	k.connect(t, u, "claude-code")
	w := k.startWatch(t, u)
	done := map[string]any{"todos": []any{
		map[string]any{"content": "Reproduce the failure", "status": "completed"},
		map[string]any{"content": "Fix the race", "status": "completed"},
	}}
	m := NewAnthropic(t,
		Turn{Text: "I'll plan this first.", Tools: []Call{{Name: "mcp__tack__todo_write", Input: mcpPlan}}},
		bashStep("1"),
		Turn{Tools: []Call{{Name: "mcp__tack__todo_write", Input: done}}},
		Turn{Text: "All done: the race is fixed."},
	)
	r := u.claude(t, m, "The login test fails one run in ten: fix it.")
	if r.Err != nil {
		t.Fatalf("claude: %v", r.Err)
	}
	if m.Left() != 0 {
		t.Fatalf("%d turns of the script were never asked for", m.Left())
	}
	if tools := m.Scripted()[0].ToolNames(); !slices.Contains(tools, "mcp__tack__todo_write") || slices.Contains(tools, "TodoWrite") {
		t.Errorf("the first request offers %v, want mcp__tack__todo_write and no TodoWrite", tools)
	}
	files := claudeTranscripts(t, u, streamID(r))
	checkFollowed(t, w, files)
	checkOracle(t, u, k, "claude-code:"+streamID(r), files)
	s, _ := k.sessionByKey(t, "claude-code:"+streamID(r))
	var cur todos
	k.do(t, http.MethodGet, "/sessions/"+s.ID+"/todos", nil, &cur)
	var got []string
	for _, it := range cur.Todos {
		got = append(got, it.Content+":"+it.Status)
	}
	if want := "Reproduce the failure:completed|Fix the race:completed"; strings.Join(got, "|") != want {
		t.Errorf("plan %v, want %s", got, want)
	}
}

// TestClaudeOracleTasks: the task tools, one assistant message of three
// parallel TaskUpdates after the TaskCreates, a subagent (which runs in the
// background, scripted apart from its parent), and the watcher restarted
// mid-session.
func TestClaudeOracleTasks(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	u.ClaudeTasks = true
	k, w := liveTack(t, u, "claude-code")
	create := func(subject string) Call {
		return Call{Name: "TaskCreate", Input: map[string]any{"subject": subject, "description": subject + ", as planned", "activeForm": subject + " now"}}
	}
	update := func(id string, fields map[string]any) Call {
		fields["taskId"] = id
		return Call{Name: "TaskUpdate", Input: fields}
	}
	const helperTask = "Read CHANGELOG.md and say whether it is in order."
	m := NewAnthropic(t,
		// Prompt 1.
		Turn{Text: "Planning the release.", Tools: []Call{create("Tag the release")}},
		Turn{Tools: []Call{create("Write the notes")}},
		Turn{Tools: []Call{create("Publish")}},
		Turn{Tools: []Call{
			update("1", map[string]any{"status": "completed"}),
			update("2", map[string]any{"status": "in_progress"}),
			update("3", map[string]any{"status": "in_progress", "owner": "release-bot"}),
		}},
		Turn{Text: "Task 1 is done; 2 and 3 are under way."},
		// Prompt 2, the watcher restarted while the model thinks.
		Turn{Tools: []Call{update("2", map[string]any{"status": "completed"})}, Before: func(Request) { w.Restart(t) }},
		Turn{Tools: []Call{update("3", map[string]any{"status": "completed"})}},
		Turn{Text: "All three tasks are done."},
		// Prompt 3: a subagent.
		Turn{Tools: []Call{{Name: "Agent", Input: map[string]any{"description": "Check the changelog", "prompt": helperTask, "subagent_type": "general-purpose"}}}},
	)
	sub := m.Subagent(helperTask,
		Turn{Tools: []Call{{Name: "Bash", Input: map[string]any{"command": "echo changelog-ok", "description": "Check the changelog"}}}},
		Turn{Text: "The changelog is in order."},
	)
	// The parent's last answer waits for the subagent's, so that the
	// subagent has finished when the parent's turn ends.
	m.script.turns = append(m.script.turns, Turn{Text: "The helper checked the changelog.", Before: func(Request) {
		if !eventually.Within(30*time.Second, func() bool { return sub.Left() == 0 && len(sub.Requests()) >= 2 }) {
			t.Errorf("the subagent did not finish its script (%d turns left)", sub.Left())
		}
	}})
	r := u.claudeTalk(t, m, []string{"Plan the release as tasks.", "Finish the tasks.", "Have a helper check the changelog."})
	if r.Err != nil {
		t.Fatalf("claude: %v", r.Err)
	}
	if m.Left() != 0 || sub.Left() != 0 {
		t.Fatalf("turns of the script never asked for: parent %d, subagent %d", m.Left(), sub.Left())
	}
	files := claudeTranscripts(t, u, streamID(r))
	if len(files) != 2 {
		t.Errorf("transcripts %v, want the session's and its subagent's", files)
	}
	checkFollowed(t, w, files)
	checkOracle(t, u, k, "claude-code:"+streamID(r), files)
}

// TestCodexOracle: codex with update_plan, its hooks and tack watch, two
// prompts (the second a `codex exec resume` of the thread), the watcher
// restarted between them.
func TestCodexOracle(t *testing.T) {
	requireAgent(t, codexBinary())
	t.Parallel()
	u := newUser(t)
	k, w := liveTack(t, u, "codex")
	plan := func(first, second string) Call {
		return Call{Name: "update_plan", Input: map[string]any{"plan": []any{
			map[string]any{"step": "Write the greeting script", "status": first},
			map[string]any{"step": "Run it", "status": second},
		}}}
	}
	m := NewResponses(t,
		// Prompt 1.
		Turn{Text: "I'll plan this first.", Tools: []Call{plan("in_progress", "pending")}},
		Turn{Tools: []Call{{Name: "exec_command", Input: map[string]any{"cmd": "printf 'echo hello\\n' > greet.sh && sh greet.sh"}}}},
		Turn{Tools: []Call{plan("completed", "in_progress")}},
		Turn{Text: "The script prints hello."},
		// Prompt 2.
		Turn{Tools: []Call{{Name: "exec_command", Input: map[string]any{"cmd": "sh greet.sh"}}}},
		Turn{Tools: []Call{plan("completed", "completed")}},
		Turn{Text: "It ran again: hello."},
	)
	u.writeCodexConfig(t, m, "")
	r := u.codex(t, "Write a script that greets.", "--dangerously-bypass-hook-trust")
	if r.Err != nil {
		t.Fatalf("codex: %v", r.Err)
	}
	id := streamID(r)
	w.Restart(t)
	if r := u.codex(t, "Run it once more.", "--dangerously-bypass-hook-trust", "resume", id); r.Err != nil {
		t.Fatalf("codex exec resume: %v", r.Err)
	}
	if m.Left() != 0 {
		t.Fatalf("%d turns of the script were never asked for", m.Left())
	}
	files := codexTranscripts(t, u, id)
	checkFollowed(t, w, files)
	checkOracle(t, u, k, "codex:"+id, files)
}

// TestClaudeMCPListNoSession: `claude mcp add` and `claude mcp list`, as a
// person sets up Tack's MCP server, start and end a Claude Code session
// with no prompt under Tack's hooks; Tack lists no session for them.
func TestClaudeMCPListNoSession(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	k := startTack(t, u, false)
	k.installHooks(t, u, "claude-code")
	env := u.claudeEnv(NewAnthropic(t))
	for _, args := range [][]string{{"mcp", "add", "--transport", "http", "tack", k.URL + "/mcp"}, {"mcp", "list"}} {
		if r := start(t, u.Project, env, claudeBinary(), args...); r.Err != nil {
			t.Fatalf("claude %s: %v", strings.Join(args, " "), r.Err)
		}
	}
	// The hooks ran, and were answered, before claude exited.
	for _, s := range k.sessions(t, "") {
		t.Errorf("a session for a run with no prompt: %s %q, %s, %d turns", s.ExternalKey, s.Title, s.State, s.Turn.Number)
	}
}

// TestClaudeKilledEnds: a Claude Code process killed (SIGKILL, as kill -9)
// while it waits on the model says no SessionEnd; its session reads ended
// within 10 s all the same, from Claude Code's registry of its live
// processes (~/.claude/sessions/<pid>.json) as tack watch reads it.
func TestClaudeKilledEnds(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	k, _ := liveTack(t, u, "claude-code")
	waiting, release := make(chan struct{}), make(chan struct{})
	m := NewAnthropic(t, Turn{Text: "Never sent.", Before: func(Request) { close(waiting); <-release }})
	t.Cleanup(func() { close(release) }) // before the model server closes
	cmd := exec.Command(claudeBinary(), "-p", "Take your time.", "--output-format", "stream-json", "--verbose",
		"--model", claudeModel, "--dangerously-skip-permissions")
	cmd.Dir, cmd.Env = u.Project, u.claudeEnv(m)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waiting:
	case <-time.After(agentTimeout):
		_ = cmd.Process.Kill()
		t.Fatal("claude never asked the model")
	}
	s, ok := k.sessionOf(t, u, "claude-code")
	if !ok || s.State != "working" {
		_ = cmd.Process.Kill()
		t.Fatalf("before the kill: session %+v (found %v), want one working", s, ok)
	}
	registry, _ := filepath.Glob(filepath.Join(u.Home, ".claude", "sessions", "*.json"))
	t.Logf("Claude Code's registry before the kill: %v", registry)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	eventually.True(t, 10*time.Second, "end of the killed agent's session", func() bool {
		s, _ = k.sessionOf(t, u, "claude-code")
		return s.State == "ended"
	}, func() string { return "its state: " + s.State })
}

// A terminal is tmux running an interactive agent, for what only a person
// at a terminal sees: permission prompts.
type terminal struct {
	t      *testing.T
	socket string
}

// openTerminal starts bin with args interactively in env, in a tmux of its
// own (its own server socket, no configuration), in dir.
func openTerminal(t *testing.T, u user, dir string, env []string, bin string, args ...string) *terminal {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is not installed (apt-get install tmux): %v", err)
	}
	// The command runs in the environment the script sets, not tmux's.
	script := "#!/bin/sh\ncd " + shellQuote(dir) + "\n"
	for _, kv := range append(env, "TERM=xterm-256color") {
		script += "export " + shellQuote(kv) + "\n"
	}
	script += "exec " + shellQuote(bin)
	for _, a := range args {
		script += " " + shellQuote(a)
	}
	path := filepath.Join(u.Tmp, "agent.sh")
	if err := os.WriteFile(path, []byte(script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, socket: filepath.Join(u.Tmp, "tmux.sock")}
	term.tmux("-f", "/dev/null", "new-session", "-d", "-s", "agent", "-x", "160", "-y", "50", path)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the terminal:\n%s", term.Screen())
		}
		_ = exec.Command("tmux", "-S", term.socket, "kill-server").Run()
	})
	return term
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func (term *terminal) tmux(args ...string) string {
	term.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", term.socket}, args...)...).CombinedOutput()
	if err != nil {
		term.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Screen is what the terminal shows now, "" once the agent has exited.
func (term *terminal) Screen() string {
	out, err := exec.Command("tmux", "-S", term.socket, "capture-pane", "-p", "-t", "agent").Output()
	if err != nil {
		return ""
	}
	return string(out)
}

// Keys types keys (tmux send-keys names: "Enter", "C-c", or text).
func (term *terminal) Keys(keys ...string) {
	term.t.Helper()
	term.tmux(append([]string{"send-keys", "-t", "agent"}, keys...)...)
}

// Exited reports whether the agent's process, the session's only one, is gone.
func (term *terminal) Exited() bool {
	return exec.Command("tmux", "-S", term.socket, "has-session", "-t", "agent").Run() != nil
}

// trustClaude writes the user's ~/.claude.json as after Claude Code's first
// run: onboarding done, the project trusted, the scripted API key approved.
func trustClaude(t *testing.T, u user) {
	t.Helper()
	cfg, _ := json.Marshal(map[string]any{
		"hasCompletedOnboarding": true,
		"theme":                  "dark",
		"numStartups":            1,
		"projects":               map[string]any{u.Project: map[string]any{"hasTrustDialogAccepted": true, "hasCompletedProjectOnboarding": true}},
		"customApiKeyResponses":  map[string]any{"approved": []string{"sk-ant-scripted"}, "rejected": []string{}},
	})
	if err := os.WriteFile(filepath.Join(u.Home, ".claude.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestClaudeOraclePermission: interactive Claude Code in a terminal asks a
// person's permission for a Bash call. The live session needs them while
// it asks, with the reason; once allowed, the session goes on, and it ends
// up as its import.
func TestClaudeOraclePermission(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	trustClaude(t, u)
	k, w := liveTack(t, u, "claude-code")
	m := NewAnthropic(t,
		Turn{Text: "Let me look.", Tools: []Call{{Name: "Bash", Input: map[string]any{"command": "touch marker && echo asked-first", "description": "Leave a marker"}}}},
		Turn{Text: "It printed asked-first."},
	)
	env := u.claudeEnv(m)
	term := openTerminal(t, u, u.Project, env, claudeBinary(), "--model", claudeModel, "Print a marker.")
	var s session
	eventually.True(t, 60*time.Second, "needs_you on the live session", func() bool {
		var ok bool
		s, ok = k.sessionOf(t, u, "claude-code")
		return ok && s.State == "needs_you"
	}, term.Screen)
	if n := s.NeedsYou; n == nil || n.Kind != "permission" || n.Tool != "Bash" {
		t.Errorf("needsYou %+v, want kind permission for the Bash call", n)
	}
	if !strings.Contains(term.Screen(), "touch marker") {
		t.Errorf("the terminal does not show the permission prompt for the call:\n%s", term.Screen())
	}
	term.Keys("Enter") // Yes, the first choice
	eventually.True(t, 60*time.Second, "last answer of the model", func() bool { return m.Left() == 0 && strings.Contains(term.Screen(), "It printed asked-first.") }, term.Screen)
	term.Keys("/exit")
	term.Keys("Enter")
	eventually.True(t, 30*time.Second, "exit of claude", term.Exited, term.Screen)
	files := claudeTranscripts(t, u, strings.TrimPrefix(s.ExternalKey, "claude-code:"))
	checkFollowed(t, w, files)
	checkOracle(t, u, k, s.ExternalKey, files)
}

// greetPrompts and greetTurns are a person's three prompts to Claude Code
// and the scripted model's answers: a TodoWrite plan, a Write, a Bash
// call, the plan finished, an Edit, and a closing text after the tools.
// script is the file the model writes.
var greetPrompts = []string{"Write a script that greets.", "Make it greet in French.", "Thanks, that is all."}

func greetTurns(script string) []Turn {
	return []Turn{
		// Prompt 1.
		Turn{Text: "I'll plan this first.", Tools: []Call{{Name: "TodoWrite", Input: map[string]any{"todos": []any{
			map[string]any{"content": "Write the greeting script", "status": "in_progress", "activeForm": "Writing the greeting script"},
			map[string]any{"content": "Run it", "status": "pending", "activeForm": "Running it"},
		}}}}},
		Turn{Tools: []Call{{Name: "Write", Input: map[string]any{"file_path": script, "content": "echo hello\n"}}}},
		Turn{Tools: []Call{{Name: "Bash", Input: map[string]any{"command": "sh greet.sh", "description": "Run the script"}}}},
		Turn{Tools: []Call{{Name: "TodoWrite", Input: map[string]any{"todos": []any{
			map[string]any{"content": "Write the greeting script", "status": "completed", "activeForm": "Writing the greeting script"},
			map[string]any{"content": "Run it", "status": "completed", "activeForm": "Running it"},
		}}}}},
		Turn{Text: "The script prints hello."},
		// Prompt 2.
		Turn{Tools: []Call{{Name: "Edit", Input: map[string]any{"file_path": script, "old_string": "hello", "new_string": "bonjour"}}}},
		Turn{Tools: []Call{{Name: "Bash", Input: map[string]any{"command": "sh greet.sh", "description": "Run the script"}}}},
		Turn{Text: "It says bonjour now."},
		// Prompt 3.
		Turn{Text: "Glad to help."},
	}
}

// TestClaudeOracleHTTPHooks: `tack connect -hooks http`, no watcher: the
// agent posts every event but SessionStart to Tack itself, as an HTTP
// hook, and Tack reads the transcript the hook names; the session heard
// live reads as the import of its transcript, and no hook failed.
func TestClaudeOracleHTTPHooks(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	k := startTack(t, u, false)
	k.connect(t, u, "claude-code", "-hooks", "http")
	raw, err := os.ReadFile(filepath.Join(u.Home, ".claude", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), `"type": "http"`); n != 8 {
		t.Errorf("settings.json holds %d HTTP hooks, want 8 (every event but SessionStart):\n%s", n, raw)
	}
	stream, files := greetSession(t, u)
	for _, f := range files {
		if raw, err := os.ReadFile(f); err != nil || strings.Contains(string(raw), "hook_non_blocking_error") {
			t.Errorf("%s: a hook failed (or the file is unread: %v)", f, err)
		}
	}
	checkOracle(t, u, k, "claude-code:"+stream, files)
}
