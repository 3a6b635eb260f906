package agenttest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The packages are installed here by `npm ci --prefix internal/agenttest/node`.
const nodeModules = "node/node_modules"

// claudeBinary is Claude Code's native binary in its platform package: the
// CLI itself, without the npm wrapper's launcher in front.
func claudeBinary() string {
	platform := map[string]string{"linux/amd64": "linux-x64", "linux/arm64": "linux-arm64",
		"darwin/amd64": "darwin-x64", "darwin/arm64": "darwin-arm64"}[runtime.GOOS+"/"+runtime.GOARCH]
	return abs(filepath.Join(nodeModules, "@anthropic-ai", "claude-code-"+platform, "claude"))
}

// codexBinary is codex's native binary in its platform package, which
// codex's own bin/codex.js would exec.
func codexBinary() string {
	pkg := map[string][2]string{
		"linux/amd64":  {"linux-x64", "x86_64-unknown-linux-musl"},
		"linux/arm64":  {"linux-arm64", "aarch64-unknown-linux-musl"},
		"darwin/amd64": {"darwin-x64", "x86_64-apple-darwin"},
		"darwin/arm64": {"darwin-arm64", "aarch64-apple-darwin"},
	}[runtime.GOOS+"/"+runtime.GOARCH]
	return abs(filepath.Join(nodeModules, "@openai", "codex-"+pkg[0], "vendor", pkg[1], "bin", "codex"))
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

// requireAgent skips the test when the CLI is not installed, except under
// CI=true, where that fails it.
func requireAgent(t testing.TB, bin string) {
	t.Helper()
	if testing.Short() {
		t.Skip("not run: the real agents are not short")
	}
	if _, err := os.Stat(bin); err != nil {
		missing := bin + " is missing (npm ci --prefix internal/agenttest/node)"
		if os.Getenv("CI") == "true" {
			t.Fatalf("the real-agent tests need what is missing under CI: %s", missing)
		}
		t.Skip("not run: " + missing)
	}
}

// A user is a private home for one agent run: HOME, CODEX_HOME, TMPDIR and
// a project folder, all in the test's temporary directory.
type user struct {
	Home, CodexHome, Tmp, Project string
	// ClaudeTasks gives Claude Code its task tools (TaskCreate, TaskUpdate,
	// …), its default, instead of TodoWrite.
	ClaudeTasks bool
	// ClaudeModel is the model Claude Code runs with (--model), ""
	// for claudeModel.
	ClaudeModel string
	// ClaudeOwnTools leaves Claude Code's list tools as its model has them,
	// without CLAUDE_CODE_ENABLE_TODO_TOOLS=1: none on its newest models.
	ClaudeOwnTools bool
	// ClaudeAsks keeps Claude Code's permission checks on (no
	// --dangerously-skip-permissions): in -p mode a tool then runs only
	// when the settings allow it.
	ClaudeAsks bool
}

func newUser(t testing.TB) user {
	t.Helper()
	root := t.TempDir()
	u := user{
		Home:      filepath.Join(root, "home"),
		CodexHome: filepath.Join(root, "home", ".codex"),
		Tmp:       filepath.Join(root, "tmp"),
		Project:   filepath.Join(root, "project"),
	}
	for _, d := range []string{u.Home, u.CodexHome, u.Tmp, u.Project} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return u
}

// env is the environment of a process the user starts: theirs, not the
// test's, so nothing of the machine's own agent set-up leaks in.
func (u user) env(extra ...string) []string {
	env := []string{
		"HOME=" + u.Home,
		"USER=tester",
		"PATH=" + os.Getenv("PATH"),
		"TMPDIR=" + u.Tmp,
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
	}
	return append(env, extra...)
}

// A run is what one agent process left: its exit, its output, how long.
type run struct {
	Err            error
	Stdout, Stderr []byte
	Took           time.Duration
}

// Lines decodes stdout's JSON lines, skipping any that are not JSON.
func (r run) Lines() []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(r.Stdout))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil {
			out = append(out, m)
		}
	}
	return out
}

// agentTimeout bounds one agent run: a scripted session takes seconds, a
// hang must not take the whole go test -timeout.
const agentTimeout = 3 * time.Minute

func start(t testing.TB, dir string, env []string, bin string, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), agentTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.Stdin = strings.NewReader("")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	began := time.Now()
	err := cmd.Run()
	r := run{Err: err, Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Took: time.Since(began)}
	t.Logf("%s %s: %v in %s", filepath.Base(bin), strings.Join(args[:min(len(args), 2)], " "), err, r.Took.Round(time.Millisecond))
	if err != nil {
		t.Logf("stdout:\n%s\nstderr:\n%s", tail(r.Stdout), tail(r.Stderr))
	}
	return r
}

func tail(b []byte) string {
	const n = 8000
	if len(b) > n {
		return "…" + string(b[len(b)-n:])
	}
	return string(b)
}

