package agenttest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
)

// Tack steering the model's plan through `tack connect`'s hooks: Tack's
// introduction and its todo tool for a model with no list tool of its own,
// the reminder of a stale plan, and a person's edit that the model's next
// list write must keep, whichever tool it writes with.

// bashStep is a tool call that is no list write: one step of the model's
// work.
func bashStep(n string) Turn {
	return Turn{Tools: []Call{{Name: "Bash", Input: map[string]any{"command": "echo step-" + n, "description": "Step " + n}}}}
}

// staleReminder is what the reminder of a stale plan tells the model with
// Tack's tool.
const staleReminder = "Keep it current with mcp__tack__todo_write"

// TestClaudeSteerTackTool: Claude Code on a model with no list tool
// (claude-opus-5, CLAUDE_CODE_ENABLE_TODO_TOOLS unset) after `tack
// connect`. `tack hook` reads the model from the agent's command line, so
// the first request carries Tack's introduction and offers
// mcp__tack__todo_write; the model plans with it; three steps without a
// list write bring the stale reminder, once; a person's edit then makes
// the model's next todo_write without it rejected with the list to write
// again; the list it writes then is the session's plan.
func TestClaudeSteerTackTool(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	u.ClaudeModel, u.ClaudeOwnTools = "claude-opus-5", true
	k := startTack(t, u, true)
	k.connect(t, u, "claude-code")
	mcpWithPerson := map[string]any{"todos": append(slices.Clone(mcpPlan["todos"].([]any)),
		map[string]any{"content": personsItem, "status": "pending"})}
	m := NewAnthropic(t,
		Turn{Text: "I'll plan this first.", Tools: []Call{{Name: "mcp__tack__todo_write", Input: mcpPlan}}},
		bashStep("1"), bashStep("2"), bashStep("3"),
		bashStep("4"),
		// A person adds an item while the model thinks; the model writes
		// its list as it knew it.
		Turn{Tools: []Call{{Name: "mcp__tack__todo_write", Input: mcpPlan}}, Before: func(Request) {
			s, ok := k.sessionOf(t, u, "claude-code")
			if !ok {
				t.Errorf("no Tack session for Claude Code mid-turn")
				return
			}
			k.editPlan(t, s.ID)
		}},
		Turn{Tools: []Call{{Name: "mcp__tack__todo_write", Input: mcpWithPerson}}},
		Turn{Text: "All done: the race is fixed."},
	)
	r := u.claude(t, m, "The login test fails one run in ten: fix it.")
	if r.Err != nil {
		t.Fatalf("claude: %v", r.Err)
	}
	reqs := m.Scripted()
	if m.Left() != 0 || len(reqs) != 8 {
		t.Fatalf("%d requests to the model, %d turns of the script never asked for", len(reqs), m.Left())
	}
	s, ok := k.sessionOf(t, u, "claude-code")
	if !ok {
		t.Fatal("no Tack session for Claude Code")
	}

	tools := reqs[0].ToolNames()
	if !slices.Contains(tools, "mcp__tack__todo_write") || slices.Contains(tools, "TodoWrite") || slices.Contains(tools, "TaskCreate") {
		t.Errorf("the first request offers %v, want mcp__tack__todo_write and no list tool of Claude Code's", tools)
	}
	if !reqs[0].Contains(projection.IntroText) {
		t.Errorf("the first request lacks Tack's introduction")
	}
	// The plan was written before request 1; the answers to requests 1-3
	// are the three steps since, and the third's hooks carry the reminder
	// to request 4. It is not said again for the same list.
	for i, req := range reqs {
		if n, want := strings.Count(string(req.Body), staleReminder), min(max(i-3, 0), 1); n != want {
			t.Errorf("request %d holds the stale reminder %d times, want %d", i, n, want)
		}
	}
	checkRejected(t, reqs[6], rejection(t, k, s.ID))
	checkPlan(t, k, s.ID, []string{"Reproduce the failure:in_progress", "Fix the race:pending"}, false)
}

