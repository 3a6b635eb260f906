package transcript

import (
	"encoding/json"
	"slices"

	"github.com/tack-dev/tack/internal/projection"
)

// Item is one item of a list write, as the agent gave it: Tack's content
// and status, and what the native shapes add (Claude Code's spinner text,
// its task ids, dependencies and owners), exactly as a list write takes it.
type Item projection.TodoInput

// itemsOf is list with the ids HighestTaskID reads.
func itemsOf(list []Item) []projection.Item {
	out := make([]projection.Item, len(list))
	for i, it := range list {
		out[i] = projection.Item{Content: it.Content, Status: it.Status, AgentFields: it.AgentFields}
	}
	return out
}

// listWrite maps a successful call of a todo tool to the whole list it
// leaves (ListWrite), keeping Claude Code's task list for the next.
func (p *Parser) listWrite(name string, args json.RawMessage, content string, extra json.RawMessage) ([]Item, bool) {
	list, ok := ListWrite(p.tasks, p.taskHigh, name, args)
	_, dialect := projection.Dialects[name]
	switch {
	case !ok && (dialect || name == "TaskCreate" || name == "TaskUpdate"):
		p.skip(name + " calls Tack cannot read")
	case ok && (name == "TaskCreate" || name == "TaskUpdate"):
		p.tasks = list
		p.taskHigh = max(p.taskHigh, projection.HighestTaskID(itemsOf(list)))
		return slices.Clone(list), true
	}
	return list, ok
}

// ListWrite maps a successful call of one of the agents' todo tools to the
// whole list it leaves: TodoWrite and update_plan through the dialects of
// package projection (their checks, once), Claude Code's task tools folded
// into tasks, the list before (its highest task id ever high), by
// applyTask. It answers false for a tool that is none of them and a call
// it cannot read. Transcripts and hooks both map the calls through it.
func ListWrite(tasks []Item, high int64, name string, args json.RawMessage) ([]Item, bool) {
	switch name {
	case "TaskCreate", "TaskUpdate":
		return applyTask(tasks, high, name, args)
	}
	d, ok := projection.Dialects[name]
	if !ok {
		return nil, false
	}
	ev, _, err := d.Parse(args)
	if err != nil {
		return nil, false
	}
	var canonical struct{ Todos []Item }
	_ = json.Unmarshal(ev.Data, &canonical)
	if name == "TodoWrite" {
		// The dialect checks TodoWrite's items; each keeps its activeForm.
		var in struct {
			Todos []struct {
				ActiveForm string `json:"activeForm"`
			} `json:"todos"`
		}
		_ = json.Unmarshal(args, &in)
		for i := range canonical.Todos {
			if i < len(in.Todos) {
				canonical.Todos[i].ActiveForm = in.Todos[i].ActiveForm
			}
		}
	}
	if canonical.Todos == nil {
		canonical.Todos = []Item{}
	}
	return canonical.Todos, true
}

// applyTask is Claude Code's task list after one successful TaskCreate or
// TaskUpdate call, made by the task tools' own projection (package
// projection's RunTask, as POST /sessions/{id}/tools/TaskCreate runs it):
// list is the list before, args the call's input. A task keeps the id
// Claude Code gave it, and its blockedBy names the items it waits on by
// their Tack ids, as every todos view does. It answers false for a call it
// cannot read (bad arguments, an update of a task it never saw) or one
// that changes nothing. The list is never changed in place.
func applyTask(list []Item, high int64, name string, args json.RawMessage) ([]Item, bool) {
	a, err := projection.ParseTaskArgs(name, args)
	if err != nil {
		return nil, false
	}
	items := make([]projection.Item, len(list))
	for i, it := range list {
		in := projection.TodoInput(it)
		items[i] = projection.Item{ID: projection.ItemIDOf(in), Content: it.Content, Status: it.Status, AgentFields: it.AgentFields}
	}
	res := projection.RunTask(a, items, high)
	if res.NotFound || !res.Changed {
		return nil, false
	}
	out := make([]Item, len(res.Todos))
	for i, t := range res.Todos {
		out[i] = Item(t)
	}
	return out, true
}
