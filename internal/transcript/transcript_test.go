package transcript_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/transcript"
)

// short names an event type in the tables below; a harness line is "H".
var short = map[string]string{
	"turn/start": "S", "turn/end": "E", "message/user": "U", "message/assistant": "A",
	"tool/result": "R", "todo/write": "W",
}

func letter(ev transcript.Event) string {
	if ev.Type == "message/user" && strings.Contains(string(ev.Data), `"source":"harness"`) {
		return "H"
	}
	return short[ev.Type]
}

// parsed is a fixture read through one Parser.
type parsed struct {
	p      *transcript.Parser
	lines  []string
	groups []string // per line that maps to some: its own session's letters
	events []transcript.Event
	// at[i] is line i's timestamp, for the events it mapped to.
	at []time.Time
}

func parse(t *testing.T, path string, f transcript.Format) parsed {
	t.Helper()
	r := parsed{p: transcript.New(f, path), lines: read(t, path)}
	for _, l := range r.lines {
		var g strings.Builder
		var stamp struct{ Timestamp string }
		_ = json.Unmarshal([]byte(l), &stamp)
		at, _ := time.Parse(time.RFC3339Nano, stamp.Timestamp)
		for _, ev := range r.p.Line([]byte(l)) {
			r.events = append(r.events, ev)
			r.at = append(r.at, at)
			if ev.Session == "" {
				g.WriteString(letter(ev))
			}
		}
		if g.Len() > 0 {
			r.groups = append(r.groups, g.String())
		}
	}
	return r
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file   string
		format transcript.Format
		key    string
		title  string
		cwd    string
		events string // one letter per event, a space per line that maps to some
		// kinds are the harness lines' kinds, in order.
		kinds []string
		// ends are the turns' end reasons, in order.
		ends []string
	}{
		{"claude-code-real.jsonl", transcript.ClaudeCode, "claude-code:claude-code-real", "Hey", "/Users/jnarowski/Dev/sourceborn/src/agent-workflows-monorepo-v2",
			"SU A A R A WR A", nil, nil},
		{"codex-real.jsonl", transcript.Codex, "codex:019982b8-3422-79e0-8b3b-05abaf4f3c3e", "Evaluate @packages/services and create a new package called @packages/services-…", "/Users/jnarowski/Dev/spectora/src/spectora-labs-monorepo-v2",
			"H SU A R A WR", []string{"context"}, nil},
		{"claude-code-session.jsonl", transcript.ClaudeCode, "claude-code:claude-code-session",
			"please move the + button to it's own button to the right of the search in @apps…", "/Users/jnarowski/Dev/sourceborn/src/agent-workflows-monorepo-v2",
			// The approved ExitPlanMode's numbered steps are a list write
			// (W, beside its result R), which the agent's TodoWrite replaces.
			"H H H SU A A A R R HE SU A R A A R A A R HE SU A A WR A WR A R A WR A ESU A R A",
			[]string{"context", "command", "command", "interrupted", "interrupted"}, []string{"interrupted", "interrupted", "completed"}},
		{"codex-session.jsonl", transcript.Codex, "codex:01997e76-d124-7592-9cac-2ec05abbca08",
			"Updating a team to assign a lea…", "/Users/jnarowski/Dev/spectora/src/spectora-labs-monorepo-v2",
			"H SU A R A WR A WR E SA R ESU A ESU A", []string{"context"}, []string{"interrupted", "completed", "completed"}},
		{"claude-code-edge.jsonl", transcript.ClaudeCode, "claude-code:claude-code-edge", "Fix the flaky parser test", "",
			"SU A WR A R A WR A WR ESU A WR WR A WR WR A", nil, []string{"completed"}},
		{"codex-edge.jsonl", transcript.Codex, "codex:edge-codex-0001", "Add a --json flag", "/repo",
			"H SU A WR A R A WR A E H H SU A E", []string{"context", "compact-summary", "command"}, []string{"completed", "interrupted"}},
		{"claude-code-tasks.jsonl", transcript.ClaudeCode, "claude-code:claude-code-tasks", "Split the parser into two files", "/home/dev/tack",
			"H H H HSU A WR A WR A WR A WR A R A R A R HE H SA WR WR AE H H SU A WR A R AE",
			[]string{"context", "command", "command", "ide-context", "interrupted", "task-notification", "compact-summary", "context"},
			[]string{"interrupted", "completed", "completed"}},
		{"codex-subthread.jsonl", transcript.Codex, "codex:019982bf-9f0a-7c11-8a2e-5d1c0ffee001", "List the services that touch Prisma", "/Users/jnarowski/Dev/spectora/src/spectora-labs-monorepo-v2",
			"SU A WR A E", nil, []string{"completed"}},
		{"claude-code-tasks/subagents/agent-cd34.jsonl", transcript.ClaudeCode, "claude-code:claude-code-tasks/agent-cd34", "Check the docs for parse()", "/home/dev/tack",
			"SU A WR AE", nil, []string{"completed"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", tc.file)
			r := parse(t, path, tc.format)
			if got := transcript.Detect([]byte(r.lines[0])); got != tc.format {
				t.Fatalf("Detect %q, want %q", got, tc.format)
			}
			if got := strings.Join(r.groups, " "); got != tc.events {
				t.Errorf("events %q\nwant   %q", got, tc.events)
			}
			info := r.p.Info()
			if info.Key != tc.key || info.Title != tc.title || info.Cwd != tc.cwd || info.Agent != string(tc.format) {
				t.Errorf("info %+v, want key %q title %q cwd %q", info, tc.key, tc.title, tc.cwd)
			}
			var kinds, ends []string
			for i, ev := range r.events {
				// The agent's own time on every event: its line's.
				if !ev.At.Equal(r.at[i]) {
					t.Errorf("event %d (%s) at %v, its line says %v", i, ev.Type, ev.At, r.at[i])
				}
				if ev.Session != "" {
					continue
				}
				var d struct{ Source, Kind, Reason, Text string }
				_ = json.Unmarshal(ev.Data, &d)
				switch {
				case ev.Type == "message/user" && d.Source == "harness":
					kinds = append(kinds, d.Kind)
				case ev.Type == "message/user" && d.Kind != "":
					t.Errorf("a person's prompt with a kind: %s", ev.Data)
				case ev.Type == "turn/end":
					ends = append(ends, d.Reason)
				}
			}
			if !reflect.DeepEqual(kinds, tc.kinds) {
				t.Errorf("harness kinds %q, want %q", kinds, tc.kinds)
			}
			if !reflect.DeepEqual(ends, tc.ends) {
				t.Errorf("turn ends %q, want %q", ends, tc.ends)
			}
			// A second read of the same lines gives the same events, byte
			// for byte: what import and watch count positions by.
			again := parse(t, path, tc.format)
			if !reflect.DeepEqual(r.events, again.events) {
				t.Errorf("a second read differs")
			}
			if !reflect.DeepEqual(r.p.Skipped(), again.p.Skipped()) {
				t.Errorf("skipped %v, then %v", r.p.Skipped(), again.p.Skipped())
			}
		})
	}
}

