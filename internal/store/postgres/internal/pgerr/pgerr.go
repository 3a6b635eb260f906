// Package pgerr maps the Postgres driver's errors to the store's: the
// plain store and its accounts share it, so that an outage is
// store.ErrUnavailable whichever of them met it.
package pgerr

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tack-dev/tack/internal/store"
)

// Map maps driver errors to the store's: no rows is ErrNotFound, and any
// failure to reach the database is ErrUnavailable.
func Map(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) || errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	if errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrNotFound) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code[:2] == "08", // connection exception
			pgErr.Code == "57P01", pgErr.Code == "57P02", pgErr.Code == "57P03", // shutdown, cannot connect now
			pgErr.Code == "53300": // too many connections
			return fmt.Errorf("%w: %s", store.ErrUnavailable, pgErr.Message)
		}
		return err
	}
	// A connection the database dropped mid-exchange surfaces as an EOF
	// (a read of a closed socket), and every later use of it as
	// ErrConnClosed: those are outages too, not internal errors.
	var netErr net.Error
	var connectErr *pgconn.ConnectError
	if errors.As(err, &connectErr) || errors.As(err, &netErr) || pgconn.Timeout(err) ||
		errors.Is(err, context.DeadlineExceeded) || pgconn.SafeToRetry(err) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, pgconn.ErrConnClosed) {
		return fmt.Errorf("%w: %v", store.ErrUnavailable, err)
	}
	return err
}
