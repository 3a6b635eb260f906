// Package sqlite is the Store in an embedded SQLite database file: zero
// setup, one process. It imports no Postgres driver.
package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/tack-dev/tack/internal/store/sqlite/internal/stmts"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/internal/engine"
)

// ErrDatabaseInUse means another process holds the SQLite database open.
var ErrDatabaseInUse = errors.New("sqlite database in use")

// Store is the store in an embedded SQLite database file: zero setup, one
// process. Writes go through one connection in BEGIN IMMEDIATE transactions,
// one at a time; reads go through a pool of read-only connections, which WAL
// lets run beside the writer.
type Store struct {
	path   string
	writer *stmts.Pool
	reader *stmts.Pool
	unlock func()
	cfg    projection.Config
	clock  store.Clock
	// copies answers todo lists read before from memory (engine.Copies):
	// nil where no lock keeps other processes off the file.
	copies *engine.Copies
}

var _ store.Store = (*Store)(nil)

// sqliteDSN is the connection string for path: WAL, so readers never wait for
// the writer; synchronous=NORMAL, which in WAL loses no committed write on a
// process crash (only, at worst, the last ones on a power cut); a busy
// timeout rather than an instant SQLITE_BUSY; foreign keys enforced; the
// write-ahead log truncated back to 64 MiB after a checkpoint.
func sqliteDSN(path string, readOnly bool) string {
	q := "?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)" +
		"&_pragma=journal_size_limit(67108864)"
	if readOnly {
		q += "&_pragma=query_only(1)"
	} else {
		q += "&_txlock=immediate"
	}
	return path + q
}

// Open opens (creating it if needed) the database file at path and
// migrates it. The file's directory must exist. A lock file beside it,
// path+".lock", keeps a second process off the same database: live updates
// fan out in process, so a second writer would leave subscribers behind.
func Open(ctx context.Context, path string, cfg projection.Config) (*Store, error) {
	if strings.ContainsRune(path, '?') {
		return nil, fmt.Errorf("sqlite path %q: must not contain '?'", path)
	}
	unlock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, err
	}
	// The file holds every session: create it for its owner only. SQLite
	// gives its write-ahead log and shared-memory files the database file's
	// mode. An existing file keeps the mode it has.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		unlock()
		return nil, fmt.Errorf("open sqlite %s: %w", path, err)
	}
	f.Close()
	s := &Store{path: path, unlock: unlock, cfg: cfg, clock: store.SystemClock{}}
	if fileLocks {
		s.copies = engine.NewCopies()
	}
	if err := s.open(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Store) open(ctx context.Context) error {
	var err error
	writer, err := sql.Open("sqlite", sqliteDSN(s.path, false))
	if err != nil {
		return err
	}
	s.writer = stmts.NewPool(writer)
	// One writer: SQLite takes one write transaction at a time anyway, and
	// queueing for the connection in Go is cheaper and fairer than retrying
	// on SQLITE_BUSY.
	s.writer.SetMaxOpenConns(1)
	if err := migrate(ctx, writer); err != nil {
		return fmt.Errorf("open sqlite %s: %w", s.path, err)
	}
	reader, err := sql.Open("sqlite", sqliteDSN(s.path, true))
	if err != nil {
		return err
	}
	s.reader = stmts.NewPool(reader)
	readers := max(4, runtime.GOMAXPROCS(0))
	s.reader.SetMaxOpenConns(readers)
	s.reader.SetMaxIdleConns(readers)
	return nil
}

// SetClock makes the store read the time from c: a test's stub. It must
// be called before the store is used.
func (s *Store) SetClock(c store.Clock) { s.clock = c }

// Close closes the connections and releases the lock file.
func (s *Store) Close() {
	if s.reader != nil {
		s.reader.Close()
	}
	if s.writer != nil {
		s.writer.Close()
	}
	if s.unlock != nil {
		s.unlock()
		s.unlock = nil
	}
}

// Ping checks that the database file answers.
func (s *Store) Ping(ctx context.Context) error {
	return sqliteErr(s.reader.PingContext(ctx))
}

// ms and fromMS convert between times and the stored Unix milliseconds.
func ms(t projection.Time) int64 { return t.UnixMilli() }

func fromMS(n int64) projection.Time { return projection.NewTime(time.UnixMilli(n)) }

