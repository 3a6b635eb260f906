package postgres

// Migrations: this package owns the Postgres schema's history, the goose
// files in the top-level migrations/postgres (migrations.Postgres; they
// live there because go:embed reaches no parent folder, and the layout
// keeps migrations at the top). Every migration added from now on takes
// the same number in migrations/postgres and migrations/sqlite, and both
// land in one change; the numbers the two already hold differ and stay,
// since users' databases record them (see docs/stores.md, "Adding a
// migration").

import (
	"context"
	"fmt"
	"hash/fnv"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/tack-dev/tack/migrations"
)

// migrate brings the schema up to date with the Postgres migrations.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	// goose's lock is one advisory lock per database; instances migrating the
	// same schema must take turns, but those of other schemas (tests run
	// each in its own) need not wait on them, so the lock id names the schema.
	var schema string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return pgErr(err)
	}
	h := fnv.New64a()
	h.Write([]byte("tack:" + schema))
	locker, err := lock.NewPostgresSessionLocker(
		lock.WithLockID(int64(h.Sum64()>>1)),
		lock.WithLockTimeout(1, 120), // poll each second, up to two minutes
	)
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.Postgres, goose.WithSessionLocker(locker))
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
