package projection

import (
	"encoding/json"
	"errors"
	"strings"
)

// A list write derived from a call of one of the agents' todo tools
// (Claude Code's TaskCreate and TaskUpdate, the dialects: Claude Code's
// TodoWrite, codex's update_plan) is made from the list as it stands where it is appended,
// in log order, never from a list read before: the tool calls of one
// assistant message run at once, and their hooks and transcript lines
// reach Tack in any order. A writer that saw the call, not the list it
// left (a hook, a transcript), appends a todo/write whose data is the
// call, Derivation; Apply makes the whole new list of it, by the tools'
// own projection (RunTask, the dialects), on the state inside the
// append's transaction, and stores the todo/write of that list. The log
// never holds a derivation.

// DerivedTools are the tools a list write may be derived from: the task
// tools, the registered dialects' (by name) and ExitPlanMode, whose
// approved proposal is one too, made only while no list with open items
// stands (proposal).
func DerivedTools() []string {
	out := []string{ToolTaskCreate, ToolTaskUpdate}
	for _, d := range Dialects() {
		out = append(out, d.Tool)
	}
	return append(out, ToolExitPlanMode)
}

// Derivation is the data of a derived todo/write: the tool, its arguments
// as the agent gave them and, for a TaskCreate, the id the agent gave the
// task it made (its result says it), "" for the next.
type Derivation struct {
	Tool   string          `json:"tool"`
	Args   json.RawMessage `json:"args"`
	TaskID string          `json:"taskId,omitempty"`
}

// ErrNoWrite is Apply's answer to a derivation that makes no list write:
// a task tool's call that changes nothing of the list as it stands, or
// names no task of it. The state is unchanged, and a store appends
// nothing for the event and goes on with its batch.
var ErrNoWrite = errors.New("the call changes nothing of the list")

// noWrite is ErrNoWrite as validate answers it.
var noWrite = &Error{Code: CodeInvalid, Message: ErrNoWrite.Error()}

// Derivable reports whether a list write can be derived from a call of
// tool with args: a tool of DerivedTools whose arguments it reads.
// Whether the call changes the list is known only where it is applied.
func Derivable(tool string, args json.RawMessage) bool {
	switch tool {
	case ToolTaskCreate, ToolTaskUpdate:
		_, err := ParseTaskArgs(tool, args)
		return err == nil
	case ToolExitPlanMode:
		return len(proposedPlan(args)) > 0
	}
	d, ok := DialectOf(tool)
	if !ok {
		return false
	}
	_, _, err := d.Parse(args)
	return err == nil
}

// derive makes the list of a derived todo/write, m its data's keys, from
// the state: the list's JSON, and how the list's checks speak of it (in
// the terms of the tool). It answers noWrite for a call that makes no
// list write.
func (s *State) derive(m map[string]json.RawMessage) (json.RawMessage, func(*Error) *Error, *Error) {
	tool, _ := decodeString(m["tool"])
	var newID string
	if raw, ok := m["taskId"]; ok {
		if tool != ToolTaskCreate {
			return nil, nil, invalidf("todo/write: `taskId` goes only with the tool %s", ToolTaskCreate)
		}
		v, isString := decodeString(raw)
		v = strings.TrimSpace(v)
		if !isString || isNull(raw) || Blank(v) || !OneLine(v) || strings.ContainsRune(v, 0) || len(v) > MaxToolCallIDLen {
			return nil, nil, invalidf("todo/write: `taskId` must be a non-empty one-line string of at most %d bytes", MaxToolCallIDLen)
		}
		newID = v
	}
	switch tool {
	case ToolTaskCreate, ToolTaskUpdate:
		a, err := ParseTaskArgs(tool, m["args"])
		if err != nil {
			return nil, nil, asError(err)
		}
		a.NewID = newID
		res := RunTask(a, s.Items, s.TaskHigh)
		if res.NotFound || !res.Changed {
			return nil, nil, noWrite
		}
		if res.Todos == nil {
			res.Todos = []TodoInput{}
		}
		list, _ := json.Marshal(res.Todos)
		return list, func(e *Error) *Error { return asError(TaskReword(e)) }, nil
	case ToolExitPlanMode:
		return s.proposal(m["args"])
	}
	d, ok := DialectOf(tool)
	if !ok {
		return nil, nil, invalidf("todo/write: `tool` must be one of %s", strings.Join(DerivedTools(), ", "))
	}
	ev, _, err := d.Parse(m["args"])
	if err != nil {
		return nil, nil, asError(err)
	}
	return ev.todos, func(e *Error) *Error { return asError(d.Reword(e)) }, nil
}

// proposal is the list an approved ExitPlanMode call makes: its plan's
// steps (PlanSteps), while the agent has no list of its own to work
// through, no list standing or none of its items open. Else, or when the
// plan has no steps, it makes none.
func (s *State) proposal(args json.RawMessage) (json.RawMessage, func(*Error) *Error, *Error) {
	steps := proposedPlan(args)
	if len(steps) == 0 || (s.Standing && openItems(s.Items)) {
		return nil, nil, noWrite
	}
	list, _ := json.Marshal(steps)
	return list, func(e *Error) *Error { return e }, nil
}

// asError is err, which the checks made, as the *Error it holds.
func asError(err error) *Error {
	var pe *Error
	if errors.As(err, &pe) {
		return pe
	}
	return invalidf("%s", err.Error())
}
