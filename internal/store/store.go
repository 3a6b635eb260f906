// Package store is the contract of Tack's stores: the Store interface, the
// sessions, appends and pages it deals in, its errors, the account types,
// and the clock a store stamps what it stores with. It speaks no SQL and
// imports no backend. The backends are its sub-packages: store/sqlite, and
// store/postgres with the fast layer store/postgres/fast; what they do
// alike lives once, in store/internal/engine, and internal/storetest's
// Run is the one suite every backend passes.
package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
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
	// Row is what the session's row holds beside the summary, which a
	// store reads State, NeedsYou, AgentBusy and Goal from; never in the
	// JSON, and read by no caller of a store.
	Row SessionRow `json:"-"`
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
	// Goal is the session's goal (projection.NextGoal), nil before any.
	Goal *projection.Goal `json:"goal"`
}

// SessionRow is what a session's stored row holds beside its summary.
type SessionRow struct {
	// NeedsWhy is the stored NeedsYou of the latest SetNeedsYou, as JSON,
	// shown while the state is needs_you. NeedsSeq is the log's last seq
	// when it was set (nil when no wait is marked).
	NeedsWhy []byte
	NeedsSeq *int64
	// Agent is what the agent's registry last said (SetAgentStatus), nil
	// when it has said nothing; AgentStatus is its status as stored.
	Agent       *projection.AgentStatus
	AgentStatus *string
	// GoalJSON is the goal as the row stores it.
	GoalJSON []byte
}

// NewSession is what a caller asks of a new session.
type NewSession struct {
	// Title is the session's title, final; "" makes it untitled, with
	// projection.DefaultTitle's until a prompt titles it. A subagent's
	// session (ParentID set) found by ExternalKey while untitled takes it:
	// the task its parent's call gave it is known after the subagent's own
	// hooks or file made its session, at times.
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
	// message's tool calls from the results that follow it (see engine.Messages).
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
// request. Expired keys are pruned by later keyed appends, a few (engine.PruneBatch) at a
// time, so the keys kept are about one retention's worth of keyed writes.
const IdempotencyRetention = 24 * time.Hour

// Clock is the time a store stamps what it stores with, and settles a
// session's state at, and the time its timers run on (the read leases'
// terms, renewals and back-offs). Every backend takes one (SystemClock
// unless a test stubs it), so that no test moves a clock other tests read,
// and a test of a timer moves its store's clock rather than waiting.
type Clock interface {
	// Now is the present, truncated to what is stored.
	Now() projection.Time
	// Instant is the present for measuring spans of time: on SystemClock
	// it carries the monotonic reading, which no change of the wall clock
	// moves.
	Instant() time.Time
	// After is a channel that receives once d has passed on the clock.
	After(d time.Duration) <-chan time.Time
}

// SystemClock is the server's clock.
type SystemClock struct{}

// Now is the present, truncated to what is stored.
func (SystemClock) Now() projection.Time { return projection.NewTime(time.Now()) }

// Instant is the present with its monotonic reading.
func (SystemClock) Instant() time.Time { return time.Now() }

// After is time.After.
func (SystemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Now is SystemClock's present: the time for what a caller of a store
// stamps itself (an agent's events, a wait on a person).
func Now() projection.Time { return SystemClock{}.Now() }

// NewSessionID returns a fresh opaque session id.
func NewSessionID() string { return "ses_" + strings.ToLower(rand.Text()) }
