package transcript

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// taskInput is what a subagent call (Claude Code's Task, now Agent) gives
// its subagent.
type taskInput struct {
	Description  string `json:"description"`
	Prompt       string `json:"prompt"`
	SubagentType string `json:"subagent_type"`
}

// subagentCall reads the input of a call of tool when it starts a
// subagent; ok is false for any other call.
func subagentCall(tool string, input json.RawMessage) (in taskInput, ok bool) {
	if tool != "Task" && tool != "Agent" {
		return in, false
	}
	return in, json.Unmarshal(input, &in) == nil
}

// title is the subagent's session title: the task's description, after
// the subagent's type when it names one ("Explore: Find the callers");
// "" when the description says nothing.
func (in taskInput) title() string {
	if titleOf(in.Description) == "" {
		return ""
	}
	if kind := titleOf(in.SubagentType); kind != "" {
		return titleOf(kind + ": " + in.Description)
	}
	return titleOf(in.Description)
}

// delegate notes the task a subagent call gives, by the prompt it writes
// for the subagent: the subagent's first line is that prompt, and its
// session is titled by the task (see Parser.prompt).
func (p *Parser) delegate(tool string, input json.RawMessage) {
	in, ok := subagentCall(tool, input)
	if !ok || strings.TrimSpace(in.Prompt) == "" || in.title() == "" {
		return
	}
	if p.delegated == nil {
		p.delegated = map[string]string{}
	}
	p.delegated[strings.TrimSpace(in.Prompt)] = in.title()
}

// task is the title of the task a subagent call of p gave with prompt.
func (p *Parser) task(prompt string) (string, bool) {
	if p == nil {
		return "", false
	}
	t, ok := p.delegated[strings.TrimSpace(prompt)]
	return t, ok
}

// SubagentTask is a subagent a hook tells of, with the task it was given.
type SubagentTask struct {
	// Key is the subagent's session key (as Hook.ChildKey names it).
	Key string
	// Title is its session's title, from the task ("" when none is said).
	Title string
}

// Subagent is the subagent the call a PostToolUse hook reports started:
// Claude Code's Agent (or Task) call answers with the subagent's agentId
// (at once when it runs in the background). ok is false for any other
// hook, or an answer that names no agent.
func (h Hook) Subagent(f Format) (SubagentTask, bool) {
	in, ok := subagentCall(h.ToolName, h.ToolInput)
	if h.Event != HookPostToolUse || !ok {
		return SubagentTask{}, false
	}
	var resp struct {
		AgentID string `json:"agentId"`
	}
	if json.Unmarshal(h.ToolResponse, &resp) != nil || resp.AgentID == "" || len(resp.AgentID) > MaxHookIDBytes ||
		strings.ContainsRune(resp.AgentID, 0) || !utf8.ValidString(resp.AgentID) {
		return SubagentTask{}, false
	}
	h.AgentID = resp.AgentID
	return SubagentTask{Key: h.ChildKey(f), Title: in.title()}, true
}

// spawned notes the subagent a subagent call's result names (Claude Code's
// toolUseResult.agentId, the same the PostToolUse hook reads), so that its
// session is made titled by its task, as the hook makes it live.
func (p *Parser) spawned(name string, args, extra json.RawMessage) {
	in, ok := subagentCall(name, args)
	if a := agents[p.format]; !ok || a == nil || !a.spawns {
		return
	}
	var resp struct {
		AgentID string `json:"agentId"`
	}
	if json.Unmarshal(extra, &resp) != nil || resp.AgentID == "" || len(resp.AgentID) > MaxHookIDBytes ||
		strings.ContainsRune(resp.AgentID, 0) || !utf8.ValidString(resp.AgentID) {
		return
	}
	p.spawnedInfo = append(p.spawnedInfo, Info{Key: p.info.Key + "/agent-" + resp.AgentID, Title: in.title(),
		Agent: p.info.Agent, Cwd: p.info.Cwd, Parent: p.info.Key})
}

// Spawned answers the subagents the lines read since its last call
// started, each named by its session key and titled by its task.
func (p *Parser) Spawned() []Info {
	out := p.spawnedInfo
	p.spawnedInfo = nil
	return out
}
