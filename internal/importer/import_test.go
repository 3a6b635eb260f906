package importer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
	"github.com/tack-dev/tack/internal/transcript"
)

// serve runs the real API over st.
func serve(t *testing.T, st store.Store) *importer.Client {
	srv := httptest.NewServer(api.New(st, api.Options{}).Handler())
	t.Cleanup(srv.Close)
	return &importer.Client{Server: srv.URL}
}

func get(t *testing.T, c *importer.Client, path string, v any) {
	t.Helper()
	resp, err := http.Get(c.Server + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// fixture is a transcript and what importing it must give.
type fixture struct {
	file string
	// todos is the transcript's last list.
	todos []projection.TodoInput
	// messages is its conversation: one line per message, role and text or
	// the names of its tool calls.
	messages []string
	// notMapped must each appear in the report's line.
	notMapped []string
}

var fixtures = []fixture{
	{
		file: "claude-code-real.jsonl",
		todos: []projection.TodoInput{
			{Content: "Explore codebase structure and understand project layout", Status: "in_progress"},
			{Content: "Review package.json and dependencies", Status: "pending"},
			{Content: "Audit code quality and architecture", Status: "pending"},
			{Content: "Check for security issues", Status: "pending"},
			{Content: "Review testing coverage and practices", Status: "pending"},
			{Content: "Analyze documentation quality", Status: "pending"},
			{Content: "Identify potential improvements and issues", Status: "pending"},
		},
		messages: []string{
			"user: Hey",
			"assistant: I'll help you with whatever you need! What would you like to work on today?",
			"assistant: [mcp__happy__change_title]",
			`tool mcp__happy__change_title: Successfully changed chat title to: "New Chat Session"`,
			"assistant: [TodoWrite]",
			"tool TodoWrite: Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable",
			"assistant: [Bash]",
		},
		notMapped: []string{"file-history-snapshot lines ×1"},
	},
	{
		file: "codex-real.jsonl",
		todos: []projection.TodoInput{
			{Content: "Add backend support for fetching a single team with stats to avoid loading all teams during edits.", Status: "pending"},
			{Content: "Refactor front-end TeamSheet to use the targeted team fetch and simplify state management.", Status: "pending"},
			{Content: "Improve team update mutations for optimistic updates without mass refetching, then validate.", Status: "pending"},
		},
		messages: []string{
			"user: <environment_context>\n  <cwd>/Users/jnarowski/Dev/spectora/src/spectora-labs-monorepo-v2</cwd>\n  <approval_policy>on-request</approval_policy>\n  <sandbox_mode>read-only</sandbox_mode>\n  <network_access>restricted</network_access>\n  <shell>zsh</shell>\n</environment_context>",
			"user: Evaluate @packages/services and create a new package called @packages/services-prisma. Please propose an implementation plan.",
			"assistant: [shell]",
			`tool shell: {"output":"CLAUDE.md\nREADME.md\napps\ndocs\nnode_modules\npackage.json\npackages\npnpm-lock.yaml\npnpm-workspace.yaml\nturbo.json\nworktrees\n","metadata":{"exit_code":0,"duration_seconds":0.0}}`,
			"assistant: [update_plan]",
			"tool update_plan: Plan updated",
		},
		notMapped: []string{"reasoning items ×1", "turn_context lines ×1", "event_msg user_message ×1"},
	},
	{
		file: "claude-code-edge.jsonl",
		// Cleared with [], then the task tools' list, folded whole.
		todos: []projection.TodoInput{{Content: "write the fix", Status: "completed"}, {Content: "review it", Status: "in_progress"}},
		messages: []string{
			"user: Fix the flaky parser test\nand run the suite",
			"assistant: Planning. [TodoWrite]",
			"tool TodoWrite: Todos have been modified successfully.",
			"assistant: [Bash]",
			"tool Bash (error): FAIL",
			"assistant: [TodoWrite]",
			"tool TodoWrite: Todos have been modified successfully.",
			"assistant: [TodoWrite]",
			"tool TodoWrite: Todos have been modified successfully.",
			"user: Now track it with tasks",
			"assistant: [TaskCreate TaskCreate]",
			"tool TaskCreate: Task #1 created successfully: write the fix",
			"tool TaskCreate: Task #2 created successfully: review it",
			"assistant: [TaskUpdate TaskUpdate]",
			"tool TaskUpdate: Updated task #1 status",
			"tool TaskUpdate: Updated task #2 status",
			"assistant: Done: the fix is written, review in progress.",
		},
		notMapped: []string{"queue-operation lines ×1", "thinking blocks ×1", "a truncated last line ×1", "summary lines ×1"},
	},
	{
		file:  "codex-edge.jsonl",
		todos: []projection.TodoInput{{Content: "find the flag parser", Status: "completed"}, {Content: "add the flag", Status: "completed"}},
		messages: []string{
			"user: <environment_context>x</environment_context>",
			"user: Add a --json flag",
			"assistant: [update_plan]",
			"tool update_plan: Plan updated",
			"assistant: [apply_patch]",
			"tool apply_patch: Done!",
			"assistant: [update_plan]",
			"tool update_plan: Plan updated",
			"assistant: Added --json.",
			"user: Summary: --json was added to the CLI.",
			"user: <user_shell_command>\n<command>git status</command>\n<result>clean</result>\n</user_shell_command>",
			"user: Now add --yaml",
			"assistant: [shell]",
		},
		notMapped: []string{"brand_new_kind lines ×1"},
	},
}

// TestImport imports each fixture end to end into a real server on every
// store: the final list is the transcript's last, the model surface is its
// conversation, and a second import stores nothing.
func TestImport(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			c := serve(t, f.Open(t, projection.Config{}))
			for _, fx := range fixtures {
				t.Run(fx.file, func(t *testing.T) {
					path := filepath.Join("..", "transcript", "testdata", fx.file)
					var out bytes.Buffer
					if err := importer.Import(context.Background(), c, []string{path}, &out); err != nil {
						t.Fatalf("import: %v\n%s", err, out.String())
					}
					report := out.String()
					t.Log(report)
					id := sessionOf(t, report)
					for _, want := range fx.notMapped {
						if !strings.Contains(report, want) {
							t.Errorf("report %q does not say %q", report, want)
						}
					}
					var todos projection.Todos
					get(t, c, "/sessions/"+id+"/todos", &todos)
					got := []projection.TodoInput{}
					for _, it := range todos.Todos {
						got = append(got, projection.TodoInput{Content: it.Content, Status: it.Status})
					}
					if !reflect.DeepEqual(got, fx.todos) {
						t.Errorf("final list %+v\nwant %+v", got, fx.todos)
					}
					var msgs struct{ Messages []projection.Message }
					get(t, c, "/sessions/"+id+"/messages", &msgs)
					if got := conversation(msgs.Messages); !reflect.DeepEqual(got, fx.messages) {
						t.Errorf("surface\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(fx.messages, "\n"))
					}
					checkStored(t, c, id, path)
					var before importer.Session
					get(t, c, "/sessions/"+id, &before)

					out.Reset()
					if err := importer.Import(context.Background(), c, []string{path}, &out); err != nil {
						t.Fatalf("second import: %v", err)
					}
					if again := sessionOf(t, out.String()); again != id || !strings.Contains(out.String(), " 0 events stored (0 list writes), already imported") {
						t.Errorf("second import %q, want session %s and nothing stored", out.String(), id)
					}
					var after importer.Session
					get(t, c, "/sessions/"+id, &after)
					if after.LastSeq != before.LastSeq {
						t.Errorf("second import moved lastSeq %d -> %d", before.LastSeq, after.LastSeq)
					}
				})
			}
		})
	}
}

