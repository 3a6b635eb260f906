// Package importer sends agents' transcripts into Tack through its public
// HTTP API: one Tack session per file, found again by a stable external key,
// and events appended with expectedSeq so that a second run, a retry or a
// restart stores nothing twice and skips nothing (see File).
package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/transcript"
)

// DefaultServer is the local Tack server, as `go run ./cmd/server` serves it.
const DefaultServer = "http://127.0.0.1:8080"

// Client is a thin client of Tack's HTTP API: the importer's, the watcher's,
// tack token's and the demo's.
type Client struct {
	Server string
	Token  string
	HTTP   *http.Client
}

// ClientFlags are the flags every command that talks to a server takes
// (-server, -token), their defaults from TACK_SERVER and TACK_TOKEN.
func ClientFlags(fs *flag.FlagSet, env func(string) string) *Client {
	c := &Client{}
	server := env("TACK_SERVER")
	if server == "" {
		server = DefaultServer
	}
	fs.StringVar(&c.Server, "server", server, "Tack server URL (TACK_SERVER)")
	fs.StringVar(&c.Token, "token", env("TACK_TOKEN"), "token sent as Authorization: Bearer (TACK_TOKEN)")
	return c
}

// Session is what the importer reads of a Tack session.
type Session struct {
	ID                 string `json:"id"`
	Title              string `json:"title"`
	LastSeq            int64  `json:"lastSeq"`
	ParallelInProgress bool   `json:"parallelInProgress"`
}

// NewSession is what POST /sessions is sent to find or make a transcript's
// session: its external key and what the transcript says of it.
type NewSession struct {
	ExternalKey        string `json:"externalKey"`
	Title              string `json:"title,omitempty"`
	Agent              string `json:"agent,omitempty"`
	Cwd                string `json:"cwd,omitempty"`
	ParentID           string `json:"parentId,omitempty"`
	PlanLifetime       string `json:"planLifetime,omitempty"`
	ParallelInProgress bool   `json:"parallelInProgress,omitempty"`
}

// errConflict is a 409 on an append: the log is not where the writer thought.
var errConflict = errors.New("the session's log has moved on")

// Do sends one request of the API with body as JSON (nil for none) and
// decodes a 2xx answer into out (nil to drop it); any other answer is an
// error naming the server's message.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) error {
	_, err := c.do(ctx, method, path, body, out)
	return err
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) (int, error) {
	var e struct {
		Error struct{ Code, Message string }
	}
	status, raw, err := c.send(ctx, method, path, body)
	switch {
	case err != nil:
		return status, err
	case status >= 300:
		_ = json.Unmarshal(raw, &e)
		if status == http.StatusConflict {
			return status, fmt.Errorf("%w: %s", errConflict, e.Error.Message)
		}
		return status, fmt.Errorf("%s %s: %d %s", method, path, status, e.Error.Message)
	case out != nil:
		return status, json.Unmarshal(raw, out)
	}
	return status, nil
}

// Call sends one request like Do but leaves the status to the caller: it
// decodes any answer's body into out (nil to drop it) and returns the
// status; the error is only one of sending or decoding. It serves a caller
// that reads a non-2xx answer of its own shape, such as a tool endpoint's
// 422 {isError, content}.
func (c *Client) Call(ctx context.Context, method, path string, body, out any) (int, error) {
	status, raw, err := c.send(ctx, method, path, body)
	if err == nil && out != nil && len(raw) > 0 {
		if err = json.Unmarshal(raw, out); err != nil {
			err = fmt.Errorf("%s %s: %w", method, path, err)
		}
	}
	return status, err
}

// send sends one request with body as JSON (nil for none) and returns the
// answer's status and body.
func (c *Client) send(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.Server, "/")+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, raw, err
}

// OpenSession finds the session named ns.ExternalKey, or creates it.
func (c *Client) OpenSession(ctx context.Context, ns NewSession) (Session, error) {
	var s Session
	_, err := c.do(ctx, http.MethodPost, "/sessions", ns, &s)
	return s, err
}

// Session reads a session.
func (c *Client) Session(ctx context.Context, id string) (Session, error) {
	var s Session
	_, err := c.do(ctx, http.MethodGet, "/sessions/"+id, nil, &s)
	return s, err
}

// Events reads a page of a session's log after seq.
func (c *Client) Events(ctx context.Context, id string, after int64) ([]projection.Event, bool, error) {
	var page struct {
		Events  []projection.Event `json:"events"`
		HasMore bool               `json:"hasMore"`
	}
	_, err := c.do(ctx, http.MethodGet, fmt.Sprintf("/sessions/%s/events?after=%d&limit=500", id, after), nil, &page)
	return page.Events, page.HasMore, err
}

// Appended is what an append stored, and the events Tack held already
// under their keys.
type Appended struct {
	Events []projection.Event `json:"events"`
	Held   []projection.Event `json:"held"`
}

// RefusedError is an append Tack refused for one of its events: Index is
// the event's place in the batch, Status 409 (the log's state) or 422
// (the event itself), Message Tack's.
type RefusedError struct {
	Status  int
	Index   int
	Message string
}

func (e *RefusedError) Error() string { return fmt.Sprintf("%d %s", e.Status, e.Message) }

// Append appends a batch; Tack stores each event it does not hold under
// one of its keys. A refusal that names an event is a *RefusedError.
func (c *Client) Append(ctx context.Context, id string, events []transcript.Event) (Appended, error) {
	var res Appended
	path := "/sessions/" + id + "/events"
	status, raw, err := c.send(ctx, http.MethodPost, path, map[string]any{"events": events})
	if err != nil {
		return res, err
	}
	if status >= 300 {
		var e struct {
			Error struct{ Message string }
		}
		_ = json.Unmarshal(raw, &e)
		var index int
		if _, serr := fmt.Sscanf(e.Error.Message, "events[%d]:", &index); serr == nil && (status == http.StatusConflict || status == http.StatusUnprocessableEntity) {
			return res, &RefusedError{Status: status, Index: index, Message: e.Error.Message}
		}
		return res, fmt.Errorf("POST %s: %d %s", path, status, e.Error.Message)
	}
	return res, json.Unmarshal(raw, &res)
}

// URL is a session's page in the browser UI.
func (c *Client) URL(id string) string {
	return strings.TrimSuffix(c.Server, "/") + "/s/" + id
}
