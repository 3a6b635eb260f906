package projection

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// Claude Code's task tools: per-item calls on one list, each task with the
// agent's own id ("1", "2"…), dependencies and an owner. They map onto the
// one list: a TaskCreate or TaskUpdate that changes it is a todo/write of
// the whole new list (TaskWrite), and every answer is the text Claude Code
// itself gives the model, so a harness hands it on unchanged.
//
// A task is an item with a taskId; its id is TaskItemID(taskId), so it
// keeps its id when its subject changes, and its blockedBy names items by
// id, one id space for every reader. The tools speak the agent's ids: a
// task is named by its taskId, an item the agent did not make (a
// TodoWrite's, a person's) by its Tack id.

// The task tools, by name.
const (
	ToolTaskCreate = "TaskCreate"
	ToolTaskUpdate = "TaskUpdate"
	ToolTaskGet    = "TaskGet"
	ToolTaskList   = "TaskList"
)

// TaskTools lists the task tools.
var TaskTools = []string{ToolTaskCreate, ToolTaskUpdate, ToolTaskGet, ToolTaskList}

// StatusDeleted is TaskUpdate's status that removes a task.
const StatusDeleted = "deleted"

// TaskNotFound is Claude Code's answer to a call naming no task of the list.
const TaskNotFound = "Task not found"

// TaskArgs are a task tool's arguments, checked by ParseTaskArgs. The
// metadata a call may carry is accepted and dropped: Tack keeps none.
type TaskArgs struct {
	Tool                             string
	TaskID                           string
	Subject, Description, ActiveForm *string
	Status, Owner                    *string
	AddBlocks, AddBlockedBy          []string
	// NewID is the id the agent gave the task a TaskCreate made (Claude
	// Code numbers them itself, and parallel calls may reach Tack in any
	// order); "" gives the next id.
	NewID    string
	metadata bool
}

// TaskResult is what a task tool call makes of the current list: the
// model-facing text; whether the list changed and, if so, the new list to
// write; and whether the call named no task (nothing to write).
type TaskResult struct {
	Text     string
	Changed  bool
	Todos    []TodoInput
	NotFound bool
}

// taskKeys are each tool's keys, required ones first.
var taskKeys = map[string]struct{ required, optional []string }{
	ToolTaskCreate: {[]string{"subject", "description"}, []string{"activeForm", "metadata"}},
	ToolTaskUpdate: {[]string{"taskId"}, []string{"subject", "description", "activeForm", "status", "addBlocks", "addBlockedBy", "owner", "metadata"}},
	ToolTaskGet:    {[]string{"taskId"}, nil},
	ToolTaskList:   {nil, nil},
}

// ParseTaskArgs checks the arguments of the task tool tool as Claude Code
// sends them: exactly its keys, each of its type. The texts themselves
// are checked when the list is written, like any item's.
func ParseTaskArgs(tool string, raw json.RawMessage) (TaskArgs, error) {
	keys, ok := taskKeys[tool]
	if !ok {
		return TaskArgs{}, invalidf("unknown task tool %q", tool)
	}
	m, perr := object("invalid arguments: the input", raw, keys.required, keys.optional)
	if perr != nil {
		return TaskArgs{}, perr
	}
	a := TaskArgs{Tool: tool}
	str := func(k string) (*string, *Error) {
		v, ok := m[k]
		if !ok {
			return nil, nil
		}
		s, isString := decodeString(v)
		if !isString || isNull(v) {
			return nil, invalidf("invalid arguments: `%s` must be a string", k)
		}
		return &s, nil
	}
	ids := func(k string) ([]string, *Error) {
		v, ok := m[k]
		if !ok || isNull(v) {
			return nil, nil
		}
		var out []string
		if json.Unmarshal(v, &out) != nil || out == nil {
			return nil, invalidf("invalid arguments: `%s` must be an array of task ids", k)
		}
		return out, nil
	}
	var err *Error
	var id *string
	if id, err = str("taskId"); err != nil {
		return a, err
	}
	if id != nil {
		a.TaskID = *id
	}
	for _, f := range []struct {
		key string
		dst **string
	}{{"subject", &a.Subject}, {"description", &a.Description}, {"activeForm", &a.ActiveForm}, {"status", &a.Status}, {"owner", &a.Owner}} {
		if *f.dst, err = str(f.key); err != nil {
			return a, err
		}
		if *f.dst != nil && f.key != "status" {
			v := norm.NFC.String(strings.TrimSpace(**f.dst))
			*f.dst = &v
		}
	}
	if a.Status != nil {
		switch *a.Status {
		case StatusPending, StatusInProgress, StatusCompleted, StatusDeleted:
		default:
			return a, invalidf("invalid arguments: `status` must be one of pending, in_progress, completed, deleted")
		}
	}
	if a.AddBlocks, err = ids("addBlocks"); err != nil {
		return a, err
	}
	if a.AddBlockedBy, err = ids("addBlockedBy"); err != nil {
		return a, err
	}
	if v, ok := m["metadata"]; ok && !isNull(v) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(v, &obj) != nil {
			return a, invalidf("invalid arguments: `metadata` must be an object")
		}
		a.metadata = true
	}
	return a, nil
}

