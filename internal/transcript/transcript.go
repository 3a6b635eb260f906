// Package transcript turns agents' session files into Tack events: Claude
// Code's session JSONL (~/.claude/projects/**) and codex's rollout JSONL
// (~/.codex/sessions/**). It is pure: lines in, events out. A Parser reads
// one file's lines in order and answers each with the events it maps to;
// the same lines always give the same events, and the events of a prefix of
// a file are a prefix of the events of the whole file, so a reader that
// stopped part way resumes by counting events (see internal/importer).
package transcript

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/tack-dev/tack/internal/projection"
)

// Format is the agent that wrote a transcript.
type Format string

// The formats a Parser reads.
const (
	ClaudeCode Format = "claude-code"
	Codex      Format = "codex"
)

// MaxTitleChars bounds the title taken from a transcript's first prompt.
const MaxTitleChars = 80

// Detect names the format of a transcript from its first line, or "" when
// it is neither agent's.
func Detect(line []byte) Format {
	var probe struct {
		Type      string          `json:"type"`
		Payload   json.RawMessage `json:"payload"`
		SessionID string          `json:"sessionId"`
		UUID      string          `json:"uuid"`
	}
	if json.Unmarshal(line, &probe) != nil {
		return ""
	}
	switch {
	case probe.Payload != nil && (probe.Type == "session_meta" || probe.Type == "response_item" || probe.Type == "event_msg" || probe.Type == "turn_context"):
		return Codex
	case probe.SessionID != "" || probe.UUID != "" || probe.Type == "summary" || probe.Type == "file-history-snapshot" || probe.Type == "user" || probe.Type == "assistant":
		return ClaudeCode
	}
	return ""
}

// Parser maps one transcript's lines to events. The zero value is not
// usable; make one with New.
type Parser struct {
	format Format
	// subagent is true for a subagent's own file, whose sidechain lines are
	// its conversation rather than lines to keep out of a parent's.
	subagent bool
	key      string
	title    string
	open     bool
	calls    map[string]string // call id -> tool name, until its result
	pending  map[string]json.RawMessage
	tasks    []task // Claude Code's task list, in creation order
	nextTask int
	skipped  map[string]int
}

// task is one item of Claude Code's task list (TaskCreate, TaskUpdate).
type task struct{ id, subject, status string }

// New returns a parser for the file at path in format f. The path names the
// session: its base name is the session's id (a Claude Code session file is
// <session id>.jsonl; codex's session_meta line overrides it).
func New(f Format, path string) *Parser {
	base := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	p := &Parser{format: f, calls: map[string]string{}, pending: map[string]json.RawMessage{}, skipped: map[string]int{}, nextTask: 1}
	p.key = string(f) + ":" + base
	p.subagent = f == ClaudeCode && (strings.HasPrefix(base, "agent-") || filepath.Base(filepath.Dir(path)) == "subagents")
	return p
}

// Key is a stable name for the session the transcript is: the agent and its
// session id. Known once the first line is read.
func (p *Parser) Key() string { return p.key }

// Title is the session's title: the first prompt, shortened; "" until one
// is read.
func (p *Parser) Title() string { return p.title }

// Skipped tallies what the parser read and did not map, by kind.
func (p *Parser) Skipped() map[string]int { return p.skipped }

// SkippedText is Skipped as one line, "" when nothing was skipped.
func (p *Parser) SkippedText() string {
	kinds := make([]string, 0, len(p.skipped))
	for k := range p.skipped {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for i, k := range kinds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s ×%d", k, p.skipped[k])
	}
	return b.String()
}

func (p *Parser) skip(kind string) { p.skipped[kind]++ }

// Line maps one complete line (without its newline) to events.
func (p *Parser) Line(line []byte) []projection.NewEvent {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if !json.Valid(line) {
		p.skip("lines that are not JSON")
		return nil
	}
	var out emitter
	switch p.format {
	case ClaudeCode:
		p.claude(line, &out)
	case Codex:
		p.codex(line, &out)
	}
	return out.events
}

// emitter collects the events of one line.
type emitter struct{ events []projection.NewEvent }

func (e *emitter) add(typ string, data any) {
	raw, _ := json.Marshal(data)
	e.events = append(e.events, projection.NewEvent{Type: typ, Data: raw})
}

// prompt opens a new turn for a user's prompt, closing the one before.
func (p *Parser) prompt(text string, out *emitter) {
	if p.open {
		out.add(projection.TypeTurnEnd, map[string]string{"reason": "completed"})
	}
	out.add(projection.TypeTurnStart, struct{}{})
	p.open = true
	out.add(projection.TypeMessageUser, map[string]string{"text": clip(text, projection.MaxTextBytes)})
	if p.title == "" {
		p.title = titleOf(text)
	}
}

// inTurn opens a turn for agent output that came without a prompt (a
// resumed session, a subagent's file).
func (p *Parser) inTurn(out *emitter) {
	if !p.open {
		out.add(projection.TypeTurnStart, struct{}{})
		p.open = true
	}
}

func (p *Parser) endTurn(reason string, out *emitter) {
	if p.open {
		out.add(projection.TypeTurnEnd, map[string]string{"reason": reason})
		p.open = false
	}
}

