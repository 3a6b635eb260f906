package projection

import (
	"bytes"
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
	if b, ok := m["baseVersion"]; ok && !bytes.Equal(bytes.TrimSpace(b), []byte("null")) {
		var v int64
		if json.Unmarshal(b, &v) != nil || v < 0 {
			return NewEvent{}, nil, invalidf("invalid arguments: `baseVersion` must be a non-negative integer")
		}
		base = &v
	}
	// todos is one JSON value the decode above has validated, so wrapping it
	// by hand gives the same object json.Marshal would, without a second
	// pass over the list; Apply decodes it and stores its canonical form.
	data := make(json.RawMessage, 0, len(todos)+10)
	data = append(append(append(data, `{"todos":`...), todos...), '}')
	return NewEvent{Type: TypeTodoWrite, Data: data, todos: data[len(`{"todos":`) : len(data)-1]}, base, nil
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
		mark := "[ ]"
		switch it.Status {
		case StatusInProgress:
			mark = "[>]"
		case StatusCompleted:
			mark = "[x]"
		}
		b.WriteString("\n" + mark + " " + it.Content)
	}
	return b.String()
}
