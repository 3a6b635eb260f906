package postgres_test

import (
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestConformance runs the conformance suite, the Store contract every
// backend keeps, on this package's store.
func TestConformance(t *testing.T) {
	storetest.Run(t, storetest.Factory{Name: "postgres", Open: func(t testing.TB, cfg projection.Config) store.Store { return storetest.PlainPostgres(t, cfg) }})
}

// The suite's helpers, by the names these tests knew them by.
var (
	mustAppend   = storetest.MustAppend
	mustAppendB  = storetest.MustAppendB
	evTurnStart  = storetest.EvTurnStart
	newSession   = storetest.NewSession
	openPostgres = storetest.PostgresAt
	todoWrite    = storetest.TodoWrite
	todoWriteOK  = storetest.TodoWriteOK
	turnStart    = storetest.TurnStart
	userMsg      = storetest.UserMsg
	writeTodos   = storetest.WriteTodos
)
