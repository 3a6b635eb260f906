package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/migrations"
)

// One migrated template per test process, instead of migrating every
// test's schema with goose (a version-table round trip or more for each of
// the migrations, 0.4 s a schema or more on a loaded machine; see
// BenchmarkFreshSchema). The template is a schema named by a hash of the
// Postgres migrations, migrated once by the store itself (postgres.Open,
// under goose's lock, so test processes starting together take turns) and
// kept for later runs; a test's schema is a copy of it: the migrations' Up
// SQL run as one script, and goose's version table copied, so that the
// store's own migration on open finds nothing to do. Postgres copies no
// schema by itself, and CREATE DATABASE ... TEMPLATE needs the template
// unused by any other connection, which test processes running together
// cannot promise.

var template struct {
	once   sync.Once
	schema string // the template's
	script string // the migrations' Up SQL
	err    error
}

// upScript is the Up SQL of every Postgres migration, in order: each
// file's text between goose's Up and Down markers (its StatementBegin and
// End markers are comments to Postgres).
func upScript() (string, string, error) {
	names, err := fs.Glob(migrations.Postgres, "*.sql")
	if err != nil {
		return "", "", err
	}
	sort.Strings(names)
	h := sha256.New()
	var b strings.Builder
	for _, name := range names {
		raw, err := fs.ReadFile(migrations.Postgres, name)
		if err != nil {
			return "", "", err
		}
		h.Write([]byte(name))
		h.Write(raw)
		text := string(raw)
		up := strings.Index(text, "-- +goose Up")
		if up < 0 {
			return "", "", fmt.Errorf("%s: no goose Up", name)
		}
		text = text[up:]
		if down := strings.Index(text, "-- +goose Down"); down >= 0 {
			text = text[:down]
		}
		if strings.Contains(text, "NO TRANSACTION") {
			return "", "", fmt.Errorf("%s: a migration outside a transaction cannot be part of the template's script", name)
		}
		b.WriteString(text)
		b.WriteString(";\n")
	}
	return "tmpl_" + hex.EncodeToString(h.Sum(nil))[:16], b.String(), nil
}

// migrateTemplate makes the template schema, when missing, and migrates it.
func migrateTemplate(t testing.TB) {
	template.once.Do(func() {
		template.schema, template.script, template.err = upScript()
		if template.err != nil {
			return
		}
		url := URL(t)
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			template.err = err
			return
		}
		_, err = conn.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+template.schema)
		conn.Close(ctx)
		var pe *pgconn.PgError
		if err != nil && !(errors.As(err, &pe) && (pe.Code == "23505" || pe.Code == "42P06")) {
			template.err = err // not another process making it at the same moment
			return
		}
		pc, err := postgres.PoolConfig(withSearchPath(t, url, template.schema), 2)
		if err != nil {
			template.err = err
			return
		}
		st, err := postgres.Open(ctx, pc, projection.Config{})
		if err != nil {
			template.err = fmt.Errorf("migrate the template: %w", err)
			return
		}
		st.Close()
	})
	if template.err != nil {
		t.Fatal(template.err)
	}
}

// MigratedSchemaURL is SchemaURL's fresh schema holding the migrated
// schema already, copied from the template: a store opened on it migrates
// nothing.
func MigratedSchemaURL(t testing.TB) string {
	t.Helper()
	migrateTemplate(t)
	tmpl := pgx.Identifier{template.schema}.Sanitize()
	return schemaURL(t, template.script+
		"CREATE TABLE goose_db_version (LIKE "+tmpl+".goose_db_version INCLUDING ALL);\n"+
		"INSERT INTO goose_db_version SELECT * FROM "+tmpl+".goose_db_version;\n"+
		"SELECT setval(pg_get_serial_sequence('goose_db_version', 'id'), (SELECT max(id) FROM goose_db_version));\n")
}
