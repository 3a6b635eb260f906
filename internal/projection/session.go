package projection

import (
	"encoding/json"
	"strings"
	"time"
	"unicode/utf8"
)

// SourceHarness marks a message/user the agent's harness wrote into the
// user role (a slash command, a background task's notice, an interruption):
// the model saw it, but no person typed it, so it starts no turn and names
// no session.
const SourceHarness = "harness"

// SourceAgent marks a message/user another agent wrote: the task a parent
// agent gave its subagent. It starts the subagent's turn like a prompt, but
// no person typed it.
const SourceAgent = "agent"

// The kinds of harness lines a message/user may be.
const (
	KindTaskNotification = "task-notification"
	KindCommand          = "command"
	KindInterrupted      = "interrupted"
	KindIDEContext       = "ide-context"
	KindCompactSummary   = "compact-summary"
	KindContext          = "context"
	KindOther            = "other"
)

// HarnessKinds lists every kind, in the order the documentation gives them.
var HarnessKinds = []string{KindTaskNotification, KindCommand, KindInterrupted, KindIDEContext, KindCompactSummary, KindContext, KindOther}

// MaxAtAhead is how far past its receipt an event's own time may lie: a
// little clock skew between the agent's machine and Tack's, never a time
// to come.
const MaxAtAhead = 5 * time.Minute

// ParseAt reads an event's `at`: an RFC 3339 time, or null or absent (nil).
func ParseAt(raw json.RawMessage) (*Time, error) {
	if len(raw) == 0 || isNull(raw) {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, invalidf("event `at` must be an RFC 3339 time")
	}
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, invalidf("event `at` must be an RFC 3339 time, got %q", s)
	}
	t := NewTime(v)
	return &t, nil
}

// CheckAt refuses an event time more than MaxAtAhead after received, the
// time Tack received the event. A time long past is the agent's to give
// (an imported January session). nil is no time, and passes.
func CheckAt(at *Time, received Time) error {
	if at != nil && at.Sub(received.Time) > MaxAtAhead {
		return invalidf("event `at` %s is more than %s after its receipt (%s)",
			at.Format(TimeFormat), MaxAtAhead, received.Format(TimeFormat))
	}
	return nil
}

// Plan lifetimes: how long a written list stands as the session's plan.
const (
	// PlanTurn ends the standing plan at the next turn/start.
	PlanTurn = "turn"
	// PlanSession keeps the plan standing until it is replaced or cleared,
	// as Claude Code and codex keep their lists across prompts.
	PlanSession = "session"
)

// Session states, as a session list shows them.
const (
	StateWorking  = "working"
	StateNeedsYou = "needs_you"
	StateIdle     = "idle"
	StateEnded    = "ended"
)

// What a session in needs_you waits on its person for (NeedsYou.Kind).
const (
	NeedsPermission = "permission" // to allow a tool call
	NeedsQuestion   = "question"   // to answer the agent's question
	NeedsPlan       = "plan"       // to approve a proposed plan
)

// NeedsYou says what a session in needs_you waits on its person for, in
// the agent's own words: its kind, the prompt's message (the question, the
// plan's first lines), and the tool call it is about with that call's
// input in brief (a command, a file path, a question's options); Tool and
// Input are empty when there is none.
type NeedsYou struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Tool    string `json:"tool,omitempty"`
	Input   string `json:"input,omitempty"`
}

// PendingCall is the latest tool call of events (a log's tail, oldest
// first) that no result in them answers: the call a permission prompt is
// about. Nil when every call has its result.
func PendingCall(events []Event) *ToolCall {
	answered := map[string]bool{}
	for i := len(events) - 1; i >= 0; i-- {
		switch ev := events[i]; ev.Type {
		case TypeToolResult:
			var d struct {
				CallID string `json:"callId"`
			}
			if json.Unmarshal(ev.Data, &d) == nil {
				answered[d.CallID] = true
			}
		case TypeMessageAssistant:
			var d struct {
				ToolCalls []ToolCall `json:"toolCalls"`
			}
			_ = json.Unmarshal(ev.Data, &d)
			for j := len(d.ToolCalls) - 1; j >= 0; j-- {
				if c := d.ToolCalls[j]; !answered[c.ID] {
					return &c
				}
			}
		}
	}
	return nil
}

