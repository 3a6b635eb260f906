// Package hook is the agents' side of Tack's hooks: Send forwards one hook
// event from the agent to the server and hands back what the agent should
// read, and Install and Uninstall edit the agents' settings so they run
// `tack hook` on every event Tack maps.
package hook

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/transcript"
)

// DefaultTimeout is how long Send waits for the server before it gives up
// and lets the agent go on.
const DefaultTimeout = time.Second

// MaxPayloadBytes bounds the hook payload Send reads, the server's own
// bound on a request body; a larger one is not sent.
const MaxPayloadBytes = 4 << 20

// Client is where Send sends hooks.
type Client struct {
	Server, Token string
	// HTTP is the client to send with; nil is a plain one.
	HTTP *http.Client
}

// Send posts the hook payload read from in to the server's
// /hooks/{agent} and returns the server's answer for the agent, or nil
// when there is none to give: the server is down, slower than timeout, or
// refused the hook. It never fails: a hook must never stand in the agent's
// way, and what it missed reaches Tack later from the transcript.
func Send(ctx context.Context, c Client, agent string, in io.Reader, timeout time.Duration) []byte {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	payload, err := io.ReadAll(io.LimitReader(in, MaxPayloadBytes+1))
	if err != nil || len(payload) > MaxPayloadBytes {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	// The transcript may take most of the time: the hook's own request is
	// one small round trip.
	synced := syncTranscripts(ctx, importer.Client{Server: c.Server, Token: c.Token, HTTP: hc}, payload, max(timeout/2, timeout-200*time.Millisecond))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(c.Server, "/")+"/hooks/"+agent, bytes.NewReader(payload))
	if err != nil {
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	if synced {
		req.Header.Set(transcript.SyncedHeader, "synced")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxPayloadBytes))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil
	}
	return body
}

// syncTranscripts sends the lines of the hook's transcripts that Tack does
// not hold yet, as `tack watch` and `tack import` send them, within budget,
// so that the conversation Tack shows is the transcript's, in its order and
// as the model saw it, before the hook moves the session on (a turn's end
// after its closing text). It reports whether every transcript was sent;
// when one was not (no transcript, a file this machine cannot read, a slow
// server), the server maps the hook's own payload instead and the
// transcript fills in later.
func syncTranscripts(ctx context.Context, c importer.Client, payload []byte, budget time.Duration) bool {
	h, err := transcript.ParseHook(payload)
	if err != nil {
		return false
	}
	paths := h.Transcripts()
	if len(paths) == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	final := h.Event == transcript.HookSessionEnd
	for _, path := range paths {
		f, err := importer.Open(&c, path)
		if err == nil {
			err = f.Sync(ctx, final)
		}
		if err != nil {
			return false
		}
	}
	return true
}