// TestCodexSubThread reads a codex sub-thread's rollout as a child of the
// thread that spawned it, the parent's lines it was forked with left out.
func TestCodexSubThread(t *testing.T) {
	t.Parallel()
	r := parse(t, filepath.Join("testdata", "codex-subthread.jsonl"), transcript.Codex)
	if got := r.p.Info().Parent; got != "codex:019982b8-3422-79e0-8b3b-05abaf4f3c3e" {
		t.Errorf("parent %q", got)
	}
	if got := lastList(t, r.events, ""); !reflect.DeepEqual(got, []projection.TodoInput{{Content: "Grep for prisma imports", Status: "completed"}, {Content: "Report the list", Status: "in_progress"}}) {
		t.Errorf("list %+v: the parent's plan leaked in, or the thread's own is missing", got)
	}
	if n := r.p.Skipped()["lines of the parent thread a sub-thread was forked with"]; n != 3 {
		t.Errorf("skipped %v, want the 3 inherited lines", r.p.Skipped())
	}
	// A thread of its own has no parent.
	if got := parse(t, filepath.Join("testdata", "codex-real.jsonl"), transcript.Codex).p.Info().Parent; got != "" {
		t.Errorf("codex-real's parent %q", got)
	}
}

// lastList is the list the last list write of session in events leaves.
func lastList(t *testing.T, events []transcript.Event, session string) []projection.TodoInput {
	t.Helper()
	all := lists(t, events, session)
	if len(all) == 0 {
		return nil
	}
	return all[len(all)-1]
}

