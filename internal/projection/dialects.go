package projection

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
)

// Dialect is another agent's shape of the todo tool. Its arguments are
// translated here, at the boundary, into todo_write's, and then take the one
// canonical path (ParseTodoWriteArgs and the checks of Apply): the log keeps
// {content, status} and what the agent's items add that Tack keeps (Kept),
// and every check and answer is todo_write's.
//
// Projection knows no agent: each agent's file in internal/transcript
// declares its list tool's Dialect, and registering the agent registers
// the dialect here (RegisterDialect). Claude Code's TodoWrite is
// {"todos": [{"content", "status", "activeForm"}]}; codex's update_plan is
// {"explanation"?, "plan": [{"step", "status"}]}.
//
// In JSON (tool, list, item, statuses) it is what the browser UI reads a
// call of the tool by: package web writes the registered dialects into
// the pages it serves.
type Dialect struct {
	// Tool is the tool's name as the agent calls it.
	Tool string `json:"tool"`
	// List is the key holding the list, Item the key holding an item's
	// text.
	List string `json:"list"`
	Item string `json:"item"`
	// Dropped are keys of the call accepted and dropped (a note to the
	// user about the change, say); Kept are keys of an item beyond its
	// text and status that pass to the canonical item (AgentFields).
	Dropped []string `json:"-"`
	Kept    []string `json:"-"`
	// Statuses maps the agent's spellings of a status onto Tack's.
	Statuses map[string]string `json:"statuses,omitempty"`
}

// dialects are the registered dialects, by tool name.
var dialects = map[string]Dialect{}

// RegisterDialect adds an agent's list tool to those Tack accepts. It is
// called at init (by internal/transcript, for each agent that declares
// one), before any list is read; it panics on a tool registered twice, one
// that is Tack's own or a task tool, or a shape without its keys.
func RegisterDialect(d Dialect) {
	_, dup := dialects[d.Tool]
	switch d.Tool {
	case "", "todo_write", ToolTaskCreate, ToolTaskUpdate, ToolExitPlanMode:
		dup = true
	}
	if dup || d.List == "" || d.Item == "" {
		panic("projection: dialect " + d.Tool + " registered twice, reserved or incomplete")
	}
	dialects[d.Tool] = d
}

// DialectOf is the registered dialect of tool.
func DialectOf(tool string) (Dialect, bool) {
	d, ok := dialects[tool]
	return d, ok
}

// Dialects are the registered dialects, by tool name.
func Dialects() []Dialect {
	out := make([]Dialect, 0, len(dialects))
	for _, d := range dialects {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b Dialect) int { return strings.Compare(a.Tool, b.Tool) })
	return out
}

// Parse translates the agent's arguments into todo_write's and parses those.
// Shapes todo_write would reject are passed through for it to reject, so
// that the checks run once, in their order, with their texts.
func (d Dialect) Parse(raw json.RawMessage) (NewEvent, *int64, error) {
	canonical, err := d.translate(raw)
	if err != nil {
		return NewEvent{}, nil, err
	}
	ev, base, err := ParseTodoWriteArgs(canonical)
	ev.plain = false // the items may hold what kept let through
	return ev, base, d.Reword(err)
}

func (d Dialect) translate(raw json.RawMessage) (json.RawMessage, error) {
	// object holds the raw body to strictjson's rule first, items and
	// dropped keys included: the re-encoding below would keep one of a key
	// given twice and turn invalid text into U+FFFD, hiding both from the
	// canonical checks.
	m, err := object("invalid arguments: the input", raw, nil, append([]string{d.List, "baseVersion"}, d.Dropped...))
	if err != nil {
		return nil, err
	}
	out := map[string]json.RawMessage{}
	if b, ok := m["baseVersion"]; ok {
		out["baseVersion"] = b
	}
	list, ok := m[d.List]
	if !ok {
		return json.Marshal(out) // no list: todo_write says so
	}
	out["todos"] = list
	var items []json.RawMessage
	if json.Unmarshal(list, &items) == nil && items != nil {
		objs := make([]map[string]json.RawMessage, len(items))
		for i, it := range items {
			if json.Unmarshal(it, &objs[i]) != nil || objs[i] == nil {
				return json.Marshal(out) // not an object: todo_write says so
			}
		}
		// Check 1 in the agent's terms: an item has exactly its keys.
		keys := append([]string{d.Item, "status"}, d.Kept...)
		for _, o := range objs {
			for k := range o {
				if !slices.Contains(keys, k) {
					return nil, invalidf("invalid todo: unexpected key `%s`; a todo has exactly the keys %s", k, keyList(keys))
				}
			}
		}
		for i, o := range objs {
			t := map[string]json.RawMessage{}
			if v, ok := o[d.Item]; ok {
				t["content"] = v
			}
			if v, ok := o["status"]; ok {
				var st string
				if json.Unmarshal(v, &st) == nil && d.Statuses[st] != "" {
					v, _ = json.Marshal(d.Statuses[st])
				}
				t["status"] = v
			}
			for _, k := range d.Kept {
				if v, ok := o[k]; ok {
					t[k] = v
				}
			}
			items[i], _ = json.Marshal(t)
		}
		out["todos"], _ = json.Marshal(items)
	}
	return json.Marshal(out)
}

// Reword puts an error of the canonical checks in the agent's terms: its
// names for the list and for an item's text. Everything else is as
// todo_write answers it.
func (d Dialect) Reword(err error) error {
	pe, ok := err.(*Error)
	if !ok || (d.List == "todos" && d.Item == "content") {
		return err
	}
	e := *pe
	e.Message = strings.ReplaceAll(e.Message, "`todos`", "`"+d.List+"`")
	e.Message = strings.ReplaceAll(e.Message, "`content`", "`"+d.Item+"`")
	return &e
}

// keyList writes keys as "`a`, `b` and `c`".
func keyList(keys []string) string {
	var b bytes.Buffer
	for i, k := range keys {
		switch {
		case i == 0:
		case i == len(keys)-1:
			b.WriteString(" and ")
		default:
			b.WriteString(", ")
		}
		b.WriteString("`" + k + "`")
	}
	return b.String()
}

// ACPPlan is the list as an Agent Client Protocol `plan` session update,
// which an ACP bridge forwards as is. ACP's statuses are Tack's; Tack keeps
// no priority, so every entry has ACP's middle one.
type ACPPlan struct {
	SessionUpdate string     `json:"sessionUpdate"`
	Entries       []ACPEntry `json:"entries"`
}

// ACPEntry is one entry of an ACP plan.
type ACPEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
	// Meta carries, in ACP's extension field, what an entry has no field
	// for: the agent's fields of the item, and its id, which they name.
	Meta *ACPMeta `json:"_meta,omitempty"`
}

// ACPMeta is what an ACP entry carries of an item beyond its content and
// status.
type ACPMeta struct {
	ID string `json:"id"`
	AgentFields
}

// ACP translates the todos view into an ACP plan update. An item with
// none of the agent's fields is an entry of content, priority and status
// alone, as ACP's own agents write them.
func ACP(t Todos) ACPPlan {
	p := ACPPlan{SessionUpdate: "plan", Entries: make([]ACPEntry, len(t.Todos))}
	for i, it := range t.Todos {
		p.Entries[i] = ACPEntry{Content: it.Content, Priority: "medium", Status: it.Status}
		if !it.AgentFields.none() {
			p.Entries[i].Meta = &ACPMeta{ID: it.ID, AgentFields: it.AgentFields}
		}
	}
	return p
}