// The read queries. Each is a point read or an index range read, never a
// scan: TestSQLiteQueryPlans holds every one of them to that.
const (
	sqliteSession         = `SELECT ` + engine.SessionColumns + ` FROM ` + engine.SessionsJoin + ` WHERE s.id = ?`
	sqliteSessionExists   = `SELECT 1 FROM sessions WHERE id = ?`
	sqliteSessionOfOwner  = `SELECT 1 FROM sessions WHERE id = ? AND owner = ?`
	sqliteSessionByKey    = `SELECT ` + engine.SessionColumns + ` FROM ` + engine.SessionsJoin + ` WHERE s.owner = ? AND s.external_key = ?`
	sqliteIdempotent      = `SELECT request_hash, result FROM idempotency_keys WHERE session_id = ? AND key = ? AND created_at >= ?`
	sqlitePruneIdempotent = `DELETE FROM idempotency_keys WHERE rowid IN (
		SELECT rowid FROM idempotency_keys WHERE created_at < ? ORDER BY created_at LIMIT ?)`
	sqliteEventsAfter = `SELECT ` + sqliteEventColumns + ` FROM events
		WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`
	sqliteEventsBefore = `SELECT ` + sqliteEventColumns + ` FROM events
		WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`
	// The "more" queries find one event past a page, if there is one.
	sqliteEventsAfterMore  = `SELECT 1 FROM events WHERE session_id = ? AND seq > ? LIMIT 1`
	sqliteEventsBeforeMore = `SELECT 1 FROM events WHERE session_id = ? AND seq < ? LIMIT 1`
	sqliteVersions         = `SELECT version, at, author, todos, changes FROM todo_versions
		WHERE session_id = ? AND version < ? ORDER BY version DESC LIMIT ?`
	// The surface queries take projection.SurfaceTypes after the seq.
	sqliteSurfaceAfter = `SELECT ` + sqliteEventColumns + ` FROM events
		WHERE session_id = ? AND seq > ? AND type IN (?, ?, ?) ORDER BY seq LIMIT ?`
	sqliteSurfaceMore = `SELECT 1 FROM events
		WHERE session_id = ? AND seq > ? AND type IN (?, ?, ?) LIMIT 1`
	sqliteCallIDs = `SELECT coalesce(CASE WHEN type = 'tool/result' THEN json_extract(data, '$.callId') END, '') FROM events
		WHERE session_id = ? AND seq > ? AND type IN (?, ?, ?) ORDER BY seq LIMIT ?`
)

// sqliteEventColumns are the columns an event is read from (scanSQLiteEvent).
const sqliteEventColumns = `seq, type, turn, at, received_at, data`

// sqliteSessionsPage is the SQL of a page of the sessions list: a keyset
// range, after (?, ?) and at or after (?, ?), of the owner ? when owned,
// of the children of ? when children, whose titles hold the lowercased ?
// when search; the limit last. Each is a range read of an activity index
// (the owner's, the parent's, or all sessions').
func sqliteSessionsPage(owned, children, search bool) string {
	where := sqliteSessionsWhere("s.", owned, children)
	where += ` AND (s.updated_at, s.id) >= (?, ?)`
	if search {
		where += ` AND instr(tack_lower(s.title), ?) > 0`
	}
	return `SELECT ` + engine.SessionColumns + ` FROM ` + engine.SessionsJoin + `
		WHERE ` + where + `
		ORDER BY s.updated_at DESC, s.id DESC LIMIT ?`
}

// sqliteSessionsNth finds where a search window ends: the key of the
// (?+1)-th session after (?, ?) (of the owner ?, the children of ?), and
// the one past it.
func sqliteSessionsNth(owned, children bool) string {
	where := sqliteSessionsWhere("", owned, children)
	return `SELECT updated_at, id FROM sessions
		WHERE ` + where + ` ORDER BY updated_at DESC, id DESC LIMIT 2 OFFSET ?`
}

// sqliteSessionsWhere is the condition of both: listed sessions only, of
// the owner ? and the parent ? when asked, then the keyset bound (?, ?).
func sqliteSessionsWhere(p string, owned, children bool) string {
	where := p + `listed AND `
	if owned {
		where += p + `owner = ? AND `
	}
	if children {
		where += p + `parent_id = ? AND `
	}
	return where + `(` + p + `updated_at, ` + p + `id) < (?, ?)`
}

// sqliteState reads a session and its projection row, the items only when
// the first ? is true; sqliteTodos reads the todo side of the projection.
var (
	sqliteState = `SELECT ` + engine.SessionColumns + `, ` + engine.TodoColumns(`CASE WHEN ? THEN t.items END`) + `
		FROM ` + engine.SessionsJoin + ` WHERE s.id = ?`
	sqliteTodos = `SELECT ` + engine.TodoColumns(`t.items`) + ` FROM todo_lists t WHERE t.session_id = ?`
)

// sqliteSetMeta stores what an append changes of its session beside the
// log (engine.Meta): the title ?1 when it is one and the session is still
// untitled (and untitled still when ?5, a stand-in), the listing when ?2,
// the goal ?4 when it is one.
const sqliteSetMeta = `UPDATE sessions SET
	title = CASE WHEN ?1 <> '' AND untitled THEN ?1 ELSE title END,
	untitled = untitled AND (?1 = '' OR ?5), listed = listed OR ?2, goal = COALESCE(?4, goal) WHERE id = ?3`

