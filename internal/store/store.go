// Package store keeps session logs and their projections. It is the only
// package that speaks SQL; every implementation satisfies Store and applies
// the pure projection package inside its append transaction.
package store

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

// Sentinel errors. The API maps each to one HTTP status.
var (
	ErrNotFound = errors.New("session not found")
	// ErrUnavailable wraps every failure to reach the database.
	ErrUnavailable = errors.New("database unavailable")
	// ErrIdempotencyMismatch means an Idempotency-Key was reused with a different request.
	ErrIdempotencyMismatch = errors.New("idempotency key was already used with a different request")
	// ErrBadCursor means a page cursor was not one this store issued.
	ErrBadCursor = errors.New("invalid cursor")
	// ErrNoParent means a new session's parent is no session of its owner.
	ErrNoParent = errors.New("parent session not found")
)

// ConflictError is a rejected expectedSeq: the log has moved on.
type ConflictError struct{ Expected, Actual int64 }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("expectedSeq %d does not match the log's last seq %d", e.Expected, e.Actual)
}

// EventError is an event the projection rejected, with its place in the batch.
type EventError struct {
	Index int
	Err   *projection.Error
}

func (e *EventError) Error() string { return fmt.Sprintf("events[%d]: %s", e.Index, e.Err.Message) }
func (e *EventError) Unwrap() error { return e.Err }

// Session is a session's summary, as every endpoint that returns one shows it.
type Session struct {
	ID         string            `json:"id"`
	Title      string            `json:"title"`
	CreatedAt  projection.Time   `json:"createdAt"`
	UpdatedAt  projection.Time   `json:"updatedAt"`
	LastSeq    int64             `json:"lastSeq"`
	Turn       projection.Turn   `json:"turn"`
	TodoCounts projection.Counts `json:"todoCounts"`
	// CurrentItem is the content of the current list's item in progress
	// (projection.CurrentItem), nil when none is.
	CurrentItem *string `json:"currentItem"`
	// ParallelInProgress is the session's policy: whether its lists may have
	// more than one in_progress item (the server's default unless set).
	ParallelInProgress bool `json:"parallelInProgress"`
	// ExternalKey names where the session came from, such as an imported
	// transcript; "" for sessions made without one.
	ExternalKey string `json:"externalKey,omitempty"`
	// Agent names the agent the session is of ("claude-code", "codex" or
	// a harness's own name), Cwd its working directory, ParentID the
	// session it is a subagent of; each nil when not given.
	Agent    *string `json:"agent"`
	Cwd      *string `json:"cwd"`
	ParentID *string `json:"parentId"`
	// PlanLifetime is how long a list stands: projection.PlanTurn or
	// projection.PlanSession.
	PlanLifetime string `json:"planLifetime"`
	// State is projection.SessionState of the session's activity when it
	// was read, and StateSince since when it holds.
	State      string          `json:"state"`
	StateSince projection.Time `json:"stateSince"`
	// Owner is the id of the principal the session belongs to.
	Owner string `json:"owner"`
	// NeedsYou says what the agent waits on its person for, set only while
	// State is needs_you (SetNeedsYou).
	NeedsYou *projection.NeedsYou `json:"needsYou,omitempty"`
	// needsWhy is the stored NeedsYou of the latest SetNeedsYou, as JSON;
	// settle shows it while the state is needs_you. needsSeq is the log's
	// last seq when it was set (nil when no wait is marked).
	needsWhy []byte
	needsSeq *int64
	// agent is what the agent's registry last said (SetAgentStatus), nil
	// when it has said nothing; agentStatus is its status as stored.
	agent       *projection.AgentStatus
	agentStatus *string
	// AgentBusy is true while the agent's own registry says it is busy and
	// no event is newer (SetAgentStatus): the state is working however long
	// the log is quiet (a long tool call), so a page does not read it as
	// idle after -idle-after.
	AgentBusy bool `json:"agentBusy,omitempty"`
	// Untitled is true while Title is the one Tack made up
	// (projection.DefaultTitle): the first person's prompt appended
	// replaces it. A title given at creation or by Rename is final.
	Untitled bool `json:"untitled"`
	// Listed is false while the session, made by an agent's hook, holds
	// nothing but a session/end (NewSession.Unlisted): it is in no list,
	// feed or notification until it has content (projection.Content).
	Listed bool `json:"-"`
	// Hooked is true once an agent's hook was heard for the session
	// (NewSession.Hooked, SetHooked): Tack is connected for its agent.
	Hooked bool `json:"hooked"`
	// Goal is the session's goal (projection.NextGoal), nil before any;
	// goalJSON is it as its row stores it, read by settle.
	Goal     *projection.Goal `json:"goal"`
	goalJSON []byte
}

