package sqlite

// Migrations: this package owns the SQLite schema's history, the goose
// files in the top-level migrations/sqlite (migrations.SQLite; they live
// there because go:embed reaches no parent folder, and the layout keeps
// migrations at the top). Every migration added from now on takes the same
// number in migrations/sqlite and migrations/postgres, and both land in
// one change; the numbers the two already hold differ and stay, since
// users' databases record them (see docs/stores.md, "Adding a migration").

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"

	"github.com/tack-dev/tack/migrations"
)

// migrate brings the schema up to date with the SQLite migrations.
func migrate(ctx context.Context, db *sql.DB) error {
	// No goose locker: the lock file already makes this process the only one.
	p, err := goose.NewProvider(goose.DialectSQLite3, db, migrations.SQLite)
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", sqliteErr(err))
	}
	return nil
}
