package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/store/sqlite"
)

// openStore opens Postgres when there is a DATABASE_URL and the embedded
// SQLite database in the data directory otherwise. It returns the store, the
// carrier of live changes between instances (Postgres LISTEN/NOTIFY; none for
// SQLite, which serves one process), and the attributes of the start-up line
// that say which store and where.
func openStore(ctx context.Context, cfg config, log *slog.Logger) (store.Store, live.Carrier, []any, error) {
	pcfg := projection.Config{AllowParallel: cfg.ParallelInProgress, IdleAfter: cfg.IdleAfter}
	if cfg.DatabaseURL != "" {
		pc, err := postgres.PoolConfig(cfg.DatabaseURL, int32(cfg.MaxConns))
		if err != nil {
			return nil, nil, nil, err
		}
		if cfg.MinConns > 0 {
			postgres.WarmPool(pc, int32(cfg.MinConns))
		}
		pg, err := postgres.Open(ctx, pc, pcfg)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("open store: %w", err)
		}
		var st store.Store = pg
		if cfg.PGFast {
			st = fast.New(pg)
		}
		carrier := live.NewPGNotify(pc.ConnConfig, live.PGNotifyOptions{Logger: log, Sweep: cfg.LiveSweep})
		return st, carrier, []any{"store", "postgres", "database", redact(cfg.DatabaseURL), "maxConns", cfg.MaxConns, "minConns", min(cfg.MinConns, cfg.MaxConns), "pgFast", cfg.PGFast}, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, nil, nil, fmt.Errorf("data directory: %w", err)
	}
	path := filepath.Join(cfg.DataDir, "tack.db")
	st, err := sqlite.Open(ctx, path, pcfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open store: %w", err)
	}
	return st, nil, []any{"store", "sqlite", "database", path}, nil
}
