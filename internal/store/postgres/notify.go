package postgres

import (
	"context"
	"fmt"
	"hash/fnv"
	"time"

	"github.com/jackc/pgx/v5"
)

// NotifyConn is one connection to a Postgres LISTEN/NOTIFY channel, apart
// from the store's pool: the live carrier keeps one to listen and one to
// notify, so that neither waits for a pooled connection behind the appends
// nor holds one of theirs for as long as it lives.
type NotifyConn struct {
	conn    *pgx.Conn
	channel string
}

// Channel names a LISTEN/NOTIFY channel base for the schema cc connects
// to: base itself, or, when cc sets a search_path, base and a hash of it,
// so that instances of different schemas of one database (tests run each
// in its own) hear only each other.
func Channel(base string, cc *pgx.ConnConfig) string {
	sp := cc.RuntimeParams["search_path"]
	if sp == "" {
		return base
	}
	h := fnv.New64a()
	h.Write([]byte(sp))
	return fmt.Sprintf("%s_%016x", base, h.Sum64())
}

// notifyConnectTimeout bounds opening a NotifyConn.
const notifyConnectTimeout = 2 * time.Second

// ConnectNotify opens a connection to channel with cc, named name in
// pg_stat_activity (application_name).
func ConnectNotify(ctx context.Context, cc *pgx.ConnConfig, name, channel string) (*NotifyConn, error) {
	cc = cc.Copy()
	cc.RuntimeParams["application_name"] = name
	// A NOTIFY gets a transaction id, so its commit would wait for a WAL
	// flush like an append's. A notice is not data (a lost one is resynced),
	// so the notifier does not wait: it leaves the flushes to the appends.
	cc.RuntimeParams["synchronous_commit"] = "off"
	ctx, cancel := context.WithTimeout(ctx, notifyConnectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, err
	}
	return &NotifyConn{conn: conn, channel: channel}, nil
}

// Listen subscribes the connection to its channel.
func (c *NotifyConn) Listen(ctx context.Context) error {
	_, err := c.conn.Exec(ctx, "LISTEN "+pgx.Identifier{c.channel}.Sanitize())
	return err
}

// Wait returns the payload of the next notification on the channel, once
// Listen has subscribed to it.
func (c *NotifyConn) Wait(ctx context.Context) (string, error) {
	n, err := c.conn.WaitForNotification(ctx)
	if err != nil {
		return "", err
	}
	return n.Payload, nil
}

// Notify sends payload on the channel; Postgres takes up to 8000 bytes.
func (c *NotifyConn) Notify(ctx context.Context, payload string) error {
	_, err := c.conn.Exec(ctx, "SELECT pg_notify($1, $2)", c.channel, payload)
	return err
}

// PID is the connection's backend process id.
func (c *NotifyConn) PID() uint32 { return c.conn.PgConn().PID() }

// Close closes the connection.
func (c *NotifyConn) Close() { _ = c.conn.Close(context.Background()) }
