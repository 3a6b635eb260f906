package api_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/transcript"
)

// Claude Code runs the tool calls of one assistant message at once: three
// TaskUpdates fire three PostToolUse hooks together, and the transcript
// brings the same calls again, in any order against them. Each list write
// is made from the list as it stands when it is appended, so none undoes
// another.
func TestParallelTaskCalls(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "ThreeUpdates", run: testParallelTaskUpdates},
		{name: "AnyInterleaving", run: testParallelTaskProperty},
		{name: "HooksThenTranscript", run: testHooksThenTranscript},
	})
}

// taskCall is one call of Claude Code's task tools as the test makes it.
type taskCall struct {
	id, tool string
	args     map[string]any
	// taskID is the id Claude Code gave a TaskCreate's task.
	taskID string
}

// postToolUse is the PostToolUse payload Claude Code sends for c: a
// TaskCreate's tool_response holds the task it made, with its id.
func (c taskCall) postToolUse(prompt string) map[string]any {
	var response any = "Updated task #" + fmt.Sprint(c.args["taskId"])
	if c.tool == "TaskCreate" {
		response = map[string]any{"task": map[string]any{"id": c.taskID, "subject": c.args["subject"]}}
	}
	return map[string]any{"prompt_id": prompt, "tool_name": c.tool, "tool_use_id": c.id, "tool_input": c.args, "tool_response": response}
}

// transcriptEvents are the events the transcript's lines of c map to, as
// `tack import` and `tack watch` send them: the call, the list write
// derived from it, and its result, keyed as the hook's are.
func (c taskCall) transcriptEvents() []map[string]any {
	write := map[string]any{"tool": c.tool, "args": c.args}
	text := "Updated task #" + fmt.Sprint(c.args["taskId"])
	if c.tool == "TaskCreate" {
		write["taskId"] = c.taskID
		text = "Task #" + c.taskID + " created successfully: " + fmt.Sprint(c.args["subject"])
	}
	keyed := func(typ string, data any, key string) map[string]any {
		e := ev(typ, data)
		e["keys"] = []string{key}
		return e
	}
	return []map[string]any{
		keyed("message/assistant", map[string]any{"text": "", "toolCalls": []any{map[string]any{"id": c.id, "name": c.tool, "args": c.args}}}, transcript.CallKey(c.id)),
		keyed("todo/write", write, transcript.WriteKey(c.id)),
		keyed("tool/result", map[string]any{"callId": c.id, "name": c.tool, "isError": false, "content": text}, transcript.ResultKey(c.id)),
	}
}

// sendAll delivers calls at once, each by the hook, by the transcript or
// by both (route picks), and fails on any answer but success.
func (b *bundle) sendAll(sid, sessID, prompt string, calls []taskCall, route func(taskCall) int) {
	b.t.Helper()
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		bad []string
	)
	send := func(path string, body any, want int) {
		defer wg.Done()
		if r := b.do("POST", path, body); r.Status != want {
			mu.Lock()
			bad = append(bad, fmt.Sprintf("POST %s: %d %s", path, r.Status, r.Body))
			mu.Unlock()
		}
	}
	for _, c := range calls {
		r := route(c)
		if r != 1 {
			body := c.postToolUse(prompt)
			body["session_id"], body["hook_event_name"] = sid, "PostToolUse"
			wg.Add(1)
			go send("/hooks/claude-code", body, http.StatusOK)
		}
		if r != 0 {
			wg.Add(1)
			go send("/sessions/"+sessID+"/events", map[string]any{"events": c.transcriptEvents()}, http.StatusCreated)
		}
	}
	wg.Wait()
	for _, e := range bad {
		b.t.Error(e)
	}
}

func createCall(n int, subject string) taskCall {
	id := strconv.Itoa(n)
	return taskCall{id: "create-" + id, tool: "TaskCreate", taskID: id,
		args: map[string]any{"subject": subject, "description": "about " + subject}}
}

func updateCall(callID string, fields map[string]any) taskCall {
	return taskCall{id: callID, tool: "TaskUpdate", args: fields}
}

