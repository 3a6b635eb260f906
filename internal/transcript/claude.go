package transcript

import (
	"encoding/json"
	"strings"

	"github.com/tack-dev/tack/internal/projection"
)

// claudeLine is what Tack reads of a line of a Claude Code session file;
// every other field is ignored.
type claudeLine struct {
	Type        string          `json:"type"`
	IsSidechain bool            `json:"isSidechain"`
	IsMeta      bool            `json:"isMeta"`
	Summary     string          `json:"summary"`
	Message     *claudeMessage  `json:"message"`
	ToolResult  json.RawMessage `json:"toolUseResult"`
}

type claudeMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// claudeBlock is one block of a message's content.
type claudeBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

func (p *Parser) claude(raw []byte, out *emitter) {
	var l claudeLine
	if json.Unmarshal(raw, &l) != nil {
		p.skip("lines of an unknown shape")
		return
	}
	switch {
	case l.Type == "summary":
		// A summary names the conversation; it is a title, not an event.
		if p.title == "" && l.Summary != "" {
			p.title = titleOf(l.Summary)
		}
		p.skip("summary lines")
		return
	case l.Type != "user" && l.Type != "assistant":
		p.skip(l.Type + " lines")
		return
	case l.IsSidechain && !p.subagent:
		// A subagent's lines (Task tool) are its own conversation and plan,
		// not the parent's; its own file is imported as its own session.
		p.skip("sidechain lines")
		return
	case l.IsMeta:
		p.skip("meta lines")
		return
	case l.Message == nil:
		p.skip(l.Type + " lines without a message")
		return
	}
	// A plain string content is the message's one text.
	blocks, text := claudeContent(l.Message.Content)
	var texts []string
	if text != "" {
		texts = append(texts, text)
	}
	if l.Type == "user" {
		var results []claudeBlock
		for _, b := range blocks {
			switch b.Type {
			case "tool_result":
				results = append(results, b)
			case "text":
				texts = append(texts, b.Text)
			default:
				p.skip(b.Type + " blocks")
			}
		}
		for _, b := range results {
			p.result(b.ToolUseID, resultText(b.Content), b.IsError, l.ToolResult, out)
		}
		if prompt := strings.Join(texts, "\n"); strings.TrimSpace(prompt) != "" {
			if len(results) > 0 {
				// Text beside tool results is the harness's, not a new prompt.
				p.skip("text beside tool results")
			} else {
				p.prompt(prompt, out)
			}
		}
		return
	}
	var calls []projection.ToolCall
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_use", "server_tool_use":
			calls = append(calls, projection.ToolCall{ID: b.ID, Name: b.Name, Args: b.Input})
		default:
			// thinking and redacted_thinking are the model's private
			// reasoning: not part of the conversation it is shown.
			p.skip(b.Type + " blocks")
		}
	}
	p.assistant(strings.Join(texts, "\n"), calls, out)
}

// claudeContent reads a message's content: a plain string, or blocks.
func claudeContent(raw json.RawMessage) ([]claudeBlock, string) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return nil, s
	}
	var blocks []claudeBlock
	_ = json.Unmarshal(raw, &blocks)
	return blocks, ""
}

// resultText flattens a tool result's content (a string, or text blocks)
// into its text.
func resultText(raw json.RawMessage) string {
	blocks, s := claudeContent(raw)
	if blocks == nil {
		return s
	}
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		default:
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}