// rowActivity is the activity of session s as its row holds it: its
// updatedAt is the latest event's time once it has one, turnAt and
// endedAt the state's TurnAt and EndedAt, needsYou since when the agent
// has waited on a person (SetNeedsYou), agentAt since when the agent's
// registry has said its status (SetAgentStatus). It sets s.agent.
func rowActivity(s *Session, turnAt, endedAt, needsYou, agentAt *projection.Time) projection.Activity {
	a := projection.Activity{LastSeq: s.LastSeq, TurnOpen: s.Turn.Open, TurnStartedAt: turnAt, EndedAt: endedAt}
	if s.LastSeq > 0 {
		at := s.UpdatedAt
		a.LastAt = &at
	}
	if needsYou != nil && s.needsSeq != nil {
		a.NeedsYouSince, a.NeedsYouSeq = needsYou, *s.needsSeq
	}
	s.agent = nil
	if agentAt != nil && s.agentStatus != nil {
		s.agent = &projection.AgentStatus{Status: *s.agentStatus, At: *agentAt}
	}
	a.Agent = s.agent
	return a
}

// settle sets the session's state from its activity a, at the store's clock.
func (s *Session) settle(a projection.Activity, cfg projection.Config) {
	s.State, s.StateSince = projection.SessionState(a, Now(), cfg.IdleAfter, s.CreatedAt)
	s.AgentBusy = s.State == projection.StateWorking && a.Agent != nil && a.Agent.Status == projection.AgentBusy &&
		(a.LastAt == nil || !a.LastAt.After(a.Agent.At.Time))
	s.Goal = nil
	if len(s.goalJSON) > 0 {
		var g projection.Goal
		if json.Unmarshal(s.goalJSON, &g) == nil {
			s.Goal = &g
		}
	}
	s.NeedsYou = nil
	if s.State == projection.StateNeedsYou {
		// A mark stored before its reason was (or one unreadable) still
		// says that the agent waits: on a permission, as hooks first told.
		n := projection.NeedsYou{Kind: projection.NeedsPermission}
		if len(s.needsWhy) > 0 && json.Unmarshal(s.needsWhy, &n) != nil {
			n = projection.NeedsYou{Kind: projection.NeedsPermission}
		}
		s.NeedsYou = &n
	}
}

// sessionState sets the part of the projection's state the session's row
// holds: the head of the log and its activity a.
func sessionState(s Session, a projection.Activity, st *projection.State) {
	st.LastSeq, st.Turn, st.LastAt, st.TurnAt, st.EndedAt = s.LastSeq, s.Turn, a.LastAt, a.TurnStartedAt, a.EndedAt
}

// sessionConfig is the server's policy as session sess applies it.
func sessionConfig(cfg projection.Config, sess Session) projection.Config {
	cfg.AllowParallel, cfg.PlanLifetime = sess.ParallelInProgress, sess.PlanLifetime
	return cfg
}

// NewSession is what a caller asks of a new session.
type NewSession struct {
	// Title is the session's title, final; "" makes it untitled, with
	// projection.DefaultTitle's until a prompt titles it.
	Title string
	// Unlisted keeps the session out of every list until its log holds
	// content (Session.Listed): an agent's hook makes its session before
	// it knows whether the agent will say anything.
	Unlisted bool
	// Hooked makes the session as heard by an agent's hook (Session.Hooked).
	Hooked bool
	// ParallelInProgress, when set, is the session's policy; nil follows the
	// server's default, now and after a restart with another default.
	ParallelInProgress *bool
	// ExternalKey, when set, makes creation find-or-create: a session of
	// the same owner that already has the key is returned as it is, and
	// created is false.
	ExternalKey string
	// Owner is the principal the session belongs to; "" is LocalPrincipal.
	Owner string
	// Agent, Cwd and ParentID are the session's, "" for none; a ParentID
	// must name a session of Owner (else ErrNoParent). PlanLifetime is
	// projection.PlanTurn (or "") or projection.PlanSession.
	Agent, Cwd, ParentID, PlanLifetime string
}

// nullString is s, or nil when it is "".
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// newSession is the session ns makes at now, before it is stored.
func newSession(ns NewSession, now projection.Time, cfg projection.Config) Session {
	if ns.PlanLifetime == "" {
		ns.PlanLifetime = projection.PlanTurn
	}
	s := Session{ID: NewSessionID(), Title: ns.Title, CreatedAt: now, UpdatedAt: now,
		ParallelInProgress: policy(ns.ParallelInProgress, cfg), ExternalKey: ns.ExternalKey, Owner: ns.Owner,
		Agent: nullString(ns.Agent), Cwd: nullString(ns.Cwd), ParentID: nullString(ns.ParentID), PlanLifetime: ns.PlanLifetime,
		Listed: !ns.Unlisted, Hooked: ns.Hooked}
	if s.Title == "" {
		s.Title, s.Untitled = projection.DefaultTitle(ns.Agent, ns.Cwd, now), true
	}
	s.settle(projection.Activity{}, cfg)
	return s
}

