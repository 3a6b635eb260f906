package fast

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/sizedcache"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/internal/engine"
	"github.com/tack-dev/tack/internal/store/postgres"
)

// The append cache: each Fast store keeps, per session it appended to,
// the state its last append left (the session summary and the projection).
// The next append to that session runs the projection on that state and
// sends its whole transaction in one pipeline, one round trip instead of two
// (a locking read, then the writes). The cache is never trusted: the
// pipeline's first statement takes the session's row lock and checks that
// the log still ends where the cached state ends. When it moved — another
// instance or another request of this one appended — the check fails the
// transaction before anything is written, and the append runs again the
// locking way, which is authoritative. Every field of the state moves only
// with the log but one, the model's seen mark, which a todo_read or a
// rejection that showed the list raises without an event; it only grows, so
// a cached one is at most behind the stored one. That is safe: a seen mark
// behind can only make the projection reject a model's write it would
// otherwise accept (an edit it has not seen), and rejections never come
// from the cache; what an accepted write stores does not depend on it, and
// the write raises the stored mark with GREATEST, never lowers it. So an
// append from the cache stores and answers exactly what the locking way
// would.
//
// Only appends the cached state accepts take the cached way: a batch it
// rejects (a conflict, a stale baseVersion, an invalid event) runs the
// locking way, so no rejection is ever made from a cached state. A batch
// with an Idempotency-Key takes it too, with a second guard: no live result
// is stored under its key (the session's row lock, taken by the first
// guard, orders every write of its keys). When one is, tack_expect_key_free
// fails the transaction (TK002, migration 00009) and the locking way answers
// from the stored result, as it would have at once; the cached state was
// not stale, and is kept.

// appendCacheEntries bounds how many sessions a store keeps a state of, and
// appendCacheBytes what their lists may take in all (an estimate; a list
// larger than appendCacheBytes/64 is not kept). Past either, the least
// recently used session is forgotten first: its next append reads.
const (
	appendCacheEntries = 16384
	appendCacheBytes   = 64 << 20
)

// missQuiet is how long a session whose cached state was found stale takes
// the locking way before a state of it is cached again. Two instances
// appending to one session in turn (a load balancer spreading one agent's
// calls over them) would otherwise miss on every append, and each miss
// costs the failed pipeline, a ROLLBACK, the locking way and, since pgx
// forgets the statements of a failed pipeline, their prepares again: 1.1 ms
// an append against 0.3 for the locking way alone
// (TestContendedSessionTakesTheLockingWay).
const missQuiet = time.Second

// errStale is the SQLSTATE tack_expect raises (migration 00007), errKeyUsed
// the one tack_expect_key_free raises (00009).
const (
	errStale   = "TK001"
	errKeyUsed = "TK002"
)

type cachedState struct {
	sess store.Session
	st   projection.State
	// items is false when the state was read without the list (a batch
	// that could not change it): it then serves only such batches.
	items bool
}

type appendCache struct {
	states *sizedcache.Cache[string, cachedState]
	// now is the clock missQuiet is measured by: time.Now, or a test's
	// stub that it moves by hand.
	now func() time.Time

	// mu orders put's check and keep with miss; it guards missed, which
	// holds when each session lately found stale was, for missQuiet.
	mu     sync.Mutex
	missed map[string]time.Time
	// misses counts every miss.
	misses atomic.Int64
}

func newAppendCache() *appendCache {
	return &appendCache{
		states: sizedcache.New[string, cachedState](appendCacheEntries, appendCacheBytes),
		now:    time.Now,
		missed: make(map[string]time.Time),
	}
}

func (c *appendCache) get(id string) (cachedState, bool) { return c.states.Get(id) }

// put keeps the state an append committed, unless the cache already holds a
// later one (appends of one session may finish out of order).
func (c *appendCache) put(id string, e cachedState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if at, ok := c.missed[id]; ok {
		if c.now().Sub(at) < missQuiet {
			return
		}
		delete(c.missed, id)
	}
	if old, ok := c.states.Get(id); ok && old.st.LastSeq > e.st.LastSeq {
		return
	}
	c.states.Add(id, e, 256+projection.ItemsSize(e.st.Items))
}

func (c *appendCache) drop(id string) { c.states.Remove(id) }