// lists are the lists the list writes of session in events leave, applied
// in order to a state as Tack applies them (a write derived from a call
// made from the list before it).
func lists(t *testing.T, events []transcript.Event, session string) [][]projection.TodoInput {
	t.Helper()
	var (
		st  projection.State
		out [][]projection.TodoInput
	)
	cfg := projection.Config{AllowParallel: true, PlanLifetime: transcript.PlanLifetime}
	for _, ev := range events {
		if ev.Session != session {
			continue
		}
		stored, err := st.Apply(projection.NewEvent{Type: ev.Type, Data: ev.Data}, projection.NewTime(time.Now()), cfg, nil)
		if err != nil || stored.Type != "todo/write" {
			continue // refused by Tack too, or no list write
		}
		var d struct{ Todos []projection.TodoInput }
		if err := json.Unmarshal(stored.Data, &d); err != nil {
			t.Fatal(err)
		}
		out = append(out, d.Todos)
	}
	return out
}

// TestTaskTools reads Claude Code's task tools as list writes that keep
// the agent's ids, dependencies, owners and spinner texts, and keeps a
// subagent's sidechain lines in a child session of their own.
// task is an item of a task list as the translation writes it: blockedBy
// names task ids, written as the Tack ids of those tasks' items.
func task(content, status, activeForm, taskID, owner, description string, blockedBy ...string) projection.TodoInput {
	it := projection.TodoInput{Content: content, Status: status}
	it.ActiveForm, it.TaskID, it.Owner, it.Description = activeForm, taskID, owner, description
	for _, id := range blockedBy {
		it.BlockedBy = append(it.BlockedBy, projection.TaskItemID(id))
	}
	return it
}

func TestTaskTools(t *testing.T) {
	t.Parallel()
	r := parse(t, filepath.Join("testdata", "claude-code-tasks.jsonl"), transcript.ClaudeCode)
	const split, tests = "Move the line reader out", "go test ./..."
	want := [][]projection.TodoInput{
		{task("Split parse.go", "pending", "Splitting parse.go", "1", "", split)},
		{task("Split parse.go", "pending", "Splitting parse.go", "1", "", split),
			task("Run the tests", "pending", "Running the tests", "2", "", tests)},
		{task("Split parse.go", "pending", "Splitting parse.go", "1", "", split),
			task("Run the tests", "pending", "Running the tests", "2", "", tests, "1")},
		{task("Split parse.go", "in_progress", "Splitting parse.go", "1", "main", split),
			task("Run the tests", "pending", "Running the tests", "2", "", tests, "1")},
		{task("Split parse.go", "completed", "Splitting parse.go", "1", "main", split),
			task("Run the tests", "pending", "Running the tests", "2", "", tests, "1")},
		{task("Split parse.go", "completed", "Splitting parse.go", "1", "main", split),
			task("Run the tests", "in_progress", "Running the tests", "2", "", tests, "1")},
		{task("Split parse.go", "completed", "Splitting parse.go", "1", "main", split),
			task("Run the tests", "completed", "Finishing the tests", "2", "", tests, "1")},
	}
	if got := lists(t, r.events, ""); !reflect.DeepEqual(got, want) {
		t.Errorf("lists\n%+v\nwant\n%+v", got, want)
	}
	// The subagent's lines: a child session with its own list, none of it
	// in the parent's, titled by the task the parent's Task call gave it.
	child := "claude-code:claude-code-tasks/agent-ab12"
	c := r.p.Child(child)
	if c == nil {
		t.Fatalf("no child %s", child)
	}
	if info := c.Info(); info.Parent != "claude-code:claude-code-tasks" || info.Title != "Explore: Find the callers" || info.Cwd != "/home/dev/tack" {
		t.Errorf("child %+v", info)
	}
	if got := lastList(t, r.events, child); !reflect.DeepEqual(got, []projection.TodoInput{task("grep for parse(", "pending", "", "1", "", "d")}) {
		t.Errorf("child's list %+v", got)
	}
	var letters []string
	for _, ev := range r.events {
		if ev.Session == child {
			letters = append(letters, letter(ev))
		}
	}
	if got := strings.Join(letters, ""); got != "SUAWRAE" {
		t.Errorf("child's events %q", got)
	}
	// The subagent's own file: a child of the same parent, its TodoWrite
	// keeping activeForm.
	sub := parse(t, filepath.Join("testdata", "claude-code-tasks", "subagents", "agent-cd34.jsonl"), transcript.ClaudeCode)
	if got := sub.p.Info().Parent; got != "claude-code:claude-code-tasks" {
		t.Errorf("subagent file's parent %q", got)
	}
	if got := lastList(t, sub.events, ""); !reflect.DeepEqual(got, []projection.TodoInput{{Content: "read docs/agents.md", Status: "in_progress", AgentFields: projection.AgentFields{ActiveForm: "Reading docs/agents.md"}}}) {
		t.Errorf("subagent file's list %+v", got)
	}
}

