// Package postgres is the Store on PostgreSQL, the plain way (every append
// locks its session's row), with the writers' half of the read-lease
// protocol (lease.go), the notify connections of the live carrier, and its
// migrations (migrate.go); its accounts and hook notes are in
// internal/accounts. The fast layer, store/postgres/fast, runs on it
// through seam.go.
package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/internal/engine"
	"github.com/tack-dev/tack/internal/store/postgres/internal/accounts"
	"github.com/tack-dev/tack/internal/store/postgres/internal/pgerr"
	"github.com/tack-dev/tack/internal/store/postgres/internal/warm"
)

// Store is the store on PostgreSQL through a pgx pool, the plain way:
// every append locks its session's row and reads the state it appends to,
// every read is a query of its own. Fast (store/postgres/fast) serves the same
// contract from the same database faster, as a layer on this store.
type Store struct {
	Pool *pgxpool.Pool
	// Accounts serves the accounts and the hook notes
	// (internal/accounts).
	accounts.Accounts
	cfg   projection.Config
	clock store.Clock
	// instance names this store's connections to tack_lease_guard
	// (lease.go, the writers' half of the read leases): "" when
	// the pool was not opened by Open, and then the store holds no
	// read lease. leaseChannel is where writers ask holders to let go;
	// leaseWaits counts the appends that waited.
	instance, leaseChannel string
	leaseWaits             atomic.Int64
}

var _ store.Store = (*Store)(nil)

