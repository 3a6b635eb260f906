package sqlite

import (
	"context"
	"github.com/tack-dev/tack/internal/store/sqlite/internal/stmts"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/internal/engine"
)

// SeedSQLite appends n events to session id in ONE write transaction,
// batch after batch through the same append path as Append (apply, then
// multi-row inserts), so a million-event log is valid and quick to build.
// next returns the i-th event to append. For benchmarks at depth.
func SeedSQLite(ctx context.Context, s *Store, id string, n int, next func(i int) projection.NewEvent) error {
	const batch = 5000
	return s.write(ctx, func(tx *stmts.Tx) error {
		for done := 0; done < n; {
			events := make([]projection.NewEvent, 0, batch)
			for ; len(events) < batch && done < n; done++ {
				events = append(events, next(done))
			}
			if _, err := engine.Append(ctx, sqliteAppend{tx, s.cfg, s.clock}, id, store.AppendRequest{Events: events}, s.cfg, s.clock); err != nil {
				return err
			}
		}
		return nil
	})
}

// KeptStatements counts the statements the writer's and the readers'
// pools keep prepared.
func (s *Store) KeptStatements() (writer, reader int) {
	return s.writer.Kept(), s.reader.Kept()
}
