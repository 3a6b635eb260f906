package transcript

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/tack-dev/tack/internal/projection"
)

// ClaudeCode is Claude Code: its session files are JSONL under
// ~/.claude/projects, one per session, with each subagent's in a folder
// beside it; its hooks are in ~/.claude/settings.json; each running
// interactive session keeps ~/.claude/sessions/<pid>.json.
const ClaudeCode Format = "claude-code"

func init() {
	register(&Agent{
		Name:    ClaudeCode,
		Title:   "Claude Code",
		Detect:  claudeDetect,
		open:    claudeOpen,
		parse:   (*Parser).claude,
		spawns:  true,
		Harness: claudeHarness,
		HomeDir: ".claude", HomeEnv: "CLAUDE_CONFIG_DIR",
		Transcripts: "projects",
		Settings:    "settings.json",
		MCP:         MCPConfig{Way: MCPConfigStateFile},
		HookEvents: []string{HookSessionStart, HookUserPromptSubmit, HookPreToolUse, HookPostToolUse,
			HookNotification, HookStop, HookSubagentStop, HookPreCompact, HookSessionEnd},
		// SessionStart takes command hooks alone.
		HTTPHooks: []string{HookUserPromptSubmit, HookPreToolUse, HookPostToolUse,
			HookNotification, HookStop, HookSubagentStop, HookPreCompact, HookSessionEnd},
		Live: "sessions",
		// Claude Code runs its tasks in parallel.
		Parallel: true,
		ListTool: "TodoWrite",
		// TodoWrite: {"todos": [{"content", "status", "activeForm"}]}.
		// activeForm is the spinner text of an in-progress item ("Running
		// the tests"), kept on the item.
		Dialect:         &projection.Dialect{Tool: "TodoWrite", List: "todos", Item: "content", Kept: []string{"activeForm"}},
		NativeTodoTools: claudeTodoTools,
	})
}

// claudeDetect: a line with a session id or a uuid, or of a type only
// Claude Code writes.
func claudeDetect(line []byte) bool {
	var probe struct {
		Type      string `json:"type"`
		SessionID string `json:"sessionId"`
		UUID      string `json:"uuid"`
	}
	if json.Unmarshal(line, &probe) != nil {
		return false
	}
	return probe.SessionID != "" || probe.UUID != "" || probe.Type == "summary" || probe.Type == "file-history-snapshot" || probe.Type == "user" || probe.Type == "assistant"
}

// claudeOpen reads a subagent's own file from its path:
// <session id>/subagents/agent-<id>.jsonl is a child of that session; an
// older agent-<id>.jsonl beside its parent's names the parent in its lines.
func claudeOpen(p *Parser, path string) {
	base := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if !strings.HasPrefix(base, "agent-") {
		return
	}
	p.subagent = true
	if dir := filepath.Dir(path); filepath.Base(dir) == "subagents" {
		p.info.Parent = string(ClaudeCode) + ":" + filepath.Base(filepath.Dir(dir))
		p.info.Key = p.info.Parent + "/" + base
	}
}

// claudeTodoTools: Claude Code offers TodoWrite or its task tools on
// models before claude-opus-4-8 and whenever
// CLAUDE_CODE_ENABLE_TODO_TOOLS=1; its newest models, its default, have
// none. The model is the one --model names, else $ANTHROPIC_MODEL.
func claudeTodoTools(env func(string) string, cmdline string) bool {
	if env("CLAUDE_CODE_ENABLE_TODO_TOOLS") == "1" {
		return true
	}
	model := env("ANTHROPIC_MODEL")
	if m := modelFlag().FindStringSubmatch(cmdline); m != nil {
		model = m[1]
	}
	return ModelHasTodoTools(model)
}

var (
	modelFlag    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|\x00)--model(?:=|\x00)([^\x00]+)`) })
	modelVersion = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|-)(\d+)(?:-(\d)(?:-|$))?`) })
)