// The bug as it was: three PostToolUse hooks completing tasks 1 to 3 at
// once, each list made from the list read before the others' writes, left
// some task pending again. Several sessions make the race likely.
func testParallelTaskUpdates(t *testing.T, b *bundle) {
	for round := range 6 {
		sid := fmt.Sprintf("three-%d", round)
		b.hook("claude-code", sid, "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Do three things"})
		for n := 1; n <= 3; n++ {
			c := createCall(n, fmt.Sprintf("Step %d", n))
			b.hook("claude-code", sid, "PostToolUse", c.postToolUse("p1"))
		}
		sess := b.keyed("claude-code:" + sid)
		var calls []taskCall
		for n := 1; n <= 3; n++ {
			calls = append(calls, updateCall(fmt.Sprintf("done-%d", n), map[string]any{"taskId": strconv.Itoa(n), "status": "completed"}))
		}
		b.sendAll(sid, sess.ID, "p1", calls, func(taskCall) int { return 0 })
		todos := b.todos(sess.ID)
		if len(todos.Todos) != 3 || todos.Counts.Completed != 3 {
			t.Fatalf("round %d: after three TaskUpdates completing tasks 1-3 at once: %+v", round, todos.Todos)
		}
	}
}

// ccTask is a task as Claude Code's own task file keeps it.
type ccTask struct {
	subject, description, activeForm, status, owner string
}

// testParallelTaskProperty: tasks made, then updated and more made, each
// round's calls all at once, by hook, transcript or both in a random mix.
// The updates touch different fields or tasks, so Claude Code's task files
// end the same in any order; Tack's list must end as they do, in id order,
// with one list write per call.
func testParallelTaskProperty(t *testing.T, b *bundle) {
	for round := range 3 {
		rng := rand.New(rand.NewPCG(uint64(round), 27))
		route := func(taskCall) int { return rng.IntN(3) }
		sid := fmt.Sprintf("property-%d", round)
		b.hook("claude-code", sid, "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Plan and do"})
		sess := b.keyed("claude-code:" + sid)
		model := map[string]*ccTask{}
		create := func(n int) taskCall {
			c := createCall(n, fmt.Sprintf("Task %d of round %d", n, round))
			model[c.taskID] = &ccTask{subject: c.args["subject"].(string), description: c.args["description"].(string), status: "pending"}
			return c
		}
		m := 3 + rng.IntN(3)
		var calls []taskCall
		for n := 1; n <= m; n++ {
			calls = append(calls, create(n))
		}
		b.sendAll(sid, sess.ID, "p1", calls, route)

		calls = nil
		for n := 1; n <= m; n++ {
			id := strconv.Itoa(n)
			status := []string{"in_progress", "completed"}[rng.IntN(2)]
			owner := fmt.Sprintf("agent-%d", rng.IntN(3))
			calls = append(calls,
				updateCall("status-"+id, map[string]any{"taskId": id, "status": status}),
				updateCall("owner-"+id, map[string]any{"taskId": id, "owner": owner}),
				updateCall("form-"+id, map[string]any{"taskId": id, "activeForm": "Doing " + id}))
			model[id].status, model[id].owner, model[id].activeForm = status, owner, "Doing "+id
		}
		more := 1 + rng.IntN(3)
		for n := m + 1; n <= m+more; n++ {
			calls = append(calls, create(n))
		}
		rng.Shuffle(len(calls), func(i, j int) { calls[i], calls[j] = calls[j], calls[i] })
		b.sendAll(sid, sess.ID, "p1", calls, route)

		todos := b.todos(sess.ID)
		var got []string
		for _, it := range todos.Todos {
			got = append(got, fmt.Sprintf("#%s %s|%s|%s|%s|%s", it.TaskID, it.Content, it.Description, it.ActiveForm, it.Status, it.Owner))
		}
		var want []string
		for n := 1; n <= m+more; n++ {
			id := strconv.Itoa(n)
			tk := model[id]
			want = append(want, fmt.Sprintf("#%s %s|%s|%s|%s|%s", id, tk.subject, tk.description, tk.activeForm, tk.status, tk.owner))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: list\n%q\nwant Claude Code's\n%q", round, got, want)
		}
		writes := 0
		for _, e := range b.events(sess.ID) {
			if e.Type == "todo/write" {
				writes++
			}
		}
		if calls := m + len(calls); writes != calls {
			t.Errorf("round %d: %d list writes for %d calls that each changed the list", round, writes, calls)
		}
	}
}

