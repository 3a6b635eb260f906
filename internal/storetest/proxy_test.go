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
	connect := func() (*pgx.Conn, error) {
		cc, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		cc.ConnectTimeout = 500 * time.Millisecond
		return pgx.ConnectConfig(ctx, cc)
	}
	conn, err := connect()
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
	if c, err := connect(); err == nil {
		c.Close(ctx)
		t.Fatal("connected while cut")
	} else if !pgconn.Timeout(err) {
		t.Fatalf("connect while cut: %v, want a connect timeout (black hole)", err)
	}

	proxy.Restore()
	c, err := connect()
	if err != nil {
		t.Fatalf("connect after restore: %v", err)
	}
	c.Close(ctx)
}