// SessionQuery selects a page of the sessions list.
type SessionQuery struct {
	// Owner keeps the sessions of this principal only; "" keeps all.
	Owner string
	// Title keeps the sessions whose title holds it, ignoring case (both
	// sides lowercased); "" keeps all.
	Title string
	// Parent keeps the children of this session (its subagents); "" keeps all.
	Parent string
	// Limit is the most sessions a page holds.
	Limit int
	// Cursor is the next of the previous page; "" starts at the newest.
	Cursor string
	// Scan bounds the sessions a search (Title set) examines in one call:
	// MaxSearchScan when 0.
	Scan int
}

// MaxSearchScan is how many sessions, newest first from the cursor, one
// search request examines at most. A search is a range read of the activity
// index, checking each title it passes; when those sessions hold fewer
// matches than the page, the page holds the matches found (perhaps none)
// and its cursor continues after the last session examined. So a request
// costs the same however many sessions there are, and a client pages
// through all of them in steps of MaxSearchScan.
const MaxSearchScan = 2000

// AppendRequest is a batch of events to append all or nothing.
type AppendRequest struct {
	Events []projection.NewEvent
	// ExpectedSeq, when set, rejects the batch unless the log ends there.
	ExpectedSeq *int64
	// BaseVersion, when set, rejects a todo/write made against an older list.
	BaseVersion *int64
	// IdempotencyKey, when set, makes a retry with the same RequestHash
	// return the original result and append nothing.
	IdempotencyKey string
	RequestHash    string
	// keyRows are the keys of the batch's stored events, which write
	// stores beside them; appendIn sets them.
	keyRows []keyRow
	// meta is what the batch changes of the session's title and listing,
	// which write stores with the head; appendIn sets it.
	meta sessionMeta
}

// sessionMeta is what a batch changes of its session beside the log: the
// title its first prompt gives an untitled session ("" for none), whether
// it lists a session not listed yet, and its goal (goal, when goalSet).
// goalTouched is a batch that may change the goal: it is made against
// the goal as the session's row holds it.
type sessionMeta struct {
	title                string
	list                 bool
	goal                 *projection.Goal
	goalSet, goalTouched bool
}

// metaOf is what events change of session sess (see sessionMeta).
func metaOf(sess Session, events []projection.Event) sessionMeta {
	var m sessionMeta
	if sess.Untitled {
		m.title = projection.PromptTitle(events)
	}
	m.list = !sess.Listed && projection.Content(events)
	for _, ev := range events {
		m.goalTouched = m.goalTouched || projection.TouchesGoal(ev)
	}
	if m.goalTouched {
		m.goal, m.goalSet = projection.GoalOf(sess.Goal, events)
	}
	return m
}

// any reports whether the batch changes anything of the session, or may.
func (m sessionMeta) any() bool { return m.title != "" || m.list || m.goalTouched }

// goalArg is the goal to store, as JSON; nil (SQL NULL) when the batch
// sets none.
func (m sessionMeta) goalArg() []byte {
	if !m.goalSet || m.goal == nil {
		return nil
	}
	b, _ := json.Marshal(m.goal)
	return b
}

// apply sets what m changes on s.
func (m sessionMeta) apply(s *Session) {
	if m.title != "" {
		s.Title, s.Untitled = m.title, false
	}
	if m.list {
		s.Listed = true
	}
	if m.goalSet {
		s.Goal = m.goal
	}
}

// keyRow is one key of an event the log holds, with the event's seq.
type keyRow struct {
	Key string
	Seq int64
}

// AppendResult is what an append stored, and the state it left.
type AppendResult struct {
	Events  []projection.Event `json:"events"`
	Session Session            `json:"session"`
	// Todos is the todos view the batch left, set only when TodosChanged.
	Todos *projection.Todos `json:"todos,omitempty"`
	// TodosChanged is true when the batch changed the todos view.
	TodosChanged bool `json:"todosChanged"`
	// Replayed is true when this is the stored result of an earlier request.
	Replayed bool `json:"-"`
	// Held are the events the log already held under a key of an event of
	// the batch (projection.NewEvent.Keys), which stored nothing for it:
	// the log's event, once for each such event of the batch.
	Held []projection.Event `json:"held,omitempty"`
}

// History is a page of the log read backwards, with the snapshot on the tail page.
type History struct {
	Events   []projection.Event
	HasMore  bool
	Snapshot *projection.Snapshot
}

// MaxPageBytes bounds a page of the log by bytes as well as by count: a read
// of events (REST /events and /history, a live socket's catch-up) or of the
// model surface stops once the event data it holds passes MaxPageBytes, so
// no page holds more than this plus one event, whatever the log holds. A
// page always holds at least one event, so every read makes progress.
const MaxPageBytes = 1 << 20

