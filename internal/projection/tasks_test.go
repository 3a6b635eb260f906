package projection_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
)

// runTask parses args for tool and runs it on s, writing the list it makes
// as the task routes do; it returns the answer text.
func runTask(t *testing.T, s *projection.State, tool, args string) projection.TaskResult {
	t.Helper()
	a, err := projection.ParseTaskArgs(tool, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: %v", tool, args, err)
	}
	res := projection.RunTask(a, s.Items, s.TaskHigh)
	if res.Changed {
		if _, err := s.Apply(projection.TaskWrite(res.Todos), at(int(s.LastSeq)+1), projection.Config{AllowParallel: true}, nil); err != nil {
			t.Fatalf("%s %s: the list it made is refused: %v", tool, args, err)
		}
	}
	return res
}

// The texts are Claude Code's own (its task tools' tool_result contents),
// as its transcripts show them: "Task #1 created successfully: …",
// "Updated task #14 activeForm, status", "Updated task #2 blockedBy",
// "#1 [completed] …", "Task not found".
func TestTaskTools(t *testing.T) {
	s := openState(t)
	steps := []struct{ tool, args, text string }{
		{"TaskList", `{}`, "No tasks found"},
		{"TaskCreate", `{"subject":"Write the parser","description":"Bytes in, events out.","activeForm":"Writing the parser"}`, "Task #1 created successfully: Write the parser"},
		{"TaskCreate", `{"subject":"Test it","description":"Table tests."}`, "Task #2 created successfully: Test it"},
		{"TaskCreate", `{"subject":"  Ship it ","description":"","metadata":{"k":1}}`, "Task #3 created successfully: Ship it"},
		{"TaskUpdate", `{"taskId":"2","addBlockedBy":["1"]}`, "Updated task #2 blockedBy"},
		{"TaskUpdate", `{"taskId":"1","addBlocks":["3"]}`, "Updated task #1 blocks"},
		{"TaskUpdate", `{"taskId":"1","addBlocks":["3"]}`, "Updated task #1 "},
		{"TaskUpdate", `{"taskId":"1","status":"in_progress","activeForm":"Parsing"}`, "Updated task #1 activeForm, status"},
		{"TaskUpdate", `{"taskId":"2","status":"in_progress","owner":"tester"}`, "Updated task #2 owner, status"},
		{"TaskList", `{}`, "#1 [in_progress] Write the parser\n#2 [in_progress] Test it (tester) [blocked by #1]\n#3 [pending] Ship it [blocked by #1]"},
		{"TaskGet", `{"taskId":"1"}`, "Task #1: Write the parser\nStatus: in_progress\nDescription: Bytes in, events out.\nBlocks: #2, #3"},
		{"TaskUpdate", `{"taskId":"1","status":"completed","subject":"Write the transcript parser"}`, "Updated task #1 subject, status"},
		{"TaskList", `{}`, "#1 [completed] Write the transcript parser\n#2 [in_progress] Test it (tester)\n#3 [pending] Ship it"},
		{"TaskGet", `{"taskId":"2"}`, "Task #2: Test it\nStatus: in_progress\nDescription: Table tests.\nBlocked by: #1"},
		{"TaskUpdate", `{"taskId":"3","metadata":{"k":null}}`, "Updated task #3 metadata"},
		{"TaskUpdate", `{"taskId":"1","status":"deleted","subject":"ignored"}`, "Updated task #1 deleted"},
		{"TaskGet", `{"taskId":"1"}`, projection.TaskNotFound},
		{"TaskUpdate", `{"taskId":"9","status":"completed"}`, projection.TaskNotFound},
		{"TaskCreate", `{"subject":"Document it","description":"docs/agents.md"}`, "Task #4 created successfully: Document it"},
		{"TaskList", `{}`, "#2 [in_progress] Test it (tester)\n#3 [pending] Ship it\n#4 [pending] Document it"},
	}
	for i, st := range steps {
		res := runTask(t, &s, st.tool, st.args)
		if res.Text != st.text {
			t.Fatalf("step %d, %s %s:\n got %q\nwant %q", i, st.tool, st.args, res.Text, st.text)
		}
		if res.NotFound != (st.text == projection.TaskNotFound) {
			t.Fatalf("step %d: NotFound %v", i, res.NotFound)
		}
	}
	// The items keep the agent's ids and fields; blockedBy names items by
	// Tack id, and deleting #1 took it out of every blockedBy.
	byTask := map[string]projection.Item{}
	for _, it := range s.Items {
		byTask[it.TaskID] = it
	}
	two := byTask["2"]
	if two.ID != projection.TaskItemID("2") || two.Owner != "tester" || two.BlockedBy != nil || two.Description != "Table tests." {
		t.Fatalf("task 2 %+v", two)
	}
	if got := s.Items[len(s.Items)-1]; got.TaskID != "4" || got.ID != projection.TaskItemID("4") {
		t.Fatalf("task 4 %+v: a deleted task's id is never given again", got)
	}
	if s.TaskHigh != 4 {
		t.Fatalf("TaskHigh %d", s.TaskHigh)
	}
}