// miss drops a session's state found stale and keeps none of it for
// missQuiet.
func (c *appendCache) miss(id string) {
	c.misses.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.states.Remove(id)
	if len(c.missed) >= appendCacheEntries {
		clear(c.missed) // at worst, each of them misses once more
	}
	c.missed[id] = c.now()
}

// cachedAppend is an append prepared from the cached state: what it
// writes and answers, and the head it expects the stored log to end at.
type cachedAppend struct {
	id       string
	req      store.AppendRequest
	e        cachedState
	next     projection.State
	versions []projection.Version
	res      store.AppendResult
	at       projection.Time
}

// prepareCached runs an append's projection on the cached state. It is nil
// when the append cannot take the cached way: no usable entry, or a batch
// the cached state rejects or that writes nothing.
func (f *Store) prepareCached(id string, req store.AppendRequest) *cachedAppend {
	e, ok := f.cache.get(id)
	// A keyed batch is checked against the keys the log holds, which only
	// the locking way reads.
	if !ok || (!e.items && engine.NeedsItems(req.Events)) || len(engine.BatchKeys(req.Events)) > 0 {
		return nil
	}
	cfg := engine.SessionConfig(f.Config(), e.sess)
	at := f.Clock().Now()
	ap, err := engine.Apply(e.st, req, cfg, at)
	// A batch that titles or lists its session takes the locking way,
	// which reads the session's title and listing as they stand.
	if err != nil || len(ap.Events) == 0 || engine.MetaOf(e.sess, ap.Events).Any() {
		return nil
	}
	return &cachedAppend{id: id, req: req, e: e, next: ap.Next, versions: ap.Versions,
		res: engine.ResultOf(id, e.sess, ap, cfg, f.Clock().Now()), at: at}
}

// queue queues the append's statements, the guard first: the head moves
// only from where the cached state ends, under the title it holds
// (pgSetHeadFrom); the UPDATE waits for the row lock and re-checks
// last_seq, the title and the agent's status on the row as committed, and
// tack_expect fails the transaction when any moved: a rename or a status
// moves no head, and the cached title, or the state the cached status
// makes, would otherwise be answered after it. A keyed append's key guard
// follows.
func (a *cachedAppend) queue(batch *pgx.Batch) {
	if a.oneStatement() {
		a.queueOne(batch)
		return
	}
	batch.Queue(postgres.SetHeadFrom, postgres.HeadArgs(a.id, a.next, a.e.st.LastSeq, a.e.sess.Title, a.agentAt())...)
	if a.req.IdempotencyKey != "" {
		batch.Queue(`SELECT tack_expect_key_free(NOT EXISTS (SELECT FROM idempotency_keys WHERE `+postgres.LiveKey+`))`,
			a.id, a.req.IdempotencyKey, a.at.Add(-store.IdempotencyRetention))
	}
	postgres.QueueWrites(batch, &engine.Write{ID: a.id, Req: a.req, Prev: a.e.st, Next: a.next, Res: a.res, Versions: a.versions, At: a.at})
}

// pgAppendOne is the common cached append, one event that changes the list
// (every todo_write), as one statement: pgSetHeadFrom's guarded UPDATE of
// the head (s), and the writes queueWrites would send after it as
// statements of their own, each reading s, so that each runs after the
// guard took the session's row lock and writes nothing when it missed (the
// main query then fails the transaction through tack_expect). The list's
// bytes are sent once, as text, for its row (jsonb) and its version (json,
// verbatim). Postgres runs one statement where it ran four, and pgx encodes
// one where it encoded four. Its arguments (queueOne) are pgHeadArgs'
// with the guard's, then eventValues, todoListValues and versionValues
// but the version's todos, which are the list's.
var pgAppendOne = func() string {
	var p postgres.Params
	s := postgres.SetHeadSQL(&p) + postgres.HeadGuard(&p)
	// A SELECT's values have no column to take their type from: each is cast.
	e := postgres.Placeholders(&p, engine.EventColumns, map[string]string{"seq": "::bigint", "type": "::text", "turn": "::integer",
		"at": "::timestamptz", "received_at": "::timestamptz", "data": "::json"})
	var items string
	t := engine.SetList(engine.TodoListColumns, func(col string) string {
		if col != "items" {
			return p.Next()
		}
		items = p.Next()
		return items + "::text::jsonb"
	}, "GREATEST")
	v := make([]string, len(engine.VersionColumns))
	casts := map[string]string{"version": "::bigint", "at": "::timestamptz", "author": "::text", "changes": "::json"}
	for i, c := range engine.VersionColumns {
		if c == "todos" {
			v[i] = items + "::text::json"
			continue
		}
		v[i] = p.Next() + casts[c]
	}
	return `WITH s AS (` + s + ` RETURNING 1),
	e AS (INSERT INTO events (session_id, ` + strings.Join(engine.EventColumns, ", ") + `) SELECT $1, ` + e + ` FROM s),
	t AS (UPDATE todo_lists SET ` + t + ` FROM s WHERE session_id = $1),
	v AS (INSERT INTO todo_versions (session_id, ` + strings.Join(engine.VersionColumns, ", ") + `) SELECT $1, ` + strings.Join(v, ", ") + ` FROM s)
	SELECT tack_expect(count(*) = 1) FROM s`
}()

