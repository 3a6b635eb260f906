package transcript

import (
	"encoding/json"
	"strings"

	"github.com/tack-dev/tack/internal/projection"
)

// codexLine is a line of a codex rollout file: {timestamp, type, payload}.
type codexLine struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// codexItem is what Tack reads of a payload.
type codexItem struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Action    json.RawMessage `json:"action"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
}

// codexBoilerplate starts the user messages codex writes itself, on every
// session: they are context for the model, not a person's prompt.
var codexBoilerplate = []string{"<environment_context>", "<user_instructions>", "# AGENTS.md", "<permissions", "<user_shell_command>"}

func (p *Parser) codex(raw []byte, out *emitter) {
	var l codexLine
	var it codexItem
	if json.Unmarshal(raw, &l) != nil || json.Unmarshal(l.Payload, &it) != nil {
		p.skip("lines of an unknown shape")
		return
	}
	switch l.Type {
	case "session_meta":
		if it.ID != "" {
			p.key = string(Codex) + ":" + it.ID
		}
		return
	case "response_item":
	case "event_msg":
		// Events mirror the response items (user_message, agent_message);
		// only the ends of turns are news.
		switch it.Type {
		case "task_complete", "turn_complete":
			p.endTurn("completed", out)
		case "turn_aborted":
			p.endTurn("interrupted", out)
		default:
			p.skip("event_msg " + it.Type)
		}
		return
	default:
		p.skip(l.Type + " lines")
		return
	}
	switch it.Type {
	case "message":
		text := codexText(it.Content)
		switch it.Role {
		case "user":
			for _, b := range codexBoilerplate {
				if strings.HasPrefix(strings.TrimSpace(text), b) {
					p.skip("codex context messages")
					return
				}
			}
			p.prompt(text, out)
		case "assistant":
			p.assistant(text, nil, out)
		default:
			p.skip(it.Role + " messages")
		}
	case "function_call":
		// arguments is a JSON text inside a string.
		var args string
		if json.Unmarshal(it.Arguments, &args) != nil {
			args = string(it.Arguments)
		}
		p.assistant("", []projection.ToolCall{{ID: it.CallID, Name: it.Name, Args: json.RawMessage(args)}}, out)
	case "custom_tool_call":
		var input string
		_ = json.Unmarshal(it.Input, &input)
		a, _ := json.Marshal(map[string]string{"input": input})
		p.assistant("", []projection.ToolCall{{ID: it.CallID, Name: it.Name, Args: a}}, out)
	case "local_shell_call":
		a, _ := json.Marshal(map[string]json.RawMessage{"action": it.Action})
		p.assistant("", []projection.ToolCall{{ID: it.CallID, Name: "local_shell", Args: a}}, out)
	case "function_call_output", "custom_tool_call_output":
		p.result(it.CallID, codexOutput(it.Output), false, nil, out)
	default:
		// reasoning is encrypted or a summary of private reasoning.
		p.skip(it.Type + " items")
	}
}

// codexText joins the text parts of a message's content.
func codexText(raw json.RawMessage) string {
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	_ = json.Unmarshal(raw, &parts)
	var b []string
	for _, c := range parts {
		if c.Text != "" {
			b = append(b, c.Text)
		}
	}
	return strings.Join(b, "\n")
}

// codexOutput reads a tool's output: a string (often itself JSON, which is
// kept as it is), or an object with `content`.
func codexOutput(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &o) == nil && o.Content != "" {
		return o.Content
	}
	return string(raw)
}