// A transcript whose calls the hooks brought in part: both creates and the
// second of two parallel updates by hook, then the whole file by import.
// The transcript's write of the first update is made from Tack's list,
// which holds the second's change, not from the importer's copy, which
// does not: both tasks end completed.
func testHooksThenTranscript(t *testing.T, b *bundle) {
	line := func(typ, uuid, at, message string, extra ...string) string {
		return `{"type":"` + typ + `","sessionId":"ht","uuid":"` + uuid + `","promptId":"p1","cwd":"/work/app","timestamp":"2026-01-02T10:00:` + at + `Z","message":` + message + strings.Join(extra, "") + `}`
	}
	use := func(id, name, input string) string {
		return `{"role":"assistant","content":[{"type":"tool_use","id":"` + id + `","name":"` + name + `","input":` + input + `}]}`
	}
	result := func(id, text string) string {
		return `{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + id + `","content":"` + text + `"}]}`
	}
	file := strings.Join([]string{
		line("user", "u1", "00", `{"role":"user","content":"Two things"}`),
		line("assistant", "u2", "01", use("c1", "TaskCreate", `{"subject":"A","description":"a"}`)),
		line("user", "u3", "02", result("c1", "Task #1 created successfully: A"), `,"toolUseResult":{"task":{"id":"1","subject":"A"}}`),
		line("assistant", "u4", "03", use("c2", "TaskCreate", `{"subject":"B","description":"b"}`)),
		line("user", "u5", "04", result("c2", "Task #2 created successfully: B"), `,"toolUseResult":{"task":{"id":"2","subject":"B"}}`),
		line("assistant", "u6", "05", use("d1", "TaskUpdate", `{"taskId":"1","status":"completed"}`)),
		line("assistant", "u7", "05", use("d2", "TaskUpdate", `{"taskId":"2","status":"completed"}`)),
		line("user", "u8", "06", result("d1", "Updated task #1 status")),
		line("user", "u9", "06", result("d2", "Updated task #2 status")),
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "ht.jsonl")
	if err := os.WriteFile(path, []byte(file), 0o644); err != nil {
		t.Fatal(err)
	}
	b.hook("claude-code", "ht", "UserPromptSubmit", map[string]any{"prompt_id": "p1", "prompt": "Two things"})
	for _, c := range []taskCall{createCall(1, "A"), createCall(2, "B")} {
		c.id, c.args["description"] = "c"+c.taskID, strings.ToLower(c.args["subject"].(string))
		b.hook("claude-code", "ht", "PostToolUse", c.postToolUse("p1"))
	}
	b.hook("claude-code", "ht", "PostToolUse", updateCall("d2", map[string]any{"taskId": "2", "status": "completed"}).postToolUse("p1"))
	var out bytes.Buffer
	if err := importer.Import(context.Background(), &importer.Client{Server: b.url, HTTP: b.client}, []string{path}, &out); err != nil {
		t.Fatalf("import: %v\n%s", err, out.String())
	}
	s := b.keyed("claude-code:ht")
	todos := b.todos(s.ID)
	var got []string
	for _, it := range todos.Todos {
		got = append(got, "#"+it.TaskID+" "+it.Content+" "+it.Status)
	}
	if want := []string{"#1 A completed", "#2 B completed"}; !slices.Equal(got, want) {
		t.Fatalf("list %q, want %q (%s)", got, want, out.String())
	}
	writes := 0
	for _, e := range b.events(s.ID) {
		if e.Type == "todo/write" {
			writes++
		}
	}
	if writes != 4 {
		t.Errorf("%d list writes, want one per call (4)", writes)
	}
}
