// Package migrations embeds the versioned schema, one goose directory per SQL dialect.
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