// MessagesPage is a page of the model surface, oldest first.
type MessagesPage struct {
	Messages []projection.Message
	// HasMore is true when more of the surface follows the page.
	HasMore bool
	// NextAfter is the seq of the page's last message: the after of the
	// next page (after itself when the page is empty).
	NextAfter int64
}

// Store is the contract every store implements.
type Store interface {
	Accounts
	Notes
	// CreateSession starts an empty session, or finds the one with
	// ns.ExternalKey (created false).
	CreateSession(ctx context.Context, ns NewSession) (sess Session, created bool, err error)
	Session(ctx context.Context, id string) (Session, error)
	// Sessions lists sessions by most recent activity, limit at a time.
	Sessions(ctx context.Context, limit int, cursor string) (sessions []Session, next string, err error)
	// FindSessions lists the sessions q selects by most recent activity, a
	// page at a time (see SessionQuery).
	FindSessions(ctx context.Context, q SessionQuery) (sessions []Session, next string, err error)
	Append(ctx context.Context, sessionID string, req AppendRequest) (AppendResult, error)
	// Events reads forwards: up to limit events with seq > after.
	Events(ctx context.Context, sessionID string, after int64, limit int) (events []projection.Event, hasMore bool, err error)
	// History reads backwards: the newest limit events with seq < before
	// (before 0 means the tail, which carries the snapshot).
	History(ctx context.Context, sessionID string, before int64, limit int) (History, error)
	Todos(ctx context.Context, sessionID string) (projection.Todos, error)
	// TodoList reads the todo side of the projection: the list, the
	// version the model has seen and the reminder's counters. One point read.
	TodoList(ctx context.Context, sessionID string) (projection.State, error)
	// TodoRead reads the todos view for the model's todo_read and records
	// its version as seen by the model.
	TodoRead(ctx context.Context, sessionID string) (projection.Todos, error)
	// TodoHistory pages the list's versions newest first: up to limit
	// versions older than before (0 means from the newest), and no more
	// than MaxVersionPageBytes of them unless the first alone is larger.
	TodoHistory(ctx context.Context, sessionID string, before int64, limit int) (versions []projection.Version, hasMore bool, err error)
	// Messages reads the model surface forwards: up to limit messages
	// derived from events with seq > after, never separating an assistant
	// message's tool calls from the results that follow it (see messagesIn).
	Messages(ctx context.Context, sessionID string, after int64, limit int) (MessagesPage, error)
	// SetNeedsYou records that the session's agent waits on a person since
	// since, for need (a permission prompt, a question, a plan): the
	// session's state is needs_you, and its NeedsYou need, until the next
	// event is appended (the events the log holds when it is set, a
	// question's own call among them, do not end it).
	SetNeedsYou(ctx context.Context, sessionID string, since projection.Time, need projection.NeedsYou) error
	// SetAgentStatus records what the agent's own registry says it is
	// doing (projection.AgentBusy or AgentIdle) and since when: while no
	// event is newer it decides working or idle (projection.SessionState).
	// A status older than the one stored is kept out. It answers the
	// session as it then stands.
	SetAgentStatus(ctx context.Context, sessionID string, status projection.AgentStatus) (Session, error)
	// SetHooked records that an agent's hook was heard for the session
	// (Session.Hooked), made before by an import or a watch.
	SetHooked(ctx context.Context, sessionID string) error
	// Rename gives the session a title a person chose, final: no prompt
	// replaces it. It answers the session renamed.
	Rename(ctx context.Context, sessionID, title string) (Session, error)
	Ping(ctx context.Context) error
	Close()
}

// MaxVersionPageBytes bounds a page of the list's history by the bytes of
// its stored versions: a page stops before the version that would take it
// past 1 MiB (a page holds at least one version, at most ~1.7 MiB at the
// item limits), so no read holds more than a few MiB.
const MaxVersionPageBytes = 1 << 20

// IdempotencyRetention is how long an Idempotency-Key answers retries with
// the result it stored. After it the key is forgotten: a retry is a new
// request. Expired keys are pruned by later keyed appends, pruneBatch at a
// time, so the keys kept are about one retention's worth of keyed writes.
const IdempotencyRetention = 24 * time.Hour

// pruneBatch is how many expired Idempotency-Keys one keyed append deletes:
// more than it adds, so a backlog drains, and few enough to stay cheap.
const pruneBatch = 64

// idempotencyCutoff is the creation time before which a stored
// Idempotency-Key has expired.
func idempotencyCutoff() projection.Time {
	return projection.NewTime(Now().Add(-IdempotencyRetention))
}

// Now is the server clock, truncated to what is stored. Tests may replace it.
var Now = func() projection.Time { return projection.NewTime(time.Now()) }

// NewSessionID returns a fresh opaque session id.
func NewSessionID() string { return "ses_" + strings.ToLower(rand.Text()) }

