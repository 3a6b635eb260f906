package live

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/auth"
)

// Refusal is why a socket was refused before its handshake was answered:
// the HTTP status, error code and message the caller answers with (the API
// writes it as every error it answers, through HTTPStatus).
type Refusal struct {
	Status  int
	Code    string
	Message string
}

func (e *Refusal) Error() string { return e.Message }

// HTTPStatus is the status and error code to answer e with.
func (e *Refusal) HTTPStatus() (status int, code string) { return e.Status, e.Code }

// accept upgrades the request, checking its Origin: the server's own host,
// or one of the allowed origins. It refuses with 503 while shutting down
// and with a Refusal (refusal) when the websocket library refuses the
// handshake: those are for the caller to answer. A handshake that failed
// after its response was written returns neither a conn nor an error:
// there is nobody left to tell.
func (h *Hub) accept(w http.ResponseWriter, r *http.Request) (*conn, error) {
	principal := principalOf(r)
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, &Refusal{Status: http.StatusServiceUnavailable, Code: "unavailable",
			Message: "the server is shutting down; reconnect to another instance"}
	}
	if refused := h.overCap(principal); refused != nil {
		h.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		return nil, refused
	}
	// Until it is registered, the socket is a hold: a revocation or sign-out
	// that comes while the handshake is answered (the client may already
	// hold its 101) finds it there, and it closes as soon as it is
	// registered (opening).
	id, _ := auth.From(r.Context())
	op := &opening{}
	ho := &hold{principal: principal, credential: id.CredentialID, admin: id.Admin(), end: op.revoke, opening: true}
	h.sockets++
	h.held[principal]++
	h.holds[ho] = struct{}{}
	h.open.Add(1)
	h.mu.Unlock()
	hw := &handshakeWriter{ResponseWriter: w, timeout: h.opts.WriteTimeout}
	ws, err := websocket.Accept(hw, r, &websocket.AcceptOptions{OriginPatterns: h.opts.AllowedOrigins})
	if h.afterHandshake != nil {
		h.afterHandshake()
	}
	if err != nil {
		h.mu.Lock()
		delete(h.holds, ho)
		h.mu.Unlock()
		h.unhold(principal)
		h.open.Done()
		// A refusal is the client's doing (a foreign origin, a request that
		// is no websocket handshake), and a web page can make any number of
		// them: it is logged at DEBUG, never above, and answered with the
		// API's error shape.
		h.log.Debug("live: handshake refused", "path", r.URL.Path, "origin", r.Header.Get("Origin"), "err", err)
		if hw.refused != 0 {
			return nil, refusal(hw.refused, err)
		}
		return nil, nil
	}
	// The library's connection is let go: the hub frames what it writes
	// and reads the client's frames itself (see read). Closing it closes
	// nothing of the socket's (see handshakeWriter.Hijack).
	_ = ws.CloseNow()
	if !hw.buffered {
		hw.br.Reset(hw.cw.conn) // past the library's reader of nothing
	}
	c := &conn{hub: h, br: hw.br, readDone: make(chan struct{}), cw: hw.cw, principal: principal, credential: ho.credential, admin: ho.admin, writer: h.nextWriter()}
	c.wakes.Store(1) // the handler's: it writes until it calls run
	c.lastWrite.Store(h.ticks.Load())
	h.mu.Lock()
	delete(h.holds, ho)
	h.conns[c] = struct{}{}
	h.mu.Unlock()
	h.stats.Connections.Add(1)
	op.opened(c)
	return c, nil
}

// opening is a socket between its handshake and its registration, when a
// revocation finds it among the holds: revoke and opened may come in
// either order, and whichever comes second closes the socket.
type opening struct {
	mu      sync.Mutex
	c       *conn
	revoked bool
}

func (o *opening) revoke() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.revoked = true
	if o.c != nil {
		go o.c.close(CodeRevoked, revokedReason)
	}
}

func (o *opening) opened(c *conn) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.c = c
	if o.revoked {
		go c.close(CodeRevoked, revokedReason)
	}
}