// TestOddLines: what a hostile or odd line is read as, one line at a time.
func TestOddLines(t *testing.T) {
	t.Parallel()
	prompt := `{"type":"user","timestamp":"2026-01-12T09:00:00Z","message":{"role":"user","content":"go"}}`
	for _, tc := range []struct {
		name, line string
		// args is the one tool call's arguments as sent.
		args string
	}{
		{"invalid UTF-8 in arguments", "{\"type\":\"assistant\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"tool_use\",\"id\":\"t\",\"name\":\"Bash\",\"input\":{\"command\":\"ls \xff\"}}]}}", `{"command":"ls ` + "\uFFFD" + `"}`},
		{"a lone surrogate", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"a\ud800b"}}]}}`, `{"command":"a` + "\uFFFD" + `b"}`},
		{"a key twice", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"a","command":"b"}}]}}`, `{"command":"b"}`},
		{"a NUL", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":{"command":"a\u0000b"}}]}}`, `{"command":"ab"}`},
		{"not an object", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"Bash","input":["ls"]}]}}`, `{"input":["ls"]}`},
		{"codex arguments cut short", `{"timestamp":"2025-10-01T10:00:00Z","type":"response_item","payload":{"type":"function_call","name":"shell","arguments":"{\"command\":[\"ls","call_id":"c"}}`, `{"input":"{\"command\":[\"ls"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := transcript.Detect([]byte(tc.line))
			p := transcript.New(f, "/x/s.jsonl")
			if f == transcript.ClaudeCode {
				p.Line([]byte(prompt))
			}
			evs := p.Line([]byte(tc.line))
			var msg *transcript.Event
			for i := range evs {
				if evs[i].Type == "message/assistant" {
					msg = &evs[i]
				}
			}
			if msg == nil {
				t.Fatalf("the message was dropped: %+v", evs)
			}
			var d struct {
				ToolCalls []struct{ Args json.RawMessage }
			}
			if err := json.Unmarshal(msg.Data, &d); err != nil || len(d.ToolCalls) != 1 {
				t.Fatalf("calls %s: %v", msg.Data, err)
			}
			if got := string(d.ToolCalls[0].Args); got != tc.args {
				t.Errorf("args %s, want %s", got, tc.args)
			}
		})
	}
}

// TestDetectLongFirstLine: a format is told from a first line of any size,
// such as a codex session_meta carrying long instructions.
func TestDetectLongFirstLine(t *testing.T) {
	t.Parallel()
	line := LongFirstLine(t)
	if len(line) <= 64<<10 {
		t.Fatalf("line of %d bytes", len(line))
	}
	if got := transcript.Detect(line); got != transcript.Codex {
		t.Errorf("Detect %q", got)
	}
}

// LongFirstLine is codex-session.jsonl's session_meta with 80 KiB of
// instructions, as codex writes a long AGENTS.md into it.
func LongFirstLine(t *testing.T) []byte {
	lines := read(t, filepath.Join("testdata", "codex-session.jsonl"))
	var m map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	m["payload"].(map[string]any)["instructions"] = strings.Repeat("Be brief. ", 8<<10)
	b, _ := json.Marshal(m)
	return b
}