// claudeModel is a model Claude Code offers TodoWrite on when told to.
const claudeModel = "claude-sonnet-4-5"

// claude runs `claude -p PROMPT` in the user's project against the model
// server, printing stream-json, with permissions skipped as a sandboxed
// user may.
func (u user) claude(t testing.TB, m *Anthropic, prompt string, args ...string) run {
	t.Helper()
	all := []string{"-p", prompt, "--output-format", "stream-json", "--verbose", "--model", u.model()}
	if !u.ClaudeAsks {
		all = append(all, "--dangerously-skip-permissions")
	}
	all = append(all, args...)
	return start(t, u.Project, u.claudeEnv(m), claudeBinary(), all...)
}

// model is the model Claude Code runs with.
func (u user) model() string {
	if u.ClaudeModel != "" {
		return u.ClaudeModel
	}
	return claudeModel
}

// claudeEnv is the environment Claude Code runs in against the model server.
func (u user) claudeEnv(m *Anthropic) []string {
	env := u.env(
		"ANTHROPIC_BASE_URL="+m.URL,
		"ANTHROPIC_API_KEY=sk-ant-scripted",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_TMPDIR="+u.Tmp,
		// Every tool's schema sent rather than deferred behind tool search.
		"ENABLE_TOOL_SEARCH=false",
	)
	if !u.ClaudeOwnTools {
		// A todo tool even on the newest models.
		env = append(env, "CLAUDE_CODE_ENABLE_TODO_TOOLS=1")
	}
	if !u.ClaudeTasks {
		env = append(env, "CLAUDE_CODE_ENABLE_TASKS=0") // TodoWrite
	}
	if os.Geteuid() == 0 {
		// Claude Code refuses to skip permissions as root outside a sandbox.
		env = append(env, "IS_SANDBOX=1")
	}
	return env
}

// claudeTalk is one Claude Code process given several prompts, as an SDK
// gives them: stream-json on stdin, each prompt written once the previous
// one's result line is out, stdin closed after the last result.
func (u user) claudeTalk(t *testing.T, m *Anthropic, prompts []string, args ...string) run {
	t.Helper()
	all := append([]string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
		"--model", u.model(), "--dangerously-skip-permissions"}, args...)
	ctx, cancel := context.WithTimeout(t.Context(), agentTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, claudeBinary(), all...)
	cmd.Dir, cmd.Env = u.Project, u.claudeEnv(m)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	say := func(prompt string) {
		line, _ := json.Marshal(map[string]any{"type": "user", "message": map[string]any{"role": "user", "content": prompt}})
		_, _ = in.Write(append(line, '\n'))
	}
	say(prompts[0])
	next := 1
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		stdout.Write(append(sc.Bytes(), '\n'))
		var l struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(sc.Bytes(), &l) != nil || l.Type != "result" {
			continue
		}
		if next < len(prompts) {
			say(prompts[next])
			next++
		} else {
			_ = in.Close()
		}
	}
	err = cmd.Wait()
	r := run{Err: err, Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Took: time.Since(began)}
	t.Logf("claude: %d prompts of %d given: %v in %s", next, len(prompts), err, r.Took.Round(time.Millisecond))
	if err == nil && next < len(prompts) {
		r.Err = fmt.Errorf("claude exited after %d prompts of %d", next, len(prompts))
	}
	if r.Err != nil {
		t.Logf("stdout:\n%s\nstderr:\n%s", tail(r.Stdout), tail(r.Stderr))
	}
	return r
}

// codexModel is a model slug codex knows, so it applies the model's own
// tool set and prompt.
const codexModel = "gpt-5.5"

// writeCodexConfig writes $CODEX_HOME/config.toml: the scripted provider,
// the plan tool on, no approvals, no sandbox (the test is the sandbox), and
// whatever the test adds.
func (u user) writeCodexConfig(t *testing.T, m *Responses, more string) {
	t.Helper()
	cfg := `model = "` + codexModel + `"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[model_providers.scripted]
name = "scripted"
base_url = "` + m.URL + `"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[tools.update_plan]
enabled = true

[analytics]
enabled = false
` + more
	if err := os.WriteFile(filepath.Join(u.CodexHome, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// codex runs `codex exec --json PROMPT` in the user's project.
func (u user) codex(t *testing.T, prompt string, args ...string) run {
	t.Helper()
	all := append([]string{"exec", "--json", "--skip-git-repo-check"}, args...)
	all = append(all, prompt)
	return start(t, u.Project, u.codexEnv(), codexBinary(), all...)
}

// codexEnv is the environment codex runs in: the user's, with their
// CODEX_HOME and the npm package it came from.
func (u user) codexEnv() []string {
	return u.env(
		"CODEX_HOME="+u.CodexHome,
		"CODEX_MANAGED_BY_NPM=1",
		"CODEX_MANAGED_PACKAGE_ROOT="+abs(filepath.Join(nodeModules, "@openai", "codex")),
	)
}
