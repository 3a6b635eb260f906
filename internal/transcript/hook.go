package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
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
// agent of format f: all Tack maps that the agent has (Agent.HookEvents),
// as the agent names them (Agent.HookNames).
func HookEvents(f Format) []string {
	a := agents[f]
	if a == nil {
		return nil
	}
	out := make([]string, len(a.HookEvents))
	for i, e := range a.HookEvents {
		out[i] = e
		if own := a.HookNames[e]; own != "" {
			out[i] = own
		}
	}
	return out
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

// SyncedHeader is the request header with which `tack hook` says it sent
// the agent's transcript up to the hook ("synced"): the server then takes
// the conversation from the transcript alone (HookState.Synced).
const SyncedHeader = "Tack-Transcript"

// AppendHeader is, on a hook's answer, the server's word that it takes a
// transcript's lines in the hook's own request; on a hook's request, the
// Tack session those lines go to. The request's body then begins with
// AppendField, whose value is what POST /sessions/{id}/events takes,
// followed by the agent's payload's own fields.
const AppendHeader = "Tack-Append"

// AppendField is the hook body's first field when AppendHeader is sent.
const AppendField = "tack_append"

// TodoToolsHeader is the request header with which `tack hook` says at
// SessionStart whether the agent offers the model a list tool of its own:
// "native" or "none".
const TodoToolsHeader = "Tack-Todo-Tools"

// MaxHookIDBytes bounds the agent's ids a hook carries (session, prompt,
// turn, tool use, subagent).
const MaxHookIDBytes = 100

// Hook is what Tack reads of a hook's JSON payload; every other key is
// ignored.
type Hook struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	Event          string `json:"hook_event_name"`
	// AgentEvent is the event as the agent names it, which an answer
	// names: Event, unless the agent names it otherwise than Tack
	// (Agent.HookNames).
	AgentEvent       string          `json:"-"`
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
	Message          string          `json:"message"`
	AgentID          string          `json:"agent_id"`
	Reason           string          `json:"reason"`
	// LastAssistantMessage is the text that closes the turn (Stop): Claude
	// Code writes its transcript line around the hook, maybe after it.
	LastAssistantMessage string `json:"last_assistant_message"`
	// AgentTranscriptPath is a subagent's own transcript (SubagentStop).
	AgentTranscriptPath string `json:"agent_transcript_path"`
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
	h.AgentEvent = h.Event
	return h, nil
}

// SessionKey is the key of the session the hook is of in format f: the
// key import and watch give that session's transcript.
func (h Hook) SessionKey(f Format) string { return string(f) + ":" + h.SessionID }

// ChildKey is the key of the subagent session a hook with an agent_id is
// of (its tool calls, its SubagentStop), as import and watch name a
// subagent's transcript.
func (h Hook) ChildKey(f Format) string { return h.SessionKey(f) + "/agent-" + h.AgentID }

// Transcripts are the transcript files that hold what the hook is about,
// the ones `tack hook` sends before the hook: a subagent's own file for a
// subagent's hook (and its parent's at its SubagentStop), else the
// session's.
func (h Hook) Transcripts() []string {
	if h.TranscriptPath == "" {
		return nil
	}
	if h.AgentID == "" {
		return []string{h.TranscriptPath}
	}
	child := h.AgentTranscriptPath
	if child == "" {
		// Claude Code keeps a subagent's lines beside its session's file:
		// <session id>/subagents/agent-<agent id>.jsonl.
		child = filepath.Join(strings.TrimSuffix(h.TranscriptPath, ".jsonl"), "subagents", "agent-"+h.AgentID+".jsonl")
	}
	if h.Event == HookSubagentStop {
		return []string{child, h.TranscriptPath}
	}
	return []string{child}
}

// turnID is the agent's id of the hook's prompt: codex's turn, else the
// prompt's.
func (h Hook) turnID() string {
	if h.TurnID != "" {
		return h.TurnID
	}
	return h.PromptID
}

// HookState is what the events of a hook depend on: Tack's session as it
// stands. A todo tool's list write depends on the list too, which Tack
// reads where it appends it (listWrite).
type HookState struct {
	TurnOpen bool
	// Transcript is what `tack hook` said of the agent's transcript
	// (SyncedHeader): "synced" when it was sent up to the hook, "unsent"
	// when it is to come, "" when there is none. With one, the
	// conversation is the transcript's, as the model saw it, and the hook
	// adds only what the transcript may not hold yet: a prompt, a list
	// tool's write (its result line comes later, and a person's edit may
	// come between), the turn's closing text, the ends.
	Transcript string
}

// Synced reports whether the transcript is the conversation's source.
func (st HookState) Synced() bool { return st.Transcript != "" }

// TackTodoTool is the name the agents give Tack's own todo_write, served
// by its MCP server as `tack connect` registers it ("tack").
const TackTodoTool = "mcp__tack__todo_write"