// RunTask applies a task tool call to items, the current list; high is
// the highest numeric taskId the list has ever held (a deleted task's id
// is never given again), 0 when unknown. Reading tools never change it.
func RunTask(a TaskArgs, items []Item, high int64) TaskResult {
	switch a.Tool {
	case ToolTaskCreate:
		return taskCreate(a, items, high)
	case ToolTaskUpdate:
		return taskUpdate(a, items)
	case ToolTaskGet:
		return taskGet(a, items)
	}
	return TaskResult{Text: TaskListText(items)}
}

// taskRef is the id the task tools name an item by.
func taskRef(it Item) string {
	if it.TaskID != "" {
		return it.TaskID
	}
	return it.ID
}

// findTask is the index of the item ref names in items, or -1.
func findTask(items []Item, ref string) int {
	return slices.IndexFunc(items, func(it Item) bool { return taskRef(it) == ref })
}

// inputsOf is items as a list write gives them.
func inputsOf(items []Item) []TodoInput {
	todos := make([]TodoInput, len(items))
	for i, it := range items {
		todos[i] = TodoInput{Content: it.Content, Status: it.Status, AgentFields: it.AgentFields}
		todos[i].BlockedBy = slices.Clone(it.BlockedBy)
	}
	return todos
}

// HighestTaskID is the highest numeric taskId of items, 0 when none.
func HighestTaskID(items []Item) int64 {
	var high int64
	for _, it := range items {
		if it.TaskID == "" {
			continue // and no error to make for it
		}
		if n, err := strconv.ParseInt(it.TaskID, 10, 64); err == nil {
			high = max(high, n)
		}
	}
	return high
}

// taskCreate adds the task a TaskCreate made: under the id the agent gave
// it when that names no task of the list yet, else the next id. A task
// goes before the first task of a higher numeric id, so that creates
// arriving out of order leave the list in the agent's order (by id, as
// Claude Code lists its tasks); the next id always goes last.
func taskCreate(a TaskArgs, items []Item, high int64) TaskResult {
	id := a.NewID
	if id == "" || findTask(items, id) >= 0 {
		id = strconv.FormatInt(max(high, HighestTaskID(items))+1, 10)
	}
	// The texts are as the list keeps them (trimmed, in NFC); one the list
	// refuses is refused when written, and this answer is never given.
	t := TodoInput{Content: *a.Subject, Status: StatusPending, AgentFields: AgentFields{TaskID: id, Description: *a.Description}}
	if a.ActiveForm != nil {
		t.ActiveForm = *a.ActiveForm
	}
	at := len(items)
	if n, err := strconv.ParseInt(id, 10, 64); err == nil {
		at = slices.IndexFunc(items, func(it Item) bool {
			m, err := strconv.ParseInt(it.TaskID, 10, 64)
			return it.TaskID != "" && err == nil && m > n
		})
		if at < 0 {
			at = len(items)
		}
	}
	return TaskResult{Text: fmt.Sprintf("Task #%s created successfully: %s", id, t.Content), Changed: true,
		Todos: slices.Insert(inputsOf(items), at, t)}
}

