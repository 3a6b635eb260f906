package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/internal/engine"
)

// The seam of the fast layer (store/postgres/fast): what it uses of this
// store beyond the Store contract, and nothing else. The fast layer sends
// the very statements the plain store sends, in fewer round trips; these
// are those statements and the steps around them.

// Config is the server's policy the store applies.
func (p *Store) Config() projection.Config { return p.cfg }

// SetClock makes the store read the time from c: a test's stub. It must
// be called before the store is used.
func (p *Store) SetClock(c store.Clock) { p.clock = c }

// Clock is the clock the store reads the time from.
func (p *Store) Clock() store.Clock { return p.clock }

// Instance names this store's connections to tack_lease_guard, ""
// when the store holds no read lease (lease.go); LeaseChannel is where
// writers ask holders to let go.
func (p *Store) Instance() string     { return p.instance }
func (p *Store) LeaseChannel() string { return p.leaseChannel }

// LeaseWaits counts the tries of appends refused by another instance's
// lease.
func (p *Store) LeaseWaits() int64 { return p.leaseWaits.Load() }

// WhileLeased runs append until tack_lease_guard lets it through, asking
// the holder of the session's lease to let go in between.
func (p *Store) WhileLeased(ctx context.Context, id string, append func() (store.AppendResult, error)) (store.AppendResult, error) {
	return p.whileLeased(ctx, id, append)
}

// Locked is what an append the locking way read and wrote besides its
// result: whether it read the list (Items), committed Next (Wrote), or
// raised the seen mark (Seen).
type Locked struct {
	Items, Wrote, Seen bool
	Next               projection.State
}

// AppendLocked runs an append on conn the locking way, as Append does.
func (p *Store) AppendLocked(ctx context.Context, conn *pgx.Conn, id string, req store.AppendRequest) (store.AppendResult, Locked, error) {
	res, tx, err := p.appendLocked(ctx, conn, id, req)
	return res, Locked{Items: tx.items, Wrote: tx.wrote, Seen: tx.seen, Next: tx.next}, err
}

// ReadTodos reads the list with list and marks the version it answers as
// seen, as TodoRead does; marked is true when it raised the mark.
func (p *Store) ReadTodos(ctx context.Context, id string, list func(context.Context, string) (projection.State, error)) (todos projection.Todos, marked bool, err error) {
	return p.todoRead(ctx, id, list)
}

// Release returns an append's connection to the pool, first rolling back
// the transaction an early return or a failed batch left open.
func Release(conn *pgxpool.Conn) { release(conn) }

// Err maps driver errors to the store's (store.ErrNotFound,
// store.ErrUnavailable).
func Err(err error) error { return pgErr(err) }

// QueueWrites queues an append's writes but the session's head.
func QueueWrites(batch *pgx.Batch, w *engine.Write) { queueWrites(batch, w) }

// SetHeadFrom moves the session's head only from where the log ended,
// under the title and agent's status the append's state holds; its
// arguments are HeadArgs with those three.
var SetHeadFrom = pgSetHeadFrom

// HeadArgs are the arguments of the head's statements (SetHeadSQL), and
// of SetHeadFrom with from.
func HeadArgs(id string, next projection.State, from ...any) []any {
	return pgHeadArgs(id, next, from...)
}

// LiveKey selects the result stored under key $2 of session $1 younger
// than $3.
const LiveKey = liveKey

// Params numbers a statement's parameters as its SQL is put together.
type Params = pgParams

// Next is the placeholder of the next parameter.
func (p *Params) Next() string { return p.next() }

// SetHeadSQL and HeadGuard are SetHeadFrom's parts, numbered by p, for a
// statement that does more after the guarded head; Placeholders are the
// next parameters of p, cast by column.
func SetHeadSQL(p *Params) string { return pgSetHeadSQL(p) }
func HeadGuard(p *Params) string  { return pgHeadGuard(p) }
func Placeholders(p *Params, cols []string, casts map[string]string) string {
	return pgPlaceholders(p, cols, casts)
}

// NullTime is a stored time that may be NULL.
func NullTime(t *projection.Time) *time.Time { return pgNullTime(t) }

// TodoListsSQL reads the todo side of each session in $1, its id first.
var TodoListsSQL = pgTodoLists

// ScanTodoList scans a row of TodoListsSQL; decode turns the stored list
// into items.
func ScanTodoList(row pgx.Row, decode func(id string, raw []byte) ([]projection.Item, error)) (string, projection.State, error) {
	var (
		id string
		st projection.State
		t  pgTodoRow
	)
	if err := row.Scan(append([]any{&id}, t.dests(&st)...)...); err != nil {
		return "", st, err
	}
	return id, st, t.finish(id, &st, decode)
}
