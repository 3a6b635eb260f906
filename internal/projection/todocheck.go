package projection

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/text/unicode/norm"
)

// TodoInput is one todo as a list write gives it: content and status, and
// what the agent's own tools add (never the canonical todo_write's).
type TodoInput struct {
	Content string `json:"content"`
	Status  string `json:"status"`
	AgentFields
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