// checkStored holds what Tack stored of the session id to the pure
// translation of the file at path: the same events, each at its line's
// time, as the projection makes them of what the file maps to, and the
// session's agent, cwd, title and plan lifetime.
func checkStored(t *testing.T, c *importer.Client, id, path string) {
	t.Helper()
	format := transcript.ClaudeCode
	if strings.Contains(path, "codex") {
		format = transcript.Codex
	}
	p := transcript.New(format, path)
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var want []projection.Event
	var st projection.State
	cfg := projection.Config{AllowParallel: format == transcript.ClaudeCode, PlanLifetime: projection.PlanSession}
	for l := range bytes.SplitSeq(raw, []byte("\n")) {
		for _, ev := range p.Line(l) {
			if ev.Session != "" {
				continue
			}
			at := projection.NewTime(ev.At)
			ne := projection.NewEvent{Type: ev.Type, Data: ev.Data}
			if !ev.At.IsZero() {
				ne.At = &at
			}
			if canon, err := st.Apply(ne, at, cfg, nil); err == nil {
				canon.At = at // zero for a line with no time: any is right
				want = append(want, canon)
			}
		}
	}
	var got []projection.Event
	for {
		page, more, err := c.Events(context.Background(), id, int64(len(got)))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, page...)
		if !more {
			break
		}
	}
	if len(got) != len(want) {
		t.Fatalf("stored %d events, the file maps to %d", len(got), len(want))
	}
	for i := range got {
		timed := !want[i].At.IsZero()
		if got[i].Type != want[i].Type || timed && !got[i].At.Equal(want[i].At.Time) || !jsonEqual(got[i].Data, want[i].Data) {
			t.Errorf("event %d stored as %s %v %s\nwant %s %v %s", i, got[i].Type, got[i].At, got[i].Data, want[i].Type, want[i].At, want[i].Data)
		}
	}
	info := p.Info()
	var s store.Session
	get(t, c, "/sessions/"+id, &s)
	if s.ExternalKey != info.Key || deref(s.Agent) != string(format) || deref(s.Cwd) != info.Cwd || s.PlanLifetime != projection.PlanSession || s.Title != info.Title {
		t.Errorf("session stored as %+v, the file says %+v", s, info)
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// jsonEqual is whether a and b are the same JSON value.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// TestImportDir imports a folder: the session first, then its subagent's
// own file; the sidechain lines and the file each make a child session of
// it, and their lines stay out of its list.
func TestImportDir(t *testing.T) {
	t.Parallel()
	c := serve(t, storetest.Postgres(t, projection.Config{}))
	dir := fixtureDir(t, "claude-code-tasks.jsonl", filepath.Join("claude-code-tasks", "subagents", "agent-cd34.jsonl"))
	var out bytes.Buffer
	if err := importer.Import(context.Background(), c, []string{dir}, &out); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	t.Log(out.String())
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], "subagent claude-code:claude-code-tasks/agent-ab12") || !strings.Contains(lines[2], "agent-cd34.jsonl") {
		t.Fatalf("report %q: want the session, its sidechain subagent, then the subagent's file", out.String())
	}
	id := sessionOf(t, lines[0])
	var kids struct{ Sessions []store.Session }
	get(t, c, "/sessions?parent="+id, &kids)
	if len(kids.Sessions) != 2 {
		t.Fatalf("children %+v, want 2", kids.Sessions)
	}
	// Each child is titled by its task: the one the parent's Task call
	// gave (its description, with the subagent's type), else its prompt.
	titles := map[string]bool{}
	for _, k := range kids.Sessions {
		titles[k.Title] = true
	}
	if !titles["Explore: Find the callers"] || !titles["Check the docs for parse()"] {
		t.Errorf("children's titles %v", titles)
	}
	var todos projection.Todos
	get(t, c, "/sessions/"+id+"/todos", &todos)
	if len(todos.Todos) != 2 || todos.Todos[0].Content != "Split parse.go" || todos.Todos[1].Content != "Run the tests" {
		t.Errorf("parent's list %+v: a subagent's items leaked in, or its own are missing", todos.Todos)
	}
	for _, child := range kids.Sessions {
		if deref(child.ParentID) != id || deref(child.Agent) != "claude-code" {
			t.Errorf("child %+v: want parent %s, agent claude-code", child, id)
		}
		var ct projection.Todos
		get(t, c, "/sessions/"+child.ID+"/todos", &ct)
		if len(ct.Todos) != 1 {
			t.Errorf("child %+v list %+v", child, ct.Todos)
		}
	}
	var empty bytes.Buffer
	if err := importer.Import(context.Background(), c, []string{t.TempDir()}, &empty); err != nil || !strings.Contains(empty.String(), "no transcripts (*.jsonl) under it") {
		t.Errorf("an empty folder: %v %q", err, empty.String())
	}
}