func read(t *testing.T, path string) []string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// TestParserResumes: a parser written out mid-file and read back maps the
// rest of the file exactly as the parser that read it all, for every
// fixture and every place to stop.
func TestParserResumes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		f    transcript.Format
	}{
		{"claude-code-real.jsonl", transcript.ClaudeCode}, {"claude-code-tasks.jsonl", transcript.ClaudeCode},
		{"claude-code-edge.jsonl", transcript.ClaudeCode}, {"codex-real.jsonl", transcript.Codex},
		{"codex-subthread.jsonl", transcript.Codex}, {"codex-edge.jsonl", transcript.Codex},
	} {
		path := filepath.Join("testdata", tc.file)
		lines := read(t, path)
		whole := transcript.New(tc.f, path)
		var want [][]transcript.Event
		for _, l := range lines {
			want = append(want, whole.Line([]byte(l)))
		}
		for stop := range lines {
			p := transcript.New(tc.f, path)
			for _, l := range lines[:stop] {
				p.Line([]byte(l))
			}
			raw, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			var q transcript.Parser
			if err := json.Unmarshal(raw, &q); err != nil {
				t.Fatal(err)
			}
			for i, l := range lines[stop:] {
				if got := q.Line([]byte(l)); !reflect.DeepEqual(got, want[stop+i]) {
					t.Fatalf("%s resumed at line %d: line %d maps to\n%+v\nwant\n%+v", tc.file, stop+1, stop+i+1, got, want[stop+i])
				}
			}
			if q.Info() != whole.Info() || q.SkippedText() != whole.SkippedText() {
				t.Errorf("%s resumed at line %d: info %+v, skipped %q; want %+v, %q", tc.file, stop+1, q.Info(), q.SkippedText(), whole.Info(), whole.SkippedText())
			}
		}
	}
}

// TestTackToolListWrite: a call of Tack's own todo_write through its MCP
// server (a model with no list tool of its own) is a list write in the
// transcript too, keyed as the MCP write Tack stored live, so an import
// reads the plan the live session has; a rejected call writes nothing.
func TestTackToolListWrite(t *testing.T) {
	t.Parallel()
	p := transcript.New(transcript.ClaudeCode, "/x/s.jsonl")
	lines := []string{
		`{"type":"user","sessionId":"s","uuid":"u1","promptId":"p1","message":{"role":"user","content":"Go"}}`,
		`{"type":"assistant","sessionId":"s","uuid":"u2","message":{"role":"assistant","content":[{"type":"tool_use","id":"m1","name":"mcp__tack__todo_write","input":{"todos":[{"content":"Plan","status":"in_progress"}],"baseVersion":0}}]}}`,
		`{"type":"user","sessionId":"s","uuid":"u3","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"m1","content":"Updated todo list: 0 pending, 1 in progress, 0 completed."}]}}`,
		`{"type":"assistant","sessionId":"s","uuid":"u4","message":{"role":"assistant","content":[{"type":"tool_use","id":"m2","name":"mcp__tack__todo_write","input":{"todos":[]}}]}}`,
		`{"type":"user","sessionId":"s","uuid":"u5","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"m2","is_error":true,"content":"Error: the todo list was changed by ana"}]}}`,
	}
	var writes []string
	for _, l := range lines {
		for _, ev := range p.Line([]byte(l)) {
			if ev.Type == "todo/write" {
				writes = append(writes, strings.Join(ev.Keys, ",")+" "+string(ev.Data))
			}
		}
	}
	if len(writes) != 1 || !strings.HasPrefix(writes[0], "write:m1,") || !strings.Contains(writes[0], `"Plan"`) || strings.Contains(writes[0], "baseVersion") {
		t.Errorf("list writes %q, want one, of m1's list", writes)
	}
}

