// Package engine is what the stores do alike, whatever their database:
// the append algorithm around the projection (Append), the paging rules of
// the sessions list and of the model surface (Find, Messages), the columns
// both read and write, and the epoch-guarded copy of todo lists (Copies).
// Each backend (store/sqlite, store/postgres) supplies its SQL through the
// small interfaces here (AppendTx, SessionsReader, SurfaceReader), so the
// rules live in one place and no backend imports another.
package engine

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// RowActivity is the activity of session s as its row holds it: its
// updatedAt is the latest event's time once it has one, turnAt and
// endedAt the state's TurnAt and EndedAt, needsYou since when the agent
// has waited on a person (SetNeedsYou), agentAt since when the agent's
// registry has said its status (SetAgentStatus). It sets s.agent.
func RowActivity(s *store.Session, turnAt, endedAt, needsYou, agentAt *projection.Time) projection.Activity {
	a := projection.Activity{LastSeq: s.LastSeq, TurnOpen: s.Turn.Open, TurnStartedAt: turnAt, EndedAt: endedAt}
	if s.LastSeq > 0 {
		at := s.UpdatedAt
		a.LastAt = &at
	}
	if needsYou != nil && s.Row.NeedsSeq != nil {
		a.NeedsYouSince, a.NeedsYouSeq = needsYou, *s.Row.NeedsSeq
	}
	s.Row.Agent = nil
	if agentAt != nil && s.Row.AgentStatus != nil {
		s.Row.Agent = &projection.AgentStatus{Status: *s.Row.AgentStatus, At: *agentAt}
	}
	a.Agent = s.Row.Agent
	return a
}

// Settle sets session s's state from its activity a, at now (the store's
// clock).
func Settle(s *store.Session, a projection.Activity, cfg projection.Config, now projection.Time) {
	s.State, s.StateSince = projection.SessionState(a, now, cfg.IdleAfter, s.CreatedAt)
	s.AgentBusy = s.State == projection.StateWorking && a.Agent != nil && a.Agent.Status == projection.AgentBusy &&
		(a.LastAt == nil || !a.LastAt.After(a.Agent.At.Time))
	s.Goal = nil
	if len(s.Row.GoalJSON) > 0 {
		var g projection.Goal
		if json.Unmarshal(s.Row.GoalJSON, &g) == nil {
			s.Goal = &g
		}
	}
	s.NeedsYou = nil
	if s.State == projection.StateNeedsYou {
		// A mark stored before its reason was (or one unreadable) still
		// says that the agent waits: on a permission, as hooks first told.
		n := projection.NeedsYou{Kind: projection.NeedsPermission}
		if len(s.Row.NeedsWhy) > 0 && json.Unmarshal(s.Row.NeedsWhy, &n) != nil {
			n = projection.NeedsYou{Kind: projection.NeedsPermission}
		}
		s.NeedsYou = &n
	}
}

// SessionState sets the part of the projection's state the session's row
// holds: the head of the log and its activity a.
func SessionState(s store.Session, a projection.Activity, st *projection.State) {
	st.LastSeq, st.Turn, st.LastAt, st.TurnAt, st.EndedAt = s.LastSeq, s.Turn, a.LastAt, a.TurnStartedAt, a.EndedAt
}

// SessionConfig is the server's policy as session sess applies it.
func SessionConfig(cfg projection.Config, sess store.Session) projection.Config {
	cfg.AllowParallel, cfg.PlanLifetime = sess.ParallelInProgress, sess.PlanLifetime
	return cfg
}

