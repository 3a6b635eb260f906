package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/migrations"
)

// ErrDatabaseInUse means another process holds the SQLite database open.
var ErrDatabaseInUse = errors.New("sqlite database in use")

// SQLite is the Store in an embedded SQLite database file: zero setup, one
// process. Writes go through one connection in BEGIN IMMEDIATE transactions,
// one at a time; reads go through a pool of read-only connections, which WAL
// lets run beside the writer.
type SQLite struct {
	path   string
	writer *sql.DB
	reader *sql.DB
	unlock func()
	cfg    projection.Config
}

var _ Store = (*SQLite)(nil)

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

// OpenSQLite opens (creating it if needed) the database file at path and
// migrates it. The file's directory must exist. A lock file beside it,
// path+".lock", keeps a second process off the same database: live updates
// fan out in process, so a second writer would leave subscribers behind.
func OpenSQLite(ctx context.Context, path string, cfg projection.Config) (*SQLite, error) {
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
	s := &SQLite{path: path, unlock: unlock, cfg: cfg}
	if err := s.open(ctx); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *SQLite) open(ctx context.Context) error {
	var err error
	if s.writer, err = sql.Open("sqlite", sqliteDSN(s.path, false)); err != nil {
		return err
	}
	// One writer: SQLite takes one write transaction at a time anyway, and
	// queueing for the connection in Go is cheaper and fairer than retrying
	// on SQLITE_BUSY.
	s.writer.SetMaxOpenConns(1)
	if err := migrateSQLite(ctx, s.writer); err != nil {
		return fmt.Errorf("open sqlite %s: %w", s.path, err)
	}
	if s.reader, err = sql.Open("sqlite", sqliteDSN(s.path, true)); err != nil {
		return err
	}
	readers := max(4, runtime.GOMAXPROCS(0))
	s.reader.SetMaxOpenConns(readers)
	s.reader.SetMaxIdleConns(readers)
	return nil
}

func migrateSQLite(ctx context.Context, db *sql.DB) error {
	// No goose locker: the lock file already makes this process the only one.
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.SQLite)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", sqliteErr(err))
	}
	return nil
}

