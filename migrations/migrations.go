// Package migrations embeds the versioned schema, one goose directory per
// SQL dialect. The SQL lives here, at the top of the tree, because go:embed
// reaches no parent folder and this is where the layout keeps it; each
// backend owns its history and runs it (store/postgres and store/sqlite,
// migrate.go).
//
// Every migration added from now on takes the same number in both
// directories (a change that needs nothing in one dialect adds a file
// there that changes nothing), so that one number names one feature. The
// numbers the two already hold differ (principals are 00005 in Postgres
// and 00004 in SQLite) and stay as they are: users' databases record them.
package migrations

import (
	"embed"
	"io/fs"
)

//go:embed postgres/*.sql sqlite/*.sql
var files embed.FS

// Postgres is the schema for the Postgres store.
var Postgres, _ = fs.Sub(files, "postgres")

// SQLite is the schema for the embedded SQLite store.
var SQLite, _ = fs.Sub(files, "sqlite")

// SharedFrom is the first version both dialects number alike: every
// migration at or past it is in both directories under the same number.
const SharedFrom = 14