// The writes of an append, from the columns both stores write (headColumns
// and the others): sqliteSetHead takes headValues and the session's id,
// sqliteSetTodoList todoListValues and the id; sqliteInsertVersion the id
// and versionValues; sqliteEventRow is one row of events, the id and
// eventValues.
var (
	sqliteSetHead       = `UPDATE sessions SET ` + engine.SetList(engine.HeadColumns, sqliteParam, "max") + ` WHERE id = ?`
	sqliteSetTodoList   = `UPDATE todo_lists SET ` + engine.SetList(engine.TodoListColumns, sqliteParam, "max") + ` WHERE session_id = ?`
	sqliteInsertVersion = `INSERT INTO todo_versions (session_id, ` + strings.Join(engine.VersionColumns, ", ") + `) VALUES (?` +
		strings.Repeat(", ?", len(engine.VersionColumns)) + `)`
	sqliteEventRow = `(?` + strings.Repeat(", ?", len(engine.EventColumns)) + `)`
)

// sqliteParam is every column's placeholder.
func sqliteParam(string) string { return "?" }

// sqliteMarkSeen raises session ?2's seen mark to ?1; seen only grows.
const sqliteMarkSeen = `UPDATE todo_lists SET seen = max(seen, ?) WHERE session_id = ?`

type scanner interface{ Scan(dest ...any) error }

// sqliteSessionRow holds the columns of sessionColumns that SQLite
// stores in another form than the Session shows them.
type sqliteSessionRow struct {
	created, updated int64
	parallel         sql.NullBool
	key              sql.NullString
	reason           *string
	turnAt, endedAt  sql.NullInt64
	needsYou         sql.NullInt64
	agentAt          sql.NullInt64
}

// dests are the scan targets of sessionColumns, into sess and r,
// followed by more (the columns a query selects after them).
func (r *sqliteSessionRow) dests(sess *store.Session, more ...any) []any {
	return engine.SessionDests(sess, &r.created, &r.updated, &r.parallel, &r.key, &r.reason, &r.turnAt, &r.endedAt, &r.needsYou, &r.agentAt, more)
}

// finish sets the fields of sess that r's columns hold, and its state;
// it returns the session's activity.
func (r *sqliteSessionRow) finish(sess *store.Session, cfg projection.Config, now projection.Time) projection.Activity {
	sess.CreatedAt, sess.UpdatedAt = fromMS(r.created), fromMS(r.updated)
	sess.Turn.EndReason = engine.EndReason(r.reason)
	sess.ParallelInProgress = engine.Policy(nullBool(r.parallel), cfg)
	sess.ExternalKey = r.key.String
	a := engine.RowActivity(sess, nullMS(r.turnAt), nullMS(r.endedAt), nullMS(r.needsYou), nullMS(r.agentAt))
	engine.Settle(sess, a, cfg, now)
	return a
}

// nullMS reads a stored time that may be NULL; msOrNull stores one.
func nullMS(n sql.NullInt64) *projection.Time {
	if !n.Valid {
		return nil
	}
	t := fromMS(n.Int64)
	return &t
}

func msOrNull(t *projection.Time) any {
	if t == nil {
		return nil
	}
	return ms(*t)
}

func (s *Store) scanSession(row scanner, sess *store.Session) error {
	var r sqliteSessionRow
	err := row.Scan(r.dests(sess)...)
	r.finish(sess, s.cfg, s.clock.Now())
	return err
}

// sqliteTodoRow holds the columns of todoColumns that SQLite stores in
// another form than projection.State holds them.
type sqliteTodoRow struct {
	items   sql.NullString // NULL when the query did not read the list
	updated sql.NullInt64
}

// dests are the scan targets of todoColumns, into st and r.
func (r *sqliteTodoRow) dests(st *projection.State) []any {
	return engine.TodoDests(st, &r.items, &r.updated)
}

// finish sets the fields of st, session id's, that r's columns hold.
func (r *sqliteTodoRow) finish(id string, st *projection.State) error {
	if r.updated.Valid {
		t := fromMS(r.updated.Int64)
		st.UpdatedAt = &t
	}
	if !r.items.Valid {
		return nil
	}
	if err := json.Unmarshal([]byte(r.items.String), &st.Items); err != nil {
		return fmt.Errorf("decode todo items of %s: %w", id, err)
	}
	return nil
}

func nullBool(b sql.NullBool) *bool {
	if !b.Valid {
		return nil
	}
	return &b.Bool
}

