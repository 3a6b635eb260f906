package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tack-dev/tack/internal/store"
)

// The writers' half of the read-lease protocol (store/postgres/fast holds the
// holders' half, which only the fast store runs): every Postgres store,
// the plain one included, may find a session's list leased by another
// instance, and must ask it to let go before its write can pass
// tack_lease_guard. A store whose connections name no instance
// (instanceParam) holds no lease itself, but still writes as any other.

// errLeased is the SQLSTATE of tack_lease_guard.
const errLeased = "TK003"

// instanceParam is the connection parameter naming the instance; see
// tack_lease_guard.
const instanceParam = "tack.instance"

func newInstanceID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// isLeased reports whether err is tack_lease_guard's refusal.
func isLeased(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == errLeased
}

// whileLeased runs append until tack_lease_guard lets it through, asking
// the holder of the session's lease to let go in between (again each
// 100 ms), and backing off on the store's clock.
func (p *Store) whileLeased(ctx context.Context, id string, append func() (store.AppendResult, error)) (store.AppendResult, error) {
	var asked time.Time
	wait := 500 * time.Microsecond
	for {
		res, err := append()
		if !isLeased(err) {
			return res, err
		}
		p.leaseWaits.Add(1)
		if asked.IsZero() || p.clock.Instant().Sub(asked) > 100*time.Millisecond {
			if _, err := p.Pool.Exec(ctx, `SELECT pg_notify($1, $2)`, p.leaseChannel, "r "+id); err != nil {
				return store.AppendResult{}, err
			}
			asked = p.clock.Instant()
		}
		select {
		case <-p.clock.After(wait):
		case <-ctx.Done():
			return store.AppendResult{}, ctx.Err()
		}
		wait = min(2*wait, 20*time.Millisecond)
	}
}
