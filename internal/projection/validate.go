package projection

import "encoding/json"

// validate checks ev against the state it would be appended to and returns its
// canonical data, plus the parsed list for a todo/write; it sets *message
// to a message/assistant's messageId.
func (s *State) validate(ev NewEvent, cfg Config, baseVersion *int64, message *string) (json.RawMessage, []TodoInput, *Error) {
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
		v, *message = d, d.MessageID
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