// Close closes the connections and releases the lock file.
func (s *SQLite) Close() {
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
func (s *SQLite) Ping(ctx context.Context) error {
	return sqliteErr(s.reader.PingContext(ctx))
}

// ms and fromMS convert between times and the stored Unix milliseconds.
func ms(t projection.Time) int64 { return t.UnixMilli() }

func fromMS(n int64) projection.Time { return projection.NewTime(time.UnixMilli(n)) }

// The read queries. Each is a point read or an index range read, never a
// scan: TestSQLiteQueryPlans holds every one of them to that.
const (
	sqliteSessionColumns = `s.id, s.title, s.created_at, s.updated_at, s.last_seq, s.turn, s.turn_open,
		t.pending, t.in_progress, t.completed`
	sqliteSession = `SELECT ` + sqliteSessionColumns + `
		FROM sessions s JOIN todo_lists t ON t.session_id = s.id WHERE s.id = ?`
	sqliteSessionsPage = `SELECT ` + sqliteSessionColumns + `
		FROM sessions s JOIN todo_lists t ON t.session_id = s.id
		WHERE (s.updated_at, s.id) < (?, ?)
		ORDER BY s.updated_at DESC, s.id DESC LIMIT ?`
	sqliteSessionExists = `SELECT 1 FROM sessions WHERE id = ?`
	sqliteState         = `SELECT s.id, s.title, s.created_at, s.updated_at, s.last_seq, s.turn, s.turn_open,
			t.version, t.standing, CASE WHEN ? THEN t.items END, t.updated_at,
			t.pending, t.in_progress, t.completed, t.seen, t.last_edit, t.edited_by, t.steps
		FROM sessions s JOIN todo_lists t ON t.session_id = s.id WHERE s.id = ?`
	sqliteIdempotent      = `SELECT request_hash, result FROM idempotency_keys WHERE session_id = ? AND key = ? AND created_at >= ?`
	sqlitePruneIdempotent = `DELETE FROM idempotency_keys WHERE rowid IN (
		SELECT rowid FROM idempotency_keys WHERE created_at < ? ORDER BY created_at LIMIT ?)`
	sqliteEventsAfter = `SELECT seq, type, turn, at, data FROM events
		WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`
	sqliteEventsBefore = `SELECT seq, type, turn, at, data FROM events
		WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`
	sqliteTodos = `SELECT version, standing, items, updated_at, seen, last_edit, edited_by, steps
		FROM todo_lists WHERE session_id = ?`
	sqliteVersions = `SELECT version, at, author, todos, changes FROM todo_versions
		WHERE session_id = ? AND version < ? ORDER BY version DESC LIMIT ?`
	sqliteSurface = `SELECT seq, type, turn, at, data FROM events
		WHERE session_id = ? AND type IN (?, ?, ?) ORDER BY seq` // projection.SurfaceTypes
)

type scanner interface{ Scan(dest ...any) error }

func scanSQLiteSession(row scanner, s *Session) error {
	var created, updated int64
	err := row.Scan(&s.ID, &s.Title, &created, &updated, &s.LastSeq, &s.Turn.Number, &s.Turn.Open,
		&s.TodoCounts.Pending, &s.TodoCounts.InProgress, &s.TodoCounts.Completed)
	s.CreatedAt, s.UpdatedAt = fromMS(created), fromMS(updated)
	return err
}

// CreateSession starts an empty session.
func (s *SQLite) CreateSession(ctx context.Context, title string) (Session, error) {
	now := Now()
	sess := Session{ID: NewSessionID(), Title: title, CreatedAt: now, UpdatedAt: now}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (id, title, created_at, updated_at) VALUES (?, ?, ?, ?)`,
			sess.ID, sess.Title, ms(now), ms(now)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO todo_lists (session_id) VALUES (?)`, sess.ID)
		return err
	})
	return sess, err
}

// Session reads one session's summary.
func (s *SQLite) Session(ctx context.Context, id string) (Session, error) {
	var sess Session
	err := scanSQLiteSession(s.reader.QueryRowContext(ctx, sqliteSession, id), &sess)
	return sess, sqliteErr(err)
}

// Sessions lists sessions, most recent activity first, by keyset on
// (updated_at, id) so that any page is an index range read.
func (s *SQLite) Sessions(ctx context.Context, limit int, after string) ([]Session, string, error) {
	c := cursor{UpdatedAt: time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}
	if after != "" {
		var err error
		if c, err = decodeCursor(after); err != nil {
			return nil, "", err
		}
	}
	rows, err := s.reader.QueryContext(ctx, sqliteSessionsPage, c.UpdatedAt.UnixMilli(), c.ID, limit+1)
	if err != nil {
		return nil, "", sqliteErr(err)
	}
	defer rows.Close()
	list := []Session{}
	for rows.Next() {
		var sess Session
		if err := scanSQLiteSession(rows, &sess); err != nil {
			return nil, "", sqliteErr(err)
		}
		list = append(list, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, "", sqliteErr(err)
	}
	list, more := pageOf(list, limit)
	next := ""
	if more {
		next = encodeCursor(list[limit-1])
	}
	return list, next, nil
}

// Append appends a batch in one BEGIN IMMEDIATE transaction on the writer:
// seqs are gapless, the batch lands whole or not at all, and the todos
// projection moves with it.
func (s *SQLite) Append(ctx context.Context, id string, req AppendRequest) (AppendResult, error) {
	var (
		res      AppendResult
		rejected error
	)
	err := s.write(ctx, func(tx *sql.Tx) error {
		var err error
		res, err = appendIn(ctx, sqliteAppend{tx}, id, req, s.cfg)
		if shownVersion(err) > 0 {
			// A rejection that showed the model the list: commit its
			// seen mark (markSeen), answer the rejection.
			rejected = err
			return nil
		}
		return err
	})
	if err == nil && rejected != nil {
		return AppendResult{}, rejected
	}
	return res, err
}

// write runs fn in a write transaction, committed when fn returns nil.
func (s *SQLite) write(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		return sqliteErr(err)
	}
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return sqliteErr(err)
	}
	return sqliteErr(tx.Commit())
}

