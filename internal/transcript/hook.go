package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/strictjson"
)

// The hook events Tack maps, as Claude Code and codex name them.
const (
	HookSessionStart      = "SessionStart"
	HookUserPromptSubmit  = "UserPromptSubmit"
	HookPreToolUse        = "PreToolUse"
	HookPostToolUse       = "PostToolUse"
	HookNotification      = "Notification"
	HookPermissionRequest = "PermissionRequest"
	HookStop              = "Stop"
	HookSubagentStop      = "SubagentStop"
	HookPreCompact        = "PreCompact"
	HookPostCompact       = "PostCompact"
	HookSessionEnd        = "SessionEnd"
)

// The plan modes `tack connect -plan` records and `tack hook` sends with
// every hook (POST /hooks/{agent}?plan=): whether Tack offers the model
// its own todo tool when the agent has none of its own (auto), always, or
// never (off).
const (
	PlanAuto   = "auto"
	PlanAlways = "always"
	PlanOff    = "off"
)

// ValidPlan reports whether p is a plan mode.
func ValidPlan(p string) bool {
	return p == PlanAuto || p == PlanAlways || p == PlanOff
}

// HookEvents lists every hook event `tack hook install` registers for an
// agent of format f: all Tack maps that the agent has.
func HookEvents(f Format) []string {
	if f == Codex {
		return []string{HookSessionStart, HookUserPromptSubmit, HookPreToolUse, HookPermissionRequest,
			HookPostToolUse, HookStop, HookPreCompact, HookPostCompact, HookSessionEnd}
	}
	return []string{HookSessionStart, HookUserPromptSubmit, HookPreToolUse, HookPostToolUse,
		HookNotification, HookStop, HookSubagentStop, HookPreCompact, HookSessionEnd}
}

// CarriesContext reports whether the agent takes additionalContext in its
// answer to the hook event: the text goes into the model's next request.
func CarriesContext(event string) bool {
	switch event {
	case HookSessionStart, HookUserPromptSubmit, HookPreToolUse, HookPostToolUse:
		return true
	}
	return false
}

// MaxHookIDBytes bounds the agent's ids a hook carries (session, prompt,
// turn, tool use, subagent).
const MaxHookIDBytes = 100

// Hook is what Tack reads of a hook's JSON payload; every other key is
// ignored.
type Hook struct {
	SessionID        string          `json:"session_id"`
	TranscriptPath   string          `json:"transcript_path"`
	Cwd              string          `json:"cwd"`
	Event            string          `json:"hook_event_name"`
	Source           string          `json:"source"`
	PromptID         string          `json:"prompt_id"`
	TurnID           string          `json:"turn_id"`
	Prompt           string          `json:"prompt"`
	ToolName         string          `json:"tool_name"`
	ToolInput        json.RawMessage `json:"tool_input"`
	ToolUseID        string          `json:"tool_use_id"`
	ToolResponse     json.RawMessage `json:"tool_response"`
	DurationMs       *int64          `json:"duration_ms"`
	NotificationType string          `json:"notification_type"`
	AgentID          string          `json:"agent_id"`
	Reason           string          `json:"reason"`
}

// ParseHook reads a hook's payload: a JSON object (valid UTF-8, no key
// twice) with the keys of Hook in their types, naming its session and
// event within MaxHookIDBytes.
func ParseHook(raw []byte) (Hook, error) {
	var h Hook
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return h, errors.New("a hook's payload must be a JSON object")
	}
	if err := strictjson.Check(raw); err != nil {
		return h, fmt.Errorf("a hook's payload must be valid JSON: %v", err)
	}
	if err := json.Unmarshal(raw, &h); err != nil {
		return h, fmt.Errorf("a hook's payload must be valid JSON: %v", err)
	}
	for _, f := range []struct{ name, v string }{{"session_id", h.SessionID}, {"hook_event_name", h.Event},
		{"prompt_id", h.PromptID}, {"turn_id", h.TurnID}, {"tool_use_id", h.ToolUseID}, {"agent_id", h.AgentID}} {
		required := f.name == "session_id" || f.name == "hook_event_name"
		switch {
		case f.v == "" && required:
			return h, fmt.Errorf("a hook's payload must name its `%s`", f.name)
		case len(f.v) > MaxHookIDBytes || strings.ContainsRune(f.v, 0) || !utf8.ValidString(f.v):
			return h, fmt.Errorf("`%s` must be at most %d bytes of text without NUL", f.name, MaxHookIDBytes)
		}
	}
	if h.DurationMs != nil && *h.DurationMs < 0 {
		return h, errors.New("`duration_ms` must not be negative")
	}
	h.Cwd = clip(h.Cwd, 4096)
	return h, nil
}

