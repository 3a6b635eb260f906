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
	"net/url"
	"strings"
	"time"
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
	// Plan is the plan mode sent with each hook as ?plan= ("" sends
	// none): the server's choice of offering the model Tack's todo tool.
	Plan string
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
	target := strings.TrimSuffix(c.Server, "/") + "/hooks/" + url.PathEscape(agent)
	if c.Plan != "" {
		target += "?" + url.Values{"plan": {c.Plan}}.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(payload))
	if err != nil {
		return nil
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
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