// sqliteAppend is the SQLite side of appendIn, on the writer's transaction.
type sqliteAppend struct{ tx *sql.Tx }

func (a sqliteAppend) read(ctx context.Context, id string, items bool, key string) (Session, projection.State, *storedResult, error) {
	sess, st, err := loadSQLiteState(ctx, a.tx, id, items)
	if err != nil || key == "" {
		return sess, st, nil, err
	}
	var stored storedResult
	err = a.tx.QueryRowContext(ctx, sqliteIdempotent, id, key, ms(idempotencyCutoff())).Scan(&stored.RequestHash, &stored.Result)
	if errors.Is(err, sql.ErrNoRows) {
		return sess, st, nil, nil
	}
	if err != nil {
		return sess, st, nil, err
	}
	return sess, st, &stored, nil
}

func (a sqliteAppend) markSeen(ctx context.Context, id string, version int64) error {
	_, err := a.tx.ExecContext(ctx, `UPDATE todo_lists SET seen = max(seen, ?) WHERE session_id = ?`, version, id)
	return err
}

func (a sqliteAppend) write(ctx context.Context, id string, req AppendRequest, prev, next projection.State, res AppendResult, versions []projection.Version, at projection.Time) error {
	// One multi-row INSERT per chunk: far fewer statements than one per
	// event, within SQLite's limit of 32,766 bound parameters.
	const perRow, chunk = 6, 500
	for start := 0; start < len(res.Events); start += chunk {
		part := res.Events[start:min(start+chunk, len(res.Events))]
		var q strings.Builder
		q.WriteString(`INSERT INTO events (session_id, seq, type, turn, at, data) VALUES `)
		args := make([]any, 0, len(part)*perRow)
		for i, ev := range part {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteString("(?, ?, ?, ?, ?, ?)")
			args = append(args, id, ev.Seq, ev.Type, ev.Turn, ms(ev.At), string(ev.Data))
		}
		if _, err := a.tx.ExecContext(ctx, q.String(), args...); err != nil {
			return err
		}
	}
	if _, err := a.tx.ExecContext(ctx, `UPDATE sessions SET last_seq = ?, turn = ?, turn_open = ?, updated_at = ? WHERE id = ?`,
		next.LastSeq, next.Turn.Number, next.Turn.Open, ms(at), id); err != nil {
		return err
	}
	if res.TodosChanged {
		t := res.Todos
		items, _ := json.Marshal(t.Todos)
		if _, err := a.tx.ExecContext(ctx, `UPDATE todo_lists SET version = ?, standing = ?, items = ?, updated_at = ?,
			pending = ?, in_progress = ?, completed = ?, seen = max(seen, ?), last_edit = ?, edited_by = ?, steps = ?
			WHERE session_id = ?`,
			t.Version, t.Standing, string(items), ms(*t.UpdatedAt), t.Counts.Pending, t.Counts.InProgress, t.Counts.Completed,
			next.Seen, next.LastEdit, next.EditedBy, next.Steps, id); err != nil {
			return err
		}
	} else if next.Steps != prev.Steps {
		if _, err := a.tx.ExecContext(ctx, `UPDATE todo_lists SET steps = ? WHERE session_id = ?`, next.Steps, id); err != nil {
			return err
		}
	}
	for _, v := range versions {
		todos, _ := json.Marshal(v.Todos)
		changes, _ := json.Marshal(v.Changes)
		if _, err := a.tx.ExecContext(ctx, `INSERT INTO todo_versions (session_id, version, at, author, todos, changes) VALUES (?, ?, ?, ?, ?, ?)`,
			id, v.Version, ms(v.At), v.By, string(todos), string(changes)); err != nil {
			return err
		}
	}
	if req.IdempotencyKey != "" {
		// Prune expired keys, oldest first; an expired row under this very
		// key is replaced.
		if _, err := a.tx.ExecContext(ctx, sqlitePruneIdempotent, ms(at)-IdempotencyRetention.Milliseconds(), pruneBatch); err != nil {
			return err
		}
		if _, err := a.tx.ExecContext(ctx, `INSERT INTO idempotency_keys (session_id, key, request_hash, result, created_at) VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (session_id, key) DO UPDATE
			SET request_hash = excluded.request_hash, result = excluded.result, created_at = excluded.created_at`,
			id, req.IdempotencyKey, req.RequestHash, string(marshalResult(res)), ms(at)); err != nil {
			return err
		}
	}
	return nil
}