// overCap is the refusal of one more socket for principal past a cap of
// Options, nil when it may open; h.mu is held. One principal's sockets
// past its cap are its own doing (429); the server's past its own are
// everyone's, and a sign to go to another instance (503).
func (h *Hub) overCap(principal string) *Refusal {
	if limit := h.opts.MaxSocketsPerPrincipal; limit > 0 && h.held[principal] >= limit {
		return &Refusal{Status: http.StatusTooManyRequests, Code: "rate_limited",
			Message: fmt.Sprintf("this principal has %d sockets open, the most it may; close one first", h.held[principal])}
	}
	if limit := h.opts.MaxSockets; limit > 0 && h.sockets >= limit {
		return &Refusal{Status: http.StatusServiceUnavailable, Code: "unavailable",
			Message: "this server has as many sockets open as it keeps descriptors for; retry shortly or on another instance"}
	}
	return nil
}

// unhold gives back the place of a socket of principal's.
func (h *Hub) unhold(principal string) {
	h.mu.Lock()
	h.sockets--
	if h.held[principal]--; h.held[principal] <= 0 {
		delete(h.held, principal)
	}
	h.mu.Unlock()
}

// refusal is the Refusal for a handshake the websocket library refused
// with status.
func refusal(status int, err error) *Refusal {
	msg := strings.TrimPrefix(err.Error(), "failed to accept WebSocket connection: ")
	code := "invalid"
	switch status {
	case http.StatusForbidden:
		code = "forbidden"
	case http.StatusUpgradeRequired:
		code = "upgrade_required"
		msg = "this route is a websocket: " + msg
	case http.StatusMethodNotAllowed:
		code = "method_not_allowed"
	default:
		if status >= 500 {
			code = "internal"
		}
	}
	return &Refusal{Status: status, Code: code, Message: msg}
}

// handshakeWriter is the response writer the websocket library accepts on.
// It keeps a refused handshake's status and drops the library's text/plain
// body, so that the refusal is answered with the API's JSON error instead.
//
// It also keeps what the hub reads and writes the socket through once the
// library's connection is let go: a reader with a smaller buffer than
// net/http's 4 KiB (a client only ever sends control frames), and the
// corkWriter, which gathers a run of messages in a pooled buffer.
type handshakeWriter struct {
	http.ResponseWriter
	refused int
	timeout time.Duration // the corkWriter's
	cw      *corkWriter
	// br is the socket's reader; buffered whether the client's first
	// frames came with the handshake, in net/http's reader.
	br       *bufio.Reader
	buffered bool
}

func (w *handshakeWriter) WriteHeader(status int) {
	if status != http.StatusSwitchingProtocols {
		w.refused = status
		return
	}
	w.ResponseWriter.WriteHeader(status)
}

func (w *handshakeWriter) Write(p []byte) (int, error) {
	if w.refused != 0 {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

func (w *handshakeWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// What the client sent right after the 101 may already sit in
	// net/http's reader. It must sit in the buffer of the reader handed
	// on, not behind it: the websocket library keeps only that reader's
	// buffered bytes and reads the socket itself after them. That reader
	// is the one the hub reads the client's frames with (see read).
	// A client sends only control frames, a pong every ping interval: the
	// reader's buffer is as small as bufio makes one, and a pong takes a
	// read or two. It is only ever read byte by byte or in full (never a
	// Peek beyond what is buffered), so that any size will do.
	var r *bufio.Reader
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		r = bufio.NewReaderSize(io.MultiReader(bytes.NewReader(bytes.Clone(b)), conn), max(readBuffer, n))
		_, _ = r.Peek(n)
	} else {
		r = bufio.NewReaderSize(conn, readBuffer)
	}
	w.cw = &corkWriter{conn: conn, timeout: w.timeout, raw: rawConn(conn)}
	w.br, w.buffered = r, brw.Reader.Buffered() > 0
	// The library writes nothing once it has answered the handshake (the
	// 101 goes through the ResponseWriter): its writer is the least bufio
	// makes.
	return keptConn{conn}, bufio.NewReadWriter(r, bufio.NewWriterSize(w.cw, readBuffer)), nil
}

// keptConn is the socket as the websocket library sees it: the hub keeps
// it past the library's connection, which closes it when let go.
type keptConn struct{ net.Conn }

func (keptConn) Close() error { return nil }

// readBuffer is the size of a socket's read buffer, bufio's least.
const readBuffer = 16
