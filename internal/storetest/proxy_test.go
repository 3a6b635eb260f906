package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestProxy checks the proxy itself: it forwards, Cut breaks the open
// connection and black-holes new ones, and Restore lets them through again.
func TestProxy(t *testing.T) {
	t.Parallel()
	url, proxy := ProxiedSchemaURL(t)
	ctx := context.Background()
	// A connect that should get through waits for what will come: a
	// backend's start on a machine running the whole suite has taken over
	// half a second. Only the black hole's is short, as it must time out.
	const through, blackHole = 15 * time.Second, 500 * time.Millisecond
	connect := func(timeout time.Duration) (*pgx.Conn, error) {
		cc, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cc.ConnectTimeout = timeout
		return pgx.ConnectConfig(ctx, cc)
	}
	conn, err := connect(through)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var schema string
	if err := conn.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil || schema == "" {
		t.Fatalf("through the proxy: schema %q, %v", schema, err)
	}

	proxy.Cut()
	if err := conn.Ping(ctx); err == nil {
		t.Fatal("a connection open across the cut still answers")
	}
	if c, err := connect(blackHole); err == nil {
		c.Close(ctx)
		t.Fatal("connected while cut")
	} else if !pgconn.Timeout(err) {
		t.Fatalf("connect while cut: %v, want a connect timeout (black hole)", err)
	}

	proxy.Restore()
	c, err := connect(through)
	if err != nil {
		t.Fatalf("connect after restore: %v", err)
	}
	c.Close(ctx)
}
