package bench

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// database is the fresh schema a run works in.
type database struct {
	url        string
	schema     string
	syncCommit string // synchronous_commit for the measured sessions, if set
	conn       *pgx.Conn
}

func newDatabase(ctx context.Context, databaseURL, syncCommit string) (*database, error) {
	conn, err := pgx.Connect(ctx, databaseURL)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	db := &database{url: databaseURL, schema: "tackbench_" + strings.ToLower(rand.Text()[:12]), syncCommit: syncCommit, conn: conn}
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+db.schema); err != nil {
		conn.Close(ctx)
		return nil, err
	}
	return db, nil
}

// Application names tell the backends of each phase apart, so that their CPU
// time can be read from /proc.
const (
	serverApp  = "tackbench-server"
	pgbenchApp = "tackbench-pgbench"
)

// pgbenchApp is the application name of this run's pgbench, its schema's
// name beside pgbenchApp: two runs at once on one Postgres (another
// checkout's, say) would otherwise each count the other's backends.
func (db *database) pgbenchApp() string {
	return pgbenchApp + "-" + strings.TrimPrefix(db.schema, "tackbench_")
}

// schemaURL is the server's database URL: the run's schema as search_path,
// which pgx passes on as a run-time parameter, and serverApp as its name.
func (db *database) schemaURL() string {
	u, err := url.Parse(db.url)
	if err != nil {
		return db.url
	}
	q := u.Query()
	q.Set("search_path", db.schema)
	q.Set("application_name", serverApp)
	if db.syncCommit != "" {
		q.Set("synchronous_commit", db.syncCommit)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// pgOptions are the run-time parameters of the measured sessions, for libpq.
func (db *database) pgOptions() string {
	opts := "-c search_path=" + db.schema
	if db.syncCommit != "" {
		opts += " -c synchronous_commit=" + db.syncCommit
	}
	return opts
}

// backends are the pids of the Postgres backends serving an application.
func (db *database) backends(ctx context.Context, app string) group {
	g := group{name: "postgres"}
	rows, err := db.conn.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", app)
	if err != nil {
		return g
	}
	g.pids, _ = pgx.CollectRows(rows, pgx.RowTo[int])
	return g
}

// tlsOf says whether the backends' connections use TLS, from pg_stat_ssl:
// "off", "on (TLSv1.3 …)", or "mixed" when some do and some do not. Tack's
// pool and pgbench each follow their URL's sslmode, libpq's default
// (prefer) when it names none: the runs' printout says what each used.
func (db *database) tlsOf(ctx context.Context, g group) string {
	var on, off int
	var version string
	rows, err := db.conn.Query(ctx, `SELECT ssl, coalesce(version || ' ' || cipher, '') FROM pg_stat_ssl WHERE pid = ANY($1)`, g.pids)
	if err != nil {
		return "?"
	}
	for rows.Next() {
		var ssl bool
		var v string
		if rows.Scan(&ssl, &v) != nil {
			return "?"
		}
		if ssl {
			on, version = on+1, v
		} else {
			off++
		}
	}
	if rows.Err() != nil {
		return "?"
	}
	switch {
	case on > 0 && off > 0:
		return "mixed"
	case on > 0:
		return "on (" + version + ")"
	case off > 0:
		return "off"
	}
	return "?"
}

// serverBackends are the pids of the Postgres backends of every connection
// the Tack server child holds: its pool, and the live hub's LISTEN and NOTIFY
// connections, whose application names are the hub's own. They are found by
// the client ports of the child's TCP sockets, so that no other process on
// the machine that uses the same application names is counted.
func (db *database) serverBackends(ctx context.Context, serverPID int) group {
	g := group{name: "postgres"}
	ports := clientPorts(serverPID)
	if len(ports) == 0 {
		return g
	}
	rows, err := db.conn.Query(ctx, `SELECT pid FROM pg_stat_activity
		WHERE client_port = ANY($1) AND client_addr IS NOT NULL AND client_addr = inet_server_addr()`, ports)
	if err != nil {
		return g
	}
	g.pids, _ = pgx.CollectRows(rows, pgx.RowTo[int])
	return g
}

// clientPorts are the local ports of pid's TCP sockets, read from /proc: the
// socket inodes among its file descriptors, looked up in its network
// namespace's TCP tables.
func clientPorts(pid int) []int32 {
	inodes := map[string]bool{}
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	var ports []int32
	for _, table := range []string{"tcp", "tcp6"} {
		raw, _ := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, table))
		for _, line := range strings.Split(string(raw), "\n")[1:] {
			f := strings.Fields(line)
			if len(f) < 10 || !inodes[f[9]] {
				continue
			}
			_, hexPort, _ := strings.Cut(f[1], ":")
			if port, err := strconv.ParseInt(hexPort, 16, 32); err == nil {
				ports = append(ports, int32(port))
			}
		}
	}
	return ports
}

// settings are the server settings that bound commit throughput.
func (db *database) settings(ctx context.Context) string {
	var parts []string
	if db.syncCommit != "" {
		parts = append(parts, "(this run: synchronous_commit="+db.syncCommit+")")
	}
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

// setting is one server setting, "?" when it cannot be read.
func (db *database) setting(ctx context.Context, name string) string {
	var v string
	if err := db.conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
		return "?"
	}
	return v
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
