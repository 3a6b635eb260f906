// Package projection turns a session's event log into the views Tack serves:
// the current todo list, the standing plan, the conversation snapshot and the
// model-facing message surface. It is pure Go: events in, views out.
package projection

import (
	"bytes"
	"encoding/json"
	"time"
)

// Event types, the closed set a session log accepts.
const (
	TypeTurnStart        = "turn/start"
	TypeTurnEnd          = "turn/end"
	TypeMessageUser      = "message/user"
	TypeMessageAssistant = "message/assistant"
	TypeToolResult       = "tool/result"
	TypeTodoWrite        = "todo/write"
	// TypeSessionEnd is the agent's word that the session is over. It needs
	// no open turn and closes none; any later event resumes the session.
	TypeSessionEnd = "session/end"
	// TypeTodoEdit is a person's edit of the list. It is appended only
	// through NewTodoEdit (PUT /sessions/{id}/todos), never through /events.
	TypeTodoEdit = "todo/edit"
)

// AgentAuthor is the author of a todo/write in the list's history; a
// todo/edit names the person who made it.
const AgentAuthor = "agent"

// ListWrite reports whether events of type typ replace the todo list: the
// model's todo/write and a person's todo/edit.
func ListWrite(typ string) bool { return typ == TypeTodoWrite || typ == TypeTodoEdit }

// Todo statuses.
const (
	StatusPending    = "pending"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
)

// TimeFormat is RFC 3339 in UTC with milliseconds, the only time format Tack writes.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Time is a UTC instant that marshals to JSON with exactly millisecond precision.
type Time struct{ time.Time }

// NewTime truncates t to milliseconds in UTC, so what is stored is what is served.
func NewTime(t time.Time) Time { return Time{t.UTC().Truncate(time.Millisecond)} }

// MarshalJSON writes the time in TimeFormat.
func (t Time) MarshalJSON() ([]byte, error) {
	return t.appendJSON(make([]byte, 0, len(TimeFormat)+2)), nil
}

// UnmarshalJSON reads any RFC 3339 time.
func (t *Time) UnmarshalJSON(b []byte) error {
	// The stored items carry one time each and are decoded on every
	// todo/write, so a plain quoted time skips the string decode.
	s, ok := "", false
	if n := len(b); n >= 2 && b[0] == '"' && b[n-1] == '"' && bytes.IndexByte(b, '\\') < 0 {
		s, ok = string(b[1:n-1]), true
	}
	if !ok {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	*t = NewTime(v)
	return nil
}

// Event is one entry of a session log, as stored.
type Event struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	Turn int    `json:"turn"`
	// At is when the event happened: the agent's own time when the writer
	// gave one, else the time Tack received it.
	At Time `json:"at"`
	// ReceivedAt is when Tack received an event that carries the agent's
	// own time; nil when At is the receipt time.
	ReceivedAt *Time           `json:"receivedAt,omitempty"`
	Data       json.RawMessage `json:"data"`
	// Keys are the agent's own ids of the event (NewEvent.Keys), kept by
	// the store beside the log rather than in it.
	Keys []string `json:"-"`
}

// NewEvent is an event a writer asks to append.
type NewEvent struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
	// At is the agent's own time of the event (a transcript line's
	// timestamp), nil when the writer gives none. Apply holds it to
	// CheckAt.
	At *Time `json:"at,omitempty"`
	// Keys are the agent's own ids of the event ("prompt:<prompt_id>",
	// "call:<tool_use_id>", a transcript line's): a store holds each key
	// once per session, and an append of an event one of whose keys it
	// holds stores nothing for it (see CheckKeys for their bounds).
	Keys []string `json:"keys,omitempty"`
	// Late marks an event that belongs to a turn the log has ended
	// already (a transcript line read after its turn's end came by a
	// hook): it joins the latest turn rather than needing an open one,
	// opens none, and leaves an ended session ended.
	Late bool `json:"late,omitempty"`
	// todos is the list of a todo/write made by ParseTodoWriteArgs, which
	// has already checked the shape of Data: Apply then decodes the list
	// alone rather than Data again. Events from anywhere else leave it nil.
	todos json.RawMessage
	// model marks a todo/write the model made through the todo_write tool
	// (ParseTodoWriteArgs): only those are held to the rule that the model
	// has seen a person's edit before it writes over it.
	model bool
	// plain marks a list whose items may have content and status alone:
	// the canonical todo_write's (ParseTodoWriteArgs).
	plain bool
	// by is the author of a todo/edit made by NewTodoEdit; a todo/edit
	// without one (from /events) is refused.
	by string
}

// Turn is the session's turn counter, whether that turn is still open and,
// once it has ended, how.
type Turn struct {
	Number int  `json:"number"`
	Open   bool `json:"open"`
	// EndReason is the reason of the turn/end that closed the turn: ""
	// (null in JSON) while the turn is open and before any turn.
	EndReason EndReason `json:"endReason"`
}

// EndReason is how a turn ended, the reason of its turn/end; "" is none,
// written as null.
type EndReason string

// The reasons a turn/end may give.
const (
	EndCompleted   EndReason = "completed"
	EndInterrupted EndReason = "interrupted"
	EndError       EndReason = "error"
)

