// Package transcript turns agents' session files into Tack events: Claude
// Code's session JSONL (~/.claude/projects/**) and codex's rollout JSONL
// (~/.codex/sessions/**). It is pure: lines in, events out. A Parser reads
// one file's lines in order and answers each with the events it maps to;
// the same lines always give the same events, and the events of a prefix of
// a file are a prefix of the events of the whole file, so a reader that
// stopped part way resumes by counting events (see internal/importer).
//
// A file may hold more than one session: Claude Code wrote a subagent's
// lines (isSidechain) into its parent's file, and each such subagent is a
// child session of its own. Every event names the session it belongs to.
package transcript

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/strictjson"
)

// Format is the agent that wrote a transcript: an Agent's Name.
type Format string

// The kinds of a harness line: a user-role line the agent's harness wrote,
// not a person (message/user with "source": "harness"), as the projection
// names them.
const (
	KindTaskNotification = projection.KindTaskNotification
	KindCommand          = projection.KindCommand
	KindInterrupted      = projection.KindInterrupted
	KindIDEContext       = projection.KindIDEContext
	KindCompactSummary   = projection.KindCompactSummary
	KindContext          = projection.KindContext
	KindOther            = projection.KindOther
)

// PlanLifetime is how long the agents' lists stand: both Claude Code and
// codex keep their list across prompts until they write another.
const PlanLifetime = projection.PlanSession

// Event is one event to append to a session: projection.NewEvent's type
// and data, with the agent's own time for it (the line's timestamp; zero
// when the line gave none).
type Event struct {
	Type string          `json:"type"`
	At   time.Time       `json:"at,omitzero"`
	Data json.RawMessage `json:"data"`
	// Session is the key of the session the event belongs to: "" for the
	// file's own, a child's key (see Parser.Child) for a subagent's.
	Session string `json:"-"`
	// Keys are the agent's own ids of the event (see Keys), so that an
	// event that reaches Tack by a hook too is stored once.
	Keys []string `json:"keys,omitempty"`
	// Late is set by a writer that finds the event's turn ended already in
	// Tack's log (projection.NewEvent.Late).
	Late bool `json:"late,omitempty"`
}

// Keys are what an event carries to be stored once, whichever way reaches
// Tack first (projection.NewEvent.Keys). A hook and the transcript give
// the same keys for the same event: the agent's own ids.
//
//   - TurnKey(id) on a prompt's turn/start, PromptKey(id) on its
//     message/user, EndKey(id) on its turn/end: id is the prompt's
//     (Claude Code's promptId, codex's turn id);
//   - SayKey(id, text) on a message/assistant with text, in the turn of
//     prompt id;
//   - CallKey(id) on the message/assistant holding tool call id,
//     WriteKey(id) on the list write it made and ResultKey(id) on its
//     tool/result;
//   - and on every event a transcript maps to, LineKey: the event's place
//     among the session's events in the file and a hash of what it is, so
//     a transcript read again stores nothing twice and a line rewritten
//     in place is stored anew.
func TurnKey(id string) string   { return "turn:" + id }
func PromptKey(id string) string { return "prompt:" + id }
func EndKey(id string) string    { return "end:" + id }
func CallKey(id string) string   { return "call:" + id }
func WriteKey(id string) string  { return "write:" + id }
func ResultKey(id string) string { return "result:" + id }

// SayKey is the key of an assistant message's text said in the turn of
// prompt id: a Stop hook's last_assistant_message and the transcript's
// line of it are one event.
func SayKey(id, text string) string {
	h := sha256.Sum256([]byte(text))
	return fmt.Sprintf("say:%s:%x", id, h[:8])
}

// LineKey is the key of the n-th event (from 1) a transcript maps to for
// its session.
func LineKey(n int64, typ string, data json.RawMessage) string {
	h := sha256.New()
	h.Write([]byte(typ))
	h.Write([]byte{0})
	h.Write(data)
	return fmt.Sprintf("line:%d:%x", n, h.Sum(nil)[:8])
}

// maxCallKeys bounds the call keys of one message, within
// projection.MaxEventKeys with its line key.
const maxCallKeys = projection.MaxEventKeys - 1

// Detect names the format of a transcript from one of its lines, or ""
// when the line is no registered agent's. Any line of a transcript names
// it; a reader tries the lines in order until one does. No agent's real
// lines look like another's; a line made up to look like more than one
// agent's is read as the last of them by name, always the same one.
func Detect(line []byte) Format {
	for i := len(sorted) - 1; i >= 0; i-- {
		if sorted[i].Detect(line) {
			return sorted[i].Name
		}
	}
	return ""
}

