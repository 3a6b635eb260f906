package transcript

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/tack-dev/tack/internal/projection"
)

// Codex is OpenAI's codex CLI: its rollout files are JSONL under
// ~/.codex/sessions, one per thread; its hooks are in ~/.codex/hooks.json
// and its MCP servers in ~/.codex/config.toml.
const Codex Format = "codex"

func init() {
	register(&Agent{
		Name:    Codex,
		Title:   "Codex",
		Detect:  codexDetect,
		parse:   (*Parser).codex,
		Harness: codexHarness,
		HomeDir: ".codex", HomeEnv: "CODEX_HOME",
		Transcripts: "sessions",
		Settings:    "hooks.json",
		MCP:         MCPConfig{Way: MCPConfigTOML},
		HookEvents: []string{HookSessionStart, HookUserPromptSubmit, HookPreToolUse, HookPermissionRequest,
			HookPostToolUse, HookStop, HookPreCompact, HookPostCompact, HookSessionEnd},
		// An MCP call's _meta names its thread, the hooks' session_id.
		MCPThreadMeta: "threadId",
		// codex's update_plan keeps one item in progress.
		Parallel: false,
		ListTool: "update_plan",
		// update_plan: {"explanation"?, "plan": [{"step", "status"}]}. The
		// explanation is a note to the user about this change, not part
		// of the list, so it is dropped.
		Dialect: &projection.Dialect{Tool: "update_plan", List: "plan", Item: "step", Dropped: []string{"explanation"},
			Statuses: map[string]string{"inProgress": projection.StatusInProgress}},
		NativeTodoTools: codexTodoTools,
	})
}

// codexDetect: a line {timestamp, type, payload} of a type only a rollout
// holds.
func codexDetect(line []byte) bool {
	var probe struct {
		Type    string          `json:"type"`
		Payload json.RawMessage `json:"payload"`
	}
	if json.Unmarshal(line, &probe) != nil {
		return false
	}
	return probe.Payload != nil && (probe.Type == "session_meta" || probe.Type == "response_item" || probe.Type == "event_msg" || probe.Type == "turn_context" || probe.Type == "compacted")
}

// codexTodoTools: codex offers update_plan only when its config.toml
// enables [tools.update_plan], or its command line does.
func codexTodoTools(env func(string) string, cmdline string) bool {
	home := env("CODEX_HOME")
	if home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			home = filepath.Join(h, ".codex")
		}
	}
	cfg, _ := os.ReadFile(filepath.Join(home, "config.toml"))
	return updatePlanOn().Match(cfg) || strings.Contains(cmdline, "tools.update_plan.enabled=true")
}

var updatePlanOn = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)^\[tools\.update_plan\]\s*\n(?:[^\[].*\n)*?\s*enabled\s*=\s*true`)
})

// codexLine is a line of a codex rollout file: {timestamp, type, payload}.
type codexLine struct {
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload"`
}

// codexItem is what Tack reads of a payload.
type codexItem struct {
	Type    string          `json:"type"`
	ID      string          `json:"id"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Name    string          `json:"name"`
	// Namespace is a deferred tool's (an MCP server's, "mcp__tack"):
	// the model calls it by namespace and name, as the hooks name it
	// ("mcp__tack__todo_write").
	Namespace string          `json:"namespace"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	Action    json.RawMessage `json:"action"`
	CallID    string          `json:"call_id"`
	Cwd       string          `json:"cwd"`
	Output    json.RawMessage `json:"output"`
	// Source is a session_meta's: "cli", "exec", …, or for a sub-thread
	// {"subagent": {"thread_spawn": {"parent_thread_id", …}}}.
	Source json.RawMessage `json:"source"`
	// TurnID is a turn_context's turn, a UUIDv7 (its first 13 characters
	// are its millisecond).
	TurnID string `json:"turn_id"`
}

// codexParent is the thread a session_meta's source says the session was
// spawned from, "" for a thread of its own.
func codexParent(source json.RawMessage) string {
	var s struct {
		Subagent struct {
			ThreadSpawn struct {
				ParentThreadID string `json:"parent_thread_id"`
			} `json:"thread_spawn"`
		} `json:"subagent"`
	}
	if json.Unmarshal(source, &s) != nil {
		return ""
	}
	return s.Subagent.ThreadSpawn.ParentThreadID
}

// codexHarness names the kind of a user-role text codex wrote itself (the
// context it gives the model on every session, a shell command the person
// ran, an abort), "" for a person's prompt.
func codexHarness(text string) string {
	t := strings.TrimSpace(text)
	for _, h := range []struct{ prefix, kind string }{
		{"<environment_context>", KindContext}, {"<user_instructions>", KindContext},
		{"# AGENTS.md", KindContext}, {"<permissions", KindContext},
		{"<user_shell_command>", KindCommand}, {"<turn_aborted>", KindInterrupted},
	} {
		if strings.HasPrefix(t, h.prefix) {
			return h.kind
		}
	}
	return ""
}

