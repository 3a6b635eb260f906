package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store/postgres"
)

// BenchmarkFreshSchema: a test's migrated Postgres store, opened on a fresh
// schema that the store migrates (as every test did before the template)
// and on a copy of the template, one of each in turn so that both see the
// same load; it reports the time of each and their ratio (migrate/template).
func BenchmarkFreshSchema(b *testing.B) {
	open := func(b *testing.B, url string) time.Duration {
		start := time.Now()
		pc, err := postgres.PoolConfig(url, 2)
		if err != nil {
			b.Fatal(err)
		}
		st, err := postgres.Open(context.Background(), pc, projection.Config{})
		if err != nil {
			b.Fatal(err)
		}
		st.Close()
		return time.Since(start)
	}
	migrateTemplate(b)
	var migrated, copied time.Duration
	for b.Loop() {
		start := time.Now()
		url := SchemaURL(b)
		migrated += time.Since(start) + open(b, url)
		start = time.Now()
		url = MigratedSchemaURL(b)
		copied += time.Since(start) + open(b, url)
	}
	b.ReportMetric(float64(migrated.Milliseconds())/float64(b.N), "migrate-ms/op")
	b.ReportMetric(float64(copied.Milliseconds())/float64(b.N), "template-ms/op")
	b.ReportMetric(float64(migrated)/float64(copied), "ratio")
}

// TestTemplateCopyIsMigrated: a store opened on a copy of the template
// holds every migration (goose finds none to run: the schema is whole) and
// serves, and its version table takes further versions (down and up).
func TestTemplateCopyIsMigrated(t *testing.T) {
	st := PlainPostgres(t, projection.Config{})
	ctx := context.Background()
	var versions, last int64
	if err := st.Pool.QueryRow(ctx, `SELECT count(*), max(version_id) FROM goose_db_version WHERE version_id > 0`).Scan(&versions, &last); err != nil {
		t.Fatal(err)
	}
	schema, _, _ := upScript()
	if versions < 18 || last < 18 || schema == "" {
		t.Fatalf("the copy records %d versions, the last %d", versions, last)
	}
	sess := NewSession(t, st)
	if res := MustAppend(t, st, sess.ID, TurnStart(), WriteTodos("one", "pending")); res.Todos == nil || len(res.Todos.Todos) != 1 {
		t.Fatalf("append on the copy: %+v", res)
	}
}
