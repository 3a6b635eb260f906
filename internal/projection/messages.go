package projection

import "encoding/json"

// Surface reports whether events of type typ become model messages. A
// harness line (a message/user with source "harness") is on the surface:
// the model saw it.
func Surface(typ string) bool {
	return typ == TypeMessageUser || typ == TypeMessageAssistant || typ == TypeToolResult
}

// SurfaceTypes lists the event types that become model messages.
var SurfaceTypes = []string{TypeMessageUser, TypeMessageAssistant, TypeToolResult}

// DeriveMessages is the model surface of a log: the conversation the model
// sees, in order. Turn bookkeeping and todo/write never appear in it.
func DeriveMessages(events []Event) []Message {
	msgs := []Message{}
	for _, ev := range events {
		if m, ok := MessageOf(ev); ok {
			msgs = append(msgs, m)
		}
	}
	return msgs
}

// MessageOf turns one surface event into its model message.
func MessageOf(ev Event) (Message, bool) {
	switch ev.Type {
	case TypeMessageUser:
		var d userData
		_ = json.Unmarshal(ev.Data, &d)
		return Message{Role: "user", Text: &d.Text, Source: d.Source, Kind: d.Kind}, true
	case TypeMessageAssistant:
		var d assistantData
		_ = json.Unmarshal(ev.Data, &d)
		return Message{Role: "assistant", Text: &d.Text, ToolCalls: d.ToolCalls}, true
	case TypeToolResult:
		var d toolResultData
		_ = json.Unmarshal(ev.Data, &d)
		return Message{Role: "tool", Text: &d.Content, ToolCallID: d.CallID, Name: d.Name, IsError: &d.IsError}, true
	}
	return Message{}, false
}

// OpenCalls finds the tool calls a run of the surface leaves unanswered: the
// index of its last assistant message and the ids of that message's calls
// that no later tool message of msgs answers. It is -1 and nil when that
// message's calls are all answered, or when there is none. A page of the
// surface that ended there, with a result of one of them next in the log,
// would separate a call from its result.
func OpenCalls(msgs []Message) (int, map[string]bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != "assistant" {
			continue
		}
		open := map[string]bool{}
		for _, c := range msgs[i].ToolCalls {
			open[c.ID] = true
		}
		for _, m := range msgs[i+1:] {
			if m.Role == "tool" {
				delete(open, m.ToolCallID)
			}
		}
		if len(open) == 0 {
			return -1, nil
		}
		return i, open
	}
	return -1, nil
}