// codexRequest is the person's request in a prompt codex's IDE extension
// wrote: its context first, the request after this heading.
const codexRequest = "## My request for Codex:"

func (p *Parser) codex(raw []byte, out *emitter) {
	var l codexLine
	var it codexItem
	if json.Unmarshal(raw, &l) != nil || json.Unmarshal(l.Payload, &it) != nil {
		p.skip("lines of an unknown shape")
		return
	}
	if p.inherited && l.Type != "session_meta" && l.Type != "turn_context" {
		p.skip("lines of the parent thread a sub-thread was forked with")
		return
	}
	if l.Type != "event_msg" || it.Type == "task_started" || it.Type == "task_complete" || it.Type == "turn_complete" || it.Type == "turn_aborted" {
		// A line that is no part of the model's response (its items, or
		// the events that mirror them) ends it.
		model := l.Type == "response_item" && (it.Type == "reasoning" || it.Type == "function_call" || it.Type == "custom_tool_call" ||
			it.Type == "local_shell_call" || (it.Type == "message" && it.Role == "assistant"))
		if model && !p.inResponse {
			p.responses++
		}
		p.inResponse = model
	}
	switch l.Type {
	case "session_meta":
		switch {
		case p.thread == "" && it.ID != "":
			// The file's own thread, and the thread it was spawned from.
			p.thread = it.ID
			p.info.Key = string(Codex) + ":" + it.ID
			if parent := codexParent(it.Source); parent != "" {
				p.subagent = true
				p.info.Parent = string(Codex) + ":" + parent
			}
		case p.thread != "" && it.ID != p.thread:
			// A thread forked with its parent's context: the parent's lines
			// follow, up to the thread's own first turn.
			p.inherited = true
		case it.ID == p.thread:
			p.inherited = false
		}
		if p.info.Cwd == "" {
			p.info.Cwd = it.Cwd
		}
		return
	case "turn_context":
		// The thread's own first turn: one with no id, or one begun no
		// earlier than the thread (UUIDv7s sort by their millisecond).
		if p.inherited && (it.TurnID == "" || len(it.TurnID) >= 13 && len(p.thread) >= 13 && it.TurnID[:13] >= p.thread[:13]) {
			p.inherited = false
		}
		if p.info.Cwd == "" {
			p.info.Cwd = it.Cwd
		}
		p.skip("turn_context lines")
		return
	case "compacted":
		// The summary codex continues from after compacting its context.
		var c struct {
			Message string `json:"message"`
		}
		_ = json.Unmarshal(l.Payload, &c)
		p.harness(KindCompactSummary, c.Message, out)
		return
	case "response_item":
	case "event_msg":
		// Events mirror the response items (user_message, agent_message);
		// only the ends of turns are news.
		switch it.Type {
		case "task_started":
			// The turn's id comes before its prompt: the prompt's keys.
			p.turn = it.TurnID
			p.skip("event_msg " + it.Type)
		case "task_complete", "turn_complete":
			p.endTurn(projection.EndCompleted, out)
		case "turn_aborted":
			p.endTurn(projection.EndInterrupted, out)
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
			if kind := codexHarness(text); kind != "" {
				p.harness(kind, text, out)
				return
			}
			first := p.info.Title == ""
			p.prompt(p.turn, text, out)
			if _, request, ok := strings.Cut(text, codexRequest); ok && first {
				p.info.Title = titleOf(request)
			}
		case "assistant":
			p.assistant(text, nil, p.codexResponse(), out)
		default:
			p.skip(it.Role + " messages")
		}
	case "function_call":
		// arguments is a JSON text inside a string.
		var args string
		if json.Unmarshal(it.Arguments, &args) != nil {
			args = string(it.Arguments)
		}
		name := it.Name
		if it.Namespace != "" {
			name = it.Namespace + "__" + it.Name
		}
		p.assistant("", []projection.ToolCall{{ID: it.CallID, Name: name, Args: json.RawMessage(args)}}, p.codexResponse(), out)
	case "custom_tool_call":
		var input string
		_ = json.Unmarshal(it.Input, &input)
		a, _ := json.Marshal(map[string]string{"input": input})
		p.assistant("", []projection.ToolCall{{ID: it.CallID, Name: it.Name, Args: a}}, p.codexResponse(), out)
	case "local_shell_call":
		a, _ := json.Marshal(map[string]json.RawMessage{"action": it.Action})
		p.assistant("", []projection.ToolCall{{ID: it.CallID, Name: "local_shell", Args: a}}, p.codexResponse(), out)
	case "function_call_output", "custom_tool_call_output":
		p.result(it.CallID, codexOutput(it.Output), false, nil, out)
	default:
		// reasoning is encrypted or a summary of private reasoning.
		p.skip(it.Type + " items")
	}
}

// codexResponse is the id of the model's response the current line is
// part of: codex writes each of a response's items (its text, each call)
// as a line of its own, with no id they share, so the rollout's
// responses are numbered in order.
func (p *Parser) codexResponse() string { return "response-" + strconv.Itoa(p.responses) }

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