// SessionKey is the key of the session the hook is of in format f: the
// key import and watch give that session's transcript.
func (h Hook) SessionKey(f Format) string { return string(f) + ":" + h.SessionID }

// ChildKey is the key of the subagent session a SubagentStop names, as
// import and watch name a subagent's transcript.
func (h Hook) ChildKey(f Format) string { return h.SessionKey(f) + "/agent-" + h.AgentID }

// turnID is the agent's id of the hook's prompt: codex's turn, else the
// prompt's.
func (h Hook) turnID() string {
	if h.TurnID != "" {
		return h.TurnID
	}
	return h.PromptID
}

// HookState is what the events of a hook depend on: Tack's session as it
// stands.
type HookState struct {
	TurnOpen bool
	// Items and TaskHigh are the session's list and its highest task id,
	// for a todo tool's call (ListWrite).
	Items    []projection.Item
	TaskHigh int64
}

// IsTodoTool reports whether a tool is one of the agents' todo tools,
// whose successful call is a list write.
func IsTodoTool(name string) bool {
	_, dialect := projection.Dialects[name]
	return dialect || name == "TaskCreate" || name == "TaskUpdate"
}

// Events maps the hook to the events it adds to its session, keyed as the
// transcript keys the same events (see Keys). SessionStart, Notification,
// PreCompact and the events Tack does not map add none.
func (h Hook) Events(st HookState) []Event {
	var out emitter
	open := st.TurnOpen
	turn := h.turnID()
	keyed := func(key func(string) string, id string) []string {
		if id == "" {
			return nil
		}
		return []string{key(id)}
	}
	// A tool's call with no turn open (an agent resumed, a prompt Tack
	// missed) opens one: its prompt's, which the transcript may hold.
	inTurn := func() {
		if !open {
			out.add(projection.TypeTurnStart, struct{}{}, keyed(TurnKey, turn)...)
			open = true
		}
	}
	switch h.Event {
	case HookUserPromptSubmit:
		if open {
			out.add(projection.TypeTurnEnd, map[string]string{"reason": string(projection.EndCompleted)})
		}
		out.add(projection.TypeTurnStart, struct{}{}, keyed(TurnKey, turn)...)
		out.add(projection.TypeMessageUser, userData{Text: clip(h.Prompt, projection.MaxTextBytes)}, keyed(PromptKey, turn)...)
	case HookPreToolUse, HookPostToolUse:
		if h.ToolUseID == "" || h.ToolName == "" {
			return nil
		}
		inTurn()
		id := clip(h.ToolUseID, projection.MaxToolCallIDLen)
		name := clip(h.ToolName, projection.MaxToolNameLen)
		call := projection.ToolCall{ID: id, Name: name, Args: fitArgs(h.ToolInput)}
		out.add(projection.TypeMessageAssistant, map[string]any{"text": "", "toolCalls": []projection.ToolCall{call}}, CallKey(id))
		if h.Event == HookPreToolUse {
			break
		}
		if IsTodoTool(name) {
			tasks := make([]Item, len(st.Items))
			for i, it := range st.Items {
				tasks[i] = Item{Content: it.Content, Status: it.Status, AgentFields: it.AgentFields}
			}
			if todos, ok := ListWrite(tasks, st.TaskHigh, name, call.Args); ok {
				out.add(projection.TypeTodoWrite, map[string]any{"todos": todos}, WriteKey(id))
			}
		}
		result := map[string]any{"callId": id, "name": name, "isError": false, "content": clip(responseText(h.ToolResponse), projection.MaxToolResultText)}
		if h.DurationMs != nil {
			result["durationMs"] = *h.DurationMs
		}
		out.add(projection.TypeToolResult, result, ResultKey(id))
	case HookStop, HookSubagentStop:
		if h.Event == HookSubagentStop && h.AgentID == "" {
			return nil // no subagent named: nothing to end
		}
		if open {
			var keys []string
			if h.Event == HookStop {
				keys = keyed(EndKey, turn)
			}
			out.add(projection.TypeTurnEnd, map[string]string{"reason": string(projection.EndCompleted)}, keys...)
		}
		if h.Event == HookSubagentStop {
			out.add(projection.TypeSessionEnd, map[string]string{"reason": "subagent stopped"})
		}
	case HookSessionEnd:
		d := map[string]string{}
		if h.Reason != "" {
			d["reason"] = clip(h.Reason, 256)
		}
		out.add(projection.TypeSessionEnd, d)
	}
	return out.events
}

// responseText is a tool's response as the result's text: a string as it
// is, anything else as its JSON.
func responseText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return ""
	}
	return b.String()
}
