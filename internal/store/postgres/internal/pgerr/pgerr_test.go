package pgerr

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tack-dev/tack/internal/store"
)

// TestMapOutages checks that the ways a dropped database connection
// surfaces from pgx map to store.ErrUnavailable (a 503), and that others do not.
func TestMapOutages(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		io.ErrUnexpectedEOF,
		fmt.Errorf("error preprocessing batch (prepare): %w", io.ErrUnexpectedEOF),
		io.EOF,
		pgconn.ErrConnClosed,
		&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
	} {
		if got := Map(err); !errors.Is(got, store.ErrUnavailable) {
			t.Errorf("Map(%v) = %v, want store.ErrUnavailable", err, got)
		}
	}
	for _, err := range []error{
		errors.New("decode todo items: bad"),
		&pgconn.PgError{Code: "23505", Message: "duplicate key"},
	} {
		if got := Map(err); errors.Is(got, store.ErrUnavailable) {
			t.Errorf("Map(%v) = store.ErrUnavailable, want it passed through", err)
		}
	}
}
