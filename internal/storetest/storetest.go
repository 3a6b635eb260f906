// Package storetest gives tests a real, empty store: a fresh Postgres schema
// per test from TEST_DATABASE_URL, or a fresh SQLite file in the test's
// temporary directory. Without Postgres a Postgres test is skipped, except
// under CI=true, where a missing database is a failure.
package storetest

import (
	"context"
	"crypto/rand"
	"fmt"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/store/sqlite"
	// The agents, registered as in every binary that serves a store: the
	// shapes of their list tools (projection.Dialects), whose calls a store
	// checks and derives list writes from, are declared in their files.
	_ "github.com/tack-dev/tack/internal/transcript"
)

// DefaultURL is the database tests use when TEST_DATABASE_URL is unset: the
// `test` database of this machine kind's local Postgres.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// URL is the base database URL for tests, checked to answer.
func URL(t testing.TB) string {
	t.Helper()
	url := os.Getenv("TEST_DATABASE_URL")
	if url == "" {
		url = DefaultURL
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Postgres at %s is required under CI: %v", url, err)
		}
		t.Skipf("no Postgres at %s (set TEST_DATABASE_URL): %v", url, err)
	}
	conn.Close(ctx)
	return url
}

// PoolConfig creates a fresh, empty schema for the test and returns a pool
// configuration whose connections use it. The schema is dropped after the test.
func PoolConfig(t testing.TB) *pgxpool.Config {
	t.Helper()
	pc, err := postgres.PoolConfig(SchemaURL(t), 16)
	if err != nil {
		t.Fatal(err)
	}
	return pc
}

// SchemaURL creates a fresh, empty schema for the test and returns a database
// URL whose connections use it. The schema is dropped after the test.
func SchemaURL(t testing.TB) string {
	t.Helper()
	return schemaURL(t, "")
}

// schemaURL creates a fresh schema for the test, with the SQL then (run
// with the schema as its search path, in the transaction that creates it)
// when set, and returns a database URL whose connections use it. The
// schema is dropped after the test.
func schemaURL(t testing.TB, then string) string {
	t.Helper()
	url := URL(t)
	schema := "t_" + strings.ToLower(rand.Text()[:12])
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	create := "CREATE SCHEMA " + schema
	if then != "" {
		// One script in the simple protocol: one round trip, one transaction.
		create = "BEGIN;\n" + create + ";\nSET LOCAL search_path = " + schema + ";\n" + then + "COMMIT;"
	}
	if _, err := conn.Exec(ctx, create); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), url)
		if err != nil {
			return
		}
		defer c.Close(context.Background())
		_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
	})
	return withSearchPath(t, url, schema)
}

// withSearchPath is url with connections using schema.
func withSearchPath(t testing.TB, url, schema string) string {
	// pgx passes unknown URL parameters on as run-time parameters.
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// Postgres opens the Postgres store as the server runs it by default, the
// fast path on the plain store (fast.Store), migrated, on a fresh schema.
func Postgres(t testing.TB, cfg projection.Config) *fast.Store {
	t.Helper()
	f := fast.New(PlainPostgres(t, cfg))
	t.Cleanup(f.Close)
	return f
}

// PlainPostgres opens the plain Postgres store, as -pg-fast=false runs it,
// on a fresh schema copied from the migrated template (MigratedSchemaURL).
func PlainPostgres(t testing.TB, cfg projection.Config) *postgres.Store {
	t.Helper()
	pc, err := postgres.PoolConfig(MigratedSchemaURL(t), 16)
	if err != nil {
		t.Fatal(err)
	}
	st, err := postgres.Open(context.Background(), pc, cfg)
	if err != nil {
		t.Fatal(fmt.Errorf("open store: %w", err))
	}
	t.Cleanup(st.Close)
	return st
}

// SQLite opens a migrated SQLite store in a file of the test's temporary directory.
func SQLite(t testing.TB, cfg projection.Config) *sqlite.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tack.db")
	st, err := sqlite.Open(context.Background(), path, cfg)
	if err != nil {
		t.Fatal(fmt.Errorf("open store: %w", err))
	}
	sqlitePaths.Store(st, path)
	t.Cleanup(func() {
		st.Close()
		sqlitePaths.Delete(st)
	})
	return st
}

// Factory opens a fresh, empty store of one kind for a test.
type Factory struct {
	Name string
	Open func(t testing.TB, cfg projection.Config) store.Store
}

// Factories lists every kind of store: the tests of packages above the
// store that must hold for all of them run once per entry. The backends'
// own tests each run the conformance suite (Run) on their own entries.
var Factories = []Factory{
	{Name: "postgres", Open: func(t testing.TB, cfg projection.Config) store.Store { return PlainPostgres(t, cfg) }},
	{Name: "postgres-fast", Open: func(t testing.TB, cfg projection.Config) store.Store { return Postgres(t, cfg) }},
	{Name: "sqlite", Open: func(t testing.TB, cfg projection.Config) store.Store { return SQLite(t, cfg) }},
}
