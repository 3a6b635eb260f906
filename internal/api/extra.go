package api

import (
	"log/slog"
	"net/http"
)

// WriteError answers err the way every API route does (the one error table
// of httpError), for handlers mounted through Options.Extra.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	(&Server{log: slog.Default()}).writeError(w, r, err)
}

// ValidSessionID reports whether id could name a session: the check every
// session route makes on its {id} before any store sees it. An id that
// cannot exist is simply not found.
func ValidSessionID(id string) bool {
	return id != "" && len(id) <= MaxSessionIDLength && printableASCII(id)
}
