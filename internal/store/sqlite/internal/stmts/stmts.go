// Package stmts runs a SQLite store's statements prepared once per
// connection instead of parsed on every call.
package stmts

import (
	"context"
	"database/sql"
	"sync"
)

// SQLite parses and plans a statement each time it is run unprepared: on a
// hook's path (a few point reads and one small append) that was the largest
// share of the server's CPU. The store's statements are a fixed set of
// texts, so each pool keeps every statement it ran, prepared on each of its
// connections on first use, and runs it again from there.

// maxStmts bounds the statements a pool keeps; past it, a text not kept
// yet runs unprepared, as before. The store's fixed texts are far fewer.
const maxStmts = 192

// maxStmtBytes bounds the text of a statement kept: a long one is a
// many-row insert or a long IN list, built for one batch's size.
const maxStmtBytes = 4 << 10

// Pool is a *sql.DB that runs statements prepared once (see maxStmts).
type Pool struct {
	*sql.DB
	mu     sync.RWMutex
	stmts  map[string]*sql.Stmt
	wanted map[string]bool // texts run in a transaction, to prepare after it
}

func NewPool(db *sql.DB) *Pool {
	return &Pool{DB: db, stmts: map[string]*sql.Stmt{}, wanted: map[string]bool{}}
}

// kept is the statement kept for query, nil when there is none.
func (p *Pool) kept(query string) *sql.Stmt {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.stmts[query]
}

// stmt is the statement kept for query, prepared now when there is room;
// nil when it cannot be kept (the caller runs it unprepared, which reports
// a statement that does not prepare as before).
func (p *Pool) stmt(ctx context.Context, query string) *sql.Stmt {
	if st := p.kept(query); st != nil || len(query) > maxStmtBytes {
		return st
	}
	p.mu.RLock()
	full := len(p.stmts) >= maxStmts
	p.mu.RUnlock()
	if full {
		return nil
	}
	// Prepared outside the lock: preparing waits for a connection, which
	// a transaction that looks up its statements may hold.
	st, err := p.DB.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if had := p.stmts[query]; had != nil {
		st.Close()
		return had
	}
	if len(p.stmts) >= maxStmts {
		st.Close()
		return nil
	}
	p.stmts[query] = st
	return st
}

// want marks query, run unprepared inside a transaction, to be prepared
// once the transaction is over: preparing it on the pool inside the
// transaction would wait for a connection the transaction may hold (the
// writer has one).
func (p *Pool) want(query string) {
	if len(query) > maxStmtBytes {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.wanted) < maxStmts {
		p.wanted[query] = true
	}
}

// PrepareWanted prepares the statements the transactions wanted.
func (p *Pool) PrepareWanted(ctx context.Context) {
	p.mu.RLock()
	n := len(p.wanted)
	p.mu.RUnlock()
	if n == 0 {
		return
	}
	p.mu.Lock()
	wanted := p.wanted
	p.wanted = map[string]bool{}
	p.mu.Unlock()
	for q := range wanted {
		p.stmt(ctx, q)
	}
}

// Close closes the kept statements and the pool.
func (p *Pool) Close() error {
	p.mu.Lock()
	for q, st := range p.stmts {
		st.Close()
		delete(p.stmts, q)
	}
	p.mu.Unlock()
	return p.DB.Close()
}

func (p *Pool) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := p.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return p.DB.ExecContext(ctx, query, args...)
}

func (p *Pool) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return p.DB.QueryContext(ctx, query, args...)
}

func (p *Pool) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := p.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return p.DB.QueryRowContext(ctx, query, args...)
}

// Tx is a transaction of a pool that runs the pool's kept statements,
// prepared on its connection if they were not yet.
type Tx struct {
	*sql.Tx
	p *Pool
}

// stmt is query's kept statement on the transaction's connection, nil
// when the pool keeps none yet (it is wanted then).
func (t *Tx) stmt(ctx context.Context, query string) *sql.Stmt {
	st := t.p.kept(query)
	if st == nil {
		t.p.want(query)
		return nil
	}
	return t.Tx.StmtContext(ctx, st)
}

func (t *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

func (t *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

func (t *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := t.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}

// BatchKept is the most rows of a statement built for its batch (a
// many-row insert, an IN list) that is kept prepared: a hook's few events
// come again and again, an import's batches of every size do not.
const BatchKept = 4

// BatchExec runs a statement built for a batch of rows, kept prepared
// only for a batch of a few.
func (t *Tx) BatchExec(ctx context.Context, rows int, query string, args ...any) (sql.Result, error) {
	if rows > BatchKept {
		return t.Tx.ExecContext(ctx, query, args...)
	}
	return t.ExecContext(ctx, query, args...)
}

// NewTx is tx, a transaction of p's, running p's kept statements.
func NewTx(tx *sql.Tx, p *Pool) *Tx { return &Tx{tx, p} }

// Kept is how many statements p keeps prepared.
func (p *Pool) Kept() int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return len(p.stmts)
}