// rejection is what Tack answers a list write made after the session's
// person's edit by a model that last saw the list it wrote before it:
// "Error: " and projection.EditedText.
func rejection(t *testing.T, k *tack, id string) string {
	t.Helper()
	var seen int64
	for _, e := range k.events(t, id) {
		switch e.Type {
		case "todo/write":
			seen = e.Seq
		case "todo/edit":
			var d struct {
				Todos []projection.Item `json:"todos"`
				By    string            `json:"by"`
			}
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			return "Error: " + projection.EditedText(d.By, seen, e.Seq, d.Todos)
		}
	}
	t.Fatalf("no person's edit in the log of %s", id)
	return ""
}

// checkRejected asserts that the last tool result req carries back to the
// model is text, marked an error where the agent marks one. Claude Code
// may add reminders of its own after it (the tokens left).
func checkRejected(t *testing.T, req Request, text string) {
	t.Helper()
	results := req.Results()
	if len(results) == 0 {
		t.Errorf("the request after the rejected write carries no tool result")
		return
	}
	got := results[len(results)-1]
	if got.Text != text && !strings.HasPrefix(got.Text, text+"\n\n<system-reminder>\n") {
		t.Errorf("the rejected write's result:\n%q\nwant\n%q", got.Text, text)
	}
	if req.Path == "/v1/messages" && !got.IsError {
		t.Errorf("the rejected write's result is no error (is_error)")
	}
}

// denial is what the model reads of a call of tool its agent's PreToolUse
// hook denied for reason.
func denial(agent, tool, reason string) string {
	if agent == "codex" {
		return "Tool call blocked by PreToolUse hook: " + reason + ". Tool: " + tool
	}
	return "PreToolUse:" + tool + " hook error: " + reason
}

// A deniedCase is a run of TestClaudeSteerDenied or TestCodexSteerDenied:
// the agent's turns that write the plan, the list call a person's edit
// denies, the model's next call, made after the denial, and the plan then
// (content:status), the person's item after it.
type deniedCase struct {
	agent, tool string
	tasks       bool
	// syncs runs the hooks a server elsewhere has: tack-hook alone, each
	// hook syncing the transcript itself (the server does not read it).
	syncs         bool
	plan          []Turn
	denied, again Turn
	want          []string
}

// plan2 is the plan of two items in the statuses given, as TodoWrite
// takes it.
func plan2(first, second string) []any {
	return []any{
		map[string]any{"content": "Reproduce the failure", "status": first, "activeForm": "Reproducing the failure"},
		map[string]any{"content": "Fix the race", "status": second, "activeForm": "Fixing the race"},
	}
}

// withPerson is todos with the person's item after them.
func withPerson(todos []any) []any {
	return append(slices.Clone(todos), map[string]any{"content": personsItem, "status": "pending", "activeForm": "Writing the changelog entry"})
}

// TestClaudeSteerDenied: with Claude Code's own list tool (TodoWrite, its
// task tools) after `tack connect`, a person edits the plan while the
// model thinks; the model's next call of its tool, made without the edit,
// is denied by its PreToolUse hook, and the model reads the rejection's
// text as that call's error (is_error); its next call, made after it,
// goes through and the plan keeps the person's item.
func TestClaudeSteerDenied(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	todoWrite := func(todos []any) Turn {
		return Turn{Tools: []Call{{Name: "TodoWrite", Input: map[string]any{"todos": todos}}}}
	}
	task := func(subject string) Turn {
		return Turn{Tools: []Call{{Name: "TaskCreate", Input: map[string]any{"subject": subject, "description": subject + ", as planned"}}}}
	}
	begin := Turn{Tools: []Call{{Name: "TaskUpdate", Input: map[string]any{"taskId": "1", "status": "in_progress"}}}}
	t.Run("TodoWrite", func(t *testing.T) {
		t.Parallel()
		steerDenied(t, deniedCase{agent: "claude-code", tool: "TodoWrite",
			plan:   []Turn{todoWrite(plan2("in_progress", "pending"))},
			denied: todoWrite(plan2("completed", "in_progress")),
			again:  todoWrite(withPerson(plan2("completed", "in_progress"))),
			want:   []string{"Reproduce the failure:completed", "Fix the race:in_progress"}})
	})
	t.Run("TodoWrite, hooks that sync themselves", func(t *testing.T) {
		t.Parallel()
		steerDenied(t, deniedCase{agent: "claude-code", tool: "TodoWrite", syncs: true,
			plan:   []Turn{todoWrite(plan2("in_progress", "pending")), bashStep("1")},
			denied: todoWrite(plan2("completed", "in_progress")),
			again:  todoWrite(withPerson(plan2("completed", "in_progress"))),
			want:   []string{"Reproduce the failure:completed", "Fix the race:in_progress"}})
	})
	t.Run("tasks", func(t *testing.T) {
		t.Parallel()
		steerDenied(t, deniedCase{agent: "claude-code", tool: "TaskUpdate", tasks: true,
			plan:   []Turn{task("Reproduce the failure"), task("Fix the race")},
			denied: begin, again: begin,
			want: []string{"Reproduce the failure:in_progress", "Fix the race:pending"}})
	})
}

