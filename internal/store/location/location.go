// Package location finds the store a server uses, for the commands that
// open it beside the server (tack token, tack principal): the one package
// besides cmd/server that knows every backend.
package location

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/store/sqlite"
)

// Location is where a command finds the store a server uses: Postgres at
// DatabaseURL, else the SQLite database tack.db in DataDir.
type Location struct {
	DatabaseURL string
	DataDir     string
}

// Flags adds -database-url and -data-dir to fs, defaulting to
// DATABASE_URL, TACK_DATA_DIR and the server's default data directory.
func Flags(fs *flag.FlagSet, getenv func(string) string) *Location {
	l := &Location{}
	dir := getenv("TACK_DATA_DIR")
	if dir == "" {
		dir = DefaultDataDir(getenv)
	}
	fs.StringVar(&l.DatabaseURL, "database-url", getenv("DATABASE_URL"), "Postgres URL (env DATABASE_URL); without one, the SQLite database in -data-dir")
	fs.StringVar(&l.DataDir, "data-dir", dir, "directory of the server's SQLite database tack.db (env TACK_DATA_DIR)")
	return l
}

// DefaultDataDir is where the SQLite database lives unless told otherwise:
// $XDG_DATA_HOME/tack, else ~/.local/share/tack.
func DefaultDataDir(getenv func(string) string) string {
	if x := getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "tack")
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".local", "share", "tack")
	}
	return ""
}

// ErrNoStore means there is no store where a command looked.
var ErrNoStore = errors.New("no Tack store")

// Open opens the existing store; unlike the server, it never creates a
// SQLite database.
func (l *Location) Open(ctx context.Context) (store.Store, error) {
	if l.DatabaseURL != "" {
		pc, err := postgres.PoolConfig(l.DatabaseURL, 2)
		if err != nil {
			return nil, err
		}
		return postgres.Open(ctx, pc, projection.Config{})
	}
	if l.DataDir == "" {
		return nil, fmt.Errorf("%w: set DATABASE_URL, or -data-dir / TACK_DATA_DIR (or HOME)", ErrNoStore)
	}
	path := filepath.Join(l.DataDir, "tack.db")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w at %s: start the server once (it creates it), or point -data-dir / TACK_DATA_DIR or DATABASE_URL at the server's store", ErrNoStore, path)
	}
	return sqlite.Open(ctx, path, projection.Config{})
}
