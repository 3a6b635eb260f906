package projection

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/text/unicode/norm"

	"github.com/tack-dev/tack/internal/strictjson"
)

// Limits on what one event may carry. They are part of the documented contract.
const (
	MaxTodos          = 200
	MaxContentChars   = 1000
	MaxTextBytes      = 256 << 10
	MaxToolCalls      = 64
	MaxToolCallIDLen  = 256
	MaxToolNameLen    = 256
	MaxToolArgsBytes  = 64 << 10
	MaxToolResultText = 256 << 10
	// MaxDescriptionChars bounds a task's description (Claude Code's
	// TaskCreate), MaxOwnerChars its owner.
	MaxDescriptionChars = 10000
	MaxOwnerChars       = 256
)

// Code classifies a rejected event.
type Code string

const (
	// CodeInvalid means the event itself is malformed (HTTP 422).
	CodeInvalid Code = "invalid"
	// CodeConflict means the event breaks a rule of the log's current state (HTTP 409).
	CodeConflict Code = "conflict"
)

// Error is why an event was rejected. Message is model-facing for todo/write:
// the tool endpoints prefix it with "Error: " and hand it to the model as is.
type Error struct {
	Code    Code
	Message string
	// Shown is the version of the list the message shows the model (a
	// todo_write rejected for an edit it had not seen): a store records it
	// as seen, though the rejection appends nothing. 0 otherwise.
	Shown int64
}

func (e *Error) Error() string { return e.Message }

func invalidf(format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Message: fmt.Sprintf(format, args...)}
}

func conflictf(format string, args ...any) *Error {
	return &Error{Code: CodeConflict, Message: fmt.Sprintf(format, args...)}
}

// Config holds the rules a session's log is held to: the server's, or a
// session's own policy.
type Config struct {
	// AllowParallel lifts the "at most one in_progress" rule.
	AllowParallel bool
	// PlanLifetime is PlanTurn (or "") or PlanSession: whether a turn/start
	// ends the standing plan.
	PlanLifetime string
	// IdleAfter is how long an open turn may go without an event before
	// its session is idle (SessionState); zero is DefaultIdleAfter.
	IdleAfter time.Duration
}

// sessionPlan reports whether a plan outlives the turn that wrote it.
func (c Config) sessionPlan() bool { return c.PlanLifetime == PlanSession }

// TodoInput is one todo as a list write gives it: content and status, and
// what the agent's own tools add (never the canonical todo_write's).
type TodoInput struct {
	Content string `json:"content"`
	Status  string `json:"status"`
	AgentFields
}

// listData is the data of a list write: a todo/write's todos (and
// PlanAuthor when they are an approved proposal's steps), or a todo/edit's
// todos and author.
type listData struct {
	Todos []TodoInput `json:"todos"`
	By    string      `json:"by,omitempty"`
}

type turnEndData struct {
	Reason string `json:"reason"`
}

type userData struct {
	Text   string `json:"text"`
	Source string `json:"source,omitempty"`
	Kind   string `json:"kind,omitempty"`
}

type sessionEndData struct {
	Reason string `json:"reason,omitempty"`
}