// CreateSession starts an empty session, or finds the one with ns.ExternalKey.
func (s *Store) CreateSession(ctx context.Context, ns store.NewSession) (store.Session, bool, error) {
	now := s.clock.Now()
	if ns.Owner == "" {
		ns.Owner = store.LocalPrincipal
	}
	sess := engine.NewSessionOf(ns, now, s.cfg)
	key := sql.NullString{String: ns.ExternalKey, Valid: ns.ExternalKey != ""}
	var parallel sql.NullBool
	if ns.ParallelInProgress != nil {
		parallel = sql.NullBool{Bool: *ns.ParallelInProgress, Valid: true}
	}
	created := true
	err := s.write(ctx, func(tx *stmts.Tx) error {
		if ns.ParentID != "" {
			var one int
			err := tx.QueryRowContext(ctx, sqliteSessionOfOwner, ns.ParentID, ns.Owner).Scan(&one)
			if errors.Is(err, sql.ErrNoRows) {
				return store.ErrNoParent
			}
			if err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, title, created_at, updated_at, parallel_in_progress, external_key, owner,
			agent, cwd, parent_id, plan_lifetime, untitled, listed, hooked)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (owner, external_key) WHERE external_key IS NOT NULL DO NOTHING`,
			sess.ID, sess.Title, ms(now), ms(now), parallel, key, ns.Owner, sess.Agent, sess.Cwd, sess.ParentID, sess.PlanLifetime,
			sess.Untitled, sess.Listed, sess.Hooked)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			created = false
			if ns.ParentID != "" && ns.Title != "" {
				if _, err := tx.ExecContext(ctx, `UPDATE sessions SET title = ?, untitled = 0
					WHERE owner = ? AND external_key = ? AND untitled`, ns.Title, ns.Owner, ns.ExternalKey); err != nil {
					return err
				}
			}
			return s.scanSession(tx.QueryRowContext(ctx, sqliteSessionByKey, ns.Owner, ns.ExternalKey), &sess)
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO todo_lists (session_id) VALUES (?)`, sess.ID)
		return err
	})
	return sess, created, err
}

// Session reads one session's summary.
func (s *Store) Session(ctx context.Context, id string) (store.Session, error) {
	var sess store.Session
	err := s.scanSession(s.reader.QueryRowContext(ctx, sqliteSession, id), &sess)
	return sess, sqliteErr(err)
}

// Sessions lists sessions, most recent activity first, by keyset on
// (updated_at, id) so that any page is an index range read.
func (s *Store) Sessions(ctx context.Context, limit int, after string) ([]store.Session, string, error) {
	return s.FindSessions(ctx, store.SessionQuery{Limit: limit, Cursor: after})
}

// FindSessions lists the sessions q selects, most recent activity first:
// a range read of the activity index, bounded for a search by q.Scan.
func (s *Store) FindSessions(ctx context.Context, q store.SessionQuery) ([]store.Session, string, error) {
	list, next, err := engine.Find(ctx, sqliteSessions{s}, q)
	return list, next, sqliteErr(err)
}

// sqliteSessions reads pages of the sessions list.
type sqliteSessions struct{ s *Store }

func (r sqliteSessions) Page(ctx context.Context, q store.SessionQuery, from, to engine.Cursor, limit int) ([]store.Session, error) {
	args := append(sqliteSessionsArgs(q, from), to.UpdatedAt.UnixMilli(), to.ID)
	if q.Title != "" {
		args = append(args, strings.ToLower(q.Title))
	}
	query := sqliteSessionsPage(q.Owner != "", q.Parent != "", q.Title != "")
	rows, err := r.s.reader.QueryContext(ctx, query, append(args, limit)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []store.Session{}
	for rows.Next() {
		var sess store.Session
		if err := r.s.scanSession(rows, &sess); err != nil {
			return nil, err
		}
		list = append(list, sess)
	}
	return list, rows.Err()
}

// sqliteSessionsArgs are the arguments of sqliteSessionsWhere for q, from.
func sqliteSessionsArgs(q store.SessionQuery, from engine.Cursor) []any {
	var args []any
	if q.Owner != "" {
		args = append(args, q.Owner)
	}
	if q.Parent != "" {
		args = append(args, q.Parent)
	}
	return append(args, from.UpdatedAt.UnixMilli(), from.ID)
}

func (r sqliteSessions) Nth(ctx context.Context, q store.SessionQuery, from engine.Cursor, n int) (engine.Cursor, bool, bool, error) {
	query := sqliteSessionsNth(q.Owner != "", q.Parent != "")
	rows, err := r.s.reader.QueryContext(ctx, query, append(sqliteSessionsArgs(q, from), n-1)...)
	if err != nil {
		return engine.Cursor{}, false, false, err
	}
	defer rows.Close()
	var keys []engine.Cursor
	for rows.Next() {
		var (
			c  engine.Cursor
			at int64
		)
		if err := rows.Scan(&at, &c.ID); err != nil {
			return engine.Cursor{}, false, false, err
		}
		c.UpdatedAt = time.UnixMilli(at).UTC()
		keys = append(keys, c)
	}
	if err := rows.Err(); err != nil || len(keys) == 0 {
		return engine.Cursor{}, false, false, err
	}
	return keys[0], true, len(keys) > 1, nil
}

// tack_lower lowercases text as Go does (Unicode), where SQLite's own
// lower() folds ASCII only; a search lowercases its q the same way.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("tack_lower", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
		switch v := args[0].(type) {
		case string:
			return strings.ToLower(v), nil
		case []byte:
			return strings.ToLower(string(v)), nil
		}
		return args[0], nil
	})
}

