package transcript

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/tack-dev/tack/internal/projection"
)

// Item is one item of a list write, as the agent gave it: Tack's content
// and status, and what the native shapes add (Claude Code's spinner text,
// its task ids, dependencies and owners).
type Item struct {
	Content    string   `json:"content"`
	Status     string   `json:"status"`
	ActiveForm string   `json:"activeForm,omitempty"`
	BlockedBy  []string `json:"blockedBy,omitempty"`
	Owner      string   `json:"owner,omitempty"`
	TaskID     string   `json:"taskId,omitempty"`
}

// listWrite maps a successful call of a todo tool to the whole list it
// leaves: TodoWrite and update_plan through the dialects of package
// projection (their checks, once), Claude Code's task tools folded by
// applyTask.
func (p *Parser) listWrite(name string, args json.RawMessage, content string, extra json.RawMessage) ([]Item, bool) {
	switch name {
	case "TaskCreate", "TaskUpdate":
		list, ok := applyTask(p.tasks, name, args, content, extra)
		if !ok {
			p.skip(name + " calls Tack cannot read")
			return nil, false
		}
		p.tasks = list
		return slices.Clone(list), true
	}
	d, ok := projection.Dialects[name]
	if !ok {
		return nil, false
	}
	ev, _, err := d.Parse(args)
	if err != nil {
		p.skip(name + " calls Tack cannot read")
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
// TaskUpdate call: list is the list before, args the call's input, content
// and extra its result's text and structured toolUseResult. It answers
// false for a call it cannot read (an update of a task it never saw). The
// list is never changed in place.
//
// TaskCreate {subject, description, activeForm?} adds a pending task with
// the id Claude Code gave it ("Task #3 created successfully: …", or
// toolUseResult.task.id); TaskUpdate {taskId, subject?, activeForm?,
// status? (pending|in_progress|completed|deleted), addBlocks?,
// addBlockedBy?, owner?} changes one, and "deleted" removes it and every
// dependency on it. Descriptions and metadata are not part of the list.
func applyTask(list []Item, name string, args json.RawMessage, content string, extra json.RawMessage) ([]Item, bool) {
	var in struct {
		TaskID       string   `json:"taskId"`
		Subject      *string  `json:"subject"`
		ActiveForm   *string  `json:"activeForm"`
		Status       string   `json:"status"`
		AddBlocks    []string `json:"addBlocks"`
		AddBlockedBy []string `json:"addBlockedBy"`
		Owner        *string  `json:"owner"`
	}
	if json.Unmarshal(args, &in) != nil {
		return nil, false
	}
	list = cloneItems(list)
	if name == "TaskCreate" {
		id := createdID(content, extra)
		if id == "" || in.Subject == nil {
			return nil, false
		}
		it := Item{Content: *in.Subject, Status: projection.StatusPending, TaskID: id}
		if in.ActiveForm != nil {
			it.ActiveForm = *in.ActiveForm
		}
		return append(list, it), true
	}
	i := slices.IndexFunc(list, func(it Item) bool { return it.TaskID == in.TaskID })
	if i < 0 {
		return nil, false
	}
	if in.Status == "deleted" {
		list = slices.Delete(list, i, i+1)
		for j := range list {
			list[j].BlockedBy = slices.DeleteFunc(list[j].BlockedBy, func(id string) bool { return id == in.TaskID })
		}
		return list, true
	}
	t := &list[i]
	if in.Subject != nil {
		t.Content = *in.Subject
	}
	if in.ActiveForm != nil {
		t.ActiveForm = *in.ActiveForm
	}
	if in.Status != "" {
		t.Status = in.Status
	}
	if in.Owner != nil {
		t.Owner = *in.Owner
	}
	t.BlockedBy = addIDs(t.BlockedBy, in.AddBlockedBy...)
	for _, b := range in.AddBlocks {
		if j := slices.IndexFunc(list, func(it Item) bool { return it.TaskID == b }); j >= 0 {
			list[j].BlockedBy = addIDs(list[j].BlockedBy, in.TaskID)
		}
	}
	return list, true
}

func cloneItems(list []Item) []Item {
	out := slices.Clone(list)
	for i := range out {
		out[i].BlockedBy = slices.Clone(out[i].BlockedBy)
	}
	return out
}

// addIDs adds each id not yet in ids.
func addIDs(ids []string, add ...string) []string {
	for _, id := range add {
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// createdID reads the id Claude Code gave a created task: from the
// result's structured toolUseResult, or from its text "Task #N created …".
func createdID(content string, extra json.RawMessage) string {
	var r struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	if json.Unmarshal(extra, &r) == nil && r.Task.ID != "" {
		return r.Task.ID
	}
	if _, after, ok := strings.Cut(content, "#"); ok {
		n := 0
		for n < len(after) && after[n] >= '0' && after[n] <= '9' {
			n++
		}
		return after[:n]
	}
	return ""
}
