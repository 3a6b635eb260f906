package sqlite_test

import (
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestConformance runs the conformance suite, the Store contract every
// backend keeps, on this package's store.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Factory{Name: "sqlite", Open: func(t testing.TB, cfg projection.Config) store.Store { return storetest.SQLite(t, cfg) }})
}

// The suite's helpers, by the names these tests knew them by.
var (
	mustAppendB        = storetest.MustAppendB
	checkAgainstReplay = storetest.CheckAgainstReplay
	ev                 = storetest.Ev
	evTurnEnd          = storetest.EvTurnEnd
	evTurnStart        = storetest.EvTurnStart
	mustAppend         = storetest.MustAppend
	newSession         = storetest.NewSession
	todoWriteOK        = storetest.TodoWriteOK
	userMsg            = storetest.UserMsg
	writeTodos         = storetest.WriteTodos
)