// Append appends a batch in one BEGIN IMMEDIATE transaction on the writer:
// seqs are gapless, the batch lands whole or not at all, and the todos
// projection moves with it.
func (s *Store) Append(ctx context.Context, id string, req store.AppendRequest) (store.AppendResult, error) {
	res, err := s.append(ctx, id, req)
	// The list's copy goes when the list changed, or when the write failed
	// and so may have changed it; a refusal changed nothing a read shows.
	if s.copies != nil && (res.TodosChanged || err != nil && !engine.Refused(err)) {
		s.copies.Wrote(id)
	}
	return res, err
}

func (s *Store) append(ctx context.Context, id string, req store.AppendRequest) (store.AppendResult, error) {
	var (
		res      store.AppendResult
		rejected error
	)
	err := s.write(ctx, func(tx *stmts.Tx) error {
		var err error
		res, err = engine.Append(ctx, sqliteAppend{tx, s.cfg, s.clock}, id, req, s.cfg, s.clock)
		if engine.ShownVersion(err) > 0 {
			// A rejection that showed the model the list: commit its
			// seen mark (markSeen), answer the rejection.
			rejected = err
			return nil
		}
		return err
	})
	if err == nil && rejected != nil {
		return store.AppendResult{}, rejected
	}
	return res, err
}

// write runs fn in a write transaction, committed when fn returns nil.
func (s *Store) write(ctx context.Context, fn func(*stmts.Tx) error) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return sqliteErr(err)
	}
	defer s.writer.PrepareWanted(ctx)
	defer tx.Rollback()
	if err := fn(stmts.NewTx(tx, s.writer)); err != nil {
		return sqliteErr(err)
	}
	return sqliteErr(tx.Commit())
}

// sqliteAppend is the SQLite side of engine.Append, on the writer's transaction.
type sqliteAppend struct {
	tx    *stmts.Tx
	cfg   projection.Config
	clock store.Clock
}

func (a sqliteAppend) Read(ctx context.Context, id string, items bool, key string, keys []string) (store.Session, projection.State, *engine.StoredResult, map[string]projection.Event, error) {
	sess, st, err := loadSQLiteState(ctx, a.tx, id, items, a.cfg, a.clock.Now())
	if err != nil {
		return sess, st, nil, nil, err
	}
	if key != "" {
		var stored engine.StoredResult
		err = a.tx.QueryRowContext(ctx, sqliteIdempotent, id, key, ms(engine.IdempotencyCutoff(a.clock.Now()))).Scan(&stored.RequestHash, &stored.Result)
		switch {
		case err == nil:
			return sess, st, &stored, nil, nil // a retry, answered from its result
		case !errors.Is(err, sql.ErrNoRows):
			return sess, st, nil, nil, err
		}
	}
	if len(keys) == 0 {
		return sess, st, nil, nil, nil
	}
	held, err := a.held(ctx, id, keys)
	return sess, st, nil, held, err
}

// held reads the events of the log that hold any of keys, by key.
func (a sqliteAppend) held(ctx context.Context, id string, keys []string) (map[string]projection.Event, error) {
	byKey := map[string]projection.Event{}
	for start := 0; start < len(keys); start += 500 {
		part := keys[start:min(start+500, len(keys))]
		args := make([]any, 0, len(part)+1)
		args = append(args, id)
		for _, k := range part {
			args = append(args, k)
		}
		query := a.tx.QueryContext
		if len(part) > stmts.BatchKept {
			query = a.tx.Tx.QueryContext // a text of this batch's size, not kept
		}
		rows, err := query(ctx, `SELECT k.key, e.seq, e.type, e.turn, e.at, e.received_at, e.data
			FROM event_keys k JOIN events e ON e.session_id = k.session_id AND e.seq = k.seq
			WHERE k.session_id = ? AND k.key IN (?`+strings.Repeat(", ?", len(part)-1)+`)`, args...)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var key string
			ev, err := scanSQLiteEvent(prefixed{rows, &key})
			if err != nil {
				rows.Close()
				return nil, err
			}
			byKey[key] = ev
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, err
		}
	}
	return byKey, nil
}

// prefixed scans one column into first before the columns a scanner of
// the rest reads.
type prefixed struct {
	rows  *sql.Rows
	first any
}

func (p prefixed) Scan(dest ...any) error { return p.rows.Scan(append([]any{p.first}, dest...)...) }

