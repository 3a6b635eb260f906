package live

import "github.com/coder/websocket"

// CodeRevoked closes a socket whose token was revoked or whose sign-in
// ended.
const CodeRevoked websocket.StatusCode = 4401

// Credentials lists the credential ids of the open sockets, each once.
func (h *Hub) Credentials() []string {
	h.mu.RLock()
	defer h.mu.RUnlock()
	seen := map[string]bool{}
	var ids []string
	for c := range h.conns {
		if c.credential != "" && !seen[c.credential] {
			seen[c.credential] = true
			ids = append(ids, c.credential)
		}
	}
	return ids
}

// CloseCredential closes every socket opened with the credential id, with
// CodeRevoked.
func (h *Hub) CloseCredential(id string) {
	if id == "" {
		return
	}
	h.mu.RLock()
	var conns []*conn
	for c := range h.conns {
		if c.credential == id {
			conns = append(conns, c)
		}
	}
	h.mu.RUnlock()
	for _, c := range conns {
		go c.close(CodeRevoked, "credential revoked or signed out")
	}
}