// oneStatement reports whether the append is pgAppendOne's: one event,
// unkeyed, that writes the list and its one version, the list itself. (No
// cached append stores event keys: prepareCached leaves every batch with
// keys to the locking way.)
func (a *cachedAppend) oneStatement() bool {
	return a.req.IdempotencyKey == "" && len(a.res.Events) == 1 &&
		a.res.TodosChanged && len(a.versions) == 1 && engine.SameItems(a.versions[0].Todos, a.res.Todos.Todos)
}

// queueOne queues pgAppendOne with what queueWrites would write. The
// documents go as []byte, which pgx copies as they are, sparing a copy to
// a string each (never nil: each is at least "{}" or "[]").
func (a *cachedAppend) queueOne(batch *pgx.Batch) {
	ev, next, v := a.res.Events[0], a.next, a.versions[0]
	items := projection.AppendItems(nil, a.res.Todos.Todos, true)
	args := make([]any, 0, 40)
	args = append(args, postgres.HeadArgs(a.id, next, a.e.st.LastSeq, a.e.sess.Title, a.agentAt())...)
	args = append(args, engine.EventValues(ev, int32(ev.Turn), ev.At.Time, postgres.NullTime(ev.ReceivedAt), []byte(ev.Data))...)
	args = append(args, engine.TodoListValues(next, a.res, items, next.UpdatedAt.Time)...)
	vals := engine.VersionValues(v, v.At.Time, nil, projection.AppendChanges(nil, v.Changes, true))
	for i, c := range engine.VersionColumns {
		if c != "todos" { // the todos are the list's items, sent once
			args = append(args, vals[i])
		}
	}
	batch.Queue(pgAppendOne, args...)
}

// agentAt is the time of the agent's status the cached state holds, which
// the guard expects the row to hold still (NULL for none).
func (a *cachedAppend) agentAt() *time.Time {
	if a.e.sess.Row.Agent == nil {
		return nil
	}
	return &a.e.sess.Row.Agent.At.Time
}

// committed notes in the cache the state a committed append left.
func (f *Store) committed(a *cachedAppend) {
	if a.oneStatement() {
		f.oneStatements.Add(1)
	}
	f.cache.put(a.id, cachedState{sess: a.res.Session, st: a.next, items: a.e.items})
}

// appendCached runs a prepared append alone, in one round trip. done is
// false when the stored state moved or a result is stored under its key:
// the caller then runs it the locking way on the same connection, now idle.
func (f *Store) appendCached(ctx context.Context, conn *pgx.Conn, a *cachedAppend) (res store.AppendResult, done bool, err error) {
	batch := &pgx.Batch{}
	batch.Queue("BEGIN ISOLATION LEVEL READ COMMITTED")
	a.queue(batch)
	batch.Queue("COMMIT")
	err = conn.SendBatch(ctx, batch).Close()
	if err == nil {
		f.committed(a)
		return a.res, true, nil
	}
	switch guardCode(err) {
	case errStale:
		f.cache.miss(a.id)
	case errKeyUsed:
	default:
		f.cache.drop(a.id)
		return store.AppendResult{}, true, err
	}
	if _, rerr := conn.Exec(ctx, "ROLLBACK"); rerr != nil {
		return store.AppendResult{}, true, rerr
	}
	return store.AppendResult{}, false, nil
}

// guardCode is the SQLSTATE of err when a guard raised it, else "".
func guardCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == errStale || pe.Code == errKeyUsed) {
		return pe.Code
	}
	return ""
}
