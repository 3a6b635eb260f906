package postgres

import (
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tack-dev/tack/internal/store/postgres/internal/warm"
)

// DefaultWarmConns is how many connections the server opens and warms
// before it serves (-min-conns): as many as the concurrent first reads of
// a restart behind a load balancer, well under Postgres's 100.
const DefaultWarmConns = 8

// WarmPool makes pc's pool open min(n, MaxConns) connections before
// Open returns, and keep them open (MinConns), and warms every
// connection the pool opens, these and any later ones, once (AfterConnect,
// after pc's own hook, if any): a fresh backend's first large page costs it
// several times what later ones do (internal/warm says why).
func WarmPool(pc *pgxpool.Config, n int32) { warm.Pool(pc, n, warmStatements()) }

// warmStatements are the reads of the log and of a session's state, whose
// preparation (a round trip, and parse analysis in the backend) WarmPool
// pays when a connection opens rather than on its first read.
func warmStatements() []string {
	return []string{pgSessionExists, pgEventsAfter, pgEventsBefore, pgSurfaceAfter, pgState, pgTodoList, pgTodoLists}
}