// NullString is s, or nil when it is "".
func NullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// NewSessionOf is the session ns makes at now, before it is stored.
func NewSessionOf(ns store.NewSession, now projection.Time, cfg projection.Config) store.Session {
	if ns.PlanLifetime == "" {
		ns.PlanLifetime = projection.PlanTurn
	}
	s := store.Session{ID: store.NewSessionID(), Title: ns.Title, CreatedAt: now, UpdatedAt: now,
		ParallelInProgress: Policy(ns.ParallelInProgress, cfg), ExternalKey: ns.ExternalKey, Owner: ns.Owner,
		Agent: NullString(ns.Agent), Cwd: NullString(ns.Cwd), ParentID: NullString(ns.ParentID), PlanLifetime: ns.PlanLifetime,
		Listed: !ns.Unlisted, Hooked: ns.Hooked}
	if s.Title == "" {
		s.Title, s.Untitled = projection.DefaultTitle(ns.Agent, ns.Cwd, now), true
	}
	Settle(&s, projection.Activity{}, cfg, now)
	return s
}

// Meta is what a batch changes of its session beside the log: the
// title its first prompt gives an untitled session ("" for none; StandIn
// when it is a subagent's prompt, which leaves the session untitled for
// the task its parent gave it to replace, see store.NewSession.Title), whether
// it lists a session not listed yet, and its goal (goal, when goalSet).
// goalTouched is a batch that may change the goal: it is made against
// the goal as the session's row holds it.
type Meta struct {
	Title                string
	StandIn              bool
	List                 bool
	Goal                 *projection.Goal
	GoalSet, GoalTouched bool
}

// MetaOf is what events change of session sess (see Meta).
func MetaOf(sess store.Session, events []projection.Event) Meta {
	var m Meta
	if sess.Untitled {
		m.Title = projection.PromptTitle(events)
		if m.Title == "" && sess.ParentID != nil && madeUpTitle(sess) {
			m.Title, m.StandIn = projection.StandInTitle(events), true
		}
	}
	m.List = !sess.Listed && projection.Content(events)
	for _, ev := range events {
		m.GoalTouched = m.GoalTouched || projection.TouchesGoal(ev)
	}
	if m.GoalTouched {
		m.Goal, m.GoalSet = projection.GoalOf(sess.Goal, events)
	}
	return m
}

// madeUpTitle reports whether s reads the title Tack made up for it
// (projection.DefaultTitle), no prompt's: a subagent's first prompt
// stands in for its task, and no later one does.
func madeUpTitle(s store.Session) bool {
	var agent, cwd string
	if s.Agent != nil {
		agent = *s.Agent
	}
	if s.Cwd != nil {
		cwd = *s.Cwd
	}
	return s.Untitled && s.Title == projection.DefaultTitle(agent, cwd, s.CreatedAt)
}

// Any reports whether the batch changes anything of the session, or may.
func (m Meta) Any() bool { return m.Title != "" || m.List || m.GoalTouched }

// GoalArg is the goal to store, as JSON; nil (SQL NULL) when the batch
// sets none.
func (m Meta) GoalArg() []byte {
	if !m.GoalSet || m.Goal == nil {
		return nil
	}
	b, _ := json.Marshal(m.Goal)
	return b
}

// Apply sets what m changes on s.
func (m Meta) Apply(s *store.Session) {
	if m.Title != "" {
		s.Title, s.Untitled = m.Title, m.StandIn
	}
	if m.List {
		s.Listed = true
	}
	if m.GoalSet {
		s.Goal = m.Goal
	}
}

// KeyRow is one key of an event the log holds, with the event's seq.
type KeyRow struct {
	Key string
	Seq int64
}

// PruneBatch is how many expired Idempotency-Keys one keyed append deletes:
// more than it adds, so a backlog drains, and few enough to stay cheap.
const PruneBatch = 64

// IdempotencyCutoff is the creation time before which a stored
// Idempotency-Key has expired.
func IdempotencyCutoff(now projection.Time) projection.Time {
	return projection.NewTime(now.Add(-store.IdempotencyRetention))
}