// apply runs a batch through the projection on a copy of st. It is the one
// place where the rules of the log are enforced, whatever the store, and
// where a derived list write (projection.Derivation) is made: from st as
// the batch's events before it left it, inside the append's transaction
// (or, on the Postgres fast path, from a cached state whose head the
// transaction checks), so concurrent derivations never lose one another.
func apply(st projection.State, req AppendRequest, cfg projection.Config, at projection.Time) (applied, error) {
	if req.ExpectedSeq != nil && *req.ExpectedSeq != st.LastSeq {
		return applied{}, &ConflictError{Expected: *req.ExpectedSeq, Actual: st.LastSeq}
	}
	a := applied{events: make([]projection.Event, 0, len(req.Events))}
	for i, ne := range req.Events {
		prev := st
		ev, err := st.Apply(ne, at, cfg, req.BaseVersion)
		if errors.Is(err, projection.ErrNoWrite) {
			continue // a derived list write that makes none: nothing to store
		}
		if err != nil {
			var pe *projection.Error
			if errors.As(err, &pe) {
				return applied{}, &EventError{Index: i, Err: pe}
			}
			return applied{}, err
		}
		a.changed = a.changed || cfg.TodosChanged(prev, ev)
		if projection.ListWrite(ev.Type) {
			a.versions = append(a.versions, st.VersionOf(prev.Items, ev))
		}
		a.events = append(a.events, ev)
	}
	a.next = st
	return a, nil
}

// applied is what apply made of a batch: the state it left (next), the
// events to store, the list's versions its list writes made, and whether
// it changed the todos view.
type applied struct {
	next     projection.State
	events   []projection.Event
	versions []projection.Version
	changed  bool
}

// endReason reads a stored turn end reason (NULL: none).
func endReason(s *string) projection.EndReason {
	if s == nil {
		return ""
	}
	return projection.EndReason(*s)
}

// nullReason is the stored form of a turn end reason: NULL for none.
func nullReason(r projection.EndReason) *string {
	if r == "" {
		return nil
	}
	s := string(r)
	return &s
}

// refused reports whether err refused an append outright, before anything
// could commit: an expectedSeq the log has passed, or an event the
// projection rejected (whose seen mark, when it showed the model the list,
// is nothing a read of the list shows). A copy of the list kept in memory
// stands through it; any other error may have changed the list.
func refused(err error) bool {
	var (
		conflict *ConflictError
		rejected *projection.Error
	)
	return errors.As(err, &conflict) || errors.As(err, &rejected)
}

// shownVersion is the version of the list a rejection showed the model
// (projection.Error.Shown), or 0.
func shownVersion(err error) int64 {
	var pe *projection.Error
	if errors.As(err, &pe) {
		return pe.Shown
	}
	return 0
}

// policy resolves a session's stored policy (nil: none of its own) against
// the server's default.
func policy(stored *bool, cfg projection.Config) bool {
	if stored != nil {
		return *stored
	}
	return cfg.AllowParallel
}

// cursor is the keyset position of a sessions page.
type cursor struct {
	UpdatedAt time.Time
	ID        string
}

func encodeCursor(s Session) string { return cursor{s.UpdatedAt.Time, s.ID}.encode() }

func (c cursor) encode() string {
	raw := strconv.FormatInt(c.UpdatedAt.UnixMilli(), 10) + ":" + c.ID
	return base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// Where a sessions page starts when it has no cursor, and where a search
// window ends when it reaches the oldest session: past every stored time.
var (
	listTop    = cursor{UpdatedAt: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}
	listBottom = cursor{UpdatedAt: time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)}
)

// sessionsReader is one store's SQL for a page of the sessions list.
// findIn runs the paging rules between its calls.
type sessionsReader interface {
	// page reads up to limit sessions strictly after from and at or after
	// to in the list's order, of q.Owner when set, children of q.Parent
	// when set, whose titles hold q.Title when set.
	page(ctx context.Context, q SessionQuery, from, to cursor, limit int) ([]Session, error)
	// nth reads the key of the n-th session (1-based) after from, of
	// q.Owner and children of q.Parent when set (whatever their titles),
	// and whether any session follows it; ok is false when there are
	// fewer than n.
	nth(ctx context.Context, q SessionQuery, from cursor, n int) (key cursor, ok, more bool, err error)
}

// findIn reads a page of the sessions list. Without a title it is a plain
// keyset page; a search reads the matches among the next q.Scan sessions
// (see MaxSearchScan).
func findIn(ctx context.Context, r sessionsReader, q SessionQuery) ([]Session, string, error) {
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
			q.Scan = MaxSearchScan
		}
		key, ok, more, err := r.nth(ctx, q, from, q.Scan)
		if err != nil {
			return nil, "", err
		}
		if ok {
			to, windowed = key, more
		}
	}
	list, err := r.page(ctx, q, from, to, q.Limit+1)
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