// IsTodoTool reports whether a tool is one of the agents' todo tools,
// whose successful call is a list write.
func IsTodoTool(name string) bool {
	_, dialect := projection.DialectOf(name)
	return dialect || name == projection.ToolTaskCreate || name == projection.ToolTaskUpdate
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
		if kind := harnessKind(h.Prompt); kind != "" {
			// A line the agent's harness wrote (a background task's
			// notification): no person's prompt, no turn of its own. The
			// transcript holds it; without it, the hook's text stands in.
			if !st.Synced() {
				out.add(projection.TypeMessageUser, userData{Text: clip(h.Prompt, projection.MaxTextBytes), Source: projection.SourceHarness, Kind: kind})
			}
			break
		}
		if open {
			out.add(projection.TypeTurnEnd, map[string]string{"reason": string(projection.EndCompleted)})
		}
		out.add(projection.TypeTurnStart, struct{}{}, keyed(TurnKey, turn)...)
		out.add(projection.TypeMessageUser, userData{Text: clip(h.Prompt, projection.MaxTextBytes)}, keyed(PromptKey, turn)...)
	case HookPreToolUse, HookPostToolUse:
		if h.ToolUseID == "" || h.ToolName == "" {
			return nil
		}
		if st.Synced() {
			// The call is the transcript's, in the log already when it was
			// sent; its list write is made now, in its place before a
			// person's edit that comes while the result line is unwritten.
			if h.Event == HookPostToolUse && st.Transcript == "synced" && open {
				id := clip(h.ToolUseID, projection.MaxToolCallIDLen)
				if d, ok := listWrite(clip(h.ToolName, projection.MaxToolNameLen), fitArgs(h.ToolInput), h.ToolResponse, ResponseText(h.ToolResponse)); ok {
					out.add(projection.TypeTodoWrite, d, WriteKey(id))
				}
			}
			return out.events
		}
		inTurn()
		id := clip(h.ToolUseID, projection.MaxToolCallIDLen)
		name := clip(h.ToolName, projection.MaxToolNameLen)
		call := projection.ToolCall{ID: id, Name: name, Args: fitArgs(h.ToolInput)}
		out.add(projection.TypeMessageAssistant, map[string]any{"text": "", "toolCalls": []projection.ToolCall{call}}, CallKey(id))
		if h.Event == HookPreToolUse {
			break
		}
		if d, ok := listWrite(name, call.Args, h.ToolResponse, ResponseText(h.ToolResponse)); ok {
			out.add(projection.TypeTodoWrite, d, WriteKey(id))
		}
		result := map[string]any{"callId": id, "name": name, "isError": false, "content": clip(ResponseText(h.ToolResponse), projection.MaxToolResultText)}
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
				// The closing text belongs to the turn it closes, whether
				// the transcript's line of it came first or comes later.
				if text := clip(h.LastAssistantMessage, projection.MaxTextBytes); strings.TrimSpace(text) != "" && turn != "" {
					out.add(projection.TypeMessageAssistant, map[string]any{"text": text}, SayKey(turn, text))
				}
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

// harnessKind names the kind of a prompt any agent's harness wrote, ""
// for a person's.
func harnessKind(text string) string {
	for _, a := range sorted {
		if kind := a.Harness(text); kind != "" {
			return kind
		}
	}
	return ""
}

// ResponseText is a tool's result as the model was shown it, from a hook's
// tool_response, which is the tool's own object rather than that text:
// the transcript's tool_result holds the model's text and wins wherever it
// is read. Known shapes are mapped to the same text: a string as it is,
// MCP content as its text, Bash's stdout and stderr, Read's text, Edit's
// and Write's change as a unified diff; anything else as its JSON.
func ResponseText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []textBlock
	if json.Unmarshal(raw, &blocks) == nil && len(blocks) > 0 {
		return blockText(blocks)
	}
	var mcp struct {
		Content []textBlock `json:"content"`
	}
	if json.Unmarshal(raw, &mcp) == nil && len(mcp.Content) > 0 {
		return blockText(mcp.Content)
	}
	var r toolResponse
	if json.Unmarshal(raw, &r) == nil {
		switch {
		case r.Stdout != nil || r.Stderr != nil:
			return joinNonEmpty(deref(r.Stdout), deref(r.Stderr))
		case len(r.StructuredPatch) > 0:
			return unifiedDiff(r.FilePath, r.StructuredPatch)
		case r.File != nil && r.File.Content != nil:
			return *r.File.Content
		case r.Type == "create" && r.FilePath != "" && r.Content != nil:
			lines := prefixed("+", *r.Content)
			return unifiedDiff(r.FilePath, []patchHunk{{NewStart: 1, NewLines: len(lines), Lines: lines}})
		}
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return ""
	}
	return b.String()
}

// toolResponse is what ResponseText reads of Claude Code's tool_response
// objects.
type toolResponse struct {
	Type            string      `json:"type"`
	Stdout          *string     `json:"stdout"`
	Stderr          *string     `json:"stderr"`
	FilePath        string      `json:"filePath"`
	Content         *string     `json:"content"`
	StructuredPatch []patchHunk `json:"structuredPatch"`
	File            *struct {
		Content *string `json:"content"`
	} `json:"file"`
}

// textBlock is one block of MCP or Anthropic content.
type textBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// patchHunk is one hunk of Claude Code's structuredPatch.
type patchHunk struct {
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Lines    []string `json:"lines"`
}

func unifiedDiff(path string, hunks []patchHunk) string {
	var b strings.Builder
	fmt.Fprintf(&b, "--- %s\n+++ %s\n", path, path)
	for _, h := range hunks {
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", h.OldStart, h.OldLines, h.NewStart, h.NewLines)
		for _, l := range h.Lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func prefixed(prefix, text string) []string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	for i := range lines {
		lines[i] = prefix + lines[i]
	}
	return lines
}

func blockText(blocks []textBlock) string {
	parts := make([]string, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == "text" {
			parts = append(parts, b.Text)
		} else {
			parts = append(parts, "["+b.Type+"]")
		}
	}
	return strings.Join(parts, "\n")
}

func joinNonEmpty(parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, "\n")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