// Apply runs a batch through the projection on a copy of st. It is the one
// place where the rules of the log are enforced, whatever the store, and
// where a derived list write (projection.Derivation) is made: from st as
// the batch's events before it left it, inside the append's transaction
// (or, on the Postgres fast path, from a cached state whose head the
// transaction checks), so concurrent derivations never lose one another.
func Apply(st projection.State, req store.AppendRequest, cfg projection.Config, at projection.Time) (Applied, error) {
	if req.ExpectedSeq != nil && *req.ExpectedSeq != st.LastSeq {
		return Applied{}, &store.ConflictError{Expected: *req.ExpectedSeq, Actual: st.LastSeq}
	}
	a := Applied{Events: make([]projection.Event, 0, len(req.Events))}
	for i, ne := range req.Events {
		prev := st
		ev, err := st.Apply(ne, at, cfg, req.BaseVersion)
		if errors.Is(err, projection.ErrNoWrite) {
			continue // a derived list write that makes none: nothing to store
		}
		if err != nil {
			var pe *projection.Error
			if errors.As(err, &pe) {
				return Applied{}, &store.EventError{Index: i, Err: pe}
			}
			return Applied{}, err
		}
		a.Changed = a.Changed || cfg.TodosChanged(prev, ev)
		if projection.ListWrite(ev.Type) {
			a.Versions = append(a.Versions, st.VersionOf(prev.Items, ev))
		}
		a.Events = append(a.Events, ev)
	}
	a.Next = st
	return a, nil
}

// Applied is what apply made of a batch: the state it left (next), the
// events to store, the list's versions its list writes made, and whether
// it changed the todos view.
type Applied struct {
	Next     projection.State
	Events   []projection.Event
	Versions []projection.Version
	Changed  bool
}

// EndReason reads a stored turn end reason (NULL: none).
func EndReason(s *string) projection.EndReason {
	if s == nil {
		return ""
	}
	return projection.EndReason(*s)
}

// NullReason is the stored form of a turn end reason: NULL for none.
func NullReason(r projection.EndReason) *string {
	if r == "" {
		return nil
	}
	s := string(r)
	return &s
}

// Refused reports whether err refused an append outright, before anything
// could commit: an expectedSeq the log has passed, or an event the
// projection rejected (whose seen mark, when it showed the model the list,
// is nothing a read of the list shows). A copy of the list kept in memory
// stands through it; any other error may have changed the list.
func Refused(err error) bool {
	var (
		conflict *store.ConflictError
		rejected *projection.Error
	)
	return errors.As(err, &conflict) || errors.As(err, &rejected)
}

// ShownVersion is the version of the list a rejection showed the model
// (projection.Error.Shown), or 0.
func ShownVersion(err error) int64 {
	var pe *projection.Error
	if errors.As(err, &pe) {
		return pe.Shown
	}
	return 0
}

// Policy resolves a session's stored policy (nil: none of its own) against
// the server's default.
func Policy(stored *bool, cfg projection.Config) bool {
	if stored != nil {
		return *stored
	}
	return cfg.AllowParallel
}

// Cursor is the keyset position of a sessions page.
type Cursor struct {
	UpdatedAt time.Time
	ID        string
}

func encodeCursor(s store.Session) string { return Cursor{s.UpdatedAt.Time, s.ID}.encode() }