// loadSQLiteState reads a session and its projection: one point read. Items
// are decoded only when the caller needs them.
func loadSQLiteState(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, id string, items bool) (Session, projection.State, error) {
	var (
		s                Session
		st               projection.State
		created, updated int64
		todosAt          sql.NullInt64
		itemsJSON        sql.NullString
	)
	err := q.QueryRowContext(ctx, sqliteState, items, id).
		Scan(&s.ID, &s.Title, &created, &updated, &s.LastSeq, &s.Turn.Number, &s.Turn.Open,
			&st.Version, &st.Standing, &itemsJSON, &todosAt,
			&s.TodoCounts.Pending, &s.TodoCounts.InProgress, &s.TodoCounts.Completed,
			&st.Seen, &st.LastEdit, &st.EditedBy, &st.Steps)
	if err != nil {
		return s, st, sqliteErr(err)
	}
	s.CreatedAt, s.UpdatedAt = fromMS(created), fromMS(updated)
	st.LastSeq, st.Turn = s.LastSeq, s.Turn
	if todosAt.Valid {
		t := fromMS(todosAt.Int64)
		st.UpdatedAt = &t
	}
	if itemsJSON.Valid {
		if err := json.Unmarshal([]byte(itemsJSON.String), &st.Items); err != nil {
			return s, st, fmt.Errorf("decode todo items of %s: %w", id, err)
		}
	}
	return s, st, nil
}

// Events reads forwards from after: an index range read on (session_id, seq).
func (s *SQLite) Events(ctx context.Context, id string, after int64, limit int) ([]projection.Event, bool, error) {
	var (
		events []projection.Event
		more   bool
	)
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := sessionExists(ctx, tx, id); err != nil {
			return err
		}
		var err error
		events, err = queryEvents(ctx, tx, sqliteEventsAfter, id, after, limit+1)
		events, more = pageOf(events, limit)
		return err
	})
	return events, more, err
}

// History reads the newest limit events before before; the tail page (before
// 0) carries the snapshot, read in the same read transaction so the two agree.
func (s *SQLite) History(ctx context.Context, id string, before int64, limit int) (History, error) {
	var h History
	err := s.read(ctx, func(tx *sql.Tx) error {
		sess, st, err := loadSQLiteState(ctx, tx, id, before == 0)
		if err != nil {
			return err
		}
		if before == 0 {
			snap := st.Snapshot()
			h.Snapshot = &snap
			before = sess.LastSeq + 1
		}
		events, err := queryEvents(ctx, tx, sqliteEventsBefore, id, before, limit+1)
		if err != nil {
			return err
		}
		events, h.HasMore = pageOf(events, limit)
		h.Events = reversed(events)
		return nil
	})
	return h, err
}

// Todos reads the todos projection: one point read, whatever the log's length.
func (s *SQLite) Todos(ctx context.Context, id string) (projection.Todos, error) {
	st, err := s.TodoList(ctx, id)
	return st.Todos(id), err
}