// A task keeps its id, and its timeline, when its subject changes; a
// content item's id is its content's. Two tasks may share a subject.
func TestTaskIdentity(t *testing.T) {
	s := openState(t)
	runTask(t, &s, "TaskCreate", `{"subject":"a","description":""}`)
	runTask(t, &s, "TaskUpdate", `{"taskId":"1","status":"in_progress"}`)
	first := s.Items[0]
	runTask(t, &s, "TaskUpdate", `{"taskId":"1","subject":"a, renamed"}`)
	renamed := s.Items[0]
	if renamed.ID != first.ID || renamed.Content != "a, renamed" || renamed.CreatedAt != first.CreatedAt || *renamed.StartedAt != *first.StartedAt {
		t.Fatalf("renamed %+v, was %+v", renamed, first)
	}
	if projection.TaskItemID("a") == projection.ItemID("a") {
		t.Fatalf("a task id and a content share an id")
	}
	runTask(t, &s, "TaskCreate", `{"subject":"a, renamed","description":""}`)
	if len(s.Items) != 2 || s.Items[0].ID == s.Items[1].ID {
		t.Fatalf("two tasks of one subject: %+v", s.Items)
	}
	// A content item (a TodoWrite's, a person's) is named by its Tack id.
	log(t, &s, projection.Config{}, ne("todo/write", `{"todos":[{"content":"plain","status":"pending"}]}`))
	id := projection.ItemID("plain")
	if res := runTask(t, &s, "TaskUpdate", `{"taskId":"`+id+`","status":"completed"}`); res.Text != "Updated task #"+id+" status" {
		t.Fatalf("update of a content item: %q", res.Text)
	}
	if res := runTask(t, &s, "TaskList", `{}`); res.Text != "#"+id+" [completed] plain" {
		t.Fatalf("list %q", res.Text)
	}
}

func TestTaskArgs(t *testing.T) {
	for _, tc := range []struct{ tool, args, msg string }{
		{"TaskCreate", `{"subject":"a"}`, "invalid arguments: the input is missing `description`"},
		{"TaskCreate", `{"subject":"a","description":"","status":"pending"}`, "invalid arguments: the input has an unexpected key `status`"},
		{"TaskCreate", `{"subject":1,"description":""}`, "invalid arguments: `subject` must be a string"},
		{"TaskUpdate", `{"status":"done","taskId":"1"}`, "invalid arguments: `status` must be one of pending, in_progress, completed, deleted"},
		{"TaskUpdate", `{"taskId":"1","addBlocks":"2"}`, "invalid arguments: `addBlocks` must be an array of task ids"},
		{"TaskUpdate", `{"taskId":"1","metadata":[]}`, "invalid arguments: `metadata` must be an object"},
		{"TaskUpdate", `{}`, "invalid arguments: the input is missing `taskId`"},
		{"TaskGet", `{"taskId":"1","x":1}`, "invalid arguments: the input has an unexpected key `x`"},
		{"TaskList", `{"status":"pending"}`, "invalid arguments: the input has an unexpected key `status`"},
		{"TaskList", `{"a":1,"a":2}`, "invalid arguments: the input has the key `a` twice"},
	} {
		_, err := projection.ParseTaskArgs(tc.tool, json.RawMessage(tc.args))
		if pe, ok := err.(*projection.Error); !ok || pe.Code != projection.CodeInvalid || pe.Message != tc.msg {
			t.Errorf("%s %s: %#v, want %q", tc.tool, tc.args, err, tc.msg)
		}
	}
	// What the list refuses is refused when written, in the tools' terms.
	s := openState(t)
	a, _ := projection.ParseTaskArgs("TaskCreate", json.RawMessage(`{"subject":" ","description":""}`))
	res := projection.RunTask(a, s.Items, 0)
	_, err := s.Apply(projection.TaskWrite(res.Todos), at(5), projection.Config{}, nil)
	if err = projection.TaskReword(err); err == nil || err.Error() != "invalid todo: `subject` must be a non-empty string" {
		t.Fatalf("blank subject: %v", err)
	}
}

