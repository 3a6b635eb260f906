package live_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestFeedHearsWhatCommitsRightAfterItsHandshake: a client of /live that
// lists GET /sessions once its socket is open (as the docs tell it to)
// misses nothing, so the feed must be subscribed by the time the client
// holds the 101. The server here is held right after it has written its
// 101, as a loaded machine may hold it, until a session has been created:
// that session must still come through the feed.
func TestFeedHearsWhatCommitsRightAfterItsHandshake(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			created := make(chan struct{})
			in := serveInstanceWrapped(t, f.Open(t, projection.Config{}), nil, live.Options{},
				func(h http.Handler) http.Handler { return holdAfterUpgrade(h, created) })
			release := sync.OnceFunc(func() { close(created) })
			t.Cleanup(release) // before the server's close, which waits for its handlers
			ctx := testCtx(t)
			c, err := dial(ctx, in.wsURL("/live"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.CloseNow()
			id := in.createSession() // while the server is held after its 101
			release()
			rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
			defer rcancel()
			m, err := read(rctx, c)
			if err != nil {
				t.Fatalf("the feed never told of session %s, created once its socket was open: %v", id, err)
			}
			if m.Type != "session" || m.Session.ID != id {
				t.Errorf("got %+v, want the summary of %s", m, id)
			}
		})
	}
}

// holdAfterUpgrade serves next, holding the handler of a websocket right
// after it has written its handshake's answer until release is closed.
func holdAfterUpgrade(next http.Handler, release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&holdingWriter{ResponseWriter: w, release: release}, r)
	})
}

type holdingWriter struct {
	http.ResponseWriter
	release <-chan struct{}
}

func (w *holdingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Hijack takes the connection (the websocket library has written its 101
// by then), makes sure the 101 has gone out, and holds the handler.
func (w *holdingWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		err = brw.Flush()
		<-w.release
	}
	return conn, brw, err
}