// TestImportCodexSubThread imports a codex thread and a sub-thread it
// spawned: the sub-thread is a child session of the thread, with its own
// plan and none of the parent's lines it was forked with.
func TestImportCodexSubThread(t *testing.T) {
	t.Parallel()
	c := serve(t, storetest.SQLite(t, projection.Config{}))
	dir := fixtureDir(t, "codex-real.jsonl", "codex-subthread.jsonl")
	var out bytes.Buffer
	if err := importer.Import(context.Background(), c, []string{dir}, &out); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("report %q: want two sessions", out.String())
	}
	parent := sessionOf(t, lines[0])
	var kids struct{ Sessions []store.Session }
	get(t, c, "/sessions?parent="+parent, &kids)
	if len(kids.Sessions) != 1 || deref(kids.Sessions[0].ParentID) != parent || kids.Sessions[0].Title != "List the services that touch Prisma" {
		t.Fatalf("children of %s: %+v", parent, kids.Sessions)
	}
	var todos projection.Todos
	get(t, c, "/sessions/"+kids.Sessions[0].ID+"/todos", &todos)
	if len(todos.Todos) != 2 || todos.Todos[1].Content != "Report the list" {
		t.Errorf("the sub-thread's list %+v", todos.Todos)
	}
	checkStored(t, c, kids.Sessions[0].ID, filepath.Join("..", "transcript", "testdata", "codex-subthread.jsonl"))
}