// DefaultIdleAfter is how long an open turn may go without an event before
// its session is idle rather than working.
const DefaultIdleAfter = 5 * time.Minute

// Activity is what a session's state is derived from: the time and seq of
// its latest event, the open turn's start and a session/end not followed
// by any event, and what the store keeps beside the log: since when the
// agent has waited on a person (a permission prompt or a question) and
// the log's last seq when it began to, and the status the agent's own
// registry last reported. Each time is nil when there is none.
type Activity struct {
	LastAt        *Time
	LastSeq       int64
	TurnOpen      bool
	TurnStartedAt *Time
	EndedAt       *Time
	NeedsYouSince *Time
	// NeedsYouSeq is the log's last seq when the wait began: an event
	// appended after it (a higher seq) ends the wait, whatever its time,
	// and those appended before (the question's own call) do not.
	NeedsYouSeq int64
	Agent       *AgentStatus
}

// What an agent's registry says it is doing (AgentStatus.Status).
const (
	AgentBusy = "busy" // running a turn or a shell command
	AgentIdle = "idle" // waiting for a prompt
)

// AgentStatus is what the agent's own registry (Claude Code's
// ~/.claude/sessions/<pid>.json) last said of it, and when it began to: it
// decides working or idle while no event is newer.
type AgentStatus struct {
	Status string
	At     Time
}

// Activity is the state's part of a session's activity; NeedsYouSince,
// NeedsYouSeq and Agent are left for the store to fill.
func (s State) Activity() Activity {
	return Activity{LastAt: s.LastAt, LastSeq: s.LastSeq, TurnOpen: s.Turn.Open, TurnStartedAt: s.TurnAt, EndedAt: s.EndedAt}
}

// SessionState is the state of a session at now, and since when: ended
// after a session/end (since it); needs_you while the agent waits on a
// person and no event has been appended since it began to (since then);
// as the agent's registry says while its status is no older than the
// latest event: working while busy (since the open turn began, else since
// the status), idle while idle (since the status); else, from the log,
// working while a turn is open and the latest event is at most idleAfter
// old (since the turn began); idle otherwise (since the latest event, the
// session's creation when created is given and there is none). idleAfter
// zero or less is DefaultIdleAfter.
func SessionState(a Activity, now Time, idleAfter time.Duration, created Time) (string, Time) {
	if idleAfter <= 0 {
		idleAfter = DefaultIdleAfter
	}
	switch {
	case a.EndedAt != nil:
		return StateEnded, *a.EndedAt
	case a.NeedsYouSince != nil && a.LastSeq <= a.NeedsYouSeq:
		return StateNeedsYou, *a.NeedsYouSince
	case a.Agent != nil && (a.LastAt == nil || !a.LastAt.After(a.Agent.At.Time)):
		switch {
		case a.Agent.Status != AgentBusy:
			return StateIdle, a.Agent.At
		case a.TurnOpen && a.TurnStartedAt != nil:
			return StateWorking, *a.TurnStartedAt
		}
		return StateWorking, a.Agent.At
	case a.TurnOpen && a.LastAt != nil && now.Sub(a.LastAt.Time) <= idleAfter:
		if a.TurnStartedAt != nil {
			return StateWorking, *a.TurnStartedAt
		}
		return StateWorking, *a.LastAt
	case a.LastAt != nil:
		return StateIdle, *a.LastAt
	}
	return StateIdle, created
}

// Bounds on an event's keys (NewEvent.Keys).
const (
	MaxEventKeys     = 8
	MaxEventKeyBytes = 300
)

// CheckKeys refuses keys that are too many, empty, too long, not UTF-8 or
// holding NUL. No keys pass.
func CheckKeys(keys []string) error {
	if len(keys) > MaxEventKeys {
		return invalidf("an event may carry at most %d keys, got %d", MaxEventKeys, len(keys))
	}
	for _, k := range keys {
		if k == "" || len(k) > MaxEventKeyBytes || !utf8.ValidString(k) || strings.ContainsRune(k, 0) {
			return invalidf("an event key must be 1 to %d bytes of UTF-8 without NUL", MaxEventKeyBytes)
		}
	}
	return nil
}
