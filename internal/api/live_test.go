package api_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// The live sockets' refusals before the handshake: routed through the same
// checks as REST and answered with the API's JSON error, every answer
// checked against the contract.

// setupLive serves the API with a live hub on a fresh Postgres store.
func setupLive(t *testing.T, opts live.Options) *bundle {
	t.Helper()
	st := storetest.Postgres(t, projection.Config{})
	hub := live.New(st, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		hub.Close(ctx)
	})
	return setup(t, st, api.Options{OnAppend: hub.OnAppend, Live: hub})
}

// refusal is a refused handshake's answer.
type refusal struct {
	status      int
	contentType string
	code        string
	body        string
}

// handshake sends a websocket handshake, with header overriding the
// standard ones (an empty value deletes one), and returns the refusal.
func (b *bundle) handshake(path string, header map[string]string) refusal {
	b.t.Helper()
	req, _ := http.NewRequest("GET", b.url+path, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp := b.send(req)
	var body apiError
	_ = json.Unmarshal(resp.Body, &body)
	if body.Error.Message == "" {
		body.Error.Code = ""
	}
	return refusal{status: resp.Status, contentType: resp.Header.Get("Content-Type"), code: body.Error.Code, body: string(resp.Body)}
}

func TestSocketBadRequests(t *testing.T) {
	t.Parallel()
	b := setupLive(t, live.Options{})
	id := b.newSession()
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/sessions/" + id + "/live?after=x", 400},
		{"/sessions/" + id + "/live?after=-1", 400},
		{"/sessions/ses_missing/live", 404},
	} {
		got := b.handshake(tc.path, nil)
		if got.status != tc.code || got.code == "" {
			t.Errorf("GET %s: %d %s, want %d with an error body", tc.path, got.status, got.body, tc.code)
		}
	}
}

// TestSocketSessionIDChecked: a session id that cannot exist is 404 on the
// socket as on every REST route, whatever the store makes of it.
func TestSocketSessionIDChecked(t *testing.T) {
	t.Parallel()
	b := setupLive(t, live.Options{})
	for _, path := range []string{"/sessions/%00/live", "/sessions/a%20b/live", "/sessions/%FF/live", "/sessions/" + strings.Repeat("x", 65) + "/live"} {
		resp := b.handshake(path, nil)
		if resp.status != http.StatusNotFound || resp.code != "not_found" {
			t.Errorf("GET %s: %d %q %s, want 404 not_found", path, resp.status, resp.code, resp.body)
		}
	}
}

// TestRefusedHandshakes: every refused handshake answers the JSON error
// shape with a fitting status, and none is logged at INFO or above (a web
// page could fill the log with them).
func TestRefusedHandshakes(t *testing.T) {
	t.Parallel()
	var logged storetest.LogBuffer
	logger := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelInfo}))
	b := setupLive(t, live.Options{Logger: logger})
	id := b.newSession()
	for _, tc := range []struct {
		name   string
		path   string
		header map[string]string
		status int
		code   string
	}{
		{"foreign origin", "/sessions/" + id + "/live", map[string]string{"Origin": "http://evil.example"}, 403, "forbidden"},
		{"foreign origin, feed", "/live", map[string]string{"Origin": "http://evil.example"}, 403, "forbidden"},
		{"not a websocket", "/sessions/" + id + "/live", map[string]string{"Connection": "", "Upgrade": ""}, 426, "upgrade_required"},
		{"not a websocket, feed", "/live", map[string]string{"Upgrade": ""}, 426, "upgrade_required"},
		{"old protocol version", "/sessions/" + id + "/live", map[string]string{"Sec-WebSocket-Version": "8"}, 400, "invalid"},
		{"no key", "/live", map[string]string{"Sec-WebSocket-Key": ""}, 400, "invalid"},
	} {
		// The contract's Error schema is checked by the bundle's client.
		got := b.handshake(tc.path, tc.header)
		if got.status != tc.status || got.code != tc.code || got.contentType != "application/json" {
			t.Errorf("%s: %d %s %q %s, want %d application/json %q", tc.name, got.status, got.contentType, got.code, got.body, tc.status, tc.code)
		}
	}
	if s := logged.String(); s != "" {
		t.Errorf("refused handshakes were logged at INFO or above:\n%s", s)
	}
}