// Info is what a session is, as the transcript says it.
type Info struct {
	// Key names the session stably: the agent and its session id.
	Key string
	// Title is the first real prompt's first line, or the transcript's own
	// summary; "" until one is read.
	Title string
	// Agent is the agent's name, Cwd its working directory ("" if unknown).
	Agent, Cwd string
	// Parent is the key of the session a subagent's belongs to, "" for a
	// top-level session.
	Parent string
	// StandIn is true while Title is a subagent's prompt, which stands in
	// for the task its parent's call gave it (in another file, or not
	// read yet): Tack titles the session by that prompt itself, and by
	// the task once it hears of the call.
	StandIn bool `json:",omitempty"`
}

// Parser maps one transcript's lines to events. The zero value is not
// usable; make one with New.
type Parser struct {
	format Format
	info   Info
	// subagent is true for a subagent's session, whose sidechain lines are
	// its conversation rather than lines to keep out of a parent's.
	subagent bool
	// thread is a codex rollout's own thread id, once its session_meta is
	// read; inherited is true while the lines are those of the parent
	// thread it was forked with.
	thread    string
	inherited bool
	open      bool
	calls     map[string]string // call id -> tool name, until its result
	pending   map[string]json.RawMessage
	skipped   map[string]int
	// children are the subagents whose lines are in this file, by key;
	// roots maps a sidechain line's uuid to its child's key.
	children map[string]*Parser
	roots    map[string]string
	// delegated maps the prompt of each subagent call (Task, Agent) to the
	// title of the task it gives; delegator is the parser of the session
	// whose call started this subagent, nil for a session of its own.
	delegated map[string]string
	// spawnedInfo are the subagents started since Spawned was last asked.
	spawnedInfo []Info
	delegator   *Parser
	at          time.Time // the current line's timestamp
	// turn is the agent's id of the current prompt (Claude Code's
	// promptId, codex's turn id), "" when it gave none; made counts the
	// events mapped for the file's own session, for their LineKey.
	turn string
	made int64
	// said is the prompt id of the latest user line that gave one: a
	// harness line (a task's notification) starts a request of its own
	// without starting a turn, and a Stop hook names that request.
	said string
	// responses counts the model's responses a codex rollout holds, whose
	// items carry no id of their own to share; inResponse is true while
	// the lines are the latest's (codexResponse).
	responses  int
	inResponse bool
}

// sayID is the id of the request an assistant's text answers (SayKey).
func (p *Parser) sayID() string {
	if p.said != "" {
		return p.said
	}
	return p.turn
}

// New returns a parser for the file at path in format f. The path names the
// session: its base name is the session's id (a Claude Code session file is
// <session id>.jsonl; codex's session_meta line overrides it). A Claude
// Code subagent's own file (<session id>/subagents/agent-<id>.jsonl, or an
// older agent-<id>.jsonl beside its parent's) is a child of that session.
func New(f Format, path string) *Parser {
	base := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	p := newParser(f, string(f)+":"+base)
	if a := agents[f]; a != nil && a.open != nil {
		a.open(p, path)
	}
	return p
}

func newParser(f Format, key string) *Parser {
	return &Parser{format: f, info: Info{Key: key, Agent: string(f)}, calls: map[string]string{},
		pending: map[string]json.RawMessage{}, skipped: map[string]int{}}
}

// Info is the session the file is, as far as the lines read so far say.
func (p *Parser) Info() Info { return p.info }

// Key is a stable name for the session the transcript is: the agent and its
// session id. Known once the first line is read.
func (p *Parser) Key() string { return p.info.Key }

// Title is the session's title; "" until one is read.
func (p *Parser) Title() string { return p.info.Title }

// Child is the subagent session of this file named key, nil if none.
func (p *Parser) Child(key string) *Parser { return p.children[key] }

// Skipped tallies what the parser read and did not map, by kind, its
// subagents' included.
func (p *Parser) Skipped() map[string]int {
	if len(p.children) == 0 {
		return p.skipped
	}
	all := map[string]int{}
	for k, n := range p.skipped {
		all[k] += n
	}
	for _, c := range p.children {
		for k, n := range c.skipped {
			all[k] += n
		}
	}
	return all
}