// fixtureDir is a folder holding the transcript fixtures names, at their
// paths under the fixtures' folder.
func fixtureDir(t *testing.T, names ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range names {
		raw, err := os.ReadFile(filepath.Join("..", "transcript", "testdata", name))
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
	return dir
}

// TestImportLongFirstLine imports a rollout whose first line is longer
// than any buffer a reader might peek with.
func TestImportLongFirstLine(t *testing.T) {
	t.Parallel()
	c := serve(t, storetest.SQLite(t, projection.Config{}))
	src, err := os.ReadFile(filepath.Join("..", "transcript", "testdata", "codex-session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, rest, _ := bytes.Cut(src, []byte("\n"))
	var m map[string]any
	if err := json.Unmarshal(first, &m); err != nil {
		t.Fatal(err)
	}
	m["payload"].(map[string]any)["instructions"] = strings.Repeat("Be brief. ", 100<<10)
	long, _ := json.Marshal(m)
	path := filepath.Join(t.TempDir(), "rollout-long.jsonl")
	if err := os.WriteFile(path, append(append(long, '\n'), rest...), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := importer.Import(context.Background(), c, []string{path}, &out); err != nil || !strings.Contains(out.String(), "events stored") {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	id := sessionOf(t, out.String())
	var s importer.Session
	get(t, c, "/sessions/"+id, &s)
	if s.LastSeq < 10 {
		t.Errorf("%d events stored", s.LastSeq)
	}
}

// sessionOf reads the session id from an import's report line.
func sessionOf(t *testing.T, report string) string {
	t.Helper()
	i := strings.Index(report, "/s/ses_")
	if i < 0 {
		t.Fatalf("no session URL in %q", report)
	}
	id, _, _ := strings.Cut(report[i+3:], " ")
	return id
}

func conversation(msgs []projection.Message) []string {
	var out []string
	for _, m := range msgs {
		text := ""
		if m.Text != nil {
			text = *m.Text
		}
		switch m.Role {
		case "tool":
			name := m.Name
			if m.IsError != nil && *m.IsError {
				name += " (error)"
			}
			out = append(out, "tool "+name+": "+text)
		default:
			var names []string
			for _, tc := range m.ToolCalls {
				names = append(names, tc.Name)
			}
			line := m.Role + ": " + text
			if len(names) > 0 {
				line = strings.TrimSpace(line+" ") + " [" + strings.Join(names, " ") + "]"
				line = strings.Replace(line, ":  [", ": [", 1)
			}
			out = append(out, line)
		}
	}
	return out
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }

// TestImportBackgroundSubagent: a subagent Claude Code runs in the
// background, its lines in a file of its own, is titled by the task its
// parent's Agent call gave (the call's result names it), as the hook that
// tells of it live titles it, not by the prompt its own file opens with.
func TestImportBackgroundSubagent(t *testing.T) {
	t.Parallel()
	c := serve(t, storetest.Postgres(t, projection.Config{}))
	dir := t.TempDir()
	parent := strings.Join([]string{
		`{"type":"user","sessionId":"bg","uuid":"u1","promptId":"p1","cwd":"/w","timestamp":"2026-01-02T10:00:00Z","message":{"role":"user","content":"Check it"}}`,
		`{"type":"assistant","sessionId":"bg","uuid":"u2","timestamp":"2026-01-02T10:00:01Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"a1","name":"Agent","input":{"description":"Check the changelog","prompt":"Read CHANGELOG.md","subagent_type":"general-purpose"}}]}}`,
		`{"type":"user","sessionId":"bg","uuid":"u3","promptId":"p1","timestamp":"2026-01-02T10:00:02Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"a1","content":"Async agent launched successfully."}]},"toolUseResult":{"isAsync":true,"status":"async_launched","agentId":"ef56"}}`,
	}, "\n") + "\n"
	child := `{"type":"user","sessionId":"bg","uuid":"c1","isSidechain":true,"agentId":"ef56","timestamp":"2026-01-02T10:00:03Z","message":{"role":"user","content":"Read CHANGELOG.md"}}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "bg.jsonl"), []byte(parent), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bg", "subagents"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bg", "subagents", "agent-ef56.jsonl"), []byte(child), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := importer.Import(context.Background(), c, []string{dir}, &out); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	id := sessionOf(t, out.String())
	var kids struct{ Sessions []store.Session }
	get(t, c, "/sessions?parent="+id, &kids)
	if len(kids.Sessions) != 1 || kids.Sessions[0].Title != "general-purpose: Check the changelog" || kids.Sessions[0].LastSeq == 0 {
		t.Fatalf("children %+v, want one titled by its task, holding its file's lines", kids.Sessions)
	}
}

// TestResume: a File written out after a Sync and resumed by another (as
// `tack hook` resumes it on its next hook) sends what the file gained, and
// Tack holds exactly what one read of the whole file stores; a file
// rewritten meanwhile is read again from the start.
func TestResume(t *testing.T) {
	t.Parallel()
	c := serve(t, storetest.SQLite(t, projection.Config{}))
	for _, name := range []string{"claude-code-real.jsonl", "claude-code-tasks.jsonl", "claude-code-edge.jsonl", "codex-real.jsonl"} {
		raw, err := os.ReadFile(filepath.Join("..", "transcript", "testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		lines := bytes.SplitAfter(raw, []byte("\n"))
		path := filepath.Join(t.TempDir(), name)
		half := bytes.Join(lines[:len(lines)/2], nil)
		if err := os.WriteFile(path, half, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := importer.Open(c, path)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(context.Background(), false); err != nil {
			t.Fatal(err)
		}
		state, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, raw, 0o644); err != nil {
			t.Fatal(err)
		}
		g, err := importer.Resume(c, path, state)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Sync(context.Background(), true); err != nil {
			t.Fatal(err)
		}
		fresh, err := importer.Open(c, path)
		if err != nil {
			t.Fatal(err)
		}
		if err := fresh.Sync(context.Background(), true); err != nil {
			t.Fatal(err)
		}
		if g.Offset() != fresh.Offset() || g.Rewrites() != 0 || fresh.Stored() != 0 {
			t.Errorf("%s: resumed to offset %d with %d rewrites, a whole read to %d storing %d more; want the same offset, no rewrite, nothing more",
				name, g.Offset(), g.Rewrites(), fresh.Offset(), fresh.Stored())
		}
		checkStored(t, c, g.SessionID(), path)
		// Rewritten under the state: read again from the start, nothing
		// stored twice.
		if err := os.WriteFile(path, append([]byte("\n"), half...), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := importer.Resume(c, path, state)
		if err != nil {
			t.Fatal(err)
		}
		if r.Offset() != 0 {
			t.Errorf("%s: a rewritten file resumed at %d, want from the start", name, r.Offset())
		}
	}
}
