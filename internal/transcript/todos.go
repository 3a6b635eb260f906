package transcript

import (
	"encoding/json"
	"strings"

	"github.com/tack-dev/tack/internal/projection"
)

// listWrite is the list write a successful call of one of the agents' todo
// tools makes, given as the call (projection.Derivation): Tack makes the
// whole list of it where it is appended, from the list as it stands then,
// so that calls run at once and a call that reaches Tack by a hook and by
// the transcript never make a list of a copy another write has passed.
// result and text are the call's result (Claude Code's toolUseResult or a
// hook's tool_response, and the text the model saw): they say the id a
// TaskCreate gave its task. It answers false for a tool that is none of
// them and for a call whose arguments Tack cannot read. Transcripts and
// hooks both map the calls through it.
func listWrite(name string, args, result json.RawMessage, text string) (projection.Derivation, bool) {
	if name == projection.ToolExitPlanMode {
		args = proposedPlanArgs(args, result)
	}
	if name == TackTodoTool {
		// Tack's own todo_write, through its MCP server: the list, as a
		// TodoWrite without activeForm makes it (its baseVersion was the
		// call's check, done when it was made).
		var in struct {
			Todos json.RawMessage `json:"todos"`
		}
		if json.Unmarshal(args, &in) != nil || in.Todos == nil {
			return projection.Derivation{}, false
		}
		name, args = "TodoWrite", mustJSON(map[string]json.RawMessage{"todos": in.Todos})
	}
	if !projection.Derivable(name, args) {
		return projection.Derivation{}, false
	}
	d := projection.Derivation{Tool: name, Args: args}
	if name == projection.ToolTaskCreate {
		d.TaskID = createdTaskID(result, text)
	}
	return d, true
}

// proposedPlanArgs are an approved ExitPlanMode call's arguments as its
// list is derived from them, {"plan": …}: the plan the call carries
// (Claude Code puts the plan file's text there), else the one its result
// says was presented (toolUseResult and tool_response alike).
func proposedPlanArgs(args, result json.RawMessage) json.RawMessage {
	var in, out struct {
		Plan string `json:"plan"`
	}
	_ = json.Unmarshal(args, &in)
	if strings.TrimSpace(in.Plan) == "" {
		_ = json.Unmarshal(result, &out)
		in.Plan = out.Plan
	}
	b, _ := json.Marshal(in)
	return b
}

// listWrite maps a successful call of a todo tool to its list write,
// counting the calls of those tools it cannot read.
func (p *Parser) listWrite(name string, args json.RawMessage, content string, extra json.RawMessage) (projection.Derivation, bool) {
	d, ok := listWrite(name, args, extra, content)
	if !ok && IsTodoTool(name) {
		p.skip(name + " calls Tack cannot read")
	}
	return d, ok
}

// createdTaskID is the id Claude Code gave the task a TaskCreate made, as
// its result says it: {"task": {"id": …}} (the tool's own result: the
// transcript's toolUseResult, a hook's tool_response), or the text the
// model saw, "Task #<id> created successfully: …"; "" when neither says.
func createdTaskID(result json.RawMessage, text string) string {
	var r struct {
		Task struct {
			ID json.RawMessage `json:"id"`
		} `json:"task"`
	}
	var id string
	if json.Unmarshal(result, &r) == nil && r.Task.ID != nil {
		var n json.Number
		if json.Unmarshal(r.Task.ID, &id) != nil && json.Unmarshal(r.Task.ID, &n) == nil {
			id = n.String()
		}
	}
	if rest, ok := strings.CutPrefix(text, "Task #"); ok && id == "" {
		if before, _, found := strings.Cut(rest, " created successfully"); found {
			id = before
		}
	}
	// An id Tack would refuse is none: the task gets the next.
	if id = strings.TrimSpace(id); projection.Blank(id) || !projection.OneLine(id) || len(id) > projection.MaxToolCallIDLen {
		return ""
	}
	return id
}