func decodeCursor(c string) (cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return cursor{}, ErrBadCursor
	}
	ms, id, ok := strings.Cut(string(raw), ":")
	n, err := strconv.ParseInt(ms, 10, 64)
	// Bounds keep the keyset inside what the database can compare: a time
	// within years 0000–9999 and an id of printable ASCII like every id.
	if !ok || err != nil || n < 0 || n > 253402300799999 || !sessionIDShape(id) {
		return cursor{}, ErrBadCursor
	}
	return cursor{UpdatedAt: time.UnixMilli(n).UTC(), ID: id}, nil
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

func marshalResult(r AppendResult) []byte {
	b, _ := json.Marshal(r)
	return b
}

// appendTx is one store's SQL for the two steps of an append, inside one
// write transaction that the store opened and will commit. appendIn runs the
// dialect-free algorithm between them, so the rules live in one place. Two
// steps, not one call per statement, so that a store can send each as one
// round trip.
type appendTx interface {
	// read reads the session and its projection (the todo items only when
	// items is true: the batch may change the todos view) and, when key is
	// set, the result stored under that Idempotency-Key (nil when none).
	read(ctx context.Context, id string, items bool, key string) (Session, projection.State, *storedResult, error)
	// write stores the events, the new head of the log, the todo list's
	// row when it changed from prev (the view when res.TodosChanged, else
	// the step counter), the history entries of the batch's list writes
	// (versions), and res under req.IdempotencyKey when set.
	write(ctx context.Context, id string, req AppendRequest, prev, next projection.State, res AppendResult, versions []projection.Version, at projection.Time) error
	// markSeen records version as seen by the model and commits: the
	// rejection that showed it the list appended nothing else.
	markSeen(ctx context.Context, id string, version int64) error
	// held reads the events of the log that hold any of keys, by key.
	held(ctx context.Context, id string, keys []string) (map[string]projection.Event, error)
}

// storedResult is an append's result kept under its Idempotency-Key.
type storedResult struct {
	RequestHash string
	Result      []byte
}

// appendIn is the append algorithm: read the state, answer a retry from its
// stored result, run the batch through apply, and write what it produced.
func appendIn(ctx context.Context, tx appendTx, id string, req AppendRequest, cfg projection.Config) (AppendResult, error) {
	sess, st, stored, err := tx.read(ctx, id, needsItems(req.Events), req.IdempotencyKey)
	if err != nil {
		return AppendResult{}, err
	}
	cfg = sessionConfig(cfg, sess)
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
	if keys := batchKeys(req.Events); len(keys) > 0 {
		byKey, err := tx.held(ctx, id, keys)
		if err != nil {
			return AppendResult{}, err
		}
		req, held, kept = dropHeld(req, byKey)
	}
	at := Now()
	a, err := apply(st, req, cfg, at)
	var evErr *EventError
	if kept != nil && errors.As(err, &evErr) {
		// Name the event by its place in the batch as it was sent.
		err = &EventError{Index: kept[evErr.Index], Err: evErr.Err}
	}
	if v := shownVersion(err); v > 0 {
		// The rejection showed the model the list: it has seen it now.
		if merr := tx.markSeen(ctx, id, v); merr != nil {
			return AppendResult{}, merr
		}
		return AppendResult{}, err
	}
	if err != nil {
		return AppendResult{}, err
	}
	res := appendResult(id, sess, a, cfg)
	res.Held = held
	if len(a.events) == 0 {
		return res, nil
	}
	req.meta = metaOf(sess, a.events)
	req.meta.apply(&res.Session)
	for _, ev := range a.events {
		for _, k := range ev.Keys {
			req.keyRows = append(req.keyRows, keyRow{Key: k, Seq: ev.Seq})
		}
	}
	return res, tx.write(ctx, id, req, st, a.next, res, a.versions, at)
}

