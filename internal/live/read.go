package live

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
)

// The hub reads what a client sends itself, after the websocket library has
// answered the handshake: a client of the live protocol sends only control
// frames (pongs, its own pings, a close), and reading them takes a loop of
// a few dozen lines on a shallow stack, where the library's reader keeps a
// goroutine parked under its message reader, locks and contexts (4 KiB of
// stack per socket) and its connection's state besides. Every frame the
// server writes is framed by the hub already (see encode and corkWriter);
// so the library's connection is let go once the handshake is answered.

// The opcodes a client may send (RFC 6455, section 5.2), beside opClose.
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opPing         = 0x9
	opPong         = 0xa
)

// closeWait bounds a close handshake: how long the server waits for the
// client's close frame after writing its own (the websocket library's
// figure).
const closeWait = 5 * time.Second

// pingFrame is the ping the server writes to an idle socket: no payload.
var pingFrame = []byte{0x80 | opPing, 0}

// frameHeader is a client's frame header: clients mask every frame.
type frameHeader struct {
	fin    bool
	rsv    byte
	op     byte
	masked bool
	length int64
	mask   [4]byte
}

// errProtocol is a frame that breaks RFC 6455: the socket closes with 1002.
type errProtocol string

func (e errProtocol) Error() string { return string(e) }

// readHeader reads a frame's header from r.
func readHeader(r *bufio.Reader) (frameHeader, error) {
	var h frameHeader
	b0, err := r.ReadByte()
	if err != nil {
		return h, err
	}
	b1, err := r.ReadByte()
	if err != nil {
		return h, err
	}
	h.fin = b0&0x80 != 0
	h.rsv = b0 & 0x70
	h.op = b0 & 0x0f
	h.masked = b1&0x80 != 0
	var ext [8]byte
	switch n := b1 & 0x7f; n {
	case 126:
		if _, err := io.ReadFull(r, ext[:2]); err != nil {
			return h, err
		}
		h.length = int64(binary.BigEndian.Uint16(ext[:2]))
	case 127:
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return h, err
		}
		u := binary.BigEndian.Uint64(ext[:])
		if u>>63 != 0 {
			return h, errProtocol("frame length over 2^63")
		}
		h.length = int64(u)
	default:
		h.length = int64(n)
	}
	if h.masked {
		if _, err := io.ReadFull(r, h.mask[:]); err != nil {
			return h, err
		}
	}
	return h, nil
}

// check reports how h breaks the protocol for a frame a client sends to
// this server (no extension is ever agreed), "" when it does not.
func (h *frameHeader) check(inMessage bool) errProtocol {
	switch {
	case !h.masked:
		return errProtocol("client frame not masked")
	case h.rsv != 0:
		return errProtocol("reserved bits set, and no extension agreed")
	}
	switch h.op {
	case opClose, opPing, opPong:
		if !h.fin {
			return errProtocol("fragmented control frame")
		}
		if h.length > 125 {
			return errProtocol("control frame over 125 bytes")
		}
	case opText, opBinary:
		if inMessage {
			return errProtocol("new data message inside a fragmented one")
		}
	case opContinuation:
		if !inMessage {
			return errProtocol("continuation frame outside a message")
		}
	default:
		return errProtocol("unknown opcode")
	}
	return ""
}

// readPayload reads a control frame's payload (at most 125 bytes) and
// unmasks it.
func readPayload(r *bufio.Reader, h *frameHeader) ([]byte, error) {
	if h.length == 0 {
		return nil, nil
	}
	p := make([]byte, h.length)
	if _, err := io.ReadFull(r, p); err != nil {
		return nil, err
	}
	for i := range p {
		p[i] ^= h.mask[i&3]
	}
	return p, nil
}

// controlFrame is a server's (unmasked) control frame of op with payload p,
// at most 125 bytes.
func controlFrame(op byte, p []byte) []byte {
	f := make([]byte, 2, 2+len(p))
	f[0], f[1] = 0x80|op, byte(len(p))
	return append(f, p...)
}

// closePayload is the payload of a close frame with code and reason, the
// reason cut to what a control frame holds (on a rune's boundary).
func closePayload(code websocket.StatusCode, reason string) []byte {
	if code == websocket.StatusNoStatusRcvd {
		return nil
	}
	if len(reason) > 123 {
		reason = reason[:123]
		for len(reason) > 0 && !utf8.ValidString(reason) {
			reason = reason[:len(reason)-1]
		}
	}
	p := binary.BigEndian.AppendUint16(make([]byte, 0, 2+len(reason)), uint16(code))
	return append(p, reason...)
}