// TestMessageLines: Claude Code writes each block of the model's message
// as a line of its own, all with the message's id; each line's event
// carries it as messageId, so that they count as one step of the model.
// The line keys are those of the same lines without the id, as a Tack that
// did not carry it made them: a transcript read again matches them.
func TestMessageLines(t *testing.T) {
	t.Parallel()
	lines := func(id string) []string {
		msg := ""
		if id != "" {
			msg = `"id":"` + id + `",`
		}
		return []string{
			`{"type":"user","sessionId":"s","uuid":"u1","promptId":"p1","message":{"role":"user","content":"Go"}}`,
			`{"type":"assistant","sessionId":"s","uuid":"u2","message":{` + msg + `"role":"assistant","content":[{"type":"text","text":"Two things."}]}}`,
			`{"type":"assistant","sessionId":"s","uuid":"u3","message":{` + msg + `"role":"assistant","content":[{"type":"tool_use","id":"b1","name":"Bash","input":{"command":"ls"}}]}}`,
		}
	}
	type got struct{ ids, keys []string }
	read := func(id string) got {
		p := transcript.New(transcript.ClaudeCode, "/x/s.jsonl")
		var g got
		for _, l := range lines(id) {
			for _, ev := range p.Line([]byte(l)) {
				if ev.Type != "message/assistant" {
					continue
				}
				var d struct {
					MessageID *string `json:"messageId"`
				}
				if err := json.Unmarshal(ev.Data, &d); err != nil {
					t.Fatal(err)
				}
				g.ids = append(g.ids, fmt.Sprint(d.MessageID != nil && *d.MessageID == id))
				g.keys = append(g.keys, ev.Keys[len(ev.Keys)-1])
			}
		}
		return g
	}
	with, without := read("msg_01"), read("")
	if want := []string{"true", "true"}; !reflect.DeepEqual(with.ids, want) {
		t.Errorf("the message's events carry its id: %v, want %v", with.ids, want)
	}
	if !reflect.DeepEqual(with.keys, without.keys) || len(with.keys) != 2 || !strings.HasPrefix(with.keys[0], "line:") {
		t.Errorf("line keys with the message's id %q, without %q: want the same", with.keys, without.keys)
	}
}

// TestCodexResponses: codex writes each item of the model's response (its
// reasoning, its text, each call) as a line of its own, with no id they
// share; the reader numbers the responses, a call's output or a prompt
// ending one, so that a response's events are one step.
func TestCodexResponses(t *testing.T) {
	t.Parallel()
	item := func(payload string) string {
		return `{"timestamp":"2026-01-12T09:00:00Z","type":"response_item","payload":` + payload + `}`
	}
	lines := []string{
		`{"timestamp":"2026-01-12T09:00:00Z","type":"session_meta","payload":{"id":"01997e76-d124-7592-9cac-2ec05abbca08","cwd":"/w"}}`,
		item(`{"type":"message","role":"user","content":[{"type":"input_text","text":"Go"}]}`),
		`{"timestamp":"2026-01-12T09:00:00Z","type":"event_msg","payload":{"type":"agent_reasoning","text":"thinking"}}`,
		item(`{"type":"reasoning","summary":[]}`),
		item(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Two calls."}]}`),
		item(`{"type":"function_call","name":"shell","arguments":"{}","call_id":"c1"}`),
		`{"timestamp":"2026-01-12T09:00:00Z","type":"event_msg","payload":{"type":"token_count"}}`,
		item(`{"type":"function_call","name":"update_plan","arguments":"{\"plan\":[]}","call_id":"c2"}`),
		item(`{"type":"function_call_output","call_id":"c1","output":"ok"}`),
		item(`{"type":"function_call_output","call_id":"c2","output":"Plan updated"}`),
		item(`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Done."}]}`),
	}
	p := transcript.New(transcript.Codex, "/x/rollout.jsonl")
	var ids []string
	for _, l := range lines {
		for _, ev := range p.Line([]byte(l)) {
			if ev.Type != "message/assistant" {
				continue
			}
			var d struct {
				MessageID string `json:"messageId"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				t.Fatal(err)
			}
			ids = append(ids, d.MessageID)
		}
	}
	if got, want := strings.Join(ids, " "), "response-1 response-1 response-1 response-2"; got != want {
		t.Errorf("the assistant events' messageIds %q, want %q", got, want)
	}
}
