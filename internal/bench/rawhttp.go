package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// rawClient is one load client's kept-alive HTTP/1.1 connection for Write's
// measured calls, written by hand for the reason the package comment gives:
// each request's bytes are made once, and an answer is read by its status
// line and Content-Length (Tack sends one on every answer), its body drained
// unless the status is wrong.
type rawClient struct {
	addr string
	conn net.Conn
	r    *bufio.Reader
}

// rawRequest is a POST of body to path, in bytes.
func rawRequest(host, path string, body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", path, host, len(body))
	b.Write(body)
	return b.Bytes()
}

// do sends req and reads its answer; any status but want is an error
// carrying the answer's body.
func (c *rawClient) do(ctx context.Context, req []byte, want int) error {
	if c.conn == nil {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", c.addr)
		if err != nil {
			return err
		}
		// The context ends the connection, and with it a call that waits
		// on a server that stopped answering: one AfterFunc a connection,
		// not a deadline a call.
		context.AfterFunc(ctx, func() { _ = conn.Close() })
		c.conn, c.r = conn, bufio.NewReaderSize(conn, 16<<10)
	}
	if _, err := c.conn.Write(req); err != nil {
		return c.fail(err)
	}
	status, length, closing, err := c.readHead()
	if err != nil {
		return c.fail(err)
	}
	if status != want {
		answer := make([]byte, min(length, 4096))
		_, _ = io.ReadFull(c.r, answer)
		c.fail(nil)
		return fmt.Errorf("status %d, want %d: %s", status, want, answer)
	}
	if _, err := c.r.Discard(length); err != nil {
		return c.fail(err)
	}
	if closing {
		c.fail(nil)
	}
	return nil
}

// readHead reads an answer's status line and headers.
func (c *rawClient) readHead() (status, length int, closing bool, err error) {
	line, err := c.r.ReadSlice('\n')
	if err != nil {
		return 0, 0, false, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.1 ")) {
		return 0, 0, false, fmt.Errorf("bad status line %q", line)
	}
	if status, err = strconv.Atoi(string(line[9:12])); err != nil {
		return 0, 0, false, fmt.Errorf("bad status line %q", line)
	}
	length = -1
	for {
		line, err := c.r.ReadSlice('\n')
		if err != nil {
			return 0, 0, false, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, 0, false, fmt.Errorf("bad header %q", line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return 0, 0, false, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Connection")):
			closing = bytes.EqualFold(value, []byte("close"))
		}
	}
	if length < 0 {
		return 0, 0, false, errors.New("an answer without Content-Length")
	}
	return status, length, closing, nil
}

// fail closes the connection (the next call dials again) and returns err.
func (c *rawClient) fail(err error) error {
	if c.conn != nil {
		c.conn.Close()
		c.conn = nil
	}
	return err
}

func (c *rawClient) close() { c.fail(nil) }