// MarshalJSON writes "" as null.
func (r EndReason) MarshalJSON() ([]byte, error) {
	if r == "" {
		return []byte("null"), nil
	}
	return json.Marshal(string(r))
}

// UnmarshalJSON reads null as "".
func (r *EndReason) UnmarshalJSON(b []byte) error {
	var s *string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*r = ""
	if s != nil {
		*r = EndReason(*s)
	}
	return nil
}

// Item is one todo as readers see it, with the fields Tack derives.
type Item struct {
	// ID is the item's identity: derived from TaskID when the agent gave
	// one (ItemIDOf), else from Content.
	ID      string `json:"id"`
	Content string `json:"content"`
	Status  string `json:"status"`
	// AgentFields are what the agent's own tools gave the item.
	AgentFields
	UpdatedAt Time `json:"updatedAt"`
	// CreatedAt is when the content first appeared in this run of the list:
	// an item removed and added again starts a new run.
	CreatedAt Time `json:"createdAt"`
	// StartedAt is when the item was first in_progress in this run.
	StartedAt *Time `json:"startedAt"`
	// CompletedAt is when the item became completed; nil while it is not.
	CompletedAt *Time `json:"completedAt"`
}

// AgentFields are what an agent's own tools give an item beyond its text
// and status (Claude Code's TodoWrite and task tools), kept by every list
// write but the canonical todo_write's.
type AgentFields struct {
	// ActiveForm is the agent's spinner text for the item in progress
	// (Claude Code's "Running the tests"), "" when it gave none.
	ActiveForm string `json:"activeForm,omitempty"`
	// BlockedBy names the items (by ID, in this list) this one waits on.
	BlockedBy []string `json:"blockedBy,omitempty"`
	// Owner is the agent or teammate that claimed the item.
	Owner string `json:"owner,omitempty"`
	// TaskID is the agent's own id of a task ("1", "2"… of Claude Code's
	// task tools), kept across a change of its subject.
	TaskID string `json:"taskId,omitempty"`
	// Description is a task's longer text (Claude Code's TaskCreate).
	Description string `json:"description,omitempty"`
}

// none reports whether f holds nothing.
func (f AgentFields) none() bool {
	return f.ActiveForm == "" && len(f.BlockedBy) == 0 && f.Owner == "" && f.TaskID == "" && f.Description == ""
}

// Change is how one item changed from one version of the list to the next:
// From is nil for an item added, To nil for one removed.
type Change struct {
	ID      string  `json:"id"`
	Content string  `json:"content"`
	From    *string `json:"from"`
	To      *string `json:"to"`
}

// Version is one version of the list in its history: who wrote it, when,
// the list it left and what changed.
type Version struct {
	Version int64    `json:"version"`
	At      Time     `json:"at"`
	By      string   `json:"by"`
	Todos   []Item   `json:"todos"`
	Changes []Change `json:"changes"`
}

// Reminder is the todo list reminder a harness injects into the model's
// context: due, why, and the text.
type Reminder struct {
	Due    bool    `json:"due"`
	Reason *string `json:"reason"`
	Text   string  `json:"text"`
}

// Reminder reasons.
const (
	ReasonEdited    = "edited"
	ReasonStale     = "stale"
	ReasonRequested = "requested"
)

// Counts tallies a list by status.
type Counts struct {
	Pending    int `json:"pending"`
	InProgress int `json:"inProgress"`
	Completed  int `json:"completed"`
}

// Todos is the canonical todo view: what GET /sessions/{id}/todos, todo_read
// and the live socket all serve.
type Todos struct {
	SessionID string `json:"sessionId"`
	Version   int64  `json:"version"`
	Standing  bool   `json:"standing"`
	Todos     []Item `json:"todos"`
	Counts    Counts `json:"counts"`
	UpdatedAt *Time  `json:"updatedAt"`
}

// Snapshot is the ConversationSnapshot served with the tail page of history.
type Snapshot struct {
	LastSeq      int64  `json:"lastSeq"`
	Turn         Turn   `json:"turn"`
	Todos        []Item `json:"todos"`
	TodosVersion int64  `json:"todosVersion"`
	Standing     bool   `json:"standing"`
}

// ToolCall is a tool call the assistant made, as the harness reports it.
type ToolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// Message is one entry of the model surface.
type Message struct {
	Role string  `json:"role"`
	Text *string `json:"text,omitempty"`
	// Source and Kind mark a user message the agent's harness wrote
	// (SourceHarness and one of the Kind constants); both are "" for a
	// person's prompt.
	Source     string     `json:"source,omitempty"`
	Kind       string     `json:"kind,omitempty"`
	ToolCalls  []ToolCall `json:"toolCalls,omitempty"`
	ToolCallID string     `json:"toolCallId,omitempty"`
	Name       string     `json:"name,omitempty"`
	IsError    *bool      `json:"isError,omitempty"`
}

// ItemsSize estimates what a decoded list takes in memory, for the byte
// bounds of the caches that keep lists.
func ItemsSize(items []Item) int {
	n := 0
	for _, it := range items {
		n += 160 + len(it.ID) + len(it.Content) + len(it.Status) +
			len(it.ActiveForm) + len(it.Owner) + len(it.TaskID) + len(it.Description)
		for _, b := range it.BlockedBy {
			n += 16 + len(b)
		}
	}
	return n
}