// Items of a list write other than todo_write's keep the agent's fields
// through every view, and blockedBy must name items of the list.
func TestItemAgentFields(t *testing.T) {
	one, two := projection.TaskItemID("1"), projection.TaskItemID("2")
	list := `{"todos":[{"content":"a","status":"in_progress","activeForm":"Doing a","owner":"lead","taskId":"1"},` +
		`{"content":"b","status":"pending","blockedBy":["` + one + `"],"taskId":"2","description":"two\nlines"}]}`
	s := openState(t)
	evs := log(t, &s, projection.Config{}, ne("todo/write", list))
	want := []projection.Item{
		{ID: one, Content: "a", Status: "in_progress", AgentFields: projection.AgentFields{ActiveForm: "Doing a", Owner: "lead", TaskID: "1"}, UpdatedAt: at(2), CreatedAt: at(2), StartedAt: tp(at(2))},
		{ID: two, Content: "b", Status: "pending", AgentFields: projection.AgentFields{BlockedBy: []string{one}, TaskID: "2", Description: "two\nlines"}, UpdatedAt: at(2), CreatedAt: at(2)},
	}
	if !reflect.DeepEqual(s.Items, want) {
		t.Fatalf("items %+v\nwant  %+v", s.Items, want)
	}
	acp, _ := json.Marshal(projection.ACP(s.Todos("ses")))
	if w := `{"sessionUpdate":"plan","entries":[{"content":"a","priority":"medium","status":"in_progress","_meta":{"id":"` + one + `","activeForm":"Doing a","owner":"lead","taskId":"1"}},` +
		`{"content":"b","priority":"medium","status":"pending","_meta":{"id":"` + two + `","blockedBy":["` + one + `"],"taskId":"2","description":"two\nlines"}}]}`; string(acp) != w {
		t.Fatalf("acp %s\nwant %s", acp, w)
	}
	if h := projection.ReplayHistory(append([]projection.Event{{Seq: 1, Type: "turn/start", Turn: 1, At: at(0), Data: json.RawMessage(`{}`)}}, evs...)); !reflect.DeepEqual(h[0].Todos, want) {
		t.Fatalf("history %+v", h[0].Todos)
	}
	for _, tc := range []struct{ name, item, msg string }{
		{"blocked by itself", `{"content":"a","status":"pending","taskId":"1","blockedBy":["` + one + `"]}`, "invalid todo: `blockedBy` of \"a\" names the item itself"},
		{"blocked by nothing", `{"content":"a","status":"pending","blockedBy":["t_0000000000000000"]}`, "invalid todo: `blockedBy` of \"a\" names \"t_0000000000000000\", which is no item of the list"},
		{"blockedBy not ids", `{"content":"a","status":"pending","blockedBy":[1]}`, "invalid todo: `blockedBy` must be an array of item ids"},
		{"taskId twice", `{"content":"a","status":"pending","taskId":"1"},{"content":"b","status":"pending","taskId":"1"}`, "invalid todos: duplicate taskId \"1\""},
		{"blank taskId", `{"content":"a","status":"pending","taskId":" "}`, "invalid todo: `taskId` must be a non-empty string"},
		{"activeForm of two lines", `{"content":"a","status":"pending","activeForm":"x\ny"}`, "invalid todo: `activeForm` must be one line without control characters"},
		{"owner not a string", `{"content":"a","status":"pending","owner":7}`, "invalid todo: `owner` must be a non-empty string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkApply(t, "todo/write", `{"todos":[`+tc.item+`]}`, false, "", "invalid", tc.msg)
		})
	}
	// The canonical todo_write still takes content and status alone.
	ev, _, _ := projection.ParseTodoWriteArgs(json.RawMessage(`{"todos":[{"content":"a","status":"pending","activeForm":"x"}]}`))
	if _, err := s.Apply(ev, at(3), projection.Config{}, nil); err == nil || err.Error() != "invalid todo: unexpected key `activeForm`; a todo has exactly the keys `content` and `status`" {
		t.Fatalf("todo_write with activeForm: %v", err)
	}
}
