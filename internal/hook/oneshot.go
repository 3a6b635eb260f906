package hook

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"

	"github.com/tack-dev/tack/internal/hook/front"
)

// oneShot is the hooks' transport to a server on this machine: each
// request on a connection of its own, written and its answer read by
// net/http's own wire code (Request.Write, ReadResponse), with none of
// http.Transport's machinery. A hook process sends one request and exits,
// so a pool of kept connections, with its reader and writer goroutines
// per connection, is all cost: 0.7 ms of CPU of a hook's 2 in a process
// that lives a few milliseconds (performance.md, "Hooks per tool call").
type oneShot struct{}

func (oneShot) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if req.URL.Scheme != "http" {
		return nil, fmt.Errorf("oneShot: %s is not plain HTTP", req.URL.Redacted())
	}
	addr := req.URL.Host
	if req.URL.Port() == "" {
		addr = net.JoinHostPort(req.URL.Hostname(), "80")
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	// The connection dies with the request's context, whatever it is
	// doing then.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	if err := req.Write(conn); err != nil {
		stop()
		conn.Close()
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), req)
	if err != nil {
		stop()
		conn.Close()
		return nil, err
	}
	resp.Body = closeBoth{resp.Body, func() error { stop(); return conn.Close() }}
	return resp, nil
}

// closeBoth is a response's body that closes its connection with it.
type closeBoth struct {
	io.ReadCloser
	close func() error
}

func (c closeBoth) Close() error {
	err := c.ReadCloser.Close()
	if cerr := c.close(); err == nil {
		err = cerr
	}
	return err
}

// localClient is the client for a hook's requests to server: oneShot to
// a plain HTTP server on this machine (a loopback address or localhost),
// net/http's own otherwise (TLS, and the user's proxy settings).
func localClient(server string) *http.Client {
	if u, err := url.Parse(server); err != nil || u.Scheme != "http" || !OnThisMachine(server) {
		return http.DefaultClient
	}
	return &http.Client{Transport: oneShot{}}
}

// OnThisMachine says whether the server's URL names this machine: a
// loopback address, or localhost.
func OnThisMachine(server string) bool { return front.OnThisMachine(server) }
