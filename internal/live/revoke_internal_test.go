package live

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestRevokedWhileOpening: a credential revoked (or a sign-out) while a
// socket of it is between its handshake's answer and its registration,
// the client holding its 101 already, still closes that socket with
// CodeRevoked; before, the revocation missed it, and it stayed open until
// the next sweep of stale credentials (TestRevocationClosesSockets failed
// so now and then under load).
func TestRevokedWhileOpening(t *testing.T) {
	t.Parallel()
	hub := New(storetest.SQLite(t, projection.Config{}), Options{})
	t.Cleanup(func() { hub.Close(context.Background()) })
	reached, release := make(chan struct{}), make(chan struct{})
	hub.afterHandshake = func() {
		close(reached)
		<-release
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := auth.Identity{Principal: store.Principal{ID: "prn_alice"}, Scope: auth.Read, Kind: store.KindToken, CredentialID: "tok_alice"}
		_ = hub.ServeFeed(w, r.WithContext(auth.With(r.Context(), id)))
	}))
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	<-reached
	if got := hub.Credentials(); len(got) != 1 || got[0] != "tok_alice" {
		t.Errorf("credentials while the socket opens: %v, want [tok_alice]", got)
	}
	hub.CloseCredential("tok_alice")
	close(release)
	_, _, err = c.Read(ctx)
	if code := websocket.CloseStatus(err); code != CodeRevoked {
		t.Fatalf("the socket revoked while opening: %v, want close %d", err, CodeRevoked)
	}
}
