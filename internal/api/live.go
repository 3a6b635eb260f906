package api

import (
	"math"
	"net/http"
)

// Live serves the live sockets (docs/live.md); *live.Hub is one. routes.go
// routes them behind the checks every route passes, so a handler here
// starts with a guarded, authenticated request and, for a session's
// socket, a session id that exists and is the principal's. Each returns an
// error only when it refused before the handshake was answered, and the
// server answers that like any other (writeError, in the server's log);
// once a socket is open, its close code tells the client.
type Live interface {
	// ServeSession upgrades r to the socket of session id, from the events
	// after `after`.
	ServeSession(w http.ResponseWriter, r *http.Request, id string, after int64) error
	// ServeFeed upgrades r to the feed of the principal's sessions.
	ServeFeed(w http.ResponseWriter, r *http.Request) error
	// Hold counts a long-lived response served here (an MCP stream) as a
	// socket, against the same caps, or refuses it as one: end is called
	// when it must stop (its credential revoked or signed out, its admin
	// demoted, the server shutting down), release when it has.
	Hold(w http.ResponseWriter, r *http.Request, end func()) (release func(), err error)
}

// remoteChanges is a Live that also hears the other instances' writes
// (*live.Hub does, through its carrier): the MCP subscribers hear them by
// it.
type remoteChanges interface {
	OnRemote(f func(sessions []string))
}

// statusError is an error that carries its own status and code, such as a
// live socket's refusal (live.Refusal): httpError answers it as it is.
type statusError interface {
	error
	HTTPStatus() (status int, code string)
}

// sessionLive is GET /sessions/{id}/live.
func (s *Server) sessionLive(w http.ResponseWriter, r *http.Request) {
	after, err := intParam(r, "after", 0, 0, math.MaxInt64)
	if err == nil {
		err = s.opts.Live.ServeSession(w, r, idOf(r), after)
	}
	if err != nil {
		s.writeError(w, r, err)
	}
}

// feedLive is GET /live.
func (s *Server) feedLive(w http.ResponseWriter, r *http.Request) {
	if err := s.opts.Live.ServeFeed(w, r); err != nil {
		s.writeError(w, r, err)
	}
}
