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
