package transcript

import (
	"encoding/json"
	"strings"

	"github.com/tack-dev/tack/internal/projection"
)

// Bounds on what a session's NeedsYou keeps of the agent's words.
const (
	maxNeedsMessage = 1000
	maxNeedsInput   = 500
	// planLines is how many of a proposed plan's first lines its message
	// keeps: enough to say what the plan is; the call holds the rest.
	planLines = 3
)

// The Claude Code tools whose call itself waits on the person: a question
// with options, and a plan to approve.
const (
	toolAskUserQuestion = "AskUserQuestion"
	toolExitPlanMode    = "ExitPlanMode"
)

// NeedsYou is what the hook says its session waits on its person for, and
// whether it says so at all: a permission prompt (Claude Code's
// Notification of type permission_prompt, about pending, the session's
// latest call with no result, nil when none; codex's PermissionRequest,
// about its own tool call), or the PreToolUse of a tool that asks the
// person itself (AskingCall).
func (h Hook) NeedsYou(pending *projection.ToolCall) (projection.NeedsYou, bool) {
	switch {
	case h.Event == HookNotification && h.NotificationType == "permission_prompt":
		n := projection.NeedsYou{Kind: projection.NeedsPermission, Message: clip(h.Message, maxNeedsMessage)}
		if pending != nil {
			n.Tool, n.Input = pending.Name, toolBrief(pending.Args)
		}
		return n, true
	case h.Event == HookPermissionRequest:
		tool := clip(h.ToolName, projection.MaxToolNameLen)
		msg := h.Message
		if msg == "" && tool != "" {
			msg = "Asks permission to use " + tool
		}
		return projection.NeedsYou{Kind: projection.NeedsPermission, Message: clip(msg, maxNeedsMessage), Tool: tool, Input: toolBrief(h.ToolInput)}, true
	case h.Event == HookPreToolUse:
		return AskingCall(h.ToolName, h.ToolInput)
	}
	return projection.NeedsYou{}, false
}

// AskingCall is what a call of tool name with args asks of the person,
// when the tool is one that waits on them: AskUserQuestion's questions
// (kind question; its options in brief as the input) or ExitPlanMode's
// plan (kind plan; its first lines as the message).
func AskingCall(name string, args json.RawMessage) (projection.NeedsYou, bool) {
	switch name {
	case toolAskUserQuestion:
		var in struct {
			Questions []struct {
				Question string `json:"question"`
				Options  []struct {
					Label string `json:"label"`
				} `json:"options"`
			} `json:"questions"`
		}
		_ = json.Unmarshal(args, &in)
		var questions, options []string
		for _, q := range in.Questions {
			questions = append(questions, strings.TrimSpace(q.Question))
			for _, o := range q.Options {
				options = append(options, strings.TrimSpace(o.Label))
			}
		}
		return projection.NeedsYou{Kind: projection.NeedsQuestion, Message: clip(strings.Join(questions, "\n"), maxNeedsMessage),
			Tool: name, Input: clip(strings.Join(options, " · "), maxNeedsInput)}, true
	case toolExitPlanMode:
		var in struct {
			Plan string `json:"plan"`
		}
		_ = json.Unmarshal(args, &in)
		var lines []string
		for _, l := range strings.Split(in.Plan, "\n") {
			if l = strings.TrimSpace(l); l != "" && len(lines) < planLines {
				lines = append(lines, l)
			}
		}
		return projection.NeedsYou{Kind: projection.NeedsPlan, Message: clip(strings.Join(lines, "\n"), maxNeedsMessage), Tool: name}, true
	}
	return projection.NeedsYou{}, false
}

// toolBrief is a tool call's input as a person reads it in a line: its
// command (a string or argv), else the file, path or address it is about,
// else its arguments as compact JSON; cut to maxNeedsInput.
func toolBrief(args json.RawMessage) string {
	var in map[string]json.RawMessage
	if json.Unmarshal(args, &in) == nil {
		for _, k := range []string{"command", "cmd", "file_path", "notebook_path", "path", "url", "pattern", "query"} {
			var s string
			var argv []string
			switch {
			case json.Unmarshal(in[k], &s) == nil && s != "":
				return clip(s, maxNeedsInput)
			case json.Unmarshal(in[k], &argv) == nil && len(argv) > 0:
				return clip(strings.Join(argv, " "), maxNeedsInput)
			}
		}
	}
	if len(args) == 0 || string(args) == "{}" || string(args) == "null" {
		return ""
	}
	return clip(string(fitArgs(args)), maxNeedsInput)
}
