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
	// Seen is the latest version the model has been shown: that of its
	// latest todo/write, raised by a todo_read answer or a rejection that
	// showed it the list. Only the first comes from the log: the other two
	// append nothing, so a store keeps Seen beside the log and a replay of
	// the log gives a lower bound of it (see MarkSeen).
	Seen int64
	// LastEdit is the seq of the latest todo/edit (0 before any) and
	// EditedBy the person who made it.
	LastEdit int64
	EditedBy string
	// Steps counts the model's steps since the latest list write: its
	// messages, each a message/assistant event or a run of them that share
	// a messageId (StepMessage, that of the latest, "" when it had none).
	Steps       int
	StepMessage string
	// LastAt is the time of the latest event, TurnAt that of the open
	// turn's turn/start, EndedAt that of a session/end no event has
	// followed; each nil when there is none (see Activity).
	LastAt, TurnAt, EndedAt *Time
	// TaskHigh is the highest numeric taskId any list write has held, so
	// that a task deleted is never given its id again (RunTask).
	TaskHigh int64
}

// Apply validates ev against s and, if it is accepted, advances s and returns
// the event as stored. On error s is unchanged. received is when Tack
// received ev: the stored event's at, unless ev carries the agent's own
// (held to CheckAt), which is then stored with received as receivedAt.
// baseVersion, when set, rejects a list write made against an older list.
// A derived list write (Derivation) that makes none answers ErrNoWrite.
func (s *State) Apply(ev NewEvent, received Time, cfg Config, baseVersion *int64) (Event, error) {
	if err := CheckAt(ev.At, received); err != nil {
		return Event{}, err
	}
	if err := CheckKeys(ev.Keys); err != nil {
		return Event{}, err
	}
	var message string
	data, todos, err := s.validate(ev, cfg, baseVersion, &message)
	if err == noWrite {
		return Event{}, ErrNoWrite
	}
	if err != nil {
		return Event{}, err
	}
	turn := s.turnOf(ev.Type)
	if ev.Late && !s.Turn.Open && ev.Type != TypeTurnStart {
		turn = s.Turn.Number
	}
	stored := Event{Seq: s.LastSeq + 1, Type: ev.Type, Turn: turn, At: received, Data: data, Keys: ev.Keys}
	if ev.At != nil {
		stored.At, stored.ReceivedAt = *ev.At, &received
	}
	s.advance(stored, todos, ev.by, message, cfg)
	return stored, nil
}

// inTurn reports whether ev may be appended as part of a turn: one is
// open, or ev is late for the latest (NewEvent.Late).
func (s *State) inTurn(ev NewEvent) bool {
	return s.Turn.Open || (ev.Late && s.Turn.Number > 0)
}

// TodosChanged reports whether appending ev changed the todos view of a
// session whose plans last a turn: a list write, or a turn/start that
// ended a standing plan. prev is the state before ev was applied.
func TodosChanged(prev State, ev Event) bool { return Config{}.TodosChanged(prev, ev) }

// TodosChanged is the package's TodosChanged under the policy c: with
// PlanSession a turn/start changes nothing.
func (c Config) TodosChanged(prev State, ev Event) bool {
	return ListWrite(ev.Type) || (ev.Type == TypeTurnStart && prev.Standing && !c.sessionPlan())
}

// MarkSeen records that the model was shown version v of the list (a
// todo_read answer, a rejection that showed the list). Seen only grows.
func (s *State) MarkSeen(v int64) {
	s.Seen = max(s.Seen, v)
}

// Replay rebuilds the state from a whole log of a session whose plans last
// a turn, trusting that each event was validated when it was appended. It
// is the reference the incremental state must always equal, but for Seen,
// of which the log holds a lower bound.
func Replay(events []Event) State { return Config{}.Replay(events) }

// Replay is the package's Replay for a session of the policy c.
func (c Config) Replay(events []Event) State {
	s, _ := c.replay(events, false)
	return s
}

// ReplayHistory is the list's history replayed from a whole log: one
// Version per list write, oldest first. Stores keep it as they append;
// this is the reference it must equal.
func ReplayHistory(events []Event) []Version {
	_, versions := Config{}.replay(events, true)
	return versions
}