// ModelHasTodoTools reports whether Claude Code offers a list tool on a
// model: those before claude-opus-4-8 (claude-3-5-sonnet, claude-sonnet-4-5,
// …); the newer ones and the aliases (which name the newest) have none.
func ModelHasTodoTools(model string) bool {
	name := strings.TrimPrefix(strings.ToLower(model), "claude-")
	for _, family := range []string{"opus-", "sonnet-", "haiku-"} {
		name = strings.Replace(name, family, "", 1)
	}
	m := modelVersion().FindStringSubmatch(name)
	if m == nil {
		return false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	return major < 4 || (major == 4 && minor < 8)
}

// claudeLine is what Tack reads of a line of a Claude Code session file;
// every other field is ignored.
type claudeLine struct {
	Type             string          `json:"type"`
	Subtype          string          `json:"subtype"`
	UUID             string          `json:"uuid"`
	ParentUUID       string          `json:"parentUuid"`
	PromptID         string          `json:"promptId"`
	SessionID        string          `json:"sessionId"`
	AgentID          string          `json:"agentId"`
	Cwd              string          `json:"cwd"`
	IsSidechain      bool            `json:"isSidechain"`
	IsMeta           bool            `json:"isMeta"`
	IsCompactSummary bool            `json:"isCompactSummary"`
	Summary          string          `json:"summary"`
	Message          *claudeMessage  `json:"message"`
	ToolResult       json.RawMessage `json:"toolUseResult"`
}

type claudeMessage struct {
	// ID is the API's id of the model's message, shared by the lines
	// Claude Code writes of one message, a block each.
	ID         string          `json:"id"`
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	StopReason string          `json:"stop_reason"`
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

// claudeHarness names the kind of a user-role text Claude Code's harness
// wrote, "" for a person's prompt.
func claudeHarness(text string) string {
	t := strings.TrimSpace(text)
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(t, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("<task-notification>"):
		return KindTaskNotification
	case has("<command-name>", "<command-message>", "<command-args>", "<local-command-stdout>", "<local-command-stderr>", "<bash-input>", "<bash-stdout>", "<bash-stderr>"):
		return KindCommand
	case has("[Request interrupted by user"):
		return KindInterrupted
	case has("<ide_selection>", "<ide_opened_file>", "<ide_diagnostics>"):
		return KindIDEContext
	case has("<system-reminder>", "<local-command-caveat>", "<user-prompt-submit-hook>", "Caveat: The messages below were generated by the user while running local commands"):
		return KindContext
	}
	return ""
}

func (p *Parser) claude(raw []byte, out *emitter) {
	var l claudeLine
	if json.Unmarshal(raw, &l) != nil {
		p.skip("lines of an unknown shape")
		return
	}
	if p.info.Cwd == "" && l.Cwd != "" {
		p.info.Cwd = l.Cwd
	}
	if p.subagent && p.info.Parent == "" && l.SessionID != "" {
		// An older subagent file beside its parent's: the line names the
		// parent session.
		p.info.Parent = string(ClaudeCode) + ":" + l.SessionID
		p.info.Key = p.info.Parent + "/" + strings.TrimPrefix(p.info.Key, string(ClaudeCode)+":")
	}
	switch {
	case l.Type == "summary":
		// A summary names the conversation Claude Code resumed, but not
		// the session: its title is its first prompt, as the hooks see it
		// live, so that the live session and the import read the same.
		p.skip("summary lines")
		return
	case l.Type == "system" && (l.Subtype == "turn_duration" || l.Subtype == "stop_hook_summary"):
		// Written when a turn ends, after its last assistant line (the
		// summary of the Stop hooks that ran then).
		p.endTurn(projection.EndCompleted, out)
		return
	case l.Type != "user" && l.Type != "assistant":
		p.skip(l.Type + " lines")
		return
	case l.IsSidechain && !p.subagent:
		// A subagent's lines (Task tool) are its own session, a child of
		// this one: never in this session's conversation or list.
		p.sidechain(l, raw, out)
		return
	case l.Message == nil:
		p.skip(l.Type + " lines without a message")
		return
	}
	// A plain string content is the message's one text.
	blocks, text := claudeContent(l.Message.Content)
	if text != "" {
		blocks = []claudeBlock{{Type: "text", Text: text}}
	}
	if l.Type == "user" {
		if l.PromptID != "" {
			p.said = l.PromptID
		}
		p.claudeUser(l, blocks, out)
		return
	}
	var (
		calls []projection.ToolCall
		texts []string
	)
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_use", "server_tool_use":
			calls = append(calls, projection.ToolCall{ID: b.ID, Name: b.Name, Args: b.Input})
			p.delegate(b.Name, b.Input)
		default:
			// thinking and redacted_thinking are the model's private
			// reasoning: not part of the conversation it is shown.
			p.skip(b.Type + " blocks")
		}
	}
	p.assistant(strings.Join(texts, "\n"), calls, l.Message.ID, out)
	if l.Message.StopReason == "end_turn" {
		p.endTurn(projection.EndCompleted, out)
	}
}

// claudeUser maps a user line: tool results, harness lines and, if any
// text is left, a person's prompt.
func (p *Parser) claudeUser(l claudeLine, blocks []claudeBlock, out *emitter) {
	var (
		prompt  []string
		results int
	)
	for _, b := range blocks {
		switch b.Type {
		case "tool_result":
			results++
			p.result(b.ToolUseID, resultText(b.Content), b.IsError, l.ToolResult, out)
		case "text":
			switch kind := claudeHarness(b.Text); {
			case strings.TrimSpace(b.Text) == "":
			case l.IsCompactSummary:
				p.harness(KindCompactSummary, b.Text, out)
			case kind != "":
				p.harness(kind, b.Text, out)
			case l.IsMeta:
				p.harness(KindContext, b.Text, out)
			case results > 0:
				// Text beside tool results is the harness's (a hook's
				// output, a note on a refused call), not a new prompt.
				p.harness(KindOther, b.Text, out)
			default:
				prompt = append(prompt, b.Text)
			}
		default:
			p.skip(b.Type + " blocks")
		}
	}
	if len(prompt) > 0 {
		p.prompt(l.PromptID, strings.Join(prompt, "\n"), out)
	}
}

// sidechain hands a subagent's line to its child session. Claude Code
// names the subagent (agentId) on newer lines; on older ones a sidechain is
// the chain of lines from its first, linked by parentUuid.
func (p *Parser) sidechain(l claudeLine, raw []byte, out *emitter) {
	key := ""
	switch {
	case l.AgentID != "":
		key = p.info.Key + "/agent-" + l.AgentID
	case p.roots[l.ParentUUID] != "":
		key = p.roots[l.ParentUUID]
	default:
		key = p.info.Key + "/sidechain"
		if id := l.UUID; id != "" {
			key += "-" + id[:min(len(id), 8)]
		}
	}
	if p.roots == nil {
		p.roots, p.children = map[string]string{}, map[string]*Parser{}
	}
	if l.UUID != "" {
		p.roots[l.UUID] = key
	}
	c := p.children[key]
	if c == nil {
		c = newParser(p.format, key)
		c.subagent = true
		c.info.Parent = p.info.Key
		c.delegator = p
		p.children[key] = c
	}
	for _, ev := range c.Line(raw) {
		ev.Session = key
		out.events = append(out.events, ev)
	}
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
