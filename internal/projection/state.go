package projection

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// State is everything Tack keeps about a session's log besides the log itself:
// the turn counter and the todos projection. Stores persist it beside the log
// and advance it with Apply in the append transaction, so reads never replay.
type State struct {
	LastSeq int64
	Turn    Turn
	// Version is the seq of the latest todo/write, 0 before any.
	Version int64
	// Standing is true while no turn/start has followed the latest todo/write.
	Standing bool
	// Items is the current list. It is replaced, never changed in place, so a
	// shallow copy of State is a snapshot.
	Items []Item
	// UpdatedAt is when the todos view last changed, nil before any change.
	UpdatedAt *Time
}

// Apply validates ev against s and, if it is accepted, advances s and returns
// the event as stored. On error s is unchanged. baseVersion, when set, rejects
// a todo/write made against an older list.
func (s *State) Apply(ev NewEvent, at Time, cfg Config, baseVersion *int64) (Event, error) {
	data, todos, err := s.validate(ev, cfg, baseVersion)
	if err != nil {
		return Event{}, err
	}
	stored := Event{Seq: s.LastSeq + 1, Type: ev.Type, Turn: s.turnOf(ev.Type), At: at, Data: data}
	s.advance(stored, todos)
	return stored, nil
}

// TodosChanged reports whether appending ev changed the todos view: a
// todo/write, or a turn/start that ended a standing plan. prev is the state
// before ev was applied.
func TodosChanged(prev State, ev Event) bool {
	return ev.Type == TypeTodoWrite || (ev.Type == TypeTurnStart && prev.Standing)
}

// Replay rebuilds the state from a whole log, trusting that each event was
// validated when it was appended. It is the reference the incremental state
// must always equal.
func Replay(events []Event) State {
	var s State
	for _, ev := range events {
		var todos []TodoInput
		if ev.Type == TypeTodoWrite {
			var d todoWriteData
			_ = json.Unmarshal(ev.Data, &d)
			todos = d.Todos
		}
		s.advance(ev, todos)
	}
	return s
}

func (s *State) turnOf(typ string) int {
	switch {
	case typ == TypeTurnStart:
		return s.Turn.Number + 1
	case s.Turn.Open:
		return s.Turn.Number
	default:
		return 0
	}
}

func (s *State) advance(ev Event, todos []TodoInput) {
	s.LastSeq = ev.Seq
	switch ev.Type {
	case TypeTurnStart:
		s.Turn = Turn{Number: ev.Turn, Open: true}
		if s.Standing {
			s.Standing = false
			at := ev.At
			s.UpdatedAt = &at
		}
	case TypeTurnEnd:
		s.Turn.Open = false
	case TypeTodoWrite:
		prev := make(map[string]Item, len(s.Items))
		for _, it := range s.Items {
			prev[it.Content] = it
		}
		items := make([]Item, len(todos))
		for i, t := range todos {
			items[i] = Item{ID: ItemID(t.Content), Content: t.Content, Status: t.Status, UpdatedAt: ev.At}
			if p, ok := prev[t.Content]; ok && p.Status == t.Status {
				items[i].UpdatedAt = p.UpdatedAt
			}
		}
		s.Items = items
		s.Version = ev.Seq
		s.Standing = true
		at := ev.At
		s.UpdatedAt = &at
	}
}

// ItemID derives a todo's id from its content, so the same content keeps the
// same id across writes (and the model never has to send one).
func ItemID(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "t_" + hex.EncodeToString(sum[:8])
}

// Count tallies items by status.
func Count(items []Item) Counts {
	var c Counts
	for _, it := range items {
		switch it.Status {
		case StatusPending:
			c.Pending++
		case StatusInProgress:
			c.InProgress++
		case StatusCompleted:
			c.Completed++
		}
	}
	return c
}

// Todos is the canonical todos view of the state.
func (s State) Todos(sessionID string) Todos {
	items := s.Items
	if items == nil {
		items = []Item{}
	}
	return Todos{
		SessionID: sessionID,
		Version:   s.Version,
		Standing:  s.Standing,
		Todos:     items,
		Counts:    Count(items),
		UpdatedAt: s.UpdatedAt,
	}
}

// Snapshot is the ConversationSnapshot: its todos are the standing plan, or
// empty when none stands.
func (s State) Snapshot() Snapshot {
	plan := []Item{}
	if s.Standing && s.Items != nil {
		plan = s.Items
	}
	return Snapshot{
		LastSeq:      s.LastSeq,
		Turn:         s.Turn,
		Todos:        plan,
		TodosVersion: s.Version,
		Standing:     s.Standing,
	}
}
