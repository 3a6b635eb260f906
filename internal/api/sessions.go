package api

import (
	"context"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// sessionID checks the {id} path parameter once for every session route.
// An id that cannot exist is simply not found.
func (s *Server) sessionID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		if !validSessionID(id) {
			s.writeError(w, r, store.ErrNotFound)
			return
		}
		// A rename (PATCH, the one such route) is an admin's to make of
		// any session, as reading is.
		write := !safeMethod(r.Method) && r.Method != http.MethodPatch
		if err := s.ownSession(r.Context(), id, identity(r), write); err != nil {
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ownSession answers store.ErrNotFound unless session id is who's, to
// read, or to write when write is set. Another principal's session is not
// found, never forbidden: its existence is not theirs to learn. An admin
// reads (and renames) every session, and writes only its own.
func (s *Server) ownSession(ctx context.Context, id string, who auth.Identity, write bool) error {
	if !validSessionID(id) {
		return store.ErrNotFound
	}
	owner, err := s.sessionOwner(ctx, id)
	if err == nil && owner != who.Principal.ID {
		switch {
		case !who.Admin():
			err = store.ErrNotFound
		case write:
			err = errorf(http.StatusForbidden, "forbidden", "an admin reads every session but writes only its own")
		}
	}
	return err
}

// validSessionID reports whether id could name a session: printable ASCII
// of at most MaxSessionIDLength bytes.
func validSessionID(id string) bool {
	return id != "" && len(id) <= MaxSessionIDLength && printableASCII(id)
}

// sessionOwner returns the principal that owns session id. A session's
// owner is set when it is made and never changes, so an owner once read is
// remembered, and a request to a known session costs no round trip for it.
// Only sessions found are remembered: one not found may be made next by
// another instance, and is read again each time.
func (s *Server) sessionOwner(ctx context.Context, id string) (string, error) {
	if owner, ok := s.owners.Get(id); ok {
		return owner, nil
	}
	// sessionID runs before the store deadline (routes.go), which the
	// session's socket does without: the read is bounded as the deadline
	// bounds a request's store work.
	ctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	owner, err := s.store.SessionOwner(ctx, id)
	if err == nil {
		s.owners.Add(id, owner, ownerSize(id, owner))
	}
	return owner, err
}

// printableASCII reports whether s holds only printable ASCII without
// spaces, as every session id and Idempotency-Key does. Anything else (a NUL, bytes that are not
// UTF-8) would not even reach the database as text.
func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// idOf is the session id of a route under sessionID, which checked it.
func idOf(r *http.Request) string { return chi.URLParam(r, "id") }

type createSessionRequest struct {
	Title              *string `json:"title"`
	ParallelInProgress *bool   `json:"parallelInProgress"`
	ExternalKey        *string `json:"externalKey"`
	Agent              *string `json:"agent"`
	Cwd                *string `json:"cwd"`
	ParentID           *string `json:"parentId"`
	PlanLifetime       *string `json:"planLifetime"`
}

// agentFields checks what a new session says of its agent into ns: each
// field null or absent is none.
func agentFields(req createSessionRequest, ns *store.NewSession) error {
	if req.Agent != nil {
		ns.Agent = *req.Agent
		if ns.Agent == "" || len(ns.Agent) > MaxAgentBytes || !printableText(ns.Agent) {
			return errorf(http.StatusUnprocessableEntity, "invalid", "`agent` must be 1 to %d bytes of printable text", MaxAgentBytes)
		}
	}
	if req.Cwd != nil {
		ns.Cwd = *req.Cwd
		if ns.Cwd == "" || len(ns.Cwd) > MaxCwdBytes || strings.ContainsRune(ns.Cwd, 0) || !utf8.ValidString(ns.Cwd) {
			return errorf(http.StatusUnprocessableEntity, "invalid", "`cwd` must be 1 to %d bytes without NUL characters", MaxCwdBytes)
		}
	}
	if req.ParentID != nil {
		// An id that cannot exist names no session, as at /sessions/{id}.
		if ns.ParentID = *req.ParentID; !validSessionID(ns.ParentID) {
			return store.ErrNoParent
		}
	}
	if req.PlanLifetime != nil {
		ns.PlanLifetime = *req.PlanLifetime
		if ns.PlanLifetime != projection.PlanTurn && ns.PlanLifetime != projection.PlanSession {
			return errorf(http.StatusUnprocessableEntity, "invalid", "`planLifetime` must be %q or %q", projection.PlanTurn, projection.PlanSession)
		}
	}
	return nil
}

// printableText reports whether s is text with no control characters
// (unicode.IsPrint: letters, marks, numbers, punctuation, symbols, space).
func printableText(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return utf8.ValidString(s)
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	body := bodyOf(r)
	var req createSessionRequest
	if err := decodeStrict(body, &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	// A title that shows nothing, like a missing one, is no title: the
	// session is untitled until its first prompt.
	var title string
	if req.Title != nil && !projection.Blank(*req.Title) {
		var err error
		if title, err = checkTitle(*req.Title); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	ns := store.NewSession{Title: title, ParallelInProgress: req.ParallelInProgress, Owner: identity(r).Principal.ID}
	if err := agentFields(req, &ns); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.ExternalKey != nil {
		ns.ExternalKey = *req.ExternalKey
		if ns.ExternalKey == "" || len(ns.ExternalKey) > MaxExternalKeyBytes || strings.ContainsRune(ns.ExternalKey, 0) || !utf8.ValidString(ns.ExternalKey) {
			s.writeError(w, r, errorf(http.StatusUnprocessableEntity, "invalid", "`externalKey` must be a non-empty string of at most %d bytes without NUL characters", MaxExternalKeyBytes))
			return
		}
	}
	sess, created, err := s.store.CreateSession(r.Context(), ns)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Made or found by its external key among this principal's sessions:
	// either way its owner is this principal.
	s.owners.Add(sess.ID, ns.Owner, ownerSize(sess.ID, ns.Owner))
	w.Header().Set("Location", "/sessions/"+sess.ID)
	if !created {
		// The session this key names already exists: it is answered as it
		// is, so a repeated import finds its session rather than making one
		// (a subagent's titled by the task given, see store.NewSession).
		if titledChild(ns, sess) && s.opts.OnAppend != nil {
			s.opts.OnAppend(sess.ID, store.AppendResult{Session: sess})
		}
		writeJSON(w, http.StatusOK, sess)
		return
	}
	if s.opts.OnAppend != nil {
		s.opts.OnAppend(sess.ID, store.AppendResult{Session: sess})
	}
	writeJSON(w, http.StatusCreated, sess)
}

// checkTitle checks a title a person or harness gives, trimmed: one line
// without control characters or bidirectional controls (a line break
// would let it pose as more than a title wherever it is shown or quoted,
// an override would reorder what is shown around it), of at most
// MaxTitleChars.
func checkTitle(title string) (string, error) {
	title = strings.TrimSpace(title)
	switch {
	case strings.ContainsRune(title, 0):
		return "", errorf(http.StatusUnprocessableEntity, "invalid", "`title` must not contain NUL characters")
	case !projection.TitleText(title):
		return "", errorf(http.StatusUnprocessableEntity, "invalid", "`title` must be one line without control characters or bidirectional controls")
	}
	if n := utf8.RuneCountInString(title); n > MaxTitleChars {
		return "", errorf(http.StatusUnprocessableEntity, "invalid", "`title` must be at most %d characters, got %d", MaxTitleChars, n)
	}
	return title, nil
}

type renameSessionRequest struct {
	Title *string `json:"title"`
}

// renameSession serves PATCH /sessions/{id}: a person's title for the
// session, final (no prompt replaces it). Its owner or an admin renames it
// (sessionID lets an admin through for this route alone), and the
// session's subscribers and the feed hear of it.
func (s *Server) renameSession(w http.ResponseWriter, r *http.Request) {
	var req renameSessionRequest
	if err := decodeStrict(bodyOf(r), &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Title == nil || projection.Blank(*req.Title) {
		s.writeError(w, r, errorf(http.StatusUnprocessableEntity, "invalid", "`title` is required and must show something"))
		return
	}
	title, err := checkTitle(*req.Title)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	sess, err := s.store.Rename(r.Context(), idOf(r), title)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.opts.OnAppend != nil {
		s.opts.OnAppend(sess.ID, store.AppendResult{Session: sess})
	}
	writeJSON(w, http.StatusOK, sess)
}

type agentStatusRequest struct {
	Status *string `json:"status"`
	At     *string `json:"at"`
}

// setAgentStatus serves PUT /sessions/{id}/agent-status: what the agent's
// own registry says it is doing, busy or idle, and since when (`at`, the
// registry's own time; now when absent), as `tack watch` reads it. While
// no event is newer it decides working or idle; the session's owner alone
// sets it, and the session's subscribers and the feed hear of it.
func (s *Server) setAgentStatus(w http.ResponseWriter, r *http.Request) {
	var req agentStatusRequest
	if err := decodeStrict(bodyOf(r), &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	if req.Status == nil || (*req.Status != projection.AgentBusy && *req.Status != projection.AgentIdle) {
		s.writeError(w, r, errorf(http.StatusUnprocessableEntity, "invalid", "`status` must be %q or %q", projection.AgentBusy, projection.AgentIdle))
		return
	}
	now := store.Now()
	status := projection.AgentStatus{Status: *req.Status, At: now}
	if req.At != nil {
		at, err := time.Parse(time.RFC3339Nano, *req.At)
		if err != nil {
			s.writeError(w, r, errorf(http.StatusBadRequest, "invalid", "`at` must be an RFC 3339 time, got %q", *req.At))
			return
		}
		if at.Sub(now.Time) > projection.MaxAtAhead {
			s.writeError(w, r, errorf(http.StatusBadRequest, "invalid", "`at` %s is more than %s after its receipt", *req.At, projection.MaxAtAhead))
			return
		}
		status.At = projection.NewTime(at)
	}
	sess, err := s.store.SetAgentStatus(r.Context(), idOf(r), status)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.opts.OnAppend != nil {
		s.opts.OnAppend(sess.ID, store.AppendResult{Session: sess})
	}
	writeJSON(w, http.StatusOK, sess)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	limit, err := intParam(r, "limit", 50, 1, 200)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, err := searchParam(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	// Another principal's session has no children to this one: the owner
	// filter keeps them out, and an id that cannot exist has none.
	parent := r.URL.Query().Get("parent")
	if r.URL.Query().Has("parent") && !validSessionID(parent) {
		writeJSON(w, http.StatusOK, map[string]any{"sessions": []store.Session{}})
		return
	}
	list, next, err := s.store.FindSessions(r.Context(), store.SessionQuery{
		Owner: ownerOf(identity(r)), Title: q, Parent: parent, Limit: int(limit), Cursor: r.URL.Query().Get("cursor")})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	resp := map[string]any{"sessions": list}
	if next != "" {
		resp["nextCursor"] = next
	}
	writeJSON(w, http.StatusOK, resp)
}

// searchParam reads q, the text a title must hold: "" for none, at most
// MaxTitleChars characters (no title is longer), UTF-8 without NUL.
func searchParam(r *http.Request) (string, error) {
	q := r.URL.Query().Get("q")
	switch {
	case !utf8.ValidString(q):
		return "", errorf(http.StatusBadRequest, "invalid", "`q` must be UTF-8")
	case strings.ContainsRune(q, 0):
		return "", errorf(http.StatusBadRequest, "invalid", "`q` must not contain NUL characters")
	case utf8.RuneCountInString(q) > MaxTitleChars:
		return "", errorf(http.StatusBadRequest, "invalid", "`q` must be at most %d characters", MaxTitleChars)
	}
	return q, nil
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	sess, err := s.store.Session(r.Context(), idOf(r))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, sess)
}
