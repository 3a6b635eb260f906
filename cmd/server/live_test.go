package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/storetest"
)

// TestShutdownClosesSockets: when the server is told to stop (SIGTERM
// cancels run's context), every open socket is closed with 1001.
func TestShutdownClosesSockets(t *testing.T) {
	t.Parallel()
	url := storetest.SchemaURL(t)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		errc <- run(ctx, []string{"-addr", "127.0.0.1:0"}, func(k string) string {
			if k == "DATABASE_URL" {
				return url
			}
			return ""
		}, &out, ready)
	}()
	var addr string
	select {
	case addr = <-ready:
	case err := <-errc:
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	resp, err := http.Post("http://"+addr+"/sessions", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&s)
	resp.Body.Close()

	dctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var conns []*websocket.Conn
	for _, path := range []string{"/sessions/" + s.ID + "/live", "/live"} {
		c, _, err := websocket.Dial(dctx, "ws://"+addr+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		conns = append(conns, c)
	}
	// The session socket's first message (the todos view) shows it is served.
	if _, _, err := conns[0].Read(dctx); err != nil {
		t.Fatal(err)
	}
	stop()
	for i, c := range conns {
		var err error
		for err == nil {
			_, _, err = c.Read(dctx)
		}
		if got := websocket.CloseStatus(err); got != websocket.StatusGoingAway {
			t.Errorf("socket %d ended with %v, want 1001", i, err)
		}
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}
