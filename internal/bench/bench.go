// Package bench measures Tack under load: todo_write calls over HTTP
// against pgbench's ceiling of the same transaction (Write), and the live
// sockets' commit-to-receive latency, append throughput with fanout on and
// off, and resident memory per idle socket (Latency, Throughput, Idle), and
// the first pages a freshly started server reads beside CPU hogs against
// warm ones (Restart), and what a tool call's hooks cost an agent against
// the least a command hook can cost (Hooks). It prints figures; it asserts nothing. cmd/tackbench is its command, and
// docs/performance.md gives each figure with the command that prints it.
//
// It is a measurement lab, not a library: only cmd/tackbench imports it,
// Tack's behaviour depends on none of it, and its code is shaped by what
// each figure needs rather than shared with the server's. It is several
// times the size of a benchmark that drives its subject through the
// subject's own client because Tack's figures are of a server whose load
// shares its machine, so beside the measurements it holds the instruments
// that tell their costs apart: the child processes below, each process's
// CPU time, faults and RSS read from /proc (proc.go), Postgres's backends
// named by phase (database.go), pgbench running the same transaction for
// the ceiling a write is held to (pgbench.go), and clients of its own where
// a general one would spend the machine the figure is about.
//
// Every measurement works in a fresh schema of the database it is given,
// which it drops when done. Write runs the server in a child process
// (Serve), and Latency may run its subscribers in one (Clients), so that
// the CPU of the server, of the load clients and of Postgres can be told
// apart; the command hands ServeCommand and ClientsCommand to them, and
// HogCommand to Restart's busy processes.
//
// Two of those clients are written by hand, each because its figure needs a
// load generator that costs as little as one in C would: the load shares the
// machine's cores with what it measures, and what the clients spend the
// server loses. Write's todo_write calls (rawhttp.go: each request's bytes
// made once, an answer read by its status line and Content-Length) cost
// about half what net/http's client costs a call; Latency's thousands of
// subscribers (wsclient.go: plain sockets that one epoll loop reads, frames
// parsed by hand) cost about two thirds of what a goroutine a socket
// reading through coder/websocket costs a delivery. Everything else (the
// set-up calls, Throughput's writers and its reader, Idle's sockets) uses
// net/http through the importer's API client, and coder/websocket.
package bench

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/tack-dev/tack/internal/importer"
)

// The subcommands of the command that run the children: the command must
// hand them to Serve and Clients.
const (
	ServeCommand   = "serve"
	ClientsCommand = "live-clients"
)

// httpClient sends every call that goes through net/http, set-up and
// measured alike.
var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

// tack is a client of the Tack instance at base.
func tack(base string) *importer.Client {
	return &importer.Client{Server: base, HTTP: httpClient}
}

// createSession makes a session, as any harness makes one.
func createSession(ctx context.Context, c *importer.Client) (string, error) {
	var s struct{ ID string }
	err := c.Do(ctx, http.MethodPost, "/sessions", json.RawMessage(`{"title":"tackbench"}`), &s)
	return s.ID, err
}

var userMessage = json.RawMessage(`{"events":[{"type":"message/user","data":{"text":"load test message"}}]}`)

// appendMessage appends one user message to session id.
func appendMessage(ctx context.Context, c *importer.Client, id string) error {
	return c.Do(ctx, http.MethodPost, "/sessions/"+id+"/events", userMessage, nil)
}

// percentile is the p-th of sorted durations, by the nearest rank below.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int(float64(len(sorted)-1)*p)]
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
