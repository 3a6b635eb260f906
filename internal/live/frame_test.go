package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestFramesReadByTheLibrary writes the hub's own frames, of every header
// length, corked and not, to a socket the websocket library reads as a
// client, then closes it through the library.
func TestFramesReadByTheLibrary(t *testing.T) {
	// The sizes of the messages, quotes included: either side of each
	// length's header size.
	sizes := []int{2, 3, 125, 126, 127, 1000, 0xffff, 0x10000, 200000}
	done := make(chan error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hw := &handshakeWriter{ResponseWriter: w}
		ws, err := websocket.Accept(hw, r, nil)
		if err != nil {
			done <- err
			return
		}
		defer ws.CloseNow()
		for _, n := range sizes {
			if err := hw.cw.frame(encode(strings.Repeat("x", n-2))); err != nil {
				done <- err
				return
			}
		}
		hw.cw.cork()
		_ = hw.cw.frame(encode("corked"))
		if err := hw.cw.uncork(); err != nil {
			done <- err
			return
		}
		done <- ws.Close(websocket.StatusNormalClosure, "bye")
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	for _, n := range append(sizes, -1) {
		want := `"corked"`
		if n >= 0 {
			want = `"` + strings.Repeat("x", n-2) + `"`
		}
		typ, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("message of %d bytes: %v", n, err)
		}
		if typ != websocket.MessageText || string(b) != want {
			t.Fatalf("message of %d bytes: read %v of %d bytes", n, typ, len(b))
		}
	}
	_, _, err = c.Read(ctx)
	if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
		t.Fatalf("after the messages: %v, want the close frame", err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestNoFrameAfterClose: once the library has written a close frame, the
// hub's frames are refused, though the socket is still open (the library
// closes it only when the client has answered).
func TestNoFrameAfterClose(t *testing.T) {
	server, client := net.Pipe()
	defer server.Close()
	defer client.Close()
	read := make(chan []byte, 8)
	go func() {
		for {
			b := make([]byte, 64)
			n, err := client.Read(b)
			if err != nil {
				close(read)
				return
			}
			read <- b[:n]
		}
	}()
	w := &corkWriter{conn: server}
	if err := w.frame(encode("before")); err != nil {
		t.Fatal(err)
	}
	<-read
	if _, err := w.Write([]byte{0x88, 0x02, 0x03, 0xe8}); err != nil { // close, 1000
		t.Fatal(err)
	}
	<-read
	if err := w.frame(encode("after")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a frame after the close frame: %v, want net.ErrClosed", err)
	}
}

// TestWriteDeadline: a write to a client that reads nothing ends within
// the write timeout, and a deadline that ran out while the socket was idle
// does not cut short the next write.
func TestWriteDeadline(t *testing.T) {
	_, server := tcpPair(t) // the client reads nothing

	const timeout = 200 * time.Millisecond
	var now atomic.Int64 // the writer's clock, as a time since clockStart
	now.Store(int64(time.Since(clockStart)))
	w := &corkWriter{conn: server, timeout: timeout, clock: func() time.Duration { return time.Duration(now.Load()) }}
	if err := w.frame(encode("first")); err != nil {
		t.Fatal(err)
	}
	// The socket then stays idle past its deadline: the deadline the
	// writer set runs out, and its clock moves on by twice the timeout.
	if err := server.SetWriteDeadline(time.Now()); err != nil {
		t.Fatal(err)
	}
	now.Add(int64(2 * timeout))
	if err := w.frame(encode("after a pause")); err != nil {
		t.Fatalf("a write after the deadline ran out: %v", err)
	}

	// The client reads nothing: the socket's buffers fill, then a write
	// blocks until the deadline, set by a writer on the monotonic clock.
	w = &corkWriter{conn: server, timeout: timeout}
	big := encode(strings.Repeat("x", 1<<20))
	start := time.Now()
	var err error
	for err == nil && time.Since(start) < 10*time.Second {
		err = w.frame(big)
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a write to a client reading nothing: %v, want a deadline exceeded", err)
	}
	if took := time.Since(start); took > 5*timeout {
		t.Fatalf("a write to a client reading nothing ended after %v, timeout %v", took, timeout)
	}
}

// TestLeftoverGoesFirst: a run a hub writer gathered that the socket took
// only part of (the client not reading) stays gathered, and goes out whole
// and before what is written next, a close frame of the library's here,
// once the client reads again.
func TestLeftoverGoesFirst(t *testing.T) {
	client, server := tcpPair(t)
	// Small buffers on both sides: together they hold far less than the
	// run below.
	_ = client.(*net.TCPConn).SetReadBuffer(64 << 10)
	_ = server.(*net.TCPConn).SetWriteBuffer(64 << 10)
	raw, err := server.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}

	w := &corkWriter{conn: server, raw: raw, timeout: 10 * time.Second}
	var want []byte
	w.mu.Lock()
	for i := range 32 {
		f := encode(fmt.Sprintf("%d:%s", i, strings.Repeat("x", 64<<10)))
		w.gather(f)
		want = append(want, f...)
	}
	whole := w.tryFlushLocked(newRawWrite())
	w.mu.Unlock()
	if whole {
		t.Fatal("a 2 MiB run to a client reading nothing went out whole in one non-blocking write")
	}

	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(client)
		got <- b
	}()
	closeFrame := []byte{0x88, 0x02, 0x03, 0xe8} // close, 1000
	if _, err := w.Write(closeFrame); err != nil {
		t.Fatal(err)
	}
	server.Close()
	want = append(want, closeFrame...)
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("the client read %d bytes, want the run then the close frame, %d bytes", len(b), len(want))
	}
}

// tcpPair is a connected pair of loopback TCP sockets, closed when t ends.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	server = <-accepted
	t.Cleanup(func() { server.Close() })
	return client, server
}
