package live_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/storetest"
)

// rawClient is a websocket client written frame by frame, for what no
// well-behaved library sends: the hub reads a client's frames itself, and
// these tests hold it to RFC 6455.
type rawClient struct {
	t  testing.TB
	c  net.Conn
	br *bufio.Reader
}

// rawDial opens a socket on path with a handshake of its own; first, when
// not empty, goes out in the same write as the request, as a hasty
// client's first frames do.
func rawDial(t testing.TB, in *instance, path string, first []byte) *rawClient {
	t.Helper()
	r, err := tryDial(t, in, path, first)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// tryDial is rawDial, with an error for the caller to report (from a
// goroutine of its own).
func tryDial(t testing.TB, in *instance, path string, first []byte) (*rawClient, error) {
	c, err := net.Dial("tcp", in.srv.Listener.Addr().String())
	if err != nil {
		return nil, err
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	req := "GET " + path + " HTTP/1.1\r\nHost: " + in.srv.Listener.Addr().String() +
		"\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n" +
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
	if _, err := c.Write(append([]byte(req), first...)); err != nil {
		return nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		return nil, fmt.Errorf("handshake: %s", resp.Status)
	}
	return &rawClient{t: t, c: c, br: br}, nil
}

// frame is a client's frame: masked unless unmasked, with the header bits
// of b0 (FIN, RSV, opcode) as given.
func frame(b0 byte, p []byte, unmasked bool) []byte {
	f := []byte{b0, 0}
	switch n := len(p); {
	case n <= 125:
		f[1] = byte(n)
	case n <= 0xffff:
		f[1] = 126
		f = binary.BigEndian.AppendUint16(f, uint16(n))
	default:
		f[1] = 127
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	if unmasked {
		return append(f, p...)
	}
	f[1] |= 0x80
	mask := [4]byte{0x37, 0xfa, 0x21, 0x3d}
	f = append(f, mask[:]...)
	for i, b := range p {
		f = append(f, b^mask[i&3])
	}
	return f
}

func (r *rawClient) send(f []byte) {
	r.t.Helper()
	if _, err := r.c.Write(f); err != nil {
		r.t.Fatal(err)
	}
}

// next reads the server's next control frame, skipping its data frames
// (a session's todos view): its opcode and payload. A server frame is never
// masked nor fragmented, and sets no reserved bit.
func (r *rawClient) next() (op byte, p []byte, err error) {
	for {
		var h [2]byte
		if _, err := io.ReadFull(r.br, h[:]); err != nil {
			return 0, nil, err
		}
		if h[0]&0x70 != 0 || h[0]&0x80 == 0 || h[1]&0x80 != 0 {
			return 0, nil, fmt.Errorf("server frame header % x: masked, fragmented or reserved bits set", h)
		}
		n := int64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			_, err = io.ReadFull(r.br, b[:])
			n = int64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			_, err = io.ReadFull(r.br, b[:])
			n = int64(binary.BigEndian.Uint64(b[:]))
		}
		if err != nil {
			return 0, nil, err
		}
		p = make([]byte, n)
		if _, err := io.ReadFull(r.br, p); err != nil {
			return 0, nil, err
		}
		if op = h[0] & 0x0f; op >= 0x8 {
			return op, p, nil
		}
	}
}

// closed reads up to the server's close frame and returns its code and
// reason; the server must then close the connection once the client has
// answered (answer) or, when it does not, within the close handshake's 5
// seconds.
func (r *rawClient) closed(answer bool) (code int, reason string) {
	r.t.Helper()
	code, reason, err := r.tryClosed(answer, answer)
	if err != nil {
		r.t.Fatal(err)
	}
	return code, reason
}

// tryClosed is closed, with an error for the test to report; the server
// must close the connection at once (promptly) after the close frame,
// not when the close handshake's time has run out.
func (r *rawClient) tryClosed(answer, promptly bool) (code int, reason string, err error) {
	op, p, err := r.next()
	if err != nil {
		return 0, "", fmt.Errorf("want a close frame, got %w", err)
	}
	if op != 0x8 || len(p) < 2 {
		return 0, "", fmt.Errorf("want a close frame with a code, got opcode %#x % x", op, p)
	}
	code, reason = int(binary.BigEndian.Uint16(p)), string(p[2:])
	if answer {
		if _, err := r.c.Write(frame(0x88, p[:2], false)); err != nil {
			return code, reason, fmt.Errorf("answering the close frame: %w", err)
		}
	}
	start := time.Now()
	_ = r.c.SetReadDeadline(start.Add(8 * time.Second))
	if _, _, err := r.next(); !errors.Is(err, io.EOF) {
		return code, reason, fmt.Errorf("after the close frame: %w, want the connection closed", err)
	}
	if d := time.Since(start); promptly && d > 2*time.Second {
		return code, reason, fmt.Errorf("the server took %v to close after the client's close frame", d)
	}
	return code, reason, nil
}

// TestClientFrames holds the hub's reader of client frames to RFC 6455:
// pings are answered, a close is echoed, and a frame that breaks the
// protocol closes the socket with 1002, on both kinds of socket.
func TestClientFrames(t *testing.T) {
	t.Parallel()
	a := instanceOn(t, "postgres", live.Options{})
	id := a.createSession()
	text := func(fin bool, n int) []byte {
		b0 := byte(0x1)
		if fin {
			b0 |= 0x80
		}
		return frame(b0, bytes.Repeat([]byte("x"), n), false)
	}
	cont := func(fin bool, n int) []byte {
		b0 := byte(0x0)
		if fin {
			b0 |= 0x80
		}
		return frame(b0, bytes.Repeat([]byte("x"), n), false)
	}
	var wg sync.WaitGroup
	bigLength := []byte{0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4}
	for _, tc := range []struct {
		name   string
		send   [][]byte
		code   int
		reason string
		// unframed: what the client sends can no longer be read as
		// frames, and its close is not seen: the server closes when the
		// close handshake's time has run out.
		unframed bool
	}{
		{"unmasked", [][]byte{frame(0x89, nil, true)}, 1002, "client frame not masked", false},
		{"reserved bit", [][]byte{frame(0xc1, []byte("x"), false)}, 1002, "reserved bits set", false},
		{"unknown opcode", [][]byte{frame(0x83, nil, false)}, 1002, "unknown opcode", false},
		{"fragmented ping", [][]byte{frame(0x09, nil, false)}, 1002, "fragmented control frame", false},
		{"long ping", [][]byte{frame(0x89, make([]byte, 126), false)}, 1002, "control frame over 125 bytes", false},
		{"continuation first", [][]byte{cont(true, 3)}, 1002, "continuation frame outside a message", false},
		{"text inside a message", [][]byte{text(false, 3), text(true, 3)}, 1002, "new data message", false},
		{"length over 2^63", [][]byte{bigLength}, 1002, "frame length over 2^63", true},
		{"close of one byte", [][]byte{frame(0x88, []byte{3}, false)}, 1002, "close payload of one byte", false},
		{"close 1005", [][]byte{frame(0x88, []byte{0x03, 0xed}, false)}, 1002, "invalid close code", false},
		{"close 999", [][]byte{frame(0x88, []byte{0x03, 0xe7}, false)}, 1002, "invalid close code", false},
		{"close reason not UTF-8", [][]byte{frame(0x88, []byte{0x03, 0xe8, 0xff}, false)}, 1007, "close reason not UTF-8", false},
		{"client close", [][]byte{frame(0x88, []byte{0x0f, 0xa0, 'b', 'y', 'e'}, false)}, 4000, "", false},
		{"text", [][]byte{text(true, 10)}, 1008, "unexpected data message", false},
		{"fragments within the limit", [][]byte{text(false, 600), cont(false, 100), cont(true, 100)}, 1008, "unexpected data message", false},
		{"fragments past the limit", [][]byte{text(false, 600), cont(false, 600)}, 1009, "message too big", false},
		{"binary past the limit", [][]byte{frame(0x82, make([]byte, 70000), false)}, 1009, "message too big", false},
	} {
		for _, path := range []string{"/live", "/sessions/" + id + "/live"} {
			for _, hasty := range []bool{false, true} {
				wg.Go(func() {
					name := fmt.Sprintf("%s on %s, hasty %v", tc.name, path, hasty)
					var first []byte
					if hasty {
						first = bytes.Join(tc.send, nil)
					}
					r, err := tryDial(t, a, path, first)
					if err != nil {
						t.Errorf("%s: %v", name, err)
						return
					}
					if !hasty {
						if _, err := r.c.Write(bytes.Join(tc.send, nil)); err != nil {
							t.Errorf("%s: %v", name, err)
							return
						}
					}
					// A client that sent its close does not answer the
					// server's: the server's is the answer.
					last := tc.send[len(tc.send)-1]
					code, reason, err := r.tryClosed(last[0] != 0x88, !tc.unframed)
					if err != nil {
						t.Errorf("%s: %v", name, err)
					} else if code != tc.code || !strings.HasPrefix(reason, tc.reason) {
						t.Errorf("%s: closed with %d %q, want %d %q", name, code, reason, tc.code, tc.reason)
					}
				})
			}
		}
	}
	wg.Wait()
	waitFor(t, "every socket to be gone", func() bool { return a.hub.Stats().Connections.Load() == 0 })
}

// TestClientPings: a client's ping is answered with its payload, and a
// message the client sends in fragments is not taken for whole until its
// last: a ping between two fragments is answered, and only the last
// fragment closes the socket (1008).
func TestClientPings(t *testing.T) {
	t.Parallel()
	a := instanceOn(t, "postgres", live.Options{})
	r := rawDial(t, a, "/live", nil)
	for _, p := range []string{"", "abc", strings.Repeat("p", 125)} {
		r.send(frame(0x89, []byte(p), false))
		op, got, err := r.next()
		if err != nil || op != 0xa || string(got) != p {
			t.Fatalf("ping %q: answered with opcode %#x %q, %v; want a pong with its payload", p, op, got, err)
		}
	}
	r.send(frame(0x01, []byte("part"), false))
	r.send(frame(0x89, []byte("mid"), false))
	if op, got, err := r.next(); err != nil || op != 0xa || string(got) != "mid" {
		t.Fatalf("a ping inside a fragmented message: answered with %#x %q, %v", op, got, err)
	}
	r.send(frame(0x80, []byte("end"), false))
	if code, _ := r.closed(true); code != 1008 {
		t.Fatalf("a whole data message closed the socket with %d, want 1008", code)
	}
}

// TestCloseHandshakeBounded: a client that never answers the server's
// close frame has its connection closed within the handshake's 5 seconds,
// and one that stops reading and writing altogether is closed too.
func TestCloseHandshakeBounded(t *testing.T) {
	t.Parallel()
	a := instanceOn(t, "postgres", live.Options{})
	r := rawDial(t, a, "/live", nil)
	r.send(frame(0x81, []byte("x"), false))
	start := time.Now()
	if code, _ := r.closed(false); code != 1008 {
		t.Fatalf("closed with %d, want 1008", code)
	}
	if d := time.Since(start); d < 4*time.Second {
		t.Errorf("closed after %v, before the client had its 5 seconds to answer", d)
	}
	waitFor(t, "the socket to be gone", func() bool { return a.hub.Stats().Connections.Load() == 0 })
}

// TestUnansweredPings: a client that has not answered the hub's ping
// within the write timeout is closed at the next ping, a PingInterval
// later; one that answers stays.
func TestUnansweredPings(t *testing.T) {
	t.Parallel()
	pc := storetest.PoolConfig(t)
	const interval = time.Minute
	const writeTimeout = 200 * time.Millisecond
	clock := new(fakeClock)
	a := startInstance(t, pc, live.Options{PingInterval: interval, WriteTimeout: writeTimeout, After: clock.After})
	stats := a.hub.Stats()
	clock.awaitWait(t, interval/2, "the ping clock's first tick")
	quiet := rawDial(t, a, "/live", nil)
	answers := rawDial(t, a, "/live", nil)
	waitFor(t, "both sockets to be open", func() bool { return stats.Connections.Load() == 2 })
	pinged := 0
	for step := 0; pinged < 2; step++ {
		if step > 12 {
			t.Fatalf("%d pings in %d half PingIntervals", pinged, step)
		}
		before := stats.Pings.Load()
		clock.Advance(interval / 2)
		clock.awaitWait(t, interval/2, "the ping clock's next tick")
		if stats.Pings.Load() == before {
			continue
		}
		pinged++
		op, p, err := answers.next()
		if err != nil || op != 0x9 {
			t.Fatalf("ping %d: %#x %v", pinged, op, err)
		}
		// The pong, then a ping of the client's: its pong says that the
		// server has read the one before.
		answers.send(frame(0x8a, p, false))
		answers.send(frame(0x89, []byte("seen?"), false))
		if op, _, err := answers.next(); err != nil || op != 0xa {
			t.Fatalf("the client's ping: %#x %v", op, err)
		}
		if pinged == 1 {
			if op, _, err := quiet.next(); err != nil || op != 0x9 {
				t.Fatalf("the quiet socket's first ping: %#x %v", op, err)
			}
			time.Sleep(2 * writeTimeout)
		}
	}
	if _, _, err := quiet.next(); !errors.Is(err, io.EOF) {
		t.Fatalf("a socket that did not answer its ping: %v, want it closed", err)
	}
	waitFor(t, "the quiet socket to be gone", func() bool { return stats.Connections.Load() == 1 })
}

// FuzzClientFrames sends what a hostile client may after its handshake:
// the server answers only with well-formed frames (pongs, a close) and
// never lets the socket outlive the close handshake.
func FuzzClientFrames(f *testing.F) {
	f.Add(frame(0x89, []byte("hi"), false))
	f.Add(frame(0x88, []byte{0x03, 0xe8}, false))
	f.Add(frame(0x81, []byte("hello"), true))
	f.Add(append(frame(0x01, []byte("a"), false), frame(0x80, []byte("b"), false)...))
	f.Add([]byte{0x82, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x8a, 0x80})
	a := instanceOn(f, "postgres", live.Options{})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := rawDial(t, a, "/live", data)
		// Half-close: the server reads to the end of what was sent and
		// then sees EOF, which ends the socket if nothing else did.
		_ = r.c.(*net.TCPConn).CloseWrite()
		_ = r.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for {
			op, _, err := r.next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				t.Fatalf("%v after sending % x", err, data)
			}
			if op != 0x8 && op != 0xa {
				t.Fatalf("the server sent opcode %#x", op)
			}
		}
	})
}
