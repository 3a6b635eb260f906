package live

import (
	"net/http"
	"sync"

	"github.com/tack-dev/tack/internal/auth"
)

// hold is a long-lived response the hub does not serve itself: MCP's
// stream of server notifications (GET /mcp). It holds a descriptor as long
// as a socket does, so it takes a socket's place against the same caps,
// and it is ended as a socket is closed: when its credential is revoked or
// signed out, when an admin that opened it is an admin no longer, and when
// the hub closes.
type hold struct {
	principal, credential string
	admin                 bool
	end                   func()
	// opening marks a socket's own place while its handshake is answered
	// (accept): it is ended by a revocation, not by the hub's Close, which
	// the socket hears once it is registered.
	opening bool
}

// Hold takes a socket's place for the stream r opens, or refuses it as a
// socket past the caps is refused (429 or 503, Retry-After set on w). end
// is called, at most once and never under the hub's lock, when the stream
// must stop; release gives the place back when the stream has ended.
func (h *Hub) Hold(w http.ResponseWriter, r *http.Request, end func()) (release func(), err error) {
	id, _ := auth.From(r.Context())
	ho := &hold{principal: principalOf(r), credential: id.CredentialID, admin: id.Admin()}
	var once sync.Once
	ho.end = func() { once.Do(end) }
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, &Refusal{Status: http.StatusServiceUnavailable, Code: "unavailable",
			Message: "the server is shutting down; reconnect to another instance"}
	}
	if refused := h.overCap(ho.principal); refused != nil {
		h.mu.Unlock()
		w.Header().Set("Retry-After", "5")
		return nil, refused
	}
	h.sockets++
	h.held[ho.principal]++
	h.holds[ho] = struct{}{}
	h.mu.Unlock()
	var released sync.Once
	return func() {
		released.Do(func() {
			h.mu.Lock()
			delete(h.holds, ho)
			h.mu.Unlock()
			h.unhold(ho.principal)
		})
	}, nil
}

// endHolds ends the holds match picks, outside the lock.
func (h *Hub) endHolds(match func(*hold) bool) {
	h.mu.RLock()
	var ends []func()
	for ho := range h.holds {
		if match(ho) {
			ends = append(ends, ho.end)
		}
	}
	h.mu.RUnlock()
	for _, end := range ends {
		end()
	}
}