func (c Cursor) encode() string {
	raw := strconv.FormatInt(c.UpdatedAt.UnixMilli(), 10) + ":" + c.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// Where a sessions page starts when it has no cursor, and where a search
// window ends when it reaches the oldest session: past every stored time.
var (
	listTop    = Cursor{UpdatedAt: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}
	listBottom = Cursor{UpdatedAt: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}
)

// SessionsReader is one store's SQL for a page of the sessions list.
// Find runs the paging rules between its calls.
type SessionsReader interface {
	// Page reads up to limit sessions strictly after from and at or after
	// to in the list's order, of q.Owner when set, children of q.Parent
	// when set, whose titles hold q.Title when set.
	Page(ctx context.Context, q store.SessionQuery, from, to Cursor, limit int) ([]store.Session, error)
	// Nth reads the key of the n-th session (1-based) after from, of
	// q.Owner and children of q.Parent when set (whatever their titles),
	// and whether any session follows it; ok is false when there are
	// fewer than n.
	Nth(ctx context.Context, q store.SessionQuery, from Cursor, n int) (key Cursor, ok, more bool, err error)
}

// Find reads a page of the sessions list. Without a title it is a plain
// keyset page; a search reads the matches among the next q.Scan sessions
// (see MaxSearchScan).
func Find(ctx context.Context, r SessionsReader, q store.SessionQuery) ([]store.Session, string, error) {
	from := listTop
	if q.Cursor != "" {
		var err error
		if from, err = decodeCursor(q.Cursor); err != nil {
			return nil, "", err
		}
	}
	to, windowed := listBottom, false
	if q.Title != "" {
		if q.Scan <= 0 {
			q.Scan = store.MaxSearchScan
		}
		key, ok, more, err := r.Nth(ctx, q, from, q.Scan)
		if err != nil {
			return nil, "", err
		}
		if ok {
			to, windowed = key, more
		}
	}
	list, err := r.Page(ctx, q, from, to, q.Limit+1)
	if err != nil {
		return nil, "", err
	}
	list, more := pageOf(list, q.Limit)
	switch {
	case more:
		return list, encodeCursor(list[len(list)-1]), nil
	case windowed:
		return list, to.encode(), nil
	}
	return list, "", nil
}

func decodeCursor(c string) (Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return Cursor{}, store.ErrBadCursor
	}
	ms, id, ok := strings.Cut(string(raw), ":")
	n, err := strconv.ParseInt(ms, 10, 64)
	// Bounds keep the keyset inside what the database can compare: a time
	// within years 0000–9999 and an id of printable ASCII like every id.
	if !ok || err != nil || n < 0 || n > 253402300799999 || !sessionIDShape(id) {
		return Cursor{}, store.ErrBadCursor
	}
	return Cursor{UpdatedAt: time.UnixMilli(n).UTC(), ID: id}, nil
}