func (c Config) replay(events []Event, history bool) (State, []Version) {
	var (
		s        State
		versions []Version
	)
	for _, ev := range events {
		var (
			d listData
			m assistantData
		)
		switch {
		case ListWrite(ev.Type):
			_ = json.Unmarshal(ev.Data, &d)
		case ev.Type == TypeMessageAssistant:
			_ = json.Unmarshal(ev.Data, &m)
		}
		prev := s.Items
		s.advance(ev, d.Todos, d.By, m.MessageID, c)
		if history && ListWrite(ev.Type) {
			versions = append(versions, s.VersionOf(prev, ev))
		}
	}
	return s, versions
}

// VersionOf is the history entry of the list write ev, which moved the
// list from prev to the state's current items: by the agent, the person
// who edited it, or PlanAuthor for a list made of a proposal's steps.
func (s State) VersionOf(prev []Item, ev Event) Version {
	by := AgentAuthor
	var d struct {
		By string `json:"by"`
	}
	switch {
	case ev.Type == TypeTodoEdit:
		by = s.EditedBy
	case json.Unmarshal(ev.Data, &d) == nil && d.By == PlanAuthor:
		by = PlanAuthor // the steps of an approved proposal
	}
	items := s.Items
	if items == nil {
		items = []Item{}
	}
	return Version{Version: ev.Seq, At: ev.At, By: by, Todos: items, Changes: Changes(prev, items)}
}