// assistant emits one assistant message: its text and its tool calls.
func (p *Parser) assistant(text string, calls []projection.ToolCall, out *emitter) {
	if text == "" && len(calls) == 0 {
		return
	}
	p.inTurn(out)
	for i := range calls {
		calls[i].Args = fitArgs(calls[i].Args)
		p.calls[calls[i].ID] = calls[i].Name
		p.pending[calls[i].ID] = calls[i].Args
	}
	if len(calls) > projection.MaxToolCalls {
		p.skipped[fmt.Sprintf("tool calls beyond %d in one message", projection.MaxToolCalls)] += len(calls) - projection.MaxToolCalls
		calls = calls[:projection.MaxToolCalls]
	}
	d := map[string]any{"text": clip(text, projection.MaxTextBytes)}
	if len(calls) > 0 {
		d["toolCalls"] = calls
	}
	out.add(projection.TypeMessageAssistant, d)
}

// result emits a tool's result, preceded by the list write its call makes
// when it is one of the agents' todo tools and it succeeded: the order a
// harness forwarding the call to Tack would give (call, write, result).
func (p *Parser) result(callID, content string, isError bool, extra json.RawMessage, out *emitter) {
	name, ok := p.calls[callID]
	if !ok {
		name = "unknown"
		p.skip("results of calls not in the transcript")
	}
	args := p.pending[callID]
	delete(p.calls, callID)
	delete(p.pending, callID)
	p.inTurn(out)
	if !isError {
		if ev, ok := p.listWrite(name, args, content, extra); ok {
			out.events = append(out.events, ev)
		}
	}
	out.add(projection.TypeToolResult, map[string]any{"callId": clip(callID, projection.MaxToolCallIDLen), "name": name, "isError": isError, "content": clip(content, projection.MaxToolResultText)})
}

// listWrite maps a successful call of a todo tool to a todo/write: the
// dialects' translation for the tools of projection.Dialects (TodoWrite,
// update_plan), the task list folded into a whole list for Claude Code's
// task tools.
func (p *Parser) listWrite(name string, args json.RawMessage, content string, extra json.RawMessage) (projection.NewEvent, bool) {
	if d, ok := projection.Dialects[name]; ok {
		ev, _, err := d.Parse(args)
		if err != nil {
			p.skip(name + " calls Tack cannot read")
			return ev, false
		}
		return ev, true
	}
	switch name {
	case "TaskCreate":
		var in struct {
			Subject string `json:"subject"`
		}
		_ = json.Unmarshal(args, &in)
		id := taskID(content, extra)
		if id == "" {
			id = fmt.Sprint(p.nextTask)
		}
		var n int
		if _, err := fmt.Sscan(id, &n); err == nil && n >= p.nextTask {
			p.nextTask = n + 1
		}
		p.tasks = append(p.tasks, task{id: id, subject: in.Subject, status: projection.StatusPending})
	case "TaskUpdate":
		var in struct {
			TaskID  string  `json:"taskId"`
			Status  string  `json:"status"`
			Subject *string `json:"subject"`
		}
		_ = json.Unmarshal(args, &in)
		i := slices.IndexFunc(p.tasks, func(t task) bool { return t.id == in.TaskID })
		if i < 0 {
			p.skip("updates of tasks not created in the transcript")
			return projection.NewEvent{}, false
		}
		if in.Subject != nil {
			p.tasks[i].subject = *in.Subject
		}
		switch in.Status {
		case "deleted":
			p.tasks = append(p.tasks[:i:i], p.tasks[i+1:]...)
		case "":
		default:
			p.tasks[i].status = in.Status
		}
	default:
		return projection.NewEvent{}, false
	}
	todos := make([]projection.TodoInput, 0, len(p.tasks))
	for _, t := range p.tasks {
		todos = append(todos, projection.TodoInput{Content: t.subject, Status: t.status})
	}
	raw, _ := json.Marshal(map[string]any{"todos": todos})
	return projection.NewEvent{Type: projection.TypeTodoWrite, Data: raw}, true
}

// taskID reads the id Claude Code gave a created task: from the result's
// structured toolUseResult, or from its text "Task #N created …".
func taskID(content string, extra json.RawMessage) string {
	var r struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	if json.Unmarshal(extra, &r) == nil && r.Task.ID != "" {
		return r.Task.ID
	}
	if _, after, ok := strings.Cut(content, "#"); ok {
		n := 0
		for n < len(after) && after[n] >= '0' && after[n] <= '9' {
			n++
		}
		return after[:n]
	}
	return ""
}

// fitArgs keeps a tool call's arguments within what an event may carry: a
// JSON object, at most projection.MaxToolArgsBytes. Larger arguments (a
// whole file written) are replaced by a note of their size.
func fitArgs(args json.RawMessage) json.RawMessage {
	var compact bytes.Buffer
	if len(bytes.TrimSpace(args)) == 0 || json.Compact(&compact, args) != nil {
		return json.RawMessage("{}")
	}
	if compact.Len() > projection.MaxToolArgsBytes {
		raw, _ := json.Marshal(map[string]any{"truncated": true, "bytes": compact.Len()})
		return raw
	}
	return compact.Bytes()
}

// clip cuts s to at most n bytes on a rune boundary and drops NUL
// characters, which no store keeps.
func clip(s string, n int) string {
	s = strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func titleOf(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) > MaxTitleChars {
		r := []rune(line)
		line = strings.TrimSpace(string(r[:MaxTitleChars-1])) + "…"
	}
	return line
}
