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
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

// DefaultServer is the local Tack server, as `go run ./cmd/server` serves it.
const DefaultServer = "http://127.0.0.1:8080"

// Client is a thin client of Tack's HTTP API.
type Client struct {
	Server string
	Token  string
	HTTP   *http.Client
}

// Session is what the importer reads of a Tack session.
type Session struct {
	ID                 string `json:"id"`
	Title              string `json:"title"`
	LastSeq            int64  `json:"lastSeq"`
	ParallelInProgress bool   `json:"parallelInProgress"`
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
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.Server, "/")+path, rd)
	if err != nil {
		return 0, err
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
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct{ Code, Message string }
		}
		_ = json.Unmarshal(raw, &e)
		if resp.StatusCode == http.StatusConflict {
			return resp.StatusCode, fmt.Errorf("%w: %s", errConflict, e.Error.Message)
		}
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, e.Error.Message)
	}
	if out != nil {
		return resp.StatusCode, json.Unmarshal(raw, out)
	}
	return resp.StatusCode, nil
}

// OpenSession finds the session named key, or creates it.
func (c *Client) OpenSession(ctx context.Context, key, title string, parallel bool) (Session, error) {
	var s Session
	body := map[string]any{"externalKey": key, "title": title}
	if parallel {
		body["parallelInProgress"] = true
	}
	_, err := c.do(ctx, http.MethodPost, "/sessions", body, &s)
	return s, err
}

// Session reads a session.
func (c *Client) Session(ctx context.Context, id string) (Session, error) {
	var s Session
	_, err := c.do(ctx, http.MethodGet, "/sessions/"+id, nil, &s)
	return s, err
}

// Append appends a batch at expectedSeq; errConflict when the log is elsewhere.
func (c *Client) Append(ctx context.Context, id string, events []projection.NewEvent, expectedSeq int64) error {
	_, err := c.do(ctx, http.MethodPost, "/sessions/"+id+"/events", map[string]any{"events": events, "expectedSeq": expectedSeq}, nil)
	return err
}

// URL is a session's page in the browser UI.
func (c *Client) URL(id string) string {
	return strings.TrimSuffix(c.Server, "/") + "/s/" + id
}