// SkippedText is Skipped as one line, "" when nothing was skipped.
func (p *Parser) SkippedText() string {
	skipped := p.Skipped()
	kinds := make([]string, 0, len(skipped))
	for k := range skipped {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for i, k := range kinds {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s ×%d", k, skipped[k])
	}
	return b.String()
}

func (p *Parser) skip(kind string) { p.skipped[kind]++ }

// Line maps one complete line (without its newline) to events.
func (p *Parser) Line(line []byte) []Event {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if !json.Valid(line) {
		p.skip("lines that are not JSON")
		return nil
	}
	var stamp struct {
		Timestamp string `json:"timestamp"`
	}
	_ = json.Unmarshal(line, &stamp)
	p.at, _ = time.Parse(time.RFC3339Nano, stamp.Timestamp)
	var out emitter
	out.at = p.at
	if a := agents[p.format]; a != nil {
		a.parse(p, line, &out)
	}
	for i := range out.events {
		ev := &out.events[i]
		if ev.Session != "" {
			continue // a subagent's, keyed by its own parser
		}
		p.made++
		data := ev.Data
		if d, ok := out.lineData[i]; ok {
			data = d
		}
		ev.Keys = append(ev.Keys, LineKey(p.made, ev.Type, data))
	}
	return out.events
}

// emitter collects the events of one line.
type emitter struct {
	events []Event
	at     time.Time
	// lineData is, by index in events, the data an event's line key is
	// made of where it is not the event's own (see Parser.assistant).
	lineData map[int]json.RawMessage
}

func (e *emitter) add(typ string, data any, keys ...string) {
	raw, _ := json.Marshal(data)
	e.events = append(e.events, Event{Type: typ, At: e.at, Data: raw, Keys: keys})
}

// turnKeys is key of the current prompt's id, none when it has none.
func (p *Parser) turnKeys(key func(string) string) []string {
	if p.turn == "" {
		return nil
	}
	return []string{key(p.turn)}
}

// userData is a message/user's data: a person's prompt, or a harness line
// (source "harness" and its kind).
type userData struct {
	Text   string `json:"text"`
	Source string `json:"source,omitempty"`
	Kind   string `json:"kind,omitempty"`
}

// prompt opens a new turn for a person's prompt, closing the one before.
// id is the agent's id of the prompt, "" when it gave none.
func (p *Parser) prompt(id, text string, out *emitter) {
	p.endTurn(projection.EndCompleted, out)
	p.turn = id
	out.add(projection.TypeTurnStart, struct{}{}, p.turnKeys(TurnKey)...)
	p.open = true
	out.add(projection.TypeMessageUser, userData{Text: clip(text, projection.MaxTextBytes), Source: p.promptSource()}, p.turnKeys(PromptKey)...)
	if p.info.Title == "" {
		p.info.Title, p.info.StandIn = titleOf(text), p.subagent
		if task, ok := p.delegator.task(text); ok {
			p.info.Title, p.info.StandIn = task, false
		}
	}
}

// promptSource is the source of a prompt: a subagent's is the task its
// parent agent wrote, a session's own a person's.
func (p *Parser) promptSource() string {
	if p.subagent {
		return projection.SourceAgent
	}
	return ""
}

// harness emits a line the agent's harness wrote into the user role: on
// the model's surface (the model saw it), but no turn's start and no
// title. An interruption ends the turn it interrupted.
func (p *Parser) harness(kind, text string, out *emitter) {
	out.add(projection.TypeMessageUser, userData{Text: clip(text, projection.MaxTextBytes), Source: "harness", Kind: kind})
	if kind == KindInterrupted {
		p.endTurn(projection.EndInterrupted, out)
	}
}

// inTurn opens a turn for agent output that came without a prompt (a
// resumed session, a subagent's file, an answer to a task notification).
func (p *Parser) inTurn(out *emitter) {
	if !p.open {
		out.add(projection.TypeTurnStart, struct{}{})
		p.open = true
	}
}

func (p *Parser) endTurn(reason projection.EndReason, out *emitter) {
	if p.open {
		out.add(projection.TypeTurnEnd, map[string]string{"reason": string(reason)}, p.turnKeys(EndKey)...)
		p.open = false
	}
}

// assistant emits one assistant message: its text and its tool calls, as
// part of the model's message whose id is message ("" when the agent gave
// none).
func (p *Parser) assistant(text string, calls []projection.ToolCall, message string, out *emitter) {
	// A call without an id or a name (a line no agent writes) is no call
	// the log could hold, nor one a result could answer.
	calls = slices.DeleteFunc(calls, func(c projection.ToolCall) bool {
		if blank(clip(c.ID, projection.MaxToolCallIDLen)) || blank(clip(c.Name, projection.MaxToolNameLen)) {
			p.skip("tool calls without an id or a name")
			return true
		}
		return false
	})
	if text == "" && len(calls) == 0 {
		return
	}
	p.inTurn(out)
	for i := range calls {
		calls[i].ID = clip(calls[i].ID, projection.MaxToolCallIDLen)
		calls[i].Name = clip(calls[i].Name, projection.MaxToolNameLen)
		calls[i].Args = fitArgs(calls[i].Args)
		p.calls[calls[i].ID] = calls[i].Name
		p.pending[calls[i].ID] = calls[i].Args
	}
	if len(calls) > projection.MaxToolCalls {
		p.skipped[fmt.Sprintf("tool calls beyond %d in one message", projection.MaxToolCalls)] += len(calls) - projection.MaxToolCalls
		calls = calls[:projection.MaxToolCalls]
	}
	d := map[string]any{"text": clip(text, projection.MaxTextBytes)}
	var keys []string
	callKeys := maxCallKeys
	if say := p.sayID(); text != "" && say != "" {
		keys = append(keys, SayKey(say, d["text"].(string)))
		callKeys--
	}
	if len(calls) > 0 {
		d["toolCalls"] = calls
		for _, c := range calls[:min(len(calls), callKeys)] {
			keys = append(keys, CallKey(c.ID))
		}
	}
	if message = clip(message, projection.MaxMessageIDLen); !blank(message) {
		// The line key stays what it was before events carried the
		// message's id, so that a transcript read again by a newer Tack
		// (watch resuming, a second import) matches the events it sent.
		if out.lineData == nil {
			out.lineData = map[int]json.RawMessage{}
		}
		out.lineData[len(out.events)], _ = json.Marshal(d)
		d["messageId"] = message
	}
	out.add(projection.TypeMessageAssistant, d, keys...)
}

// result emits a tool's result, preceded by the list write its call makes
// when it is one of the agents' todo tools and it succeeded: the order a
// harness forwarding the call to Tack would give (call, write, result).
func (p *Parser) result(callID, content string, isError bool, extra json.RawMessage, out *emitter) {
	callID = clip(callID, projection.MaxToolCallIDLen)
	if blank(callID) {
		p.skip("tool results without a call's id")
		return
	}
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
		p.spawned(name, args, extra)
		if d, ok := p.listWrite(name, args, content, extra); ok {
			out.add(projection.TypeTodoWrite, d, WriteKey(callID))
		}
	}
	out.add(projection.TypeToolResult, map[string]any{"callId": callID, "name": name, "isError": isError, "content": clip(content, projection.MaxToolResultText)}, ResultKey(callID))
}

