package agenttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	script := filepath.Join(u.Project, "greet.sh")
	m := NewAnthropic(t,
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
	)
	r := u.claudeTalk(t, m, []string{"Write a script that greets.", "Make it greet in French.", "Thanks, that is all."})
	if r.Err != nil {
		t.Fatalf("claude: %v", r.Err)
	}
	if m.Left() != 0 {
		t.Fatalf("%d turns of the script were never asked for", m.Left())
	}
	files := claudeTranscripts(t, u, streamID(r))
	checkFollowed(t, w, files)
	checkOracle(t, u, k, "claude-code:"+streamID(r), files)
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
		deadline := time.Now().Add(30 * time.Second)
		for sub.Left() > 0 || len(sub.Requests()) < 2 {
			if time.Now().After(deadline) {
				t.Errorf("the subagent did not finish its script (%d turns left)", sub.Left())
				return
			}
			time.Sleep(50 * time.Millisecond)
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
	deadline := time.Now().Add(10 * time.Second)
	for s.State != "ended" {
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the agent was killed its session reads %s, want ended", s.State)
		}
		time.Sleep(100 * time.Millisecond)
		s, _ = k.sessionOf(t, u, "claude-code")
	}
}