type assistantData struct {
	Text      string     `json:"text"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
}

type toolResultData struct {
	CallID  string `json:"callId"`
	Name    string `json:"name"`
	IsError bool   `json:"isError"`
	Content string `json:"content"`
	// DurationMs is how long the call ran, in milliseconds, when the
	// agent said (a PostToolUse hook's duration_ms).
	DurationMs *int64 `json:"durationMs,omitempty"`
}

// object decodes data as a JSON object and checks its keys: every required key
// present, nothing outside required and optional. A missing data is {}.
// The data is first held to strictjson's rule, nested values included: no
// key given twice and text that is valid UTF-8 everywhere, so nothing below
// ever decodes a string that json.Unmarshal would rewrite to U+FFFD.
func object(what string, data json.RawMessage, required, optional []string) (map[string]json.RawMessage, *Error) {
	if len(bytes.TrimSpace(data)) != 0 {
		var se *strictjson.Error
		if errors.As(strictjson.Check(data), &se) {
			switch se.Problem {
			case strictjson.Duplicate:
				return nil, invalidf("%s has the key `%s` twice%s", what, se.Key, se.Where())
			case strictjson.BadText:
				return nil, invalidf("%s must be valid UTF-8, without lone surrogate escapes%s", what, se.Where())
			}
			return nil, invalidf("%s must be a JSON object", what)
		}
	}
	return fields(what, data, required, optional)
}

// fields is object without strictjson's check, for a value inside data that
// object has already held to it.
func fields(what string, data json.RawMessage, required, optional []string) (map[string]json.RawMessage, *Error) {
	m := map[string]json.RawMessage{}
	if len(bytes.TrimSpace(data)) != 0 {
		if err := json.Unmarshal(data, &m); err != nil || m == nil {
			return nil, invalidf("%s must be a JSON object", what)
		}
	}
	return m, checkKeys(what, m, required, optional)
}

// checkKeys checks the keys of an object m: every required key present,
// nothing outside required and optional.
func checkKeys(what string, m map[string]json.RawMessage, required, optional []string) *Error {
	for k := range m {
		if !slices.Contains(required, k) && !slices.Contains(optional, k) {
			return invalidf("%s has an unexpected key `%s`", what, k)
		}
	}
	for _, k := range required {
		if _, ok := m[k]; !ok {
			return invalidf("%s is missing `%s`", what, k)
		}
	}
	return nil
}

// isNull reports whether b is the JSON null.
func isNull(b json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(b), []byte("null")) }

func stringField(what string, m map[string]json.RawMessage, key string, maxBytes int, nonEmpty bool) (string, *Error) {
	var s string
	if err := json.Unmarshal(m[key], &s); err != nil || isNull(m[key]) {
		return "", invalidf("%s: `%s` must be a string", what, key)
	}
	if nonEmpty && strings.TrimSpace(s) == "" {
		return "", invalidf("%s: `%s` must be a non-empty string", what, key)
	}
	if strings.ContainsRune(s, 0) {
		return "", invalidf("%s: `%s` must not contain NUL characters", what, key)
	}
	if len(s) > maxBytes {
		return "", invalidf("%s: `%s` is longer than the limit of %d bytes", what, key, maxBytes)
	}
	return s, nil
}

// validate checks ev against the state it would be appended to and returns its
// canonical data, plus the parsed list for a todo/write.
func (s *State) validate(ev NewEvent, cfg Config, baseVersion *int64) (json.RawMessage, []TodoInput, *Error) {
	var v any
	switch ev.Type {
	case TypeTurnStart:
		if _, err := object("turn/start data", ev.Data, nil, nil); err != nil {
			return nil, nil, err
		}
		if s.Turn.Open {
			return nil, nil, conflictf("turn/start: turn %d is still open", s.Turn.Number)
		}
		v = struct{}{}
	case TypeTurnEnd:
		m, err := object("turn/end data", ev.Data, []string{"reason"}, nil)
		if err != nil {
			return nil, nil, err
		}
		var d turnEndData
		if d.Reason, err = stringField("turn/end", m, "reason", 64, false); err != nil {
			return nil, nil, err
		}
		switch EndReason(d.Reason) {
		case EndCompleted, EndInterrupted, EndError:
		default:
			return nil, nil, invalidf("turn/end: `reason` must be one of completed, interrupted, error")
		}
		if !s.Turn.Open {
			return nil, nil, conflictf("turn/end: no turn is open")
		}
		v = d
	case TypeMessageUser:
		d, err := parseUser(ev.Data)
		if err != nil {
			return nil, nil, err
		}
		v = d
	case TypeSessionEnd:
		m, err := object("session/end data", ev.Data, nil, []string{"reason"})
		if err != nil {
			return nil, nil, err
		}
		var d sessionEndData
		if _, ok := m["reason"]; ok {
			if d.Reason, err = stringField("session/end", m, "reason", 256, false); err != nil {
				return nil, nil, err
			}
		}
		v = d
	case TypeMessageAssistant:
		d, err := parseAssistant(ev.Data)
		if err != nil {
			return nil, nil, err
		}
		if !s.inTurn(ev) {
			return nil, nil, conflictf("message/assistant needs an open turn")
		}
		v = d
	case TypeToolResult:
		d, err := parseToolResult(ev.Data)
		if err != nil {
			return nil, nil, err
		}
		if !s.inTurn(ev) {
			return nil, nil, conflictf("tool/result needs an open turn")
		}
		v = d
	case TypeTodoWrite:
		raw, reword, by := ev.todos, func(e *Error) *Error { return e }, ""
		if raw == nil {
			// The data is the list, or the call to derive it from
			// (Derivation): never both.
			m, err := object("todo/write data", ev.Data, nil, []string{"todos", "tool", "args", "taskId"})
			if err != nil {
				return nil, nil, err
			}
			if _, derived := m["tool"]; !derived {
				if err := checkKeys("todo/write data", m, []string{"todos"}, nil); err != nil {
					return nil, nil, err
				}
				raw = m["todos"]
			} else {
				if err := checkKeys("todo/write data", m, []string{"tool", "args"}, []string{"taskId"}); err != nil {
					return nil, nil, err
				}
				if raw, reword, err = s.derive(m); err != nil {
					return nil, nil, err
				}
				if tool, _ := decodeString(m["tool"]); tool == ToolExitPlanMode {
					by = PlanAuthor
				}
			}
		}
		todos, err := s.checkTodos(raw, cfg, !ev.Late || s.Turn.Number == 0, ev.plain)
		if err != nil {
			return nil, nil, reword(err)
		}
		// Told of an unseen edit before baseVersion: the text shows the
		// list the model must write over, which a stale error would not.
		if ev.model && s.LastEdit > s.Seen {
			return nil, nil, &Error{Code: CodeConflict, Shown: s.Version,
				Message: EditedText(s.EditedBy, s.Seen, s.Version, s.Items)}
		}
		if err := s.checkBase(baseVersion); err != nil {
			return nil, nil, err
		}
		data, _ := json.Marshal(listData{Todos: todos, By: by})
		return data, todos, nil
	case TypeTodoEdit:
		if ev.by == "" {
			return nil, nil, invalidf("todo/edit cannot be appended through /events; a person edits the list with PUT /sessions/{id}/todos")
		}
		todos, err := s.checkTodos(ev.todos, cfg, false, false)
		if err != nil {
			return nil, nil, err
		}
		if err := s.checkBase(baseVersion); err != nil {
			return nil, nil, err
		}
		data, _ := json.Marshal(listData{Todos: todos, By: ev.by})
		return data, todos, nil
	case "":
		return nil, nil, invalidf("event `type` is missing")
	default:
		return nil, nil, invalidf("unknown event type %q", ev.Type)
	}
	data, _ := json.Marshal(v)
	return data, nil, nil
}

// parseUser reads a message/user: its text and, for a line the harness
// wrote, its source and kind. kind goes with source "harness" only.
func parseUser(data json.RawMessage) (userData, *Error) {
	var d userData
	m, err := object("message/user data", data, []string{"text"}, []string{"source", "kind"})
	if err != nil {
		return d, err
	}
	if d.Text, err = stringField("message/user", m, "text", MaxTextBytes, false); err != nil {
		return d, err
	}
	if _, ok := m["source"]; ok {
		if d.Source, err = stringField("message/user", m, "source", 64, false); err != nil {
			return d, err
		}
		if d.Source != SourceHarness && d.Source != SourceAgent {
			return d, invalidf("message/user: `source` must be %q, %q or absent (a person's prompt)", SourceHarness, SourceAgent)
		}
	}
	_, hasKind := m["kind"]
	switch {
	case d.Source == SourceHarness && !hasKind:
		return d, invalidf("message/user: a harness line needs a `kind`")
	case d.Source != SourceHarness && hasKind:
		return d, invalidf("message/user: `kind` goes only with `source` %q", SourceHarness)
	case hasKind:
		if d.Kind, err = stringField("message/user", m, "kind", 64, false); err != nil {
			return d, err
		}
		if !slices.Contains(HarnessKinds, d.Kind) {
			return d, invalidf("message/user: `kind` must be one of %s", strings.Join(HarnessKinds, ", "))
		}
	}
	return d, nil
}

func parseAssistant(data json.RawMessage) (assistantData, *Error) {
	var d assistantData
	m, err := object("message/assistant data", data, []string{"text"}, []string{"toolCalls"})
	if err != nil {
		return d, err
	}
	if d.Text, err = stringField("message/assistant", m, "text", MaxTextBytes, false); err != nil {
		return d, err
	}
	raw, ok := m["toolCalls"]
	if !ok || isNull(raw) {
		return d, nil
	}
	var calls []json.RawMessage
	if json.Unmarshal(raw, &calls) != nil {
		return d, invalidf("message/assistant: `toolCalls` must be an array")
	}
	if len(calls) > MaxToolCalls {
		return d, invalidf("message/assistant: at most %d tool calls allowed, got %d", MaxToolCalls, len(calls))
	}
	for i, c := range calls {
		what := fmt.Sprintf("message/assistant toolCalls[%d]", i)
		// The call is inside data, which object has checked whole.
		cm, err := fields(what, c, []string{"id", "name"}, []string{"args"})
		if err != nil {
			return d, err
		}
		var tc ToolCall
		if tc.ID, err = stringField(what, cm, "id", MaxToolCallIDLen, true); err != nil {
			return d, err
		}
		if tc.Name, err = stringField(what, cm, "name", MaxToolNameLen, true); err != nil {
			return d, err
		}
		tc.Args = json.RawMessage("{}")
		if a, ok := cm["args"]; ok {
			if len(a) > MaxToolArgsBytes {
				return d, invalidf("%s: `args` is larger than the limit of %d bytes", what, MaxToolArgsBytes)
			}
			var compact bytes.Buffer
			if json.Compact(&compact, a) != nil {
				return d, invalidf("%s: `args` must be JSON", what)
			}
			// args are kept as sent, not decoded; object has already refused
			// bytes that are not UTF-8 and lone surrogate escapes in them.
			if bad := unstorable(compact.Bytes()); bad != "" {
				return d, invalidf("%s: `args` must not contain %s", what, bad)
			}
			tc.Args = compact.Bytes()
		}
		d.ToolCalls = append(d.ToolCalls, tc)
	}
	return d, nil
}

func parseToolResult(data json.RawMessage) (toolResultData, *Error) {
	var d toolResultData
	m, err := object("tool/result data", data, []string{"callId", "name", "isError", "content"}, []string{"durationMs"})
	if err != nil {
		return d, err
	}
	if d.CallID, err = stringField("tool/result", m, "callId", MaxToolCallIDLen, true); err != nil {
		return d, err
	}
	if d.Name, err = stringField("tool/result", m, "name", MaxToolNameLen, true); err != nil {
		return d, err
	}
	if d.Content, err = stringField("tool/result", m, "content", MaxToolResultText, false); err != nil {
		return d, err
	}
	if json.Unmarshal(m["isError"], &d.IsError) != nil || isNull(m["isError"]) {
		return d, invalidf("tool/result: `isError` must be a boolean")
	}
	if raw, ok := m["durationMs"]; ok {
		var ms int64
		if json.Unmarshal(raw, &ms) != nil || ms < 0 {
			return d, invalidf("tool/result: `durationMs` must be a non-negative integer")
		}
		d.DurationMs = &ms
	}
	return d, nil
}

// checkTodos runs the todo_write checks in their order; the first failure
// decides. Each check runs over the whole list before the next begins. A
// person's edit skips check 6 (needTurn false): it needs no open turn. A
// plain list (the canonical todo_write's) has items of content and status
// alone; any other may carry the fields of itemKeys too, checked after
// status (3a) and, for blockedBy, after the duplicates (4a).
func (s *State) checkTodos(raw json.RawMessage, cfg Config, needTurn, plain bool) ([]TodoInput, *Error) {
	fields, err := todoFields(raw, plain)
	if err != nil {
		return nil, err
	}
	todos := make([]TodoInput, len(fields))
	// 2. content is a non-empty string after trimming, and one line. It is
	// kept in NFC, so that the same text sent in another Unicode form is
	// the same item (same id, caught as a duplicate).
	for i, f := range fields {
		c, err := oneLine("content", f.content, f.contentOK, true)
		if err != nil {
			return nil, err
		}
		todos[i].Content = c
	}
	// 3. status is one of the three.
	for i, f := range fields {
		if st := f.status; st != StatusPending && st != StatusInProgress && st != StatusCompleted {
			return nil, invalidf("invalid todo: `status` must be one of pending, in_progress, completed")
		}
		todos[i].Status = f.status
	}
	// 3a. What the agent's tools add: one-line strings (the description
	// may span lines), an array of ids.
	for i, f := range fields {
		if f.extra == nil {
			continue
		}
		if err := extraFields(&todos[i], f.extra); err != nil {
			return nil, err
		}
	}
	// 4. No two items share an id: content, or the agent's taskId. The
	// keys stand for the ids (ItemIDOf) without hashing: a task's starts
	// with NUL, which no content holds.
	seen := make(map[string]bool, len(todos))
	blocked := false
	for _, t := range todos {
		key := t.Content
		if t.TaskID != "" {
			key = "\x00" + t.TaskID
		}
		if seen[key] {
			if t.TaskID != "" {
				return nil, invalidf("invalid todos: duplicate taskId %q", t.TaskID)
			}
			return nil, invalidf("invalid todos: duplicate content %q", t.Content)
		}
		seen[key] = true
		blocked = blocked || len(t.BlockedBy) > 0
	}
	// 4a. blockedBy names other items of the list, each once.
	if blocked {
		ids := make(map[string]bool, len(todos))
		for _, t := range todos {
			ids[ItemIDOf(t)] = true
		}
		for _, t := range todos {
			self := ItemIDOf(t)
			for j, b := range t.BlockedBy {
				switch {
				case b == self:
					return nil, invalidf("invalid todo: `blockedBy` of %q names the item itself", t.Content)
				case !ids[b]:
					return nil, invalidf("invalid todo: `blockedBy` of %q names %q, which is no item of the list", t.Content, b)
				case slices.Contains(t.BlockedBy[:j], b):
					return nil, invalidf("invalid todo: `blockedBy` of %q names %q twice", t.Content, b)
				}
			}
		}
	}
	// 5. At most one in_progress.
	inProgress := 0
	for _, t := range todos {
		if t.Status == StatusInProgress {
			inProgress++
		}
	}
	if n := inProgress; n > 1 && !cfg.AllowParallel {
		return nil, invalidf("invalid todos: at most one task may be in_progress, got %d", n)
	}
	// 6. Bound to an agent session with an open turn.
	if needTurn && !s.Turn.Open {
		return nil, conflictf("todo_write requires an owning agent session")
	}
	// 7. Size limits.
	if len(todos) > MaxTodos {
		return nil, invalidf("invalid todos: at most %d items allowed, got %d", MaxTodos, len(todos))
	}
	for _, t := range todos {
		if n := utf8.RuneCountInString(t.Content); n > MaxContentChars {
			return nil, invalidf("invalid todo: `content` must be at most %d characters, got %d", MaxContentChars, n)
		}
		if n := utf8.RuneCountInString(t.ActiveForm); n > MaxContentChars {
			return nil, invalidf("invalid todo: `activeForm` must be at most %d characters, got %d", MaxContentChars, n)
		}
		if n := utf8.RuneCountInString(t.Description); n > MaxDescriptionChars {
			return nil, invalidf("invalid todo: `description` must be at most %d characters, got %d", MaxDescriptionChars, n)
		}
	}
	return todos, nil
}

// oneLine checks a one-line text field of an item (ok false: not a
// string): not blank when required, no NUL, and once trimmed no control
// character or line separator. It returns the text trimmed, in NFC.
func oneLine(key, v string, ok, required bool) (string, *Error) {
	if !ok || (required && Blank(v)) {
		return "", invalidf("invalid todo: `%s` must be a non-empty string", key)
	}
	if strings.ContainsRune(v, 0) {
		return "", invalidf("invalid todo: `%s` must not contain NUL characters", key)
	}
	v = strings.TrimSpace(v)
	if strings.IndexFunc(v, breaksLine) >= 0 {
		return "", invalidf("invalid todo: `%s` must be one line without control characters", key)
	}
	return norm.NFC.String(v), nil
}

// extraFields reads the fields beyond content and status into t. An
// empty activeForm, owner or description is none.
func extraFields(t *TodoInput, extra map[string]json.RawMessage) *Error {
	var err *Error
	for _, k := range []string{"activeForm", "owner", "taskId"} {
		raw, ok := extra[k]
		if !ok {
			continue
		}
		v, isString := decodeString(raw)
		if isNull(raw) {
			v, isString = "", true
		}
		if v, err = oneLine(k, v, isString, k == "taskId"); err != nil {
			return err
		}
		switch k {
		case "activeForm":
			t.ActiveForm = v
		case "owner":
			if utf8.RuneCountInString(v) > MaxOwnerChars {
				return invalidf("invalid todo: `owner` must be at most %d characters", MaxOwnerChars)
			}
			t.Owner = v
		case "taskId":
			if len(v) > MaxToolCallIDLen {
				return invalidf("invalid todo: `taskId` must be at most %d bytes", MaxToolCallIDLen)
			}
			t.TaskID = v
		}
	}
	if raw, ok := extra["description"]; ok && !isNull(raw) {
		v, isString := decodeString(raw)
		if !isString {
			return invalidf("invalid todo: `description` must be a string")
		}
		if strings.ContainsRune(v, 0) {
			return invalidf("invalid todo: `description` must not contain NUL characters")
		}
		t.Description = norm.NFC.String(strings.TrimSpace(v))
	}
	if raw, ok := extra["blockedBy"]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &t.BlockedBy) != nil {
			return invalidf("invalid todo: `blockedBy` must be an array of item ids")
		}
		if len(t.BlockedBy) == 0 {
			t.BlockedBy = nil
		}
	}
	return nil
}

// checkBase rejects a list write made against another version than the
// current one.
func (s *State) checkBase(baseVersion *int64) *Error {
	if baseVersion != nil {
		switch {
		case *baseVersion < s.Version:
			return conflictf("stale todo list: baseVersion %d is older than the current version %d; read the list and write it again", *baseVersion, s.Version)
		case *baseVersion > s.Version:
			return invalidf("invalid arguments: baseVersion %d is newer than the current version %d", *baseVersion, s.Version)
		}
	}
	return nil
}

// Blank reports whether s shows nothing: only white space and invisible
// characters (zero-width spaces and joiners, word joiners, byte order marks,
// variation selectors, fillers: the format characters and the default
// ignorable code points).
func Blank(s string) bool {
	for _, r := range s {
		if !unicode.IsSpace(r) && !unicode.In(r, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector) {
			return false
		}
	}
	return true
}

// breaksLine reports a rune that content may not hold once trimmed: a
// control character (C0 and C1, line breaks and tabs among them) or a line
// or paragraph separator. Each would let content forge lines of todo_read's
// one-item-per-line text.
// OneLine reports whether s, trimmed, is one line without control
// characters: the rule of a todo's content, and of a session's title.
func OneLine(s string) bool { return strings.IndexFunc(strings.TrimSpace(s), breaksLine) < 0 }

func breaksLine(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
}

// todoField is one item's fields as the checks after the first see them:
// its content, if it is a string, and its status, "" if not a string.
type todoField struct {
	content   string
	contentOK bool
	status    string
	// extra holds the keys beyond content and status, nil when none.
	extra map[string]json.RawMessage
}

// itemKeys are the keys an item of a list write may have beyond content
// and status, unless the list is plain (the canonical todo_write's).
var itemKeys = []string{"activeForm", "blockedBy", "owner", "taskId", "description"}

// todoFields runs check 1 (each item an object with no key beyond content
// and status) and returns each item's fields. The common list, every item
// an object of both keys with string values, in valid UTF-8 and no key
// twice, is read in one pass of tokens; anything else is decoded the long
// way (todoObjects), which gives the error of the first check it breaks.
// Both read such a list alike (TestTodoFieldsFastPath).
func todoFields(raw json.RawMessage, plain bool) ([]todoField, *Error) {
	if fields, ok := todoFieldsFast(raw); ok {
		return fields, nil
	}
	return todoFieldsLong(raw, plain)
}

// todoFieldsLong is todoFields the long way: a map per item.
func todoFieldsLong(raw json.RawMessage, plain bool) ([]todoField, *Error) {
	objs, err := todoObjects(raw)
	if err != nil {
		return nil, err
	}
	for i := range objs {
		for k := range objs[i] {
			switch {
			case k == "content" || k == "status":
			case plain:
				return nil, invalidf("invalid todo: unexpected key `%s`; a todo has exactly the keys `content` and `status`", k)
			case !slices.Contains(itemKeys, k):
				return nil, invalidf("invalid todo: unexpected key `%s`; a todo has the keys `content`, `status` and any of %s", k, keyList(itemKeys))
			}
		}
	}
	fields := make([]todoField, len(objs))
	for i, m := range objs {
		fields[i].content, fields[i].contentOK = decodeString(m["content"])
		fields[i].status, _ = decodeString(m["status"])
		for _, k := range itemKeys {
			if v, ok := m[k]; ok {
				if fields[i].extra == nil {
					fields[i].extra = map[string]json.RawMessage{}
				}
				fields[i].extra[k] = v
			}
		}
	}
	return fields, nil
}

// todoFieldsFast reads a list of objects of exactly the keys content and
// status, both strings, or reports false for anything else.
func todoFieldsFast(raw json.RawMessage) ([]todoField, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, false
	}
	var fields []todoField
	for dec.PeekKind() == '{' {
		if _, err := dec.ReadToken(); err != nil {
			return nil, false
		}
		var (
			f                     todoField
			hasContent, hasStatus bool
		)
		for dec.PeekKind() == '"' {
			tok, err := dec.ReadToken()
			if err != nil {
				return nil, false
			}
			name := tok.String() // a token lives until the next read
			value, err := dec.ReadToken()
			if err != nil || value.Kind() != '"' {
				return nil, false
			}
			switch name {
			case "content":
				f.content, f.contentOK, hasContent = value.String(), true, true
			case "status":
				f.status, hasStatus = value.String(), true
			default:
				return nil, false
			}
		}
		if tok, err := dec.ReadToken(); err != nil || tok.Kind() != '}' || !hasContent || !hasStatus {
			return nil, false
		}
		fields = append(fields, f)
	}
	if tok, err := dec.ReadToken(); err != nil || tok.Kind() != ']' {
		return nil, false
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, false
	}
	if fields == nil {
		fields = []todoField{}
	}
	return fields, true
}

// todoObjects decodes a todo list into one map per item, or fails with the
// error of the first check a malformed list breaks: not an array, or an item
// that is not an object. The common case, an array of objects, takes one
// decode; anything else is decoded item by item to tell the two apart.
func todoObjects(raw json.RawMessage) ([]map[string]json.RawMessage, *Error) {
	var objs []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &objs); err == nil && objs != nil {
		for _, m := range objs {
			if m == nil { // a null item
				return nil, invalidf("invalid todo: each todo must be an object with exactly the keys `content` and `status`")
			}
		}
		return objs, nil
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil || items == nil {
		return nil, invalidf("invalid arguments: `todos` must be an array")
	}
	objs = make([]map[string]json.RawMessage, len(items))
	for i, it := range items {
		if json.Unmarshal(it, &objs[i]) != nil || objs[i] == nil {
			return nil, invalidf("invalid todo: each todo must be an object with exactly the keys `content` and `status`")
		}
	}
	return objs, nil
}

// decodeString decodes a JSON value that an earlier decode has validated as
// a string, reporting false when it is not one. A string without escapes is
// its bytes between the quotes when they are valid UTF-8 (json.Unmarshal
// would replace invalid bytes); anything else goes through json.Unmarshal.
func decodeString(raw json.RawMessage) (string, bool) {
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' &&
		bytes.IndexByte(raw[1:n-1], '\\') < 0 && utf8.Valid(raw[1:n-1]) {
		return string(raw[1 : n-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// unstorable names what a compact JSON text holds that a store cannot keep:
// a NUL character (Postgres text and jsonb refuse it) or a number Postgres
// numeric cannot hold. It returns "" when there is neither. Unpaired UTF-16
// surrogate escapes never reach it: object refuses them first. Backslashes
// occur only inside strings in valid JSON, so no string tracking is needed.
func unstorable(raw []byte) string {
	for i := 0; i < len(raw); i++ {
		if raw[i] != '\\' {
			continue
		}
		if i+5 < len(raw) && raw[i+1] == 'u' && string(raw[i+2:i+6]) == "0000" {
			return "NUL characters"
		}
		i++ // skip the escaped character, so that \\u0000 is no NUL
	}
	return numbersFit(raw)
}

// numbersFit reports a number in a JSON text that Postgres numeric (jsonb)
// cannot hold, such as 1e131072 or 1e-16384, or "" when every number is at
// most 100 characters with an exponent within ±1000.
func numbersFit(raw []byte) string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			return ""
		}
		n, ok := tok.(json.Number)
		if !ok {
			continue
		}
		bad := len(n) > 100
		if _, exp, found := strings.Cut(strings.ToLower(string(n)), "e"); found && !bad {
			e, err := strconv.Atoi(exp)
			bad = err != nil || e > 1000 || e < -1000
		}
		if bad {
			return "numbers longer than 100 characters or with an exponent beyond ±1000"
		}
	}
}