// validCloseCode reports whether a client may send code in a close frame
// (RFC 6455, section 7.4).
func validCloseCode(code uint16) bool {
	switch {
	case code >= 1000 && code <= 1003, code >= 1007 && code <= 1011:
		return true
	case code >= 3000 && code <= 4999:
		return true
	}
	return false
}

// readUntilClosed starts the socket's reader, which reads what the client
// sends until the socket closes, then marks the connection gone and wakes
// its writer to end it. It answers pings, notes pongs (see work) and the
// client's close. The protocol is server to client: a data message closes
// the socket with 1008 once it is whole, one over the read limit with 1009
// as soon as it is, and a frame that breaks the protocol with 1002.
func (c *conn) readUntilClosed() {
	go c.read()
}

func (c *conn) read() {
	defer func() {
		_ = c.cw.conn.Close()
		close(c.readDone)
		c.gone.Store(true)
		c.wake()
	}()
	var (
		inMessage bool
		size      int64 // of the data message read so far
	)
	for {
		h, err := readHeader(c.br)
		var pe errProtocol
		if errors.As(err, &pe) {
			// A length past what a frame may have: nothing after it can be
			// read as frames. What the client sends is read past until it
			// closes, or the close handshake's time runs out.
			c.sendClose(websocket.StatusProtocolError, string(pe))
			_, _ = io.Copy(io.Discard, c.br)
			return
		}
		if err != nil {
			return // closed, by either side, or the close handshake's time ran out
		}
		if broken := h.check(inMessage); broken != "" {
			// The frame's length is known: the frames after it can still
			// be read, the client's close among them.
			c.sendClose(websocket.StatusProtocolError, string(broken))
			if _, err := io.CopyN(io.Discard, c.br, h.length); err != nil {
				return
			}
			continue
		}
		switch h.op {
		case opPing:
			p, err := readPayload(c.br, &h)
			if err != nil {
				return
			}
			if !c.closeSent.Load() {
				_, _ = c.cw.Write(controlFrame(opPong, p))
			}
		case opPong:
			if _, err := readPayload(c.br, &h); err != nil {
				return
			}
			c.pingSent.Store(0)
		case opClose:
			p, err := readPayload(c.br, &h)
			if err != nil {
				return
			}
			c.sendClose(echoClose(p))
			return // the handshake is done: the server closes the connection
		default: // data; after the server's close frame only read past
			inMessage = !h.fin
			size += h.length
			if size > c.hub.opts.ReadLimit {
				c.sendClose(websocket.StatusMessageTooBig, "message too big")
			}
			if _, err := io.CopyN(io.Discard, c.br, h.length); err != nil {
				return
			}
			if h.fin {
				c.sendClose(websocket.StatusPolicyViolation, "unexpected data message: the protocol is server to client")
				size = 0
			}
		}
	}
}

// echoClose is the close frame the server answers a client's close
// payload p with: its code, or 1002 for a payload that breaks the protocol
// (1007 for a reason that is not UTF-8).
func echoClose(p []byte) (websocket.StatusCode, string) {
	switch {
	case len(p) == 0:
		return websocket.StatusNoStatusRcvd, ""
	case len(p) == 1:
		return websocket.StatusProtocolError, "close payload of one byte"
	}
	code := binary.BigEndian.Uint16(p)
	switch {
	case !validCloseCode(code):
		return websocket.StatusProtocolError, "invalid close code"
	case !utf8.Valid(p[2:]):
		return websocket.StatusInvalidFramePayloadData, "close reason not UTF-8"
	}
	return websocket.StatusCode(code), ""
}

// sendClose writes a close frame, once, and gives the client closeWait to
// answer with its own: the reader then closes the socket. It does not
// wait, and does nothing once a close frame has gone out.
func (c *conn) sendClose(code websocket.StatusCode, reason string) {
	if !c.closeSent.CompareAndSwap(false, true) {
		return
	}
	_ = c.cw.conn.SetReadDeadline(time.Now().Add(closeWait))
	if _, err := c.cw.Write(controlFrame(opClose, closePayload(code, reason))); err != nil {
		_ = c.cw.conn.Close()
	}
}

// close closes the socket with code and reason: it writes the close frame
// and waits for the client's answer, or for closeWait, as the websocket
// library's Close does. The reader must have started (readUntilClosed).
func (c *conn) close(code websocket.StatusCode, reason string) {
	c.sendClose(code, reason)
	<-c.readDone
}