// TodoList reads the todo side of the projection: one point read.
func (s *SQLite) TodoList(ctx context.Context, id string) (projection.State, error) {
	var (
		st      projection.State
		items   string
		todosAt sql.NullInt64
	)
	err := s.reader.QueryRowContext(ctx, sqliteTodos, id).
		Scan(&st.Version, &st.Standing, &items, &todosAt, &st.Seen, &st.LastEdit, &st.EditedBy, &st.Steps)
	if err != nil {
		return st, sqliteErr(err)
	}
	if err := json.Unmarshal([]byte(items), &st.Items); err != nil {
		return st, fmt.Errorf("decode todo items of %s: %w", id, err)
	}
	if todosAt.Valid {
		t := fromMS(todosAt.Int64)
		st.UpdatedAt = &t
	}
	return st, nil
}

// TodoRead reads the list for todo_read and marks the version it answers
// as seen, through the writer only when it was not seen yet. seen only
// grows, so a write that lands between the two is not undone.
func (s *SQLite) TodoRead(ctx context.Context, id string) (projection.Todos, error) {
	st, err := s.TodoList(ctx, id)
	if err != nil || st.Seen >= st.Version {
		return st.Todos(id), err
	}
	err = s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE todo_lists SET seen = max(seen, ?) WHERE session_id = ?`, st.Version, id)
		return err
	})
	return st.Todos(id), err
}

// TodoHistory pages the list's versions newest first: a backward range
// read of todo_versions' primary key.
func (s *SQLite) TodoHistory(ctx context.Context, id string, before int64, limit int) ([]projection.Version, bool, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	page := versionPage{limit: limit}
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := sessionExists(ctx, tx, id); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, sqliteVersions, id, before, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() && !page.full {
			var (
				at             int64
				v              projection.Version
				todos, changes string
			)
			if err := rows.Scan(&v.Version, &at, &v.By, &todos, &changes); err != nil {
				return err
			}
			v.At = fromMS(at)
			if err := page.add(v, []byte(todos), []byte(changes)); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	return page.versions, page.more, err
}

// Messages derives the model surface from the surface events of the log.
func (s *SQLite) Messages(ctx context.Context, id string) ([]projection.Message, error) {
	var events []projection.Event
	err := s.read(ctx, func(tx *sql.Tx) error {
		if err := sessionExists(ctx, tx, id); err != nil {
			return err
		}
		args := []any{id}
		for _, t := range projection.SurfaceTypes {
			args = append(args, t)
		}
		var err error
		events, err = queryEvents(ctx, tx, sqliteSurface, args...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return projection.DeriveMessages(events), nil
}

// read runs fn in a read transaction on a reader: one WAL snapshot, so a
// page and the session it belongs to agree.
func (s *SQLite) read(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.reader.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return sqliteErr(err)
	}
	defer tx.Rollback()
	return sqliteErr(fn(tx))
}

func sessionExists(ctx context.Context, tx *sql.Tx, id string) error {
	var one int
	return tx.QueryRowContext(ctx, sqliteSessionExists, id).Scan(&one)
}

func queryEvents(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]projection.Event, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	events := []projection.Event{}
	for rows.Next() {
		var (
			ev   projection.Event
			at   int64
			data string
		)
		if err := rows.Scan(&ev.Seq, &ev.Type, &ev.Turn, &at, &data); err != nil {
			return nil, err
		}
		ev.At, ev.Data = fromMS(at), json.RawMessage(data)
		events = append(events, ev)
	}
	return events, rows.Err()
}

// sqliteErr maps driver errors to the store's: no rows is ErrNotFound, and a
// database that cannot be used right now (locked past the busy timeout, an
// I/O error, a full disk, a closed store) is ErrUnavailable.
func sqliteErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED, sqlite3.SQLITE_IOERR, sqlite3.SQLITE_FULL,
			sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_READONLY:
			return fmt.Errorf("%w: %s", ErrUnavailable, se.Error())
		}
		return err
	}
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, context.DeadlineExceeded) ||
		strings.Contains(err.Error(), "database is closed") {
		return fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	return err
}
