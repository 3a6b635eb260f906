package storetest

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/store/sqlite"
)

// The suite's back door: what a test does to a store's database that no
// Store method does (making what it keeps older, counting it), through the
// database itself rather than anything unexported of a backend. A Postgres
// store's pool is its own; a SQLite store's file is opened a second time.

// sqlitePaths holds the file of each SQLite store SQLite opened.
var sqlitePaths sync.Map // *sqlite.Store → string

// backdoor is st's database: pool for Postgres, db for SQLite (closed by
// done).
func backdoor(st store.Store) (pool *pgxpool.Pool, db *sql.DB, done func(), err error) {
	switch s := st.(type) {
	case *fast.Store:
		return s.Pool, nil, func() {}, nil
	case *postgres.Store:
		return s.Pool, nil, func() {}, nil
	case *sqlite.Store:
		path, ok := sqlitePaths.Load(s)
		if !ok {
			return nil, nil, nil, fmt.Errorf("a SQLite store storetest did not open")
		}
		db, err := sql.Open("sqlite", path.(string)+"?_pragma=busy_timeout(5000)")
		if err != nil {
			return nil, nil, nil, err
		}
		return nil, db, func() { db.Close() }, nil
	}
	return nil, nil, nil, fmt.Errorf("unknown store %T", st)
}

// age runs pgSQL on a Postgres store's database, or sqliteSQL on a SQLite
// one's, the age d as each takes it (seconds, or milliseconds).
func age(ctx context.Context, st store.Store, d time.Duration, pgSQL, sqliteSQL []string) error {
	pool, db, done, err := backdoor(st)
	if err != nil {
		return err
	}
	defer done()
	if pool != nil {
		for _, q := range pgSQL {
			if _, err := pool.Exec(ctx, q, d.Seconds()); err != nil {
				return err
			}
		}
		return nil
	}
	for _, q := range sqliteSQL {
		if _, err := db.ExecContext(ctx, q, d.Milliseconds()); err != nil {
			return err
		}
	}
	return nil
}

// count scans the one row of query, the same in both dialects, into dest.
func count(ctx context.Context, st store.Store, query string, dest ...any) error {
	pool, db, done, err := backdoor(st)
	if err != nil {
		return err
	}
	defer done()
	if pool != nil {
		return pool.QueryRow(ctx, query).Scan(dest...)
	}
	return db.QueryRowContext(ctx, query).Scan(dest...)
}

// AgeIdempotencyKeys makes every stored Idempotency-Key of st d older, as if
// that much time had passed since the appends that made them.
func AgeIdempotencyKeys(ctx context.Context, st store.Store, d time.Duration) error {
	return age(ctx, st, d,
		[]string{`UPDATE idempotency_keys SET created_at = created_at - make_interval(secs => $1)`},
		[]string{`UPDATE idempotency_keys SET created_at = created_at - ?`})
}

// IdempotencyKeyCount is how many Idempotency-Keys st keeps, expired or not.
func IdempotencyKeyCount(ctx context.Context, st store.Store) (n int, err error) {
	err = count(ctx, st, `SELECT count(*) FROM idempotency_keys`, &n)
	return n, err
}

// AgeNotes makes every session note and remembered tool call of st d
// older, as if that much time had passed since they were written.
func AgeNotes(ctx context.Context, st store.Store, d time.Duration) error {
	var pg, lite []string
	for _, table := range []string{"session_notes", "hook_calls"} {
		pg = append(pg, `UPDATE `+table+` SET expires_at = expires_at - make_interval(secs => $1)`)
		lite = append(lite, `UPDATE `+table+` SET expires_at = expires_at - ?`)
	}
	return age(ctx, st, d, pg, lite)
}

// NoteCount is how many session notes and remembered tool calls st keeps,
// expired or not.
func NoteCount(ctx context.Context, st store.Store) (notes, calls int, err error) {
	err = count(ctx, st, `SELECT (SELECT count(*) FROM session_notes), (SELECT count(*) FROM hook_calls)`, &notes, &calls)
	return notes, calls, err
}
