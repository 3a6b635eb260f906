package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
)

// TestSQLiteQueryPlans holds every read query to a point read or an index
// range read: SQLite's plan for it searches an index and scans no table, so
// a read costs the same at ten events and at a million.
func TestSQLiteQueryPlans(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "tack.db"), projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for name, q := range map[string]string{"surface after": sqliteSurfaceAfter, "surface more": sqliteSurfaceMore, "call ids": sqliteCallIDs} {
		if n := strings.Count(q, "(?, ?, ?)") * 3; n != len(projection.SurfaceTypes) {
			t.Fatalf("%s has placeholders for %d surface types, projection has %d", name, n, len(projection.SurfaceTypes))
		}
	}
	queries := map[string]string{
		"session": sqliteSession, "session exists": sqliteSessionExists, "session of owner": sqliteSessionOfOwner,
		"session by key": sqliteSessionByKey,
		"state":          sqliteState, "idempotent": sqliteIdempotent, "events after": sqliteEventsAfter,
		"events before": sqliteEventsBefore, "todos": sqliteTodos, "events after more": sqliteEventsAfterMore,
		"events before more": sqliteEventsBeforeMore, "surface after": sqliteSurfaceAfter,
		"surface more": sqliteSurfaceMore, "call ids": sqliteCallIDs,
		"prune idempotent": sqlitePruneIdempotent, "todo versions": sqliteVersions,
	}
	// Every page and window of the sessions list: owned or not, children
	// of a parent or not, searched or not.
	for _, owned := range []bool{false, true} {
		for _, children := range []bool{false, true} {
			queries[fmt.Sprintf("sessions nth owned=%v children=%v", owned, children)] = sqliteSessionsNth(owned, children)
			for _, search := range []bool{false, true} {
				queries[fmt.Sprintf("sessions page owned=%v children=%v search=%v", owned, children, search)] = sqliteSessionsPage(owned, children, search)
			}
		}
	}
	for name, q := range queries {
		args := make([]any, strings.Count(q, "?"))
		for i := range args {
			args[i] = 1
		}
		rows, err := s.reader.Query("EXPLAIN QUERY PLAN "+q, args...)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, unused int
			var detail string
			if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		for _, step := range plan {
			if strings.HasPrefix(step, "LIST SUBQUERY ") {
				continue // the heading of a subquery, whose own steps follow
			}
			if !strings.HasPrefix(step, "SEARCH ") || !(strings.Contains(step, " INDEX ") || strings.Contains(step, " PRIMARY KEY ")) {
				t.Errorf("%s: plan step %q is not an index search (plan %q)", name, step, plan)
			}
		}
	}
}