// SetNeedsYou records since when the session's agent waits on a person,
// for what, and the log's last seq then.
func (s *Store) SetNeedsYou(ctx context.Context, id string, since projection.Time, need projection.NeedsYou) error {
	why, err := json.Marshal(need)
	if err != nil {
		return err
	}
	return s.write(ctx, func(tx *stmts.Tx) error {
		r, err := tx.ExecContext(ctx, `UPDATE sessions SET needs_you_since = ?, needs_you = ?, needs_you_seq = last_seq WHERE id = ?`,
			ms(since), string(why), id)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
}

// SetHooked records that an agent's hook was heard for the session.
func (s *Store) SetHooked(ctx context.Context, id string) error {
	return s.write(ctx, func(tx *stmts.Tx) error {
		r, err := tx.ExecContext(ctx, `UPDATE sessions SET hooked = 1 WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := r.RowsAffected(); n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
}

// Rename gives the session a final title.
func (s *Store) Rename(ctx context.Context, id, title string) (store.Session, error) {
	var sess store.Session
	err := s.write(ctx, func(tx *stmts.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET title = ?, untitled = 0 WHERE id = ?`, title, id); err != nil {
			return err
		}
		return s.scanSession(tx.QueryRowContext(ctx, sqliteSession, id), &sess)
	})
	return sess, err
}

// SetAgentStatus records what the agent's registry says, unless it holds
// a newer status.
func (s *Store) SetAgentStatus(ctx context.Context, id string, status projection.AgentStatus) (store.Session, error) {
	status.At = projection.NewTime(status.At.Time)
	var sess store.Session
	err := s.write(ctx, func(tx *stmts.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE sessions SET agent_status = ?, agent_status_at = ?
			WHERE id = ? AND (agent_status_at IS NULL OR agent_status_at <= ?)`, status.Status, ms(status.At), id, ms(status.At)); err != nil {
			return err
		}
		return s.scanSession(tx.QueryRowContext(ctx, sqliteSession, id), &sess)
	})
	return sess, err
}

func (a sqliteAppend) MarkSeen(ctx context.Context, id string, version int64) error {
	_, err := a.tx.ExecContext(ctx, sqliteMarkSeen, version, id)
	return err
}

func (a sqliteAppend) Write(ctx context.Context, w *engine.Write) error {
	id, req, prev, next, res, versions, at := w.ID, w.Req, w.Prev, w.Next, w.Res, w.Versions, w.At
	// One multi-row INSERT per chunk: far fewer statements than one per
	// event, within SQLite's limit of 32,766 bound parameters.
	const perRow, chunk = 1 + 6, 500 // the session's id and eventColumns
	for start := 0; start < len(res.Events); start += chunk {
		part := res.Events[start:min(start+chunk, len(res.Events))]
		var q strings.Builder
		q.WriteString(`INSERT INTO events (session_id, ` + strings.Join(engine.EventColumns, ", ") + `) VALUES `)
		args := make([]any, 0, len(part)*perRow)
		for i, ev := range part {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString(sqliteEventRow)
			args = append(append(args, id), engine.EventValues(ev, ev.Turn, ms(ev.At), msOrNull(ev.ReceivedAt), string(ev.Data))...)
		}
		if _, err := a.tx.BatchExec(ctx, len(part), q.String(), args...); err != nil {
			return err
		}
	}
	for start := 0; start < len(w.KeyRows); start += 500 {
		part := w.KeyRows[start:min(start+500, len(w.KeyRows))]
		args := make([]any, 0, len(part)*3)
		for _, k := range part {
			args = append(args, id, k.Key, k.Seq)
		}
		if _, err := a.tx.BatchExec(ctx, len(part), `INSERT INTO event_keys (session_id, key, seq) VALUES (?, ?, ?)`+
			strings.Repeat(", (?, ?, ?)", len(part)-1), args...); err != nil {
			return err
		}
	}
	if _, err := a.tx.ExecContext(ctx, sqliteSetHead,
		append(engine.HeadValues(next, ms(*next.LastAt), msOrNull(next.TurnAt), msOrNull(next.EndedAt)), id)...); err != nil {
		return err
	}
	if w.Meta.Any() {
		if _, err := a.tx.ExecContext(ctx, sqliteSetMeta, w.Meta.Title, w.Meta.List, id, engine.SQLText(w.Meta.GoalArg()), w.Meta.StandIn); err != nil {
			return err
		}
	}
	var items []byte // the new list, encoded once for its row and its version
	if res.TodosChanged {
		items = projection.AppendItems(nil, res.Todos.Todos, true)
		if _, err := a.tx.ExecContext(ctx, sqliteSetTodoList,
			append(engine.TodoListValues(next, res, string(items), ms(*next.UpdatedAt)), id)...); err != nil {
			return err
		}
	} else if next.Steps != prev.Steps { // a new step_message is a new step
		if _, err := a.tx.ExecContext(ctx, `UPDATE todo_lists SET steps = ?, step_message = ? WHERE session_id = ?`, next.Steps, next.StepMessage, id); err != nil {
			return err
		}
	}
	for _, v := range versions {
		changes := projection.AppendChanges(nil, v.Changes, true)
		if _, err := a.tx.ExecContext(ctx, sqliteInsertVersion,
			append([]any{id}, engine.VersionValues(v, ms(v.At), string(engine.VersionTodos(v, res, items)), string(changes))...)...); err != nil {
			return err
		}
	}
	if req.IdempotencyKey != "" {
		// Prune expired keys, oldest first; an expired row under this very
		// key is replaced.
		if _, err := a.tx.ExecContext(ctx, sqlitePruneIdempotent, ms(at)-store.IdempotencyRetention.Milliseconds(), engine.PruneBatch); err != nil {
			return err
		}
		if _, err := a.tx.ExecContext(ctx, `INSERT INTO idempotency_keys (session_id, key, request_hash, result, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (session_id, key) DO UPDATE
			SET request_hash = excluded.request_hash, result = excluded.result, created_at = excluded.created_at`,
			id, req.IdempotencyKey, req.RequestHash, string(engine.MarshalResult(res)), ms(at)); err != nil {
			return err
		}
	}
	return nil
}

// loadSQLiteState reads a session and its projection: one point read. Items
// are decoded only when the caller needs them.
func loadSQLiteState(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id string, items bool, cfg projection.Config, now projection.Time) (store.Session, projection.State, error) {
	var (
		s  store.Session
		st projection.State
		r  sqliteSessionRow
		t  sqliteTodoRow
	)
	if err := q.QueryRowContext(ctx, sqliteState, items, id).Scan(r.dests(&s, t.dests(&st)...)...); err != nil {
		return s, st, sqliteErr(err)
	}
	engine.SessionState(s, r.finish(&s, cfg, now), &st)
	return s, st, t.finish(id, &st)
}

// Events reads forwards from after: an index range read on (session_id,
// seq), a page bounded by limit and MaxPageBytes.
func (s *Store) Events(ctx context.Context, id string, after int64, limit int) ([]projection.Event, bool, error) {
	var (
		events []projection.Event
		more   bool
	)
	err := s.read(ctx, func(tx *stmts.Tx) error {
		if err := sessionExists(ctx, tx, id); err != nil {
			return err
		}
		var err error
		events, more, err = sqliteQueryPage(ctx, tx, limit, store.MaxPageBytes, sqliteEventsAfter, sqliteEventsAfterMore, id, after)
		return err
	})
	return events, more, err
}

// History reads the newest events before before, a page bounded by limit
// and MaxPageBytes; the tail page (before 0) carries the snapshot, read in
// the same read transaction so the two agree.
func (s *Store) History(ctx context.Context, id string, before int64, limit int) (store.History, error) {
	var h store.History
	err := s.read(ctx, func(tx *stmts.Tx) error {
		sess, st, err := loadSQLiteState(ctx, tx, id, before == 0, s.cfg, s.clock.Now())
		if err != nil {
			return err
		}
		if before == 0 {
			snap := st.Snapshot()
			h.Snapshot = &snap
			before = sess.LastSeq + 1
		}
		events, more, err := sqliteQueryPage(ctx, tx, limit, store.MaxPageBytes, sqliteEventsBefore, sqliteEventsBeforeMore, id, before)
		h.Events, h.HasMore = engine.Reversed(events), more
		return err
	})
	return h, err
}

// sqliteQueryPage reads a page of events with query, whose last parameter is the
// row limit, and which takes args before it: at most limit events, stopping
// once their data passes budget bytes. SQLite steps the query one row at a
// time, so no event past the page is read; moreQuery, given args, then
// tells whether one follows.
func sqliteQueryPage(ctx context.Context, tx *stmts.Tx, limit, budget int, query, moreQuery string, args ...any) ([]projection.Event, bool, error) {
	rows, err := tx.QueryContext(ctx, query, append(slices.Clip(args), limit)...)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	events, bytes, cut := []projection.Event{}, 0, false
	for rows.Next() {
		ev, err := scanSQLiteEvent(rows)
		if err != nil {
			return nil, false, err
		}
		events = append(events, ev)
		if bytes += len(ev.Data); bytes >= budget || len(events) == limit {
			cut = true
			break
		}
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	rows.Close()
	if !cut {
		return events, false, nil
	}
	moreArgs := slices.Clone(args)
	moreArgs[1] = events[len(events)-1].Seq // the seq bound follows the session id
	var one int
	switch err := tx.QueryRowContext(ctx, moreQuery, moreArgs...).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return events, false, nil
	case err != nil:
		return nil, false, err
	}
	return events, true, nil
}

// Todos reads the todos projection: one point read, whatever the log's length.
//
// The process holds the file, so it sees every write: a list read before is
// answered from its copy until an append of the session drops it.
func (s *Store) Todos(ctx context.Context, id string) (projection.Todos, error) {
	if s.copies == nil {
		st, err := s.TodoList(ctx, id)
		return st.Todos(id), err
	}
	if t, ok := s.copies.Get(id); ok {
		return t, nil
	}
	epoch := s.copies.Begin(id)
	st, err := s.TodoList(ctx, id)
	if err != nil {
		return projection.Todos{}, err
	}
	t := st.Todos(id)
	s.copies.Fill(id, epoch, t)
	return t, nil
}

// TodoList reads the todo side of the projection: one point read.
func (s *Store) TodoList(ctx context.Context, id string) (projection.State, error) {
	var (
		st projection.State
		r  sqliteTodoRow
	)
	if err := s.reader.QueryRowContext(ctx, sqliteTodos, id).Scan(r.dests(&st)...); err != nil {
		return st, sqliteErr(err)
	}
	return st, r.finish(id, &st)
}

// TodoRead reads the list for todo_read and marks the version it answers
// as seen, through the writer only when it was not seen yet. seen only
// grows, so a write that lands between the two is not undone.
func (s *Store) TodoRead(ctx context.Context, id string) (projection.Todos, error) {
	st, err := s.TodoList(ctx, id)
	if err != nil || st.Seen >= st.Version {
		return st.Todos(id), err
	}
	err = s.write(ctx, func(tx *stmts.Tx) error {
		_, err := tx.ExecContext(ctx, sqliteMarkSeen, st.Version, id)
		return err
	})
	return st.Todos(id), err
}

// TodoHistory pages the list's versions newest first: a backward range
// read of todo_versions' primary key.
func (s *Store) TodoHistory(ctx context.Context, id string, before int64, limit int) ([]projection.Version, bool, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	page := engine.VersionPage{Limit: limit}
	err := s.read(ctx, func(tx *stmts.Tx) error {
		if err := sessionExists(ctx, tx, id); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, sqliteVersions, id, before, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() && !page.More {
			var (
				at             int64
				v              projection.Version
				todos, changes string
			)
			if err := rows.Scan(&v.Version, &at, &v.By, &todos, &changes); err != nil {
				return err
			}
			v.At = fromMS(at)
			if err := page.Add(v, []byte(todos), []byte(changes)); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	return page.Versions, page.More, err
}

// Messages reads a page of the model surface (see engine.Messages), in one read
// transaction.
func (s *Store) Messages(ctx context.Context, id string, after int64, limit int) (store.MessagesPage, error) {
	var page store.MessagesPage
	err := s.read(ctx, func(tx *stmts.Tx) error {
		if err := sessionExists(ctx, tx, id); err != nil {
			return err
		}
		var err error
		page, err = engine.Messages(ctx, sqliteSurface{tx, id}, after, limit)
		return err
	})
	return page, err
}

// sqliteSurface reads one session's model surface in a read transaction.
type sqliteSurface struct {
	tx *stmts.Tx
	id string
}

func (s sqliteSurface) args(after int64) []any {
	args := []any{s.id, after}
	for _, t := range projection.SurfaceTypes {
		args = append(args, t)
	}
	return args
}

func (s sqliteSurface) Surface(ctx context.Context, after int64, limit, budget int) ([]projection.Event, bool, error) {
	return sqliteQueryPage(ctx, s.tx, limit, budget, sqliteSurfaceAfter, sqliteSurfaceMore, s.args(after)...)
}

func (s sqliteSurface) CallIDs(ctx context.Context, after int64, n int) ([]string, error) {
	rows, err := s.tx.QueryContext(ctx, sqliteCallIDs, append(s.args(after), n)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// read runs fn in a read transaction on a reader: one WAL snapshot, so a
// page and the session it belongs to agree.
func (s *Store) read(ctx context.Context, fn func(*stmts.Tx) error) error {
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return sqliteErr(err)
	}
	defer s.reader.PrepareWanted(ctx)
	defer tx.Rollback()
	return sqliteErr(fn(stmts.NewTx(tx, s.reader)))
}

func sessionExists(ctx context.Context, tx *stmts.Tx, id string) error {
	var one int
	return tx.QueryRowContext(ctx, sqliteSessionExists, id).Scan(&one)
}

func scanSQLiteEvent(row scanner) (projection.Event, error) {
	var (
		ev       projection.Event
		at       int64
		received sql.NullInt64
		data     string
	)
	err := row.Scan(&ev.Seq, &ev.Type, &ev.Turn, &at, &received, &data)
	ev.At, ev.ReceivedAt, ev.Data = fromMS(at), nullMS(received), json.RawMessage(data)
	return ev, err
}

// sqliteErr maps driver errors to the store's: no rows is ErrNotFound, and a
// database that cannot be used right now (locked past the busy timeout, an
// I/O error, a full disk, a closed store) is ErrUnavailable.
func sqliteErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL,
			sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY:
			return fmt.Errorf("%w: %s", store.ErrUnavailable, se.Error())
		}
		return err
	}
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(err.Error(), "database is closed") {
		return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
	}
	return err
}