// Changes lists how the items changed from prev to next: the items of next
// added or with a new status, in next's order, then the items removed, in
// prev's order. Items are matched by id.
func Changes(prev, next []Item) []Change {
	before := make(map[string]string, len(prev))
	for _, it := range prev {
		before[it.ID] = it.Status
	}
	kept := make(map[string]bool, len(next))
	changes := []Change{}
	for _, it := range next {
		kept[it.ID] = true
		to := it.Status
		from, ok := before[it.ID]
		switch {
		case !ok:
			changes = append(changes, Change{ID: it.ID, Content: it.Content, To: &to})
		case from != to:
			changes = append(changes, Change{ID: it.ID, Content: it.Content, From: &from, To: &to})
		}
	}
	for _, it := range prev {
		if !kept[it.ID] {
			from := it.Status
			changes = append(changes, Change{ID: it.ID, Content: it.Content, From: &from})
		}
	}
	return changes
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

// advance moves s on by the stored event ev: todos and by are a list
// write's, message a message/assistant's messageId.
func (s *State) advance(ev Event, todos []TodoInput, by, message string, cfg Config) {
	s.LastSeq = ev.Seq
	at := ev.At
	if ev.Type == TypeMessageAssistant {
		s.step(message)
	}
	if ev.Turn > 0 && !s.Turn.Open && ev.Type != TypeTurnStart {
		// A late line of a turn gone by (NewEvent.Late): the session's end
		// and its latest activity stand.
		if s.LastAt == nil || at.After(s.LastAt.Time) {
			s.LastAt = &at
		}
		if ListWrite(ev.Type) {
			s.advanceList(ev, todos, by)
		}
		return
	}
	s.LastAt, s.EndedAt = &at, nil
	switch ev.Type {
	case TypeSessionEnd:
		s.EndedAt = &at
	case TypeTurnStart:
		s.Turn = Turn{Number: ev.Turn, Open: true}
		s.TurnAt = &at
		if s.Standing && !cfg.sessionPlan() {
			s.Standing = false
			s.UpdatedAt = &at
		}
	case TypeTurnEnd:
		var d turnEndData
		_ = json.Unmarshal(ev.Data, &d) // validated when it was appended
		s.Turn.Open, s.Turn.EndReason = false, EndReason(d.Reason)
		s.TurnAt = nil
	case TypeTodoWrite, TypeTodoEdit:
		s.advanceList(ev, todos, by)
	}
}

// step counts a message/assistant event of the model's message message:
// a step, unless it continues the message of the step before. A list
// write between the two leaves it a continuation: the model wrote the
// whole message before it saw any of its calls' results.
func (s *State) step(message string) {
	if message == "" || message != s.StepMessage {
		s.Steps++
	}
	s.StepMessage = message
}

// advanceList moves the list on by the list write ev.
func (s *State) advanceList(ev Event, todos []TodoInput, by string) {
	at := ev.At
	s.Items = nextItems(s.Items, todos, ev.At)
	s.TaskHigh = max(s.TaskHigh, HighestTaskID(s.Items))
	s.Version = ev.Seq
	s.Standing = true
	s.UpdatedAt = &at
	s.Steps = 0
	if ev.Type == TypeTodoWrite {
		// The model wrote this list, so it knows it.
		s.MarkSeen(ev.Seq)
	} else {
		s.LastEdit, s.EditedBy = ev.Seq, by
	}
}

// nextItems is the list todos makes of prev at time at: an item whose id
// was in prev keeps its createdAt and startedAt; updatedAt moves when the
// status changes, startedAt is set the first time it is in_progress,
// completedAt when it becomes completed (and is cleared when it is no
// longer). An id not in prev starts a new run of the item. The agent's
// fields (activeForm, blockedBy, owner, taskId, description) are the
// write's.
func nextItems(prev []Item, todos []TodoInput, at Time) []Item {
	old := make(map[string]Item, len(prev))
	for _, it := range prev {
		old[it.ID] = it
	}
	items := make([]Item, len(todos))
	for i, t := range todos {
		it := Item{ID: ItemIDOf(t), Content: t.Content, Status: t.Status, AgentFields: t.AgentFields, UpdatedAt: at, CreatedAt: at}
		p, had := old[it.ID]
		if had {
			it.CreatedAt, it.StartedAt, it.CompletedAt = p.CreatedAt, p.StartedAt, p.CompletedAt
			if p.Status == t.Status {
				it.UpdatedAt = p.UpdatedAt
			}
		}
		if t.Status == StatusInProgress && it.StartedAt == nil {
			it.StartedAt = &at
		}
		switch {
		case t.Status != StatusCompleted:
			it.CompletedAt = nil
		case !had || p.Status != StatusCompleted || it.CompletedAt == nil:
			it.CompletedAt = &at
		}
		items[i] = it
	}
	return items
}

// ItemID derives a todo's id from its content, so the same content keeps the
// same id across writes (and the model never has to send one).
func ItemID(content string) string {
	sum := sha256.Sum256([]byte(content))
	return "t_" + hex.EncodeToString(sum[:8])
}

// TaskItemID derives the id of an item the agent gave its own id (a
// Claude Code task's "1"), so that the item keeps its id when its subject
// changes. It is never the id of a content (ItemID): the hashed text
// starts with a byte no content holds.
func TaskItemID(taskID string) string {
	sum := sha256.Sum256([]byte("\x00task\x00" + taskID))
	return "t_" + hex.EncodeToString(sum[:8])
}

// ItemIDOf is the id of the item t makes: TaskItemID of its taskId when
// it has one, else ItemID of its content.
func ItemIDOf(t TodoInput) string {
	if t.TaskID != "" {
		return TaskItemID(t.TaskID)
	}
	return ItemID(t.Content)
}

// CurrentItem is the content of the item in progress of items (the first
// of them when the session allows several), or nil when none is.
func CurrentItem(items []Item) *string {
	for _, it := range items {
		if it.Status == StatusInProgress {
			c := it.Content
			return &c
		}
	}
	return nil
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

// Reminder is the todo list reminder for a harness to inject into the
// model's context. It is due, in this order of reasons, when a person has
// edited the list since the model last saw it (edited), when requested is
// true (requested: after a compaction or a resume), or when items remain
// open and the model has made after or more assistant steps since the
// latest list write (stale; after 0 turns this reason off). Text is always
// the reminder, so a harness may inject it on a schedule of its own.
func (s State) Reminder(after int, requested bool) Reminder {
	var reason, by string
	c := Count(s.Items)
	switch {
	case s.LastEdit > s.Seen:
		reason, by = ReasonEdited, s.EditedBy
	case requested:
		reason = ReasonRequested
	case after > 0 && c.Pending+c.InProgress > 0 && s.Steps >= after:
		reason = ReasonStale
	}
	r := Reminder{Text: ReminderText(s.Version, s.Items, by)}
	if reason != "" {
		r.Due, r.Reason = true, &reason
	}
	return r
}
