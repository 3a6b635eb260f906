package postgres

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tack-dev/tack/internal/store"
)

// TestPgErrOutages checks that the ways a dropped database connection
// surfaces from pgx map to store.ErrUnavailable (a 503), and that others do not.
func TestPgErrOutages(t *testing.T) {
	t.Parallel()
	for _, err := range []error{
		io.ErrUnexpectedEOF,
		fmt.Errorf("error preprocessing batch (prepare): %w", io.ErrUnexpectedEOF),
		io.EOF,
		pgconn.ErrConnClosed,
		&pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"},
	} {
		if got := pgErr(err); !errors.Is(got, store.ErrUnavailable) {
			t.Errorf("pgErr(%v) = %v, want store.ErrUnavailable", err, got)
		}
	}
	for _, err := range []error{
		errors.New("decode todo items: bad"),
		&pgconn.PgError{Code: "23505", Message: "duplicate key"},
	} {
		if got := pgErr(err); errors.Is(got, store.ErrUnavailable) {
			t.Errorf("pgErr(%v) = store.ErrUnavailable, want it passed through", err)
		}
	}
}
