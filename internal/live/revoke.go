package live

import "github.com/coder/websocket"

// CodeRevoked closes a socket whose token was revoked or whose sign-in
// ended, or that an admin opened who is an admin no longer.
const CodeRevoked websocket.StatusCode = 4401

// Credentials lists the credential ids of the open sockets and holds, each
// once.
func (h *Hub) Credentials() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	seen := map[string]bool{"": true}
	var ids []string
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for c := range h.conns {
		add(c.credential)
	}
	for ho := range h.holds {
		add(ho.credential)
	}
	return ids
}

// CloseCredential closes every socket opened with the credential id, with
// CodeRevoked, and ends every hold of it.
func (h *Hub) CloseCredential(id string) {
	if id == "" {
		return
	}
	h.closeWhere(func(c *conn) bool { return c.credential == id }, func(ho *hold) bool { return ho.credential == id }, revokedReason)
}

// revokedReason is the close reason of a socket whose credential ended.
const revokedReason = "credential revoked or signed out"

// Admins lists the principals that hold sockets or holds they opened as
// admins, each once.
func (h *Hub) Admins() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	seen := map[string]bool{}
	var ids []string
	add := func(admin bool, id string) {
		if admin && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	for c := range h.conns {
		add(c.admin, c.principal)
	}
	for ho := range h.holds {
		add(ho.admin, ho.principal)
	}
	return ids
}

// CloseAdmin closes, with CodeRevoked, the sockets principal opened as an
// admin, and ends its holds so opened: it is an admin no longer, and they
// carry sessions of others. Its client opens them again, narrowed to its
// own sessions.
func (h *Hub) CloseAdmin(principal string) {
	h.closeWhere(func(c *conn) bool { return c.admin && c.principal == principal }, func(ho *hold) bool { return ho.admin && ho.principal == principal }, "no longer an admin")
}

// closeWhere closes the sockets matchConn picks, with CodeRevoked, and
// ends the holds matchHold picks. Both are picked under one lock: a socket
// registered meanwhile moves from the holds to the conns at once (accept),
// so it is found in one or the other.
func (h *Hub) closeWhere(matchConn func(*conn) bool, matchHold func(*hold) bool, reason string) {
	h.mu.RLock()
	var (
		conns []*conn
		ends  []func()
	)
	for c := range h.conns {
		if matchConn(c) {
			conns = append(conns, c)
		}
	}
	for ho := range h.holds {
		if matchHold(ho) {
			ends = append(ends, ho.end)
		}
	}
	h.mu.RUnlock()
	for _, c := range conns {
		go c.close(CodeRevoked, reason)
	}
	for _, end := range ends {
		end()
	}
}