// TestCodexSteerDenied: TestClaudeSteerDenied's run with codex's
// update_plan.
func TestCodexSteerDenied(t *testing.T) {
	requireAgent(t, codexBinary())
	t.Parallel()
	// update_plan's steps are todo items by another name.
	updatePlan := func(todos []any) Turn {
		var steps []any
		for _, it := range todos {
			it := it.(map[string]any)
			steps = append(steps, map[string]any{"step": it["content"], "status": it["status"]})
		}
		return Turn{Tools: []Call{{Name: "update_plan", Input: map[string]any{"plan": steps}}}}
	}
	steerDenied(t, deniedCase{agent: "codex", tool: "update_plan",
		plan:   []Turn{updatePlan(plan2("in_progress", "pending"))},
		denied: updatePlan(plan2("completed", "in_progress")),
		again:  updatePlan(withPerson(plan2("completed", "in_progress"))),
		want:   []string{"Reproduce the failure:completed", "Fix the race:in_progress"}})
}

func steerDenied(t *testing.T, tc deniedCase) {
	u := newUser(t)
	u.ClaudeTasks = tc.tasks
	var args []string
	tackPath := binary(t, "tack")
	if tc.syncs {
		args, tackPath = []string{"-no-transcript-reads"}, hookOnlyTack(t)
	}
	k := startTack(t, u, true, args...)
	denied := tc.denied
	denied.Before = func(Request) {
		s, ok := k.sessionOf(t, u, tc.agent)
		if !ok {
			t.Errorf("no Tack session for %s mid-turn", tc.agent)
			return
		}
		k.editPlan(t, s.ID)
	}
	turns := append(slices.Clone(tc.plan), denied, tc.again, Turn{Text: "All done: the race is fixed."})
	var m scripted
	var r run
	if tc.agent == "codex" {
		o := NewResponses(t, turns...)
		u.writeCodexConfig(t, o, "")
		k.connectWith(t, u, tackPath, "codex")
		m, r = o, u.codex(t, "The login test fails one run in ten: fix it.", "--dangerously-bypass-hook-trust")
	} else {
		k.connectWith(t, u, tackPath, "claude-code")
		a := NewAnthropic(t, turns...)
		m, r = a, u.claude(t, a, "The login test fails one run in ten: fix it.")
	}
	if r.Err != nil {
		t.Fatalf("%s: %v", tc.agent, r.Err)
	}
	reqs := m.Scripted()
	if m.Left() != 0 {
		t.Fatalf("%d turns of the script never asked for (%d requests)", m.Left(), len(reqs))
	}
	s, ok := k.sessionOf(t, u, tc.agent)
	if !ok {
		t.Fatalf("no Tack session for %s", tc.agent)
	}
	checkRejected(t, reqs[len(tc.plan)+1], denial(tc.agent, tc.tool, rejection(t, k, s.ID)))
	checkPlan(t, k, s.ID, tc.want, false)
}
