package main

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// database is the fresh schema a run works in.
type database struct {
	url    string
	schema string
	conn   *pgx.Conn
}

func newDatabase(ctx context.Context, databaseURL string) (*database, error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	db := &database{url: databaseURL, schema: "tackbench_" + strings.ToLower(rand.Text()[:12]), conn: conn}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+db.schema); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	return db, nil
}

// schemaURL is the database URL with the run's schema as search_path, which
// pgx passes on as a run-time parameter.
func (db *database) schemaURL() string {
	u, err := url.Parse(db.url)
	if err != nil {
		return db.url
	}
	q := u.Query()
	q.Set("search_path", db.schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// settings are the server settings that bound commit throughput.
func (db *database) settings(ctx context.Context) string {
	var parts []string
	for _, name := range []string{"server_version", "synchronous_commit", "fsync", "wal_sync_method", "commit_delay", "shared_buffers", "max_connections"} {
		var v string
		if err := db.conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			v = "?"
		}
		parts = append(parts, name+"="+v)
	}
	return strings.Join(parts, " ")
}

// setupPgbenchSessions makes n sessions pgb_0 … pgb_<n-1> in the state the
// Tack sessions start in: a turn/start at seq 1, turn 1 open, no todos yet.
func (db *database) setupPgbenchSessions(ctx context.Context, n int) error {
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO sessions (id, title, created_at, updated_at, last_seq, turn, turn_open)
		SELECT 'pgb_' || g, 'pgbench', now(), now(), 1, 1, true FROM generate_series(0, $1 - 1) g`, n)
	b.Queue(`INSERT INTO todo_lists (session_id) SELECT 'pgb_' || g FROM generate_series(0, $1 - 1) g`, n)
	b.Queue(`INSERT INTO events (session_id, seq, type, turn, at, data)
		SELECT 'pgb_' || g, 1, 'turn/start', 1, now(), '{}' FROM generate_series(0, $1 - 1) g`, n)
	b.Queue(`ANALYZE`)
	return db.inSchema(ctx, b)
}

func (db *database) inSchema(ctx context.Context, b *pgx.Batch) error {
	tx, err := db.conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SET LOCAL search_path = "+db.schema); err != nil {
		return err
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

func (db *database) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _ = db.conn.Exec(ctx, "DROP SCHEMA "+db.schema+" CASCADE")
	db.conn.Close(ctx)
}