// fitArgs keeps a tool call's arguments within what an event may carry: a
// JSON object of valid text, at most projection.MaxToolArgsBytes. Arguments
// that are not such an object are repaired as text is (U+FFFD for what is
// not UTF-8, no NUL, the last of a key given twice), and what is not an
// object is kept under "input"; larger arguments (a whole file written) are
// replaced by a note of their size. The call and its message are never
// dropped for them.
func fitArgs(args json.RawMessage) json.RawMessage {
	var compact bytes.Buffer
	switch {
	case len(bytes.TrimSpace(args)) == 0:
		return json.RawMessage("{}")
	case json.Compact(&compact, args) != nil:
		// Not JSON (codex's arguments string cut short): the text itself.
		return fitArgs(mustJSON(map[string]string{"input": clip(string(args), projection.MaxToolArgsBytes)}))
	}
	raw := compact.Bytes()
	if strictjson.Check(raw) != nil || bytes.Contains(raw, []byte(`\u0000`)) || raw[0] != '{' {
		// encoding/json decodes invalid UTF-8 and lone surrogates as U+FFFD
		// and keeps the last of a key given twice: the repair wanted.
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			return json.RawMessage("{}")
		}
		v = noNUL(v)
		if _, ok := v.(map[string]any); !ok {
			v = map[string]any{"input": v}
		}
		raw = mustJSON(v)
	}
	if len(raw) > projection.MaxToolArgsBytes {
		return mustJSON(map[string]any{"truncated": true, "bytes": len(raw)})
	}
	return raw
}

// noNUL drops NUL characters from every string of a decoded JSON value.
func noNUL(v any) any {
	switch x := v.(type) {
	case string:
		return strings.ReplaceAll(x, "\x00", "")
	case []any:
		for i := range x {
			x[i] = noNUL(x[i])
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[strings.ReplaceAll(k, "\x00", "")] = noNUL(e)
		}
		return out
	}
	return v
}

// mustJSON encodes v, which is always encodable, without HTML escapes.
func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return bytes.TrimRight(b.Bytes(), "\n")
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

// blank says whether s is empty or white space, which no id of the log
// may be.
func blank(s string) bool { return strings.TrimSpace(s) == "" }

// titleOf is a title from a prompt or summary (projection.TitleOf).
func titleOf(text string) string { return projection.TitleOf(text) }