// batchKeys lists the keys the events of a batch carry, each once.
func batchKeys(events []projection.NewEvent) []string {
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
func dropHeld(req AppendRequest, byKey map[string]projection.Event) (AppendRequest, []projection.Event, []int) {
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

// needsItems reports whether a batch may change the todos view, so that the
// append must read the current items.
func needsItems(events []projection.NewEvent) bool {
	for _, ev := range events {
		if projection.ListWrite(ev.Type) || ev.Type == projection.TypeTurnStart {
			return true
		}
	}
	return false
}

// replayResult answers a retried request from the result stored under its
// Idempotency-Key, or ErrIdempotencyMismatch when the request differs.
func replayResult(req AppendRequest, hash string, stored []byte) (AppendResult, error) {
	if hash != req.RequestHash {
		return AppendResult{}, ErrIdempotencyMismatch
	}
	var res AppendResult
	if err := json.Unmarshal(stored, &res); err != nil {
		return AppendResult{}, fmt.Errorf("decode idempotent result: %w", err)
	}
	res.Replayed = true
	return res, nil
}

// appendResult is what an append answers: the events ap stored and the
// session and todos view they left. sess is the session before the batch; its
// updatedAt becomes the time of the batch's last event.
func appendResult(id string, sess Session, ap applied, cfg projection.Config) AppendResult {
	res := AppendResult{Events: ap.events, Session: sess, TodosChanged: ap.changed}
	if len(ap.events) == 0 {
		return res
	}
	next := ap.next
	res.Session.LastSeq, res.Session.Turn, res.Session.UpdatedAt = next.LastSeq, next.Turn, *next.LastAt
	a := next.Activity()
	a.Agent = sess.agent
	res.Session.settle(a, cfg)
	if ap.changed {
		todos := next.Todos(id)
		res.Todos = &todos
		res.Session.TodoCounts = todos.Counts
		res.Session.CurrentItem = projection.CurrentItem(todos.Todos)
	}
	return res
}

// versionTodos is v's list encoded for todo_versions. items is the batch's
// new list (res.Todos) as encoded once for the todo list's row, nil when
// the row was not written; a version holding that very list reuses it.
func versionTodos(v projection.Version, res AppendResult, items []byte) []byte {
	if items != nil && sameItems(v.Todos, res.Todos.Todos) {
		return items
	}
	return projection.AppendItems(nil, v.Todos, true)
}

// sameItems reports whether a and b are the very same list.
func sameItems(a, b []projection.Item) bool {
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

// reversed reverses events in place, for pages read newest first.
func reversed(events []projection.Event) []projection.Event {
	for i, j := 0, len(events)-1; i < j; i, j = i+1, j-1 {
		events[i], events[j] = events[j], events[i]
	}
	return events
}

// surfaceReader is one store's SQL for reading the model surface, the
// events that become messages. messagesIn runs the paging rules between its
// calls, so that they live in one place.
type surfaceReader interface {
	// surface reads the surface events with seq > after, oldest first: at
	// most limit of them, stopping once their data passes budget bytes.
	// more reports whether another surface event follows them.
	surface(ctx context.Context, after int64, limit, budget int) (events []projection.Event, more bool, err error)
	// callIDs reads the callId of each of the next n surface events after
	// after, oldest first: "" for an event that is not a tool result.
	callIDs(ctx context.Context, after int64, n int) ([]string, error)
}

// messagesIn reads a page of the model surface. A page is bounded like
// every page of the log, by limit and by MaxPageBytes, with one rule more:
// it never ends between an assistant message's tool calls and the results
// that answer them next in the log. A page that would end there ends
// before that assistant message instead; when the message starts the page,
// the page holds it with those results (at most projection.MaxToolCalls of
// them), past limit and the byte budget if need be. So every page is whole
// exchanges, and pages read one after the other are the whole surface.
func messagesIn(ctx context.Context, r surfaceReader, after int64, limit int) (MessagesPage, error) {
	events, more, err := r.surface(ctx, after, limit, MaxPageBytes)
	if err != nil {
		return MessagesPage{}, err
	}
	msgs := projection.DeriveMessages(events)
	if at, open := projection.OpenCalls(msgs); more && open != nil {
		last := events[len(events)-1].Seq
		ids, err := r.callIDs(ctx, last, len(open))
		if err != nil {
			return MessagesPage{}, err
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
			rest, restMore, err := r.surface(ctx, last, n, math.MaxInt)
			if err != nil {
				return MessagesPage{}, err
			}
			events, more = append(events, rest...), restMore
			msgs = append(msgs, projection.DeriveMessages(rest)...)
		}
	}
	next := after
	if len(events) > 0 {
		next = events[len(events)-1].Seq
	}
	return MessagesPage{Messages: msgs, HasMore: more, NextAfter: next}, nil
}

// versionPage gathers a page of the list's history as rows come, newest
// first: limit versions and MaxVersionPageBytes at most (but never none).
type versionPage struct {
	limit    int
	bytes    int
	versions []projection.Version
	// more is set once the page is full and another row follows.
	more bool
}

// add takes the next row, or notes that there is more when the page is full.
func (p *versionPage) add(v projection.Version, todos, changes []byte) error {
	n := len(todos) + len(changes)
	if len(p.versions) == p.limit || (len(p.versions) > 0 && p.bytes+n > MaxVersionPageBytes) {
		p.more = true
		return nil
	}
	if err := json.Unmarshal(todos, &v.Todos); err != nil {
		return fmt.Errorf("decode todo version %d: %w", v.Version, err)
	}
	if err := json.Unmarshal(changes, &v.Changes); err != nil {
		return fmt.Errorf("decode todo version %d: %w", v.Version, err)
	}
	p.bytes += n
	p.versions = append(p.versions, v)
	return nil
}

// sessionColumns are the columns both stores read a Session from, from
// sessions s joined to todo_lists t; sessionDests are their scan targets.
const sessionColumns = `s.id, s.title, s.created_at, s.updated_at, s.last_seq, s.turn, s.turn_open,
	t.pending, t.in_progress, t.completed, s.parallel_in_progress, s.external_key, s.owner,
	s.turn_end_reason, t.current_item, s.agent, s.cwd, s.parent_id, s.plan_lifetime, s.turn_at, s.ended_at,
	s.needs_you_since, s.needs_you, s.untitled, s.listed, s.needs_you_seq, s.agent_status, s.agent_status_at, s.hooked, s.goal`

// sessionDests are the scan targets of sessionColumns: s's fields, and for
// the columns each store keeps in another form than the Session shows
// them, the store's own (created, updated, parallel, key, reason, and the
// times turnAt, endedAt, needsYou and agentAt); more follow (the columns
// a query selects after them).
func sessionDests(s *Session, created, updated, parallel, key, reason, turnAt, endedAt, needsYou, agentAt any, more []any) []any {
	d := make([]any, 0, 30+len(more))
	d = append(d, &s.ID, &s.Title, created, updated, &s.LastSeq, &s.Turn.Number, &s.Turn.Open,
		&s.TodoCounts.Pending, &s.TodoCounts.InProgress, &s.TodoCounts.Completed, parallel, key, &s.Owner,
		reason, &s.CurrentItem, &s.Agent, &s.Cwd, &s.ParentID, &s.PlanLifetime, turnAt, endedAt, needsYou, &s.needsWhy,
		&s.Untitled, &s.Listed, &s.needsSeq, &s.agentStatus, agentAt, &s.Hooked, &s.goalJSON)
	return append(d, more...)
}

// sessionsJoin is where sessionColumns are read from.
const sessionsJoin = `sessions s JOIN todo_lists t ON t.session_id = s.id`

// todoColumns are the columns of todo_lists t that the todo side of the
// projection is read from, in both stores; items is how the list itself is
// read (t.items, or a CASE that reads it only when asked, else NULL).
func todoColumns(items string) string {
	return `t.version, t.standing, ` + items + `, t.updated_at, t.seen, t.last_edit, t.edited_by, t.steps, t.task_high`
}

// todoDests are the scan targets of todoColumns: st's fields, and for the
// two columns each store keeps in another form than the State holds them,
// the store's own (items, updated).
func todoDests(st *projection.State, items, updated any) []any {
	return []any{&st.Version, &st.Standing, items, updated, &st.Seen, &st.LastEdit, &st.EditedBy, &st.Steps, &st.TaskHigh}
}

// The columns an append writes, one list each for the statements of both
// stores, each store putting its own placeholders to them (setList,
// pgParams): the head of the session's log, a stored event (after its
// session_id), the todo list's row when the batch changed the list, and a
// version of the list (after its session_id). The values functions below
// give their arguments in the same order.
var (
	headColumns     = []string{"last_seq", "turn", "turn_open", "updated_at", "turn_end_reason", "turn_at", "ended_at"}
	eventColumns    = []string{"seq", "type", "turn", "at", "received_at", "data"}
	todoListColumns = []string{"version", "standing", "items", "updated_at", "pending", "in_progress", "completed",
		"seen", "last_edit", "edited_by", "steps", "current_item", "task_high"}
	versionColumns = []string{"version", "at", "author", "todos", "changes"}
)

// headValues are the values of headColumns for next, the times in the
// store's own form.
func headValues(next projection.State, lastAt, turnAt, endedAt any) []any {
	return []any{next.LastSeq, next.Turn.Number, next.Turn.Open, lastAt, nullReason(next.Turn.EndReason), turnAt, endedAt}
}

// eventValues are the values of eventColumns for ev, its turn, times and
// data in the store's own form.
func eventValues(ev projection.Event, turn, at, received, data any) []any {
	return []any{ev.Seq, ev.Type, turn, at, received, data}
}

// todoListValues are the values of todoListColumns for the list res left
// (next its state), items and its update time in the store's own form.
func todoListValues(next projection.State, res AppendResult, items, updated any) []any {
	c := res.Todos.Counts
	return []any{next.Version, next.Standing, items, updated, c.Pending, c.InProgress, c.Completed,
		next.Seen, next.LastEdit, next.EditedBy, next.Steps, res.Session.CurrentItem, next.TaskHigh}
}

// versionValues are the values of versionColumns for v, its time and
// documents in the store's own form.
func versionValues(v projection.Version, at, todos, changes any) []any {
	return []any{v.Version, at, v.By, todos, changes}
}

// setList is the SET list "col = placeholder, ..." of cols, param giving
// each column's placeholder in turn. The seen mark only grows (a todo_read
// may have raised it since the append read it): it is set to the greater
// of the two, with the dialect's greatest (GREATEST, or SQLite's max).
func setList(cols []string, param func(col string) string, greatest string) string {
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

// sqlText is b as a text argument, nil (NULL) when b is.
func sqlText(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}
