package projection

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ParseTodoWriteArgs splits the model's todo_write arguments into a
// todo/write event and the optional baseVersion. Only `todos` and
// `baseVersion` are accepted; the list itself is checked by Apply.
func ParseTodoWriteArgs(raw json.RawMessage) (NewEvent, *int64, error) {
	m, err := object("invalid arguments: the input", raw, nil, []string{"todos", "baseVersion"})
	if err != nil {
		return NewEvent{}, nil, err
	}
	todos, ok := m["todos"]
	if !ok {
		return NewEvent{}, nil, invalidf("invalid arguments: `todos` must be an array")
	}
	var base *int64
	if b, ok := m["baseVersion"]; ok && !isNull(b) {
		v, err := baseVersionOf("invalid arguments", b)
		if err != nil {
			return NewEvent{}, nil, err
		}
		base = &v
	}
	// todos is one JSON value the decode above has validated, so wrapping it
	// by hand gives the same object json.Marshal would, without a second
	// pass over the list; Apply decodes it and stores its canonical form.
	data := make(json.RawMessage, 0, len(todos)+10)
	data = append(append(append(data, `{"todos":`...), todos...), '}')
	return NewEvent{Type: TypeTodoWrite, Data: data, todos: data[len(`{"todos":`) : len(data)-1], model: true, plain: true}, base, nil
}

// ParseTodoEditArgs splits a person's edit, the body of
// PUT /sessions/{id}/todos `{"todos": [...], "baseVersion": N}`, into a
// todo/edit event by the author by and its baseVersion, which an edit must
// send: a person edits the list they were shown. The list is checked by
// Apply, like a todo_write's but for the open turn.
func ParseTodoEditArgs(raw json.RawMessage, by string) (NewEvent, int64, error) {
	m, err := object("invalid edit: the body", raw, []string{"todos", "baseVersion"}, nil)
	if err != nil {
		return NewEvent{}, 0, err
	}
	base, err := baseVersionOf("invalid edit", m["baseVersion"])
	if err != nil {
		return NewEvent{}, 0, err
	}
	if strings.TrimSpace(by) == "" {
		return NewEvent{}, 0, invalidf("invalid edit: the author must be named")
	}
	return NewEvent{Type: TypeTodoEdit, todos: m["todos"], by: by}, base, nil
}

// baseVersionOf reads a list write's baseVersion: a non-negative integer.
func baseVersionOf(what string, b json.RawMessage) (int64, *Error) {
	var v int64
	if isNull(b) || json.Unmarshal(b, &v) != nil || v < 0 {
		return 0, invalidf("%s: `baseVersion` must be a non-negative integer", what)
	}
	return v, nil
}

// ParseTodoReadArgs checks todo_read's arguments: an empty object.
func ParseTodoReadArgs(raw json.RawMessage) error {
	_, err := object("invalid arguments: the input", raw, nil, nil)
	if err != nil {
		return err
	}
	return nil
}

// WriteText is the model-facing answer to a successful todo_write.
func WriteText(c Counts) string {
	return fmt.Sprintf("Updated todo list: %d pending, %d in progress, %d completed.", c.Pending, c.InProgress, c.Completed)
}

// ReadText is the model-facing answer to todo_read: the counts line, then one
// line per item marked [ ] pending, [>] in progress or [x] completed.
func ReadText(items []Item) string {
	c := Count(items)
	var b strings.Builder
	fmt.Fprintf(&b, "Todo list: %d pending, %d in progress, %d completed.", c.Pending, c.InProgress, c.Completed)
	for _, it := range items {
		b.WriteString("\n" + itemLine(it))
	}
	return b.String()
}

// itemLine is one item as todo_read writes it: its mark and its content.
func itemLine(it Item) string {
	mark := "[ ]"
	switch it.Status {
	case StatusInProgress:
		mark = "[>]"
	case StatusCompleted:
		mark = "[x]"
	}
	return mark + " " + it.Content
}

// itemLines is one line per item, each ended by a newline.
func itemLines(items []Item) string {
	var b strings.Builder
	for _, it := range items {
		b.WriteString(itemLine(it) + "\n")
	}
	return b.String()
}

// EditedText is the model-facing rejection of a todo_write made after a
// person (by) edited the list since the model last saw it (version seen):
// it shows the current list, version current. Its "Error: " prefix is the
// tool endpoint's, like every rejection's.
func EditedText(by string, seen, current int64, items []Item) string {
	return fmt.Sprintf("the todo list was changed by %s since you last read it (version %d → %d). It is now:\n%sWrite the list again with their changes.",
		by, seen, current, itemLines(items))
}

// ReminderText is the reminder's text for version v of the list; by, when
// set, names the person who changed it.
func ReminderText(v int64, items []Item, by string) string {
	return ReminderTextFor(v, items, by, "todo_write")
}

// ReminderTextFor is ReminderText naming the list tool the model has
// (TodoWrite, TaskUpdate, update_plan, mcp__tack__todo_write), not a
// todo_write it may not have.
func ReminderTextFor(v int64, items []Item, by, tool string) string {
	changed := ""
	if by != "" {
		changed = ", changed by " + by
	}
	return fmt.Sprintf("<system-reminder>\nYour todo list (version %d)%s:\n%sKeep it current with %s: mark each item completed as soon as it is done.\n</system-reminder>",
		v, changed, itemLines(items), tool)
}

// IntroText tells a model whose agent offers no list tool of its own that
// Tack keeps one for it (the SessionStart answer of a connected agent, and
// after a compaction or a resume).
const IntroText = "Tack keeps your task list for this session; a person may see and edit it. For work of several steps, plan with mcp__tack__todo_write (the whole list each call, statuses pending, in_progress, completed) and keep it current: mark each item completed as soon as it is done. mcp__tack__todo_read shows the list."