// PoolConfig parses a database URL into a pool configuration with Tack's
// defaults: an explicit MaxConns and a short connect timeout, so that requests
// fail fast with ErrUnavailable while the database is away.
func PoolConfig(databaseURL string, maxConns int32) (*pgxpool.Config, error) {
	pc, err := pgxpool.ParseConfig(databaseURL)
	if err != nil {
		return nil, fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	pc.MaxConns = maxConns
	pc.ConnConfig.ConnectTimeout = 2 * time.Second
	pc.HealthCheckPeriod = 5 * time.Second
	return pc, nil
}

// Open connects a pool and migrates the schema under goose's Postgres
// session lock, so that instances starting together take turns; then it
// waits, up to 30 s, for the pool's MinConns connections (WarmPool), so
// that the first requests find them open.
func Open(ctx context.Context, pc *pgxpool.Config, cfg projection.Config) (*Store, error) {
	pc = pc.Copy()
	if pc.ConnConfig.RuntimeParams[instanceParam] == "" {
		pc.ConnConfig.RuntimeParams[instanceParam] = newInstanceID()
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	if err := warm.Start(ctx, pool, 30*time.Second, warmStatements()); err != nil {
		pool.Close()
		return nil, fmt.Errorf("warm the pool: %w", err)
	}
	return New(pool, cfg), nil
}

// New is a store over pool, whose schema is migrated already (or,
// in a test, over a database that cannot be reached).
func New(pool *pgxpool.Pool, cfg projection.Config) *Store {
	cc := pool.Config().ConnConfig
	p := &Store{Pool: pool, cfg: cfg, clock: store.SystemClock{}, instance: cc.RuntimeParams[instanceParam], leaseChannel: Channel("tack_leases", cc)}
	p.Accounts = accounts.New(pool, func() projection.Time { return p.clock.Now() })
	return p
}

// Close closes the pool.
func (p *Store) Close() { p.Pool.Close() }

// Ping checks that the database answers.
func (p *Store) Ping(ctx context.Context) error {
	return pgErr(p.Pool.Ping(ctx))
}

// pgSessionRow holds the columns of sessionColumns that Postgres stores in
// another form than the Session shows them.
type pgSessionRow struct {
	created, updated time.Time
	parallel         *bool
	key, reason      *string
	turnAt, endedAt  *time.Time
	needsYou         *time.Time
	agentAt          *time.Time
}

// dests are the scan targets of sessionColumns, into s and r, followed by
// more (the columns a query selects after them).
func (r *pgSessionRow) dests(s *store.Session, more ...any) []any {
	return engine.SessionDests(s, &r.created, &r.updated, &r.parallel, &r.key, &r.reason, &r.turnAt, &r.endedAt, &r.needsYou, &r.agentAt, more)
}

// finish sets the fields of s that r's columns hold, and its state; it
// returns the session's activity.
func (r *pgSessionRow) finish(s *store.Session, cfg projection.Config, now projection.Time) projection.Activity {
	s.CreatedAt, s.UpdatedAt = projection.NewTime(r.created), projection.NewTime(r.updated)
	s.Turn.EndReason = engine.EndReason(r.reason)
	s.ParallelInProgress = engine.Policy(r.parallel, cfg)
	if r.key != nil {
		s.ExternalKey = *r.key
	}
	a := engine.RowActivity(s, pgTime(r.turnAt), pgTime(r.endedAt), pgTime(r.needsYou), pgTime(r.agentAt))
	engine.Settle(s, a, cfg, now)
	return a
}

// pgTime reads a stored time that may be NULL; pgNullTime stores one.
func pgTime(t *time.Time) *projection.Time {
	if t == nil {
		return nil
	}
	v := projection.NewTime(*t)
	return &v
}

func pgNullTime(t *projection.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

func (p *Store) scanSession(row pgx.Row, s *store.Session) error {
	var r pgSessionRow
	err := row.Scan(r.dests(s)...)
	r.finish(s, p.cfg, p.clock.Now())
	return err
}

// CreateSession starts an empty session, or finds the one with ns.ExternalKey.
func (p *Store) CreateSession(ctx context.Context, ns store.NewSession) (store.Session, bool, error) {
	now := p.clock.Now()
	if ns.Owner == "" {
		ns.Owner = store.LocalPrincipal
	}
	s := engine.NewSessionOf(ns, now, p.cfg)
	var key *string
	if ns.ExternalKey != "" {
		key = &ns.ExternalKey
	}
	// A parent must be a session of the same owner: the insert selects
	// nothing when it is not, and the count of parents found tells why.
	// The parent's row is locked (FOR KEY SHARE, as the foreign key would)
	// so that the check and the insert agree.
	var made, parents int
	err := p.Pool.QueryRow(ctx, `
		WITH parent AS (
			SELECT id FROM sessions WHERE id = $8 AND owner = $6 FOR KEY SHARE
		), s AS (
			INSERT INTO sessions (id, title, created_at, updated_at, parallel_in_progress, external_key, owner,
				agent, cwd, parent_id, plan_lifetime, untitled, listed, hooked)
			SELECT $1, $2, $3, $3, $4, $5, $6, $7, $9, $8, $10, $11, $12, $13
			WHERE $8::text IS NULL OR EXISTS (SELECT FROM parent)
			ON CONFLICT (owner, external_key) WHERE external_key IS NOT NULL DO NOTHING RETURNING id
		), t AS (
			INSERT INTO todo_lists (session_id) SELECT id FROM s RETURNING 1
		)
		SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM parent)`,
		s.ID, s.Title, now.Time, ns.ParallelInProgress, key, ns.Owner, s.Agent, s.ParentID, s.Cwd, s.PlanLifetime,
		s.Untitled, s.Listed, s.Hooked).Scan(&made, &parents)
	if err != nil {
		return store.Session{}, false, pgErr(err)
	}
	if s.ParentID != nil && parents == 0 {
		return store.Session{}, false, store.ErrNoParent
	}
	if made == 1 {
		return s, true, nil
	}
	if ns.ParentID != "" && ns.Title != "" {
		if _, err := p.Pool.Exec(ctx, `UPDATE sessions SET title = $3, untitled = false
			WHERE owner = $1 AND external_key = $2 AND untitled`, ns.Owner, ns.ExternalKey, ns.Title); err != nil {
			return store.Session{}, false, pgErr(err)
		}
	}
	err = p.scanSession(p.Pool.QueryRow(ctx, `SELECT `+engine.SessionColumns+` FROM `+engine.SessionsJoin+`
		WHERE s.owner = $1 AND s.external_key = $2`, ns.Owner, ns.ExternalKey), &s)
	return s, false, pgErr(err)
}

// Session reads one session's summary.
func (p *Store) Session(ctx context.Context, id string) (store.Session, error) {
	var s store.Session
	err := p.scanSession(p.Pool.QueryRow(ctx, `SELECT `+engine.SessionColumns+` FROM `+engine.SessionsJoin+` WHERE s.id = $1`, id), &s)
	return s, pgErr(err)
}

// Sessions lists sessions, most recent activity first.
func (p *Store) Sessions(ctx context.Context, limit int, after string) ([]store.Session, string, error) {
	return p.FindSessions(ctx, store.SessionQuery{Limit: limit, Cursor: after})
}

// FindSessions lists the sessions q selects, most recent activity first,
// by keyset on (updated_at, id): a range read of the activity index (the
// owner's when q.Owner is set), bounded for a search by q.Scan.
func (p *Store) FindSessions(ctx context.Context, q store.SessionQuery) ([]store.Session, string, error) {
	list, next, err := engine.Find(ctx, pgSessions{p}, q)
	return list, next, pgErr(err)
}

// pgSessions reads pages of the sessions list.
type pgSessions struct{ p *Store }

// pgArgs numbers a query's arguments as its SQL is put together.
type pgArgs []any

// add appends v and returns its placeholder.
func (a *pgArgs) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// where is the condition of a sessions page or window of q after from:
// listed sessions only.
func (r pgSessions) where(args *pgArgs, q store.SessionQuery, from engine.Cursor) string {
	where := `s.listed AND (s.updated_at, s.id) < (` + args.add(from.UpdatedAt) + `, ` + args.add(from.ID) + `)`
	if q.Owner != "" {
		where += ` AND s.owner = ` + args.add(q.Owner)
	}
	if q.Parent != "" {
		where += ` AND s.parent_id = ` + args.add(q.Parent)
	}
	return where
}

func (r pgSessions) Page(ctx context.Context, q store.SessionQuery, from, to engine.Cursor, limit int) ([]store.Session, error) {
	var args pgArgs
	where := r.where(&args, q, from) + `
		AND (s.updated_at, s.id) >= (` + args.add(to.UpdatedAt) + `, ` + args.add(to.ID) + `)`
	if q.Title != "" {
		// lower() on both sides: case-insensitive under the database's
		// LC_CTYPE (Unicode under a UTF-8 locale). strpos, unlike LIKE,
		// has no wildcards to escape.
		where += ` AND strpos(lower(s.title), lower(` + args.add(q.Title) + `)) > 0`
	}
	rows, err := r.p.Pool.Query(ctx, `SELECT `+engine.SessionColumns+` FROM `+engine.SessionsJoin+`
		WHERE `+where+` ORDER BY s.updated_at DESC, s.id DESC LIMIT `+args.add(limit), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	list := []store.Session{}
	for rows.Next() {
		var s store.Session
		if err := r.p.scanSession(rows, &s); err != nil {
			return nil, err
		}
		list = append(list, s)
	}
	return list, rows.Err()
}

func (r pgSessions) Nth(ctx context.Context, q store.SessionQuery, from engine.Cursor, n int) (engine.Cursor, bool, bool, error) {
	var args pgArgs
	where := r.where(&args, q, from)
	rows, err := r.p.Pool.Query(ctx, `SELECT s.updated_at, s.id FROM sessions s WHERE `+where+`
		ORDER BY s.updated_at DESC, s.id DESC OFFSET `+args.add(n-1)+` LIMIT 2`, args...)
	if err != nil {
		return engine.Cursor{}, false, false, err
	}
	keys, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (engine.Cursor, error) {
		var c engine.Cursor
		err := row.Scan(&c.UpdatedAt, &c.ID)
		return c, err
	})
	if err != nil || len(keys) == 0 {
		return engine.Cursor{}, false, false, err
	}
	return keys[0], true, len(keys) > 1, nil
}

// pgTodoRow holds the columns of todoColumns that Postgres stores in
// another form than projection.State holds them.
type pgTodoRow struct {
	items   []byte // nil when the query did not read the list
	updated *time.Time
}

// dests are the scan targets of todoColumns, into st and r.
func (r *pgTodoRow) dests(st *projection.State) []any {
	return engine.TodoDests(st, &r.items, &r.updated)
}

// finish sets the fields of st, session id's, that r's columns hold; decode
// turns the stored list into items (decodeItems, or a cache of decodes).
func (r *pgTodoRow) finish(id string, st *projection.State, decode func(id string, raw []byte) ([]projection.Item, error)) error {
	if r.updated != nil {
		t := projection.NewTime(*r.updated)
		st.UpdatedAt = &t
	}
	if r.items == nil {
		return nil
	}
	items, err := decode(id, r.items)
	if err != nil {
		return fmt.Errorf("decode todo items of %s: %w", id, err)
	}
	st.Items = items
	return nil
}

// decodeItems decodes a stored list.
func decodeItems(_ string, raw []byte) ([]projection.Item, error) {
	var items []projection.Item
	err := json.Unmarshal(raw, &items)
	return items, err
}

// pgState reads a session and its projection row. The items are read only
// when $2 is true (the todos view may change), to keep other appends light.
var pgState = `SELECT ` + engine.SessionColumns + `, ` + engine.TodoColumns(`CASE WHEN $2 THEN t.items END`) + `
	FROM ` + engine.SessionsJoin + ` WHERE s.id = $1`

// pgTodoList reads the todo side of session $1's projection; pgTodoLists
// that of each session in $1, with its id first.
var (
	pgTodoList  = `SELECT ` + engine.TodoColumns(`t.items`) + ` FROM todo_lists t WHERE t.session_id = $1`
	pgTodoLists = `SELECT t.session_id, ` + engine.TodoColumns(`t.items`) + ` FROM todo_lists t WHERE t.session_id = ANY($1)`
)

// scanState scans a row of pgState.
func scanState(row pgx.Row, s *store.Session, st *projection.State, cfg projection.Config, now projection.Time) error {
	var (
		r pgSessionRow
		t pgTodoRow
	)
	if err := row.Scan(r.dests(s, t.dests(st)...)...); err != nil {
		return err
	}
	engine.SessionState(*s, r.finish(s, cfg, now), st)
	return t.finish(s.ID, st, decodeItems)
}

// Append appends a batch in one transaction under the session's row lock:
// seqs are gapless, the batch lands whole or not at all, and the todos
// projection moves with it.
func (p *Store) Append(ctx context.Context, id string, req store.AppendRequest) (store.AppendResult, error) {
	conn, err := p.Pool.Acquire(ctx)
	if err != nil {
		return store.AppendResult{}, pgErr(err)
	}
	defer release(conn)
	res, err := p.whileLeased(ctx, id, func() (store.AppendResult, error) {
		res, _, err := p.appendLocked(ctx, conn.Conn(), id, req)
		if isLeased(err) {
			// The refused transaction is still open: end it before trying again.
			if _, rerr := conn.Exec(ctx, "ROLLBACK"); rerr != nil {
				return store.AppendResult{}, rerr
			}
		}
		return res, err
	})
	return res, pgErr(err)
}

// appendLocked runs an append on conn the locking way (engine.Append through
// pgAppend), and returns what it read and wrote besides its result.
func (p *Store) appendLocked(ctx context.Context, conn *pgx.Conn, id string, req store.AppendRequest) (store.AppendResult, *pgAppend, error) {
	tx := &pgAppend{conn: conn, cfg: p.cfg, clock: p.clock}
	res, err := engine.Append(ctx, tx, id, req, p.cfg, p.clock)
	return res, tx, err
}

// pgAppend runs the append transaction in two round trips rather than one per
// statement: read's batch begins it, locks the session, reads it with its
// projection and looks up the idempotency key; the projection runs between
// the two (engine.Append); write's batch writes the events, the session's head
// and the todo list, and commits. Begin, select, write and commit one by
// one cost four round trips, and on a loaded machine every round trip is a
// wake-up of a Postgres backend and of this process, which is much of what
// an append costs (see docs/performance.md). Any early return leaves the
// transaction open for release to roll back. It notes what it read and
// wrote, for the fast layer's cache (store/postgres/fast).
type pgAppend struct {
	conn  *pgx.Conn
	cfg   projection.Config
	clock store.Clock
	// items is whether read read the list; wrote whether write committed
	// next; seen whether markSeen raised the seen mark.
	items, wrote, seen bool
	next               projection.State
}

func (a *pgAppend) Read(ctx context.Context, id string, items bool, key string, keys []string) (store.Session, projection.State, *engine.StoredResult, map[string]projection.Event, error) {
	a.items = items
	var (
		sess    store.Session
		st      projection.State
		stored  *engine.StoredResult
		held    map[string]projection.Event
		missing bool
	)
	batch := &pgx.Batch{}
	// The lock and the read are two statements on purpose. A statement that
	// waits for a row lock re-reads the locked row once it is free, but not
	// the rows it joined to it: one SELECT … FOR UPDATE OF s joining
	// todo_lists would see the session as the last append left it and the
	// todo list as it was before, and write a projection behind the log.
	// Under READ COMMITTED each statement takes a fresh snapshot, so the
	// read that follows the lock sees every append committed before it.
	batch.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	batch.Queue(`SELECT FROM sessions WHERE id = $1 FOR UPDATE`, id)
	batch.Queue(pgState, id, items).QueryRow(func(row pgx.Row) error {
		return noRowsIsMissing(scanState(row, &sess, &st, a.cfg, a.clock.Now()), &missing)
	})
	if key != "" {
		batch.Queue(`SELECT request_hash, result FROM idempotency_keys WHERE `+liveKey,
			id, key, engine.IdempotencyCutoff(a.clock.Now()).Time).QueryRow(func(row pgx.Row) error {
			var r engine.StoredResult
			err := row.Scan(&r.RequestHash, &r.Result)
			if errors.Is(err, pgx.ErrNoRows) {
				return nil
			}
			stored = &r
			return err
		})
	}
	if len(keys) > 0 {
		// After the lock, as the rest: under READ COMMITTED it sees every
		// append committed before it. Read with the state, it saves the
		// append a round trip (a transcript's lines all carry keys).
		batch.Queue(pgHeld, id, keys).Query(func(rows pgx.Rows) error {
			var err error
			held, err = scanHeld(rows)
			return err
		})
	}
	err := a.conn.SendBatch(ctx, batch).Close()
	if err == nil && missing {
		err = store.ErrNotFound
	}
	return sess, st, stored, held, err
}

func (a *pgAppend) Write(ctx context.Context, w *engine.Write) error {
	batch := &pgx.Batch{}
	batch.Queue(pgSetHead, pgHeadArgs(w.ID, w.Next)...)
	queueWrites(batch, w)
	// A failed statement makes Postgres skip the rest of the batch, COMMIT
	// included, so nothing of it is kept and release rolls back.
	batch.Queue("COMMIT")
	if err := a.conn.SendBatch(ctx, batch).Close(); err != nil {
		return err
	}
	a.wrote, a.next = true, w.Next
	return nil
}

// pgParams numbers a statement's parameters as its SQL is put together,
// so that no statement numbers them by hand: its arguments go in the
// order its SQL took the placeholders.
type pgParams int

// next is the placeholder of the next parameter.
func (p *pgParams) next() string {
	*p++
	return "$" + strconv.Itoa(int(*p))
}

// cast is a placeholder function for setList: the next parameter, cast
// to the column's type when casts names one.
func (p *pgParams) cast(casts map[string]string) func(string) string {
	return func(col string) string { return p.next() + casts[col] }
}

// pgSetHeadSQL moves session id's head to where an append left it, its
// parameters taken from p: the id, then headColumns' values (pgHeadArgs).
func pgSetHeadSQL(p *pgParams) string {
	id := p.next()
	return `UPDATE sessions SET ` + engine.SetList(engine.HeadColumns, p.cast(nil), "GREATEST") + ` WHERE id = ` + id
}

// pgHeadGuard is the condition by which pgSetHeadFrom moves the head only
// from where the log ended under the title and the agent's status the
// append's state holds; its parameters follow the head's (pgHeadArgs'
// from).
func pgHeadGuard(p *pgParams) string {
	return ` AND last_seq = ` + p.next() + ` AND title = ` + p.next() + `
		AND agent_status_at IS NOT DISTINCT FROM ` + p.next()
}

// pgSetHead moves session $1's head to where an append left it.
// pgSetHeadFrom moves it only from where the log ended, under the title and
// the agent's status (pgHeadGuard), and fails the transaction through
// tack_expect (migration 00007) when it ended elsewhere or the session was
// renamed or its agent's status set since.
var (
	pgSetHead     = pgSetHeadSQL(new(pgParams))
	pgSetHeadFrom = func() string {
		var p pgParams
		return `WITH s AS (` + pgSetHeadSQL(&p) + pgHeadGuard(&p) + ` RETURNING 1)
		SELECT tack_expect(count(*) = 1) FROM s`
	}()
)

// pgHeadArgs are the arguments of pgSetHead, and of pgSetHeadFrom with
// from: the log's last seq, the title and the agent's status time the
// append expects.
func pgHeadArgs(id string, next projection.State, from ...any) []any {
	return append(append([]any{id}, engine.HeadValues(next, next.LastAt.Time, pgNullTime(next.TurnAt), pgNullTime(next.EndedAt))...), from...)
}

// pgInsertEvent inserts one event of session $1 (eventValues);
// pgSetTodoList writes session $1's list row (todoListValues);
// pgInsertVersion inserts a version of its list (versionValues).
var (
	pgInsertEvent = func() string {
		p := pgParams(1)
		return `INSERT INTO events (session_id, ` + strings.Join(engine.EventColumns, ", ") + `) VALUES ($1, ` +
			pgPlaceholders(&p, engine.EventColumns, map[string]string{"data": "::json"}) + `)`
	}()
	pgSetTodoList = func() string {
		p := pgParams(1)
		return `UPDATE todo_lists SET ` + engine.SetList(engine.TodoListColumns, p.cast(nil), "GREATEST") + ` WHERE session_id = $1`
	}()
	pgInsertVersion = func() string {
		p := pgParams(1)
		return `INSERT INTO todo_versions (session_id, ` + strings.Join(engine.VersionColumns, ", ") + `) VALUES ($1, ` +
			pgPlaceholders(&p, engine.VersionColumns, map[string]string{"todos": "::json", "changes": "::json"}) + `)`
	}()
)

// pgPlaceholders is the next len(cols) placeholders of p, each cast as
// casts says of its column, comma-separated.
func pgPlaceholders(p *pgParams, cols []string, casts map[string]string) string {
	ph := make([]string, len(cols))
	for i, c := range cols {
		ph[i] = p.next() + casts[c]
	}
	return strings.Join(ph, ", ")
}

// pgSetMeta stores what an append changes of session $1 beside the log
// (engine.Meta): the title $2 when it is one and the session is still
// untitled (and untitled still when $5, a stand-in), the listing when $3,
// the goal $4 when it is one.
const pgSetMeta = `UPDATE sessions SET
	title = CASE WHEN $2 <> '' AND untitled THEN $2 ELSE title END,
	untitled = untitled AND ($2 = '' OR $5), listed = listed OR $3, goal = COALESCE($4::text::jsonb, goal) WHERE id = $1`

// pgMarkSeen raises session $1's seen mark to $2; seen only grows.
const pgMarkSeen = `UPDATE todo_lists SET seen = GREATEST(seen, $2) WHERE session_id = $1`

// liveKey selects the result stored under key $2 of session $1 that is
// younger than $3, the retention's cutoff.
const liveKey = `session_id = $1 AND key = $2 AND created_at >= $3`

// pgPruneIdempotent deletes up to $2 keys created before $1, oldest first,
// skipping rows another append is pruning. By ctid: the same delete by
// (session_id, key) IN (…) has a generic plan that joins against a scan of
// the whole table, so every keyed append read every key kept
// (TestPostgresPrunePlan).
const pgPruneIdempotent = `DELETE FROM idempotency_keys WHERE ctid = ANY (ARRAY(
	SELECT ctid FROM idempotency_keys WHERE created_at < $1
	ORDER BY created_at LIMIT $2 FOR UPDATE SKIP LOCKED))`

// queueWrites queues an append's writes but the session's head: the events,
// the todo list's row when it changed from prev, the list's versions and the
// result under its Idempotency-Key.
func queueWrites(batch *pgx.Batch, w *engine.Write) {
	id, req, prev, next, res, versions, at := w.ID, w.Req, w.Prev, w.Next, w.Res, w.Versions, w.At
	if w.Meta.Any() {
		batch.Queue(pgSetMeta, id, w.Meta.Title, w.Meta.List, engine.SQLText(w.Meta.GoalArg()), w.Meta.StandIn)
	}
	events := res.Events
	if len(events) == 1 {
		// One event, the common case (every todo_write): a plain VALUES
		// row spares pgx five array encodings and Postgres the unnest.
		ev := events[0]
		batch.Queue(pgInsertEvent, append([]any{id}, engine.EventValues(ev, int32(ev.Turn), ev.At.Time, pgNullTime(ev.ReceivedAt), string(ev.Data))...)...)
	} else {
		seqs := make([]int64, len(events))
		types := make([]string, len(events))
		turns := make([]int32, len(events))
		ats := make([]time.Time, len(events))
		received := make([]*time.Time, len(events))
		datas := make([]string, len(events))
		for i, ev := range events {
			seqs[i], types[i], turns[i], ats[i], received[i], datas[i] = ev.Seq, ev.Type, int32(ev.Turn), ev.At.Time, pgNullTime(ev.ReceivedAt), string(ev.Data)
		}
		batch.Queue(`INSERT INTO events (session_id, `+strings.Join(engine.EventColumns, ", ")+`)
			SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::integer[], $5::timestamptz[], $6::timestamptz[], $7::json[])`,
			id, seqs, types, turns, ats, received, datas)
	}
	if len(w.KeyRows) > 0 {
		keys := make([]string, len(w.KeyRows))
		seqs := make([]int64, len(w.KeyRows))
		for i, k := range w.KeyRows {
			keys[i], seqs[i] = k.Key, k.Seq
		}
		batch.Queue(`INSERT INTO event_keys (session_id, key, seq) SELECT $1, * FROM unnest($2::text[], $3::bigint[])`, id, keys, seqs)
	}
	var items []byte // the new list, encoded once for its row and its version
	if res.TodosChanged {
		items = projection.AppendItems(nil, res.Todos.Todos, true)
		batch.Queue(pgSetTodoList, append([]any{id}, engine.TodoListValues(next, res, items, next.UpdatedAt.Time)...)...)
	} else if next.Steps != prev.Steps { // a new step_message is a new step
		batch.Queue(`UPDATE todo_lists SET steps = $2, step_message = $3 WHERE session_id = $1`, id, next.Steps, next.StepMessage)
	}
	for _, v := range versions {
		changes := projection.AppendChanges(nil, v.Changes, true)
		batch.Queue(pgInsertVersion, append([]any{id}, engine.VersionValues(v, v.At.Time, string(engine.VersionTodos(v, res, items)), string(changes))...)...)
	}
	if req.IdempotencyKey != "" {
		// Prune expired keys, oldest first, skipping rows another append is
		// pruning so that appends to different sessions never wait on each
		// other. An expired row under this very key is replaced.
		batch.Queue(pgPruneIdempotent, at.Add(-store.IdempotencyRetention), engine.PruneBatch)
		batch.Queue(`INSERT INTO idempotency_keys (session_id, key, request_hash, result, created_at) VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (session_id, key) DO UPDATE
			SET request_hash = excluded.request_hash, result = excluded.result, created_at = excluded.created_at`,
			id, req.IdempotencyKey, req.RequestHash, engine.MarshalResult(res), at.Time)
	}
}

// pgHeld reads the events of the log that hold any of the keys $2, with
// their keys.
const pgHeld = `SELECT k.key, e.seq, e.type, e.turn, e.at, e.received_at, e.data, false
	FROM event_keys k JOIN events e ON e.session_id = k.session_id AND e.seq = k.seq
	WHERE k.session_id = $1 AND k.key = ANY($2)`

// scanHeld reads pgHeld's rows, by key.
func scanHeld(rows pgx.Rows) (map[string]projection.Event, error) {
	byKey := map[string]projection.Event{}
	for rows.Next() {
		var (
			key      string
			ev       projection.Event
			at       time.Time
			received *time.Time
			data     []byte
			more     bool
		)
		if err := rows.Scan(&key, &ev.Seq, &ev.Type, &ev.Turn, &at, &received, &data, &more); err != nil {
			return nil, err
		}
		ev.At, ev.ReceivedAt, ev.Data = projection.NewTime(at), pgTime(received), data
		byKey[key] = ev
	}
	return byKey, rows.Err()
}

// Rename gives the session a final title.
func (p *Store) Rename(ctx context.Context, id, title string) (store.Session, error) {
	var s store.Session
	err := p.scanSession(p.Pool.QueryRow(ctx, `WITH u AS (UPDATE sessions SET title = $2, untitled = false WHERE id = $1)
		SELECT `+engine.SessionColumns+` FROM `+engine.SessionsJoin+` WHERE s.id = $1`, id, title), &s)
	if err != nil {
		return s, pgErr(err)
	}
	s.Title, s.Untitled = title, false // the statement's snapshot is from before its update
	return s, nil
}

// SetNeedsYou records since when the session's agent waits on a person,
// for what, and the log's last seq then.
func (p *Store) SetNeedsYou(ctx context.Context, id string, since projection.Time, need projection.NeedsYou) error {
	why, err := json.Marshal(need)
	if err != nil {
		return err
	}
	tag, err := p.Pool.Exec(ctx, `UPDATE sessions SET needs_you_since = $1, needs_you = $2, needs_you_seq = last_seq WHERE id = $3`,
		since.Time, string(why), id)
	if err == nil && tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return pgErr(err)
}

// SetAgentStatus records what the agent's registry says, unless it holds
// a newer status.
func (p *Store) SetAgentStatus(ctx context.Context, id string, status projection.AgentStatus) (store.Session, error) {
	status.At = projection.NewTime(status.At.Time)
	if _, err := p.Pool.Exec(ctx, `UPDATE sessions SET agent_status = $1, agent_status_at = $2
		WHERE id = $3 AND (agent_status_at IS NULL OR agent_status_at <= $2)`, status.Status, status.At.Time, id); err != nil {
		return store.Session{}, pgErr(err)
	}
	return p.Session(ctx, id)
}

// SetHooked records that an agent's hook was heard for the session.
func (p *Store) SetHooked(ctx context.Context, id string) error {
	tag, err := p.Pool.Exec(ctx, `UPDATE sessions SET hooked = true WHERE id = $1`, id)
	if err == nil && tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return pgErr(err)
}

func (a *pgAppend) MarkSeen(ctx context.Context, id string, version int64) error {
	a.seen = true
	batch := &pgx.Batch{}
	batch.Queue(pgMarkSeen, id, version)
	batch.Queue("COMMIT")
	return a.conn.SendBatch(ctx, batch).Close()
}

// release returns an append's connection to the pool, first rolling back the
// transaction an early return or a failed batch left open: the pool would
// otherwise close the connection rather than reuse it.
func release(conn *pgxpool.Conn) {
	if c := conn.Conn(); !c.IsClosed() && c.PgConn().TxStatus() != 'I' {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, _ = c.Exec(ctx, "ROLLBACK")
		cancel()
	}
	conn.Release()
}

// pgPage is the SQL of a page of the log bounded by count and by bytes: at
// most $3 events, stopping once their data passes $4 bytes, and whether more
// follow. One index range scan reads at most $3 events (and looks one past
// them, for hasMore), keeping running sums of the data's size: first of its
// stored size (pg_column_size less the 4 bytes of a header at most: it reads
// no TOASTed value and, the data being compressed if anything, is never more
// than its text's size), then, over the events that left standing, of its
// text's size. So the database sends the
// page and nothing past it, and opens the large values of no event past the
// page but those the compression of the values before it hid. forward reads
// seq > $2 oldest first, else seq < $2 newest first; surface keeps only the
// event types in $5 (the model surface).
func pgPage(forward, surface bool) string {
	cmp, order := ">", ""
	if !forward {
		cmp, order = "<", " DESC"
	}
	filter := ""
	if surface {
		filter = " AND type = ANY($5)"
	}
	window := ` WINDOW w AS (ORDER BY seq` + order + ` ROWS UNBOUNDED PRECEDING)`
	return `SELECT seq, type, turn, at, received_at, data, more FROM (
			SELECT seq, type, turn, at, received_at, data, more,
				sum(octet_length(data::text)) OVER w - octet_length(data::text) AS before
			FROM (
				SELECT seq, type, turn, at, received_at, data, lead(seq) OVER w IS NOT NULL AS more,
					sum(pg_column_size(data) - 4) OVER w - (pg_column_size(data) - 4) AS stored_before
				FROM events WHERE session_id = $1 AND seq ` + cmp + ` $2` + filter + window + `
				ORDER BY seq` + order + ` LIMIT $3
			) stored WHERE stored_before < $4::bigint` + window + `
		) page WHERE before < $4::bigint ORDER BY seq` + order
}

var (
	pgEventsAfter  = pgPage(true, false)
	pgEventsBefore = pgPage(false, false)
	pgSurfaceAfter = pgPage(true, true)
)

// scanPage reads the rows of a pgPage query, and closes them.
func scanPage(rows pgx.Rows) ([]projection.Event, bool, error) {
	defer rows.Close()
	events := []projection.Event{}
	more := false
	for rows.Next() {
		var (
			ev       projection.Event
			at       time.Time
			received *time.Time
			data     []byte
		)
		if err := rows.Scan(&ev.Seq, &ev.Type, &ev.Turn, &at, &received, &data, &more); err != nil {
			return nil, false, pgErr(err)
		}
		ev.At, ev.ReceivedAt, ev.Data = projection.NewTime(at), pgTime(received), data
		events = append(events, ev)
	}
	return events, more, pgErr(rows.Err())
}

// Events reads forwards from after, a page bounded by limit and MaxPageBytes.
func (p *Store) Events(ctx context.Context, id string, after int64, limit int) ([]projection.Event, bool, error) {
	return pgSessionPage(ctx, p.Pool, pgEventsAfter, id, after, limit, store.MaxPageBytes)
}

// pgSessionPage reads a page of session id's log with one of the pgPage
// queries (id its first argument, rest the others), and answers ErrNotFound
// when there is no such session. The session's existence and the page go
// as one pipeline: one round trip. The log is append-only, so the two need
// no common snapshot.
func pgSessionPage(ctx context.Context, pool *pgxpool.Pool, query, id string, rest ...any) ([]projection.Event, bool, error) {
	var (
		events  []projection.Event
		more    bool
		missing bool
	)
	batch := &pgx.Batch{}
	batch.Queue(pgSessionExists, id).QueryRow(func(row pgx.Row) error {
		var ok bool
		return noRowsIsMissing(row.Scan(&ok), &missing)
	})
	batch.Queue(query, append([]any{id}, rest...)...).Query(func(rows pgx.Rows) (err error) {
		events, more, err = scanPage(rows)
		return err
	})
	if err := pool.SendBatch(ctx, batch).Close(); err != nil {
		return nil, false, pgErr(err)
	}
	if missing {
		return nil, false, store.ErrNotFound
	}
	return events, more, nil
}

// pgSessionExists is the check of a session page's pipeline.
const pgSessionExists = `SELECT true FROM sessions WHERE id = $1`

// noRowsIsMissing reports a row's absence in *missing rather than as an
// error: an error in a pipeline's callback makes pgx forget the prepared
// statements of every query in it, and an unknown session would then cost
// the next reads a fresh prepare each.
func noRowsIsMissing(err error, missing *bool) error {
	if errors.Is(err, pgx.ErrNoRows) {
		*missing = true
		return nil
	}
	return err
}

// History reads the newest events before before, a page bounded by limit
// and MaxPageBytes; the tail page (before 0) carries the snapshot, read with
// the page so the two agree.
func (p *Store) History(ctx context.Context, id string, before int64, limit int) (store.History, error) {
	first := before == 0
	if first {
		// An append moves the session's head and adds its events in one
		// transaction, so no event lies past the head in any snapshot: the
		// page before "the end" needs no head read first.
		before = math.MaxInt64
	}
	conn, err := p.Pool.Acquire(ctx)
	if err != nil {
		return store.History{}, pgErr(err)
	}
	defer release(conn)
	// One round trip: the state and the page read in one repeatable-read
	// snapshot, sent as one pipeline.
	var (
		h       store.History
		sess    store.Session
		st      projection.State
		missing bool
	)
	batch := &pgx.Batch{}
	batch.Queue("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
	// The page's plan is the same for every session and position (a
	// backward range scan of the primary key), but a custom plan is made
	// anew for each read, and making it costs more the longer the log:
	// the generic plan keeps the tail as cheap at 1,000,000 events as at
	// 10 (docs/performance.md).
	batch.Queue("SET LOCAL plan_cache_mode = force_generic_plan")
	batch.Queue(pgState, id, first).QueryRow(func(row pgx.Row) error {
		return noRowsIsMissing(scanState(row, &sess, &st, p.cfg, p.clock.Now()), &missing)
	})
	batch.Queue(pgEventsBefore, id, before, limit, store.MaxPageBytes).Query(func(rows pgx.Rows) error {
		events, more, err := scanPage(rows)
		h.Events, h.HasMore = engine.Reversed(events), more
		return err
	})
	batch.Queue("COMMIT")
	if err := conn.SendBatch(ctx, batch).Close(); err != nil {
		return store.History{}, pgErr(err)
	}
	if missing {
		return store.History{}, store.ErrNotFound
	}
	if first {
		snap := st.Snapshot()
		h.Snapshot = &snap
	}
	return h, nil
}

// Todos reads the todos projection: one point read, whatever the log's length.
func (p *Store) Todos(ctx context.Context, id string) (projection.Todos, error) {
	st, err := p.TodoList(ctx, id)
	return st.Todos(id), err
}

// TodoList reads the todo side of the projection: one point read.
func (p *Store) TodoList(ctx context.Context, id string) (projection.State, error) {
	var (
		st projection.State
		r  pgTodoRow
	)
	if err := p.Pool.QueryRow(ctx, pgTodoList, id).Scan(r.dests(&st)...); err != nil {
		return projection.State{}, pgErr(err)
	}
	return st, r.finish(id, &st, decodeItems)
}

// TodoRead reads the list for todo_read and marks the version it answers
// as seen.
func (p *Store) TodoRead(ctx context.Context, id string) (projection.Todos, error) {
	todos, _, err := p.todoRead(ctx, id, p.TodoList)
	return todos, err
}

// todoRead reads the list with list and marks the version it answers as
// seen: a second statement, and marked true, only when it was not seen yet.
// seen only grows, so a write that lands between the two is not undone.
func (p *Store) todoRead(ctx context.Context, id string, list func(context.Context, string) (projection.State, error)) (todos projection.Todos, marked bool, err error) {
	st, err := list(ctx, id)
	if err != nil || st.Seen >= st.Version {
		return st.Todos(id), false, err
	}
	_, err = p.Pool.Exec(ctx, pgMarkSeen, id, st.Version)
	return st.Todos(id), true, pgErr(err)
}

// TodoHistory pages the list's versions newest first: a backward range
// read of todo_versions' primary key.
func (p *Store) TodoHistory(ctx context.Context, id string, before int64, limit int) ([]projection.Version, bool, error) {
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := p.Pool.Query(ctx, `SELECT version, at, author, todos, changes FROM todo_versions
		WHERE session_id = $1 AND version < $2 ORDER BY version DESC LIMIT $3`, id, before, limit+1)
	if err != nil {
		return nil, false, pgErr(err)
	}
	defer rows.Close()
	page := engine.VersionPage{Limit: limit}
	for rows.Next() && !page.More {
		var (
			at             time.Time
			v              projection.Version
			todos, changes []byte
		)
		if err := rows.Scan(&v.Version, &at, &v.By, &todos, &changes); err != nil {
			return nil, false, pgErr(err)
		}
		v.At = projection.NewTime(at)
		if err := page.Add(v, todos, changes); err != nil {
			return nil, false, err
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, pgErr(err)
	}
	if len(page.Versions) == 0 {
		if _, err := p.Session(ctx, id); err != nil {
			return nil, false, err
		}
	}
	return page.Versions, page.More, nil
}

// Messages reads a page of the model surface (see engine.Messages).
func (p *Store) Messages(ctx context.Context, id string, after int64, limit int) (store.MessagesPage, error) {
	return engine.Messages(ctx, pgSurface{p.Pool, id}, after, limit)
}

// pgSurface reads one session's model surface. The log is append-only, so
// its reads need no common snapshot: what one saw, the next sees too. Each
// page checks that the session exists, in the same round trip.
type pgSurface struct {
	pool *pgxpool.Pool
	id   string
}

func (s pgSurface) Surface(ctx context.Context, after int64, limit, budget int) ([]projection.Event, bool, error) {
	return pgSessionPage(ctx, s.pool, pgSurfaceAfter, s.id, after, limit, budget, projection.SurfaceTypes)
}

func (s pgSurface) CallIDs(ctx context.Context, after int64, n int) ([]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT coalesce(CASE WHEN type = $3 THEN data->>'callId' END, '') FROM events
		WHERE session_id = $1 AND seq > $2 AND type = ANY($4) ORDER BY seq LIMIT $5`,
		s.id, after, projection.TypeToolResult, projection.SurfaceTypes, n)
	if err != nil {
		return nil, pgErr(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return ids, pgErr(err)
}

// pgErr maps driver errors to the store's (pgerr.Map).
func pgErr(err error) error { return pgerr.Map(err) }
