package projection

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// Limits on what one event may carry. They are part of the documented contract.
const (
	MaxTodos          = 200
	MaxContentChars   = 1000
	MaxTextBytes      = 256 << 10
	MaxToolCalls      = 64
	MaxToolCallIDLen  = 256
	MaxMessageIDLen   = 256
	MaxToolNameLen    = 256
	MaxToolArgsBytes  = 64 << 10
	MaxToolResultText = 256 << 10
	// MaxDescriptionChars bounds a task's description (Claude Code's
	// TaskCreate), MaxOwnerChars its owner.
	MaxDescriptionChars = 10000
	MaxOwnerChars       = 256
)

// listData is the data of a list write: a todo/write's todos (and
// PlanAuthor when they are an approved proposal's steps), or a todo/edit's
// todos and author.
type listData struct {
	Todos []TodoInput `json:"todos"`
	By    string      `json:"by,omitempty"`
}

type turnEndData struct {
	Reason string `json:"reason"`
}

type userData struct {
	Text   string `json:"text"`
	Source string `json:"source,omitempty"`
	Kind   string `json:"kind,omitempty"`
}

type sessionEndData struct {
	Reason string `json:"reason,omitempty"`
}

type assistantData struct {
	Text      string     `json:"text"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// MessageID is the agent's id of the model's message the event is
	// (part of): an agent that writes one message as several events (Claude
	// Code writes each block as a transcript line of its own) gives them
	// all the message's id, and they are one step of the model (State.Steps).
	MessageID string `json:"messageId,omitempty"`
}

type toolResultData struct {
	CallID  string `json:"callId"`
	Name    string `json:"name"`
	IsError bool   `json:"isError"`
	Content string `json:"content"`
	// DurationMs is how long the call ran, in milliseconds, when the
	// agent said (a PostToolUse hook's duration_ms).
	DurationMs *int64 `json:"durationMs,omitempty"`
}

// parseUser reads a message/user: its text and, for a line the harness
// wrote, its source and kind. kind goes with source "harness" only.
func parseUser(data json.RawMessage) (userData, *Error) {
	var d userData
	m, err := object("message/user data", data, []string{"text"}, []string{"source", "kind"})
	if err != nil {
		return d, err
	}
	if d.Text, err = stringField("message/user", m, "text", MaxTextBytes, false); err != nil {
		return d, err
	}
	if _, ok := m["source"]; ok {
		if d.Source, err = stringField("message/user", m, "source", 64, false); err != nil {
			return d, err
		}
		if d.Source != SourceHarness && d.Source != SourceAgent {
			return d, invalidf("message/user: `source` must be %q, %q or absent (a person's prompt)", SourceHarness, SourceAgent)
		}
	}
	_, hasKind := m["kind"]
	switch {
	case d.Source == SourceHarness && !hasKind:
		return d, invalidf("message/user: a harness line needs a `kind`")
	case d.Source != SourceHarness && hasKind:
		return d, invalidf("message/user: `kind` goes only with `source` %q", SourceHarness)
	case hasKind:
		if d.Kind, err = stringField("message/user", m, "kind", 64, false); err != nil {
			return d, err
		}
		if !slices.Contains(HarnessKinds, d.Kind) {
			return d, invalidf("message/user: `kind` must be one of %s", strings.Join(HarnessKinds, ", "))
		}
	}
	return d, nil
}

func parseAssistant(data json.RawMessage) (assistantData, *Error) {
	var d assistantData
	m, err := object("message/assistant data", data, []string{"text"}, []string{"toolCalls", "messageId"})
	if err != nil {
		return d, err
	}
	if d.Text, err = stringField("message/assistant", m, "text", MaxTextBytes, false); err != nil {
		return d, err
	}
	if _, ok := m["messageId"]; ok {
		if d.MessageID, err = stringField("message/assistant", m, "messageId", MaxMessageIDLen, true); err != nil {
			return d, err
		}
	}
	raw, ok := m["toolCalls"]
	if !ok || isNull(raw) {
		return d, nil
	}
	var calls []json.RawMessage
	if json.Unmarshal(raw, &calls) != nil {
		return d, invalidf("message/assistant: `toolCalls` must be an array")
	}
	if len(calls) > MaxToolCalls {
		return d, invalidf("message/assistant: at most %d tool calls allowed, got %d", MaxToolCalls, len(calls))
	}
	for i, c := range calls {
		what := fmt.Sprintf("message/assistant toolCalls[%d]", i)
		// The call is inside data, which object has checked whole.
		cm, err := fields(what, c, []string{"id", "name"}, []string{"args"})
		if err != nil {
			return d, err
		}
		var tc ToolCall
		if tc.ID, err = stringField(what, cm, "id", MaxToolCallIDLen, true); err != nil {
			return d, err
		}
		if tc.Name, err = stringField(what, cm, "name", MaxToolNameLen, true); err != nil {
			return d, err
		}
		tc.Args = json.RawMessage("{}")
		if a, ok := cm["args"]; ok {
			if len(a) > MaxToolArgsBytes {
				return d, invalidf("%s: `args` is larger than the limit of %d bytes", what, MaxToolArgsBytes)
			}
			var compact bytes.Buffer
			if json.Compact(&compact, a) != nil {
				return d, invalidf("%s: `args` must be JSON", what)
			}
			// args are kept as sent, not decoded; object has already refused
			// bytes that are not UTF-8 and lone surrogate escapes in them.
			if bad := unstorable(compact.Bytes()); bad != "" {
				return d, invalidf("%s: `args` must not contain %s", what, bad)
			}
			tc.Args = compact.Bytes()
		}
		d.ToolCalls = append(d.ToolCalls, tc)
	}
	return d, nil
}

func parseToolResult(data json.RawMessage) (toolResultData, *Error) {
	var d toolResultData
	m, err := object("tool/result data", data, []string{"callId", "name", "isError", "content"}, []string{"durationMs"})
	if err != nil {
		return d, err
	}
	if d.CallID, err = stringField("tool/result", m, "callId", MaxToolCallIDLen, true); err != nil {
		return d, err
	}
	if d.Name, err = stringField("tool/result", m, "name", MaxToolNameLen, true); err != nil {
		return d, err
	}
	if d.Content, err = stringField("tool/result", m, "content", MaxToolResultText, false); err != nil {
		return d, err
	}
	if json.Unmarshal(m["isError"], &d.IsError) != nil || isNull(m["isError"]) {
		return d, invalidf("tool/result: `isError` must be a boolean")
	}
	if raw, ok := m["durationMs"]; ok {
		var ms int64
		if json.Unmarshal(raw, &ms) != nil || ms < 0 {
			return d, invalidf("tool/result: `durationMs` must be a non-negative integer")
		}
		d.DurationMs = &ms
	}
	return d, nil
}