// sessionIDShape reports whether id has the shape of the ids NewSessionID
// issues: "ses_" and the lower-case base32 of rand.Text. A cursor names a
// session this server made; any other id could not have been issued.
func sessionIDShape(id string) bool {
	rest, ok := strings.CutPrefix(id, "ses_")
	if !ok || rest == "" || len(rest) > 64 {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !(c >= 'a' && c <= 'z' || c >= '2' && c <= '7') {
			return false
		}
	}
	return true
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

func MarshalResult(r store.AppendResult) []byte {
	b, _ := json.Marshal(r)
	return b
}

// AppendTx is one store's SQL for the two steps of an append, inside one
// write transaction that the store opened and will commit. Append runs the
// dialect-free algorithm between them, so the rules live in one place. Two
// steps, not one call per statement, so that a store can send each as one
// round trip.
type AppendTx interface {
	// Read reads the session and its projection (the todo items only when
	// items is true: the batch may change the todos view), when key is
	// set, the result stored under that Idempotency-Key (nil when none),
	// and the events of the log that hold any of keys (the batch's own
	// keys), by key: in the same round trip where the store can (Postgres
	// queues the read in the batch that takes the lock).
	Read(ctx context.Context, id string, items bool, key string, keys []string) (store.Session, projection.State, *StoredResult, map[string]projection.Event, error)
	// Write stores what w holds (see Write) and commits.
	Write(ctx context.Context, w *Write) error
	// MarkSeen records version as seen by the model and commits: the
	// rejection that showed it the list appended nothing else.
	MarkSeen(ctx context.Context, id string, version int64) error
}

// StoredResult is an append's result kept under its Idempotency-Key.
type StoredResult struct {
	RequestHash string
	Result      []byte
}

// Append is the append algorithm: read the state, answer a retry from its
// stored result, run the batch through apply, and write what it produced.
func Append(ctx context.Context, tx AppendTx, id string, req store.AppendRequest, cfg projection.Config, clock store.Clock) (store.AppendResult, error) {
	keys := BatchKeys(req.Events)
	sess, st, stored, byKey, err := tx.Read(ctx, id, NeedsItems(req.Events), req.IdempotencyKey, keys)
	if err != nil {
		return store.AppendResult{}, err
	}
	cfg = SessionConfig(cfg, sess)
	if stored != nil {
		res, err := replayResult(req, stored.RequestHash, stored.Result)
		res.Session.Owner = sess.Owner   // not in the JSON stored before it was
		res.Session.Listed = sess.Listed // never in the JSON; it only ever becomes true
		return res, err
	}
	var (
		held []projection.Event
		kept []int // the batch's index of each event left in req
	)
	if len(keys) > 0 {
		req, held, kept = dropHeld(req, byKey)
	}
	at := clock.Now()
	a, err := Apply(st, req, cfg, at)
	var evErr *store.EventError
	if kept != nil && errors.As(err, &evErr) {
		// Name the event by its place in the batch as it was sent.
		err = &store.EventError{Index: kept[evErr.Index], Err: evErr.Err}
	}
	if v := ShownVersion(err); v > 0 {
		// The rejection showed the model the list: it has seen it now.
		if merr := tx.MarkSeen(ctx, id, v); merr != nil {
			return store.AppendResult{}, merr
		}
		return store.AppendResult{}, err
	}
	if err != nil {
		return store.AppendResult{}, err
	}
	res := ResultOf(id, sess, a, cfg, clock.Now())
	res.Held = held
	if len(a.Events) == 0 {
		return res, nil
	}
	w := &Write{ID: id, Req: req, Meta: MetaOf(sess, a.Events), Prev: st, Next: a.Next, Res: res, Versions: a.Versions, At: at}
	w.Meta.Apply(&w.Res.Session)
	for _, ev := range a.Events {
		for _, k := range ev.Keys {
			w.KeyRows = append(w.KeyRows, KeyRow{Key: k, Seq: ev.Seq})
		}
	}
	return w.Res, tx.Write(ctx, w)
}

// Write is what an append's write stores (AppendTx.Write): the events of
// Res, the new head Next, the todo list's row when it changed from Prev
// (the view when Res.TodosChanged, else the step counter), the history
// entries of the batch's list writes (Versions), what the batch changes of
// the session beside the log (Meta), the keys of its events (KeyRows), and
// Res under Req.IdempotencyKey when set; At is the append's time.
type Write struct {
	ID       string
	Req      store.AppendRequest
	Meta     Meta
	KeyRows  []KeyRow
	Prev     projection.State
	Next     projection.State
	Res      store.AppendResult
	Versions []projection.Version
	At       projection.Time
}

// BatchKeys lists the keys the events of a batch carry, each once.
func BatchKeys(events []projection.NewEvent) []string {
	var keys []string
	seen := map[string]bool{}
	for _, ev := range events {
		for _, k := range ev.Keys {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	return keys
}

// dropHeld takes out of req the events the log holds already (byKey, the
// log's events by key) and those one of whose keys an earlier event of the
// batch carries: an event that reached Tack by two ways (a hook and the
// transcript) is stored once. It returns the log's events for the first,
// and the index in the batch of each event left.
func dropHeld(req store.AppendRequest, byKey map[string]projection.Event) (store.AppendRequest, []projection.Event, []int) {
	var held []projection.Event
	kept := make([]projection.NewEvent, 0, len(req.Events))
	index := make([]int, 0, len(req.Events))
	taken := map[string]bool{}
	for i, ev := range req.Events {
		dup := false
		for _, k := range ev.Keys {
			if stored, ok := byKey[k]; ok && !dup {
				held = append(held, stored)
				dup = true
			}
			dup = dup || taken[k]
		}
		if dup {
			continue
		}
		for _, k := range ev.Keys {
			taken[k] = true
		}
		kept = append(kept, ev)
		index = append(index, i)
	}
	req.Events = kept
	return req, held, index
}

// NeedsItems reports whether a batch may change the todos view, so that the
// append must read the current items.
func NeedsItems(events []projection.NewEvent) bool {
	for _, ev := range events {
		if projection.ListWrite(ev.Type) || ev.Type == projection.TypeTurnStart {
			return true
		}
	}
	return false
}

// replayResult answers a retried request from the result stored under its
// Idempotency-Key, or ErrIdempotencyMismatch when the request differs.
func replayResult(req store.AppendRequest, hash string, stored []byte) (store.AppendResult, error) {
	if hash != req.RequestHash {
		return store.AppendResult{}, store.ErrIdempotencyMismatch
	}
	var res store.AppendResult
	if err := json.Unmarshal(stored, &res); err != nil {
		return store.AppendResult{}, fmt.Errorf("decode idempotent result: %w", err)
	}
	res.Replayed = true
	return res, nil
}

// ResultOf is what an append answers: the events ap stored and the
// session and todos view they left. sess is the session before the batch; its
// updatedAt becomes the time of the batch's last event.
func ResultOf(id string, sess store.Session, ap Applied, cfg projection.Config, now projection.Time) store.AppendResult {
	res := store.AppendResult{Events: ap.Events, Session: sess, TodosChanged: ap.Changed}
	if len(ap.Events) == 0 {
		return res
	}
	next := ap.Next
	res.Session.LastSeq, res.Session.Turn, res.Session.UpdatedAt = next.LastSeq, next.Turn, *next.LastAt
	a := next.Activity()
	a.Agent = sess.Row.Agent
	Settle(&res.Session, a, cfg, now)
	if ap.Changed {
		todos := next.Todos(id)
		res.Todos = &todos
		res.Session.TodoCounts = todos.Counts
		res.Session.CurrentItem = projection.CurrentItem(todos.Todos)
	}
	return res
}

// VersionTodos is v's list encoded for todo_versions. items is the batch's
// new list (res.Todos) as encoded once for the todo list's row, nil when
// the row was not written; a version holding that very list reuses it.
func VersionTodos(v projection.Version, res store.AppendResult, items []byte) []byte {
	if items != nil && SameItems(v.Todos, res.Todos.Todos) {
		return items
	}
	return projection.AppendItems(nil, v.Todos, true)
}

// SameItems reports whether a and b are the very same list.
func SameItems(a, b []projection.Item) bool {
	return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0]
}

// pageOf trims a list read with limit+1 rows to limit and reports whether
// there was more.
func pageOf[T any](list []T, limit int) ([]T, bool) {
	if len(list) > limit {
		return list[:limit], true
	}
	return list, false
}

// Reversed reverses events in place, for pages read newest first.
func Reversed(events []projection.Event) []projection.Event {
	for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
		events[i], events[j] = events[j], events[i]
	}
	return events
}

// SurfaceReader is one store's SQL for reading the model surface, the
// events that become messages. messagesIn runs the paging rules between its
// calls, so that they live in one place.
type SurfaceReader interface {
	// Surface reads the surface events with seq > after, oldest first: at
	// most limit of them, stopping once their data passes budget bytes.
	// more reports whether another surface event follows them.
	Surface(ctx context.Context, after int64, limit, budget int) (events []projection.Event, more bool, err error)
	// CallIDs reads the callId of each of the next n surface events after
	// after, oldest first: "" for an event that is not a tool result.
	CallIDs(ctx context.Context, after int64, n int) ([]string, error)
}

// Messages reads a page of the model surface. A page is bounded like
// every page of the log, by limit and by MaxPageBytes, with one rule more:
// it never ends between an assistant message's tool calls and the results
// that answer them next in the log. A page that would end there ends
// before that assistant message instead; when the message starts the page,
// the page holds it with those results (at most projection.MaxToolCalls of
// them), past limit and the byte budget if need be. So every page is whole
// exchanges, and pages read one after the other are the whole surface.
func Messages(ctx context.Context, r SurfaceReader, after int64, limit int) (store.MessagesPage, error) {
	events, more, err := r.Surface(ctx, after, limit, store.MaxPageBytes)
	if err != nil {
		return store.MessagesPage{}, err
	}
	msgs := projection.DeriveMessages(events)
	if at, open := projection.OpenCalls(msgs); more && open != nil {
		last := events[len(events)-1].Seq
		ids, err := r.CallIDs(ctx, last, len(open))
		if err != nil {
			return store.MessagesPage{}, err
		}
		// n is how many of the next messages answer the open calls.
		n := 0
		for _, id := range ids {
			if !open[id] {
				break
			}
			delete(open, id)
			n++
		}
		switch {
		case n == 0: // the page ends between two exchanges
		case at > 0:
			events, msgs = events[:at], msgs[:at]
		default:
			rest, restMore, err := r.Surface(ctx, last, n, math.MaxInt)
			if err != nil {
				return store.MessagesPage{}, err
			}
			events, more = append(events, rest...), restMore
			msgs = append(msgs, projection.DeriveMessages(rest)...)
		}
	}
	next := after
	if len(events) > 0 {
		next = events[len(events)-1].Seq
	}
	return store.MessagesPage{Messages: msgs, HasMore: more, NextAfter: next}, nil
}

// VersionPage gathers a page of the list's history as rows come, newest
// first: limit versions and MaxVersionPageBytes at most (but never none).
type VersionPage struct {
	Limit    int
	bytes    int
	Versions []projection.Version
	// More is set once the page is full and another row follows.
	More bool
}

// Add takes the next row, or notes that there is more when the page is full.
func (p *VersionPage) Add(v projection.Version, todos, changes []byte) error {
	n := len(todos) + len(changes)
	if len(p.Versions) == p.Limit || (len(p.Versions) > 0 && p.bytes+n > store.MaxVersionPageBytes) {
		p.More = true
		return nil
	}
	if err := json.Unmarshal(todos, &v.Todos); err != nil {
		return fmt.Errorf("decode todo version %d: %w", v.Version, err)
	}
	if err := json.Unmarshal(changes, &v.Changes); err != nil {
		return fmt.Errorf("decode todo version %d: %w", v.Version, err)
	}
	p.bytes += n
	p.Versions = append(p.Versions, v)
	return nil
}

// SessionColumns are the columns both stores read a Session from, from
// sessions s joined to todo_lists t; sessionDests are their scan targets.
const SessionColumns = `s.id, s.title, s.created_at, s.updated_at, s.last_seq, s.turn, s.turn_open,
	t.pending, t.in_progress, t.completed, s.parallel_in_progress, s.external_key, s.owner,
	s.turn_end_reason, t.current_item, s.agent, s.cwd, s.parent_id, s.plan_lifetime, s.turn_at, s.ended_at,
	s.needs_you_since, s.needs_you, s.untitled, s.listed, s.needs_you_seq, s.agent_status, s.agent_status_at, s.hooked, s.goal`

// SessionDests are the scan targets of sessionColumns: s's fields, and for
// the columns each store keeps in another form than the Session shows
// them, the store's own (created, updated, parallel, key, reason, and the
// times turnAt, endedAt, needsYou and agentAt); more follow (the columns
// a query selects after them).
func SessionDests(s *store.Session, created, updated, parallel, key, reason, turnAt, endedAt, needsYou, agentAt any, more []any) []any {
	d := make([]any, 0, 30+len(more))
	d = append(d, &s.ID, &s.Title, created, updated, &s.LastSeq, &s.Turn.Number, &s.Turn.Open,
		&s.TodoCounts.Pending, &s.TodoCounts.InProgress, &s.TodoCounts.Completed, parallel, key, &s.Owner,
		reason, &s.CurrentItem, &s.Agent, &s.Cwd, &s.ParentID, &s.PlanLifetime, turnAt, endedAt, needsYou, &s.Row.NeedsWhy,
		&s.Untitled, &s.Listed, &s.Row.NeedsSeq, &s.Row.AgentStatus, agentAt, &s.Hooked, &s.Row.GoalJSON)
	return append(d, more...)
}

// SessionsJoin is where sessionColumns are read from.
const SessionsJoin = `sessions s JOIN todo_lists t ON t.session_id = s.id`

// TodoColumns are the columns of todo_lists t that the todo side of the
// projection is read from, in both stores; items is how the list itself is
// read (t.items, or a CASE that reads it only when asked, else NULL).
func TodoColumns(items string) string {
	return `t.version, t.standing, ` + items + `, t.updated_at, t.seen, t.last_edit, t.edited_by, t.steps, t.step_message, t.task_high`
}

// TodoDests are the scan targets of todoColumns: st's fields, and for the
// two columns each store keeps in another form than the State holds them,
// the store's own (items, updated).
func TodoDests(st *projection.State, items, updated any) []any {
	return []any{&st.Version, &st.Standing, items, updated, &st.Seen, &st.LastEdit, &st.EditedBy, &st.Steps, &st.StepMessage, &st.TaskHigh}
}

// The columns an append writes, one list each for the statements of both
// stores, each store putting its own placeholders to them (setList,
// pgParams): the head of the session's log, a stored event (after its
// session_id), the todo list's row when the batch changed the list, and a
// version of the list (after its session_id). The values functions below
// give their arguments in the same order.
var (
	HeadColumns     = []string{"last_seq", "turn", "turn_open", "updated_at", "turn_end_reason", "turn_at", "ended_at"}
	EventColumns    = []string{"seq", "type", "turn", "at", "received_at", "data"}
	TodoListColumns = []string{"version", "standing", "items", "updated_at", "pending", "in_progress", "completed",
		"seen", "last_edit", "edited_by", "steps", "step_message", "current_item", "task_high"}
	VersionColumns = []string{"version", "at", "author", "todos", "changes"}
)

// HeadValues are the values of headColumns for next, the times in the
// store's own form.
func HeadValues(next projection.State, lastAt, turnAt, endedAt any) []any {
	return []any{next.LastSeq, next.Turn.Number, next.Turn.Open, lastAt, NullReason(next.Turn.EndReason), turnAt, endedAt}
}

// EventValues are the values of eventColumns for ev, its turn, times and
// data in the store's own form.
func EventValues(ev projection.Event, turn, at, received, data any) []any {
	return []any{ev.Seq, ev.Type, turn, at, received, data}
}

// TodoListValues are the values of todoListColumns for the list res left
// (next its state), items and its update time in the store's own form.
func TodoListValues(next projection.State, res store.AppendResult, items, updated any) []any {
	c := res.Todos.Counts
	return []any{next.Version, next.Standing, items, updated, c.Pending, c.InProgress, c.Completed,
		next.Seen, next.LastEdit, next.EditedBy, next.Steps, next.StepMessage, res.Session.CurrentItem, next.TaskHigh}
}

// VersionValues are the values of versionColumns for v, its time and
// documents in the store's own form.
func VersionValues(v projection.Version, at, todos, changes any) []any {
	return []any{v.Version, at, v.By, todos, changes}
}

// SetList is the SET list "col = placeholder, ..." of cols, param giving
// each column's placeholder in turn. The seen mark only grows (a todo_read
// may have raised it since the append read it): it is set to the greater
// of the two, with the dialect's greatest (GREATEST, or SQLite's max).
func SetList(cols []string, param func(col string) string, greatest string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteString(", ")
		}
		v := param(c)
		if c == "seen" {
			v = greatest + "(seen, " + v + ")"
		}
		b.WriteString(c + " = " + v)
	}
	return b.String()
}

// SQLText is b as a text argument, nil (NULL) when b is.
func SQLText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}