// taskUpdate is Claude Code's TaskUpdate: the fields that differ change
// and are named in the answer, in its order (subject, description,
// activeForm, owner, metadata, status, then blocks and blockedBy, each
// named when it adds an edge the task did not have). Deleting a task
// answers at once, with the other changes of the call left undone, and
// takes it out of every blockedBy.
func taskUpdate(a TaskArgs, items []Item) TaskResult {
	i := findTask(items, a.TaskID)
	if i < 0 {
		return TaskResult{Text: TaskNotFound, NotFound: true}
	}
	todos := inputsOf(items)
	t := &todos[i]
	self := items[i].ID
	var fields []string
	changed := false
	set := func(name string, v *string, dst *string) {
		if v != nil && *v != *dst {
			*dst = *v
			fields = append(fields, name)
			changed = true
		}
	}
	set("subject", a.Subject, &t.Content)
	set("description", a.Description, &t.Description)
	set("activeForm", a.ActiveForm, &t.ActiveForm)
	set("owner", a.Owner, &t.Owner)
	if a.metadata {
		fields = append(fields, "metadata")
	}
	if a.Status != nil && *a.Status == StatusDeleted {
		rest := append(inputsOf(items[:i]), inputsOf(items[i+1:])...)
		for j := range rest {
			rest[j].BlockedBy = slices.DeleteFunc(rest[j].BlockedBy, func(b string) bool { return b == self })
			if len(rest[j].BlockedBy) == 0 {
				rest[j].BlockedBy = nil
			}
		}
		return TaskResult{Text: "Updated task #" + a.TaskID + " deleted", Changed: true, Todos: rest}
	}
	set("status", a.Status, &t.Status)
	// Edges are made between items of the list, by id; one naming no
	// item, or the task itself, is named in the answer and makes none, as
	// in Claude Code.
	idOf := func(ref string) string {
		if j := findTask(items, ref); j >= 0 && items[j].ID != self {
			return items[j].ID
		}
		return ""
	}
	if newBlocks := slices.DeleteFunc(slices.Clone(a.AddBlocks), func(ref string) bool {
		j := findTask(items, ref)
		return j >= 0 && slices.Contains(items[j].BlockedBy, self)
	}); len(newBlocks) > 0 {
		for _, ref := range newBlocks {
			if j := findTask(items, ref); idOf(ref) != "" && !slices.Contains(todos[j].BlockedBy, self) {
				todos[j].BlockedBy = append(todos[j].BlockedBy, self)
				changed = true
			}
		}
		fields = append(fields, "blocks")
	}
	if newBlockedBy := slices.DeleteFunc(slices.Clone(a.AddBlockedBy), func(ref string) bool {
		return slices.Contains(items[i].BlockedBy, idOf(ref))
	}); len(newBlockedBy) > 0 {
		for _, ref := range newBlockedBy {
			if id := idOf(ref); id != "" && !slices.Contains(t.BlockedBy, id) {
				t.BlockedBy = append(t.BlockedBy, id)
				changed = true
			}
		}
		fields = append(fields, "blockedBy")
	}
	return TaskResult{Text: "Updated task #" + a.TaskID + " " + strings.Join(fields, ", "), Changed: changed, Todos: todos}
}

// refsOf writes the items ids names, by their task ids, as "#1, #2".
func refsOf(items []Item, ids []string) string {
	refs := make([]string, 0, len(ids))
	for _, id := range ids {
		if j := slices.IndexFunc(items, func(it Item) bool { return it.ID == id }); j >= 0 {
			refs = append(refs, "#"+taskRef(items[j]))
		}
	}
	return strings.Join(refs, ", ")
}

func taskGet(a TaskArgs, items []Item) TaskResult {
	i := findTask(items, a.TaskID)
	if i < 0 {
		return TaskResult{Text: TaskNotFound, NotFound: true}
	}
	it := items[i]
	lines := []string{"Task #" + taskRef(it) + ": " + it.Content, "Status: " + it.Status, "Description: " + it.Description}
	if len(it.BlockedBy) > 0 {
		lines = append(lines, "Blocked by: "+refsOf(items, it.BlockedBy))
	}
	var blocks []string
	for _, other := range items {
		if slices.Contains(other.BlockedBy, it.ID) {
			blocks = append(blocks, other.ID)
		}
	}
	if len(blocks) > 0 {
		lines = append(lines, "Blocks: "+refsOf(items, blocks))
	}
	return TaskResult{Text: strings.Join(lines, "\n")}
}

// TaskListText is Claude Code's TaskList answer for items: one line per
// task, "#<id> [<status>] <subject>", then " (<owner>)" when it has one
// and " [blocked by #<id>, …]" naming its blockers not yet completed; "No
// tasks found" for an empty list.
func TaskListText(items []Item) string {
	if len(items) == 0 {
		return "No tasks found"
	}
	done := map[string]bool{}
	for _, it := range items {
		if it.Status == StatusCompleted {
			done[it.ID] = true
		}
	}
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "#%s [%s] %s", taskRef(it), it.Status, it.Content)
		if it.Owner != "" {
			b.WriteString(" (" + it.Owner + ")")
		}
		open := slices.DeleteFunc(slices.Clone(it.BlockedBy), func(id string) bool { return done[id] })
		if len(open) > 0 {
			b.WriteString(" [blocked by " + refsOf(items, open) + "]")
		}
	}
	return b.String()
}

// TaskWrite is the todo/write a task tool's change appends: todos, the
// whole new list, checked by Apply like any list write (an open turn, the
// one-in-progress rule, the limits). Its errors speak of the list's items
// as `content`; TaskReword puts them in the task tools' terms.
func TaskWrite(todos []TodoInput) NewEvent {
	if todos == nil {
		todos = []TodoInput{}
	}
	list, _ := json.Marshal(todos)
	data := make(json.RawMessage, 0, len(list)+10)
	data = append(append(append(data, `{"todos":`...), list...), '}')
	return NewEvent{Type: TypeTodoWrite, Data: data, todos: data[len(`{"todos":`) : len(data)-1]}
}

// TaskReword puts an error of the list's checks in the task tools' terms:
// an item's text is its `subject`.
func TaskReword(err error) error {
	pe, ok := err.(*Error)
	if !ok {
		return err
	}
	e := *pe
	e.Message = strings.ReplaceAll(e.Message, "`content`", "`subject`")
	return &e
}
