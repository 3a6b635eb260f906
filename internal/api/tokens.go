package api

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/go-chi/chi/v5"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/store"
)

// The token routes let a principal manage its own tokens through a running
// server: a signed-in person makes a token for their harness ("laptop"),
// so that the sessions its agents make are theirs, or revokes one, without
// stopping a server that holds its SQLite store. Tokens of other
// principals (and new principals) are `tack token` on the store.

type createTokenRequest struct {
	// Name says what the token is for ("laptop"); the token is always the
	// caller's own.
	Name  *string `json:"name"`
	Scope *string `json:"scope"`
}

type createdToken struct {
	store.Token
	Secret string `json:"token"`
}

// listTokens is GET /tokens: the caller's tokens, revoked ones included.
func (s *Server) listTokens(w http.ResponseWriter, r *http.Request) {
	svc := s.accountsService(w, r)
	if svc == nil {
		return
	}
	mine, err := ownTokens(r, svc)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": mine})
}

// ownTokens is the request's principal's tokens, revoked ones included.
func ownTokens(r *http.Request, svc *auth.Service) ([]store.Token, error) {
	all, err := svc.Store.Tokens(r.Context())
	if err != nil {
		return nil, err
	}
	me := identity(r).Principal.ID
	mine := []store.Token{}
	for _, t := range all {
		if t.PrincipalID == me {
			mine = append(mine, t)
		}
	}
	return mine, nil
}

// createToken is POST /tokens {"scope"?, "name"?}: a new token of the
// caller's principal, named name, shown once.
func (s *Server) createToken(w http.ResponseWriter, r *http.Request) {
	svc := s.accountsService(w, r)
	if svc == nil {
		return
	}
	var req createTokenRequest
	if err := decodeStrict(bodyOf(r), &req, true); err != nil {
		s.writeError(w, r, err)
		return
	}
	id := identity(r)
	label := ""
	if req.Name != nil {
		label = strings.TrimSpace(*req.Name)
		if utf8.RuneCountInString(label) > auth.MaxNameChars || !printableText(label) {
			s.writeError(w, r, errorf(http.StatusUnprocessableEntity, "invalid", "`name` must be at most %d printable characters", auth.MaxNameChars))
			return
		}
	}
	scope := auth.Write
	if req.Scope != nil {
		scope = *req.Scope
	}
	if !auth.ValidScope(scope) {
		s.writeError(w, r, errorf(http.StatusUnprocessableEntity, "invalid", "`scope` must be read or write"))
		return
	}
	secret, tok, err := svc.CreateTokenFor(r.Context(), id.Principal, label, scope)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, createdToken{Token: tok, Secret: secret})
}

// revokeToken is DELETE /tokens/{id}: revokes one of the caller's tokens
// and closes its sockets here, and those of the browsers signed in with
// it, whose sign-ins end with it; another principal's token is not found.
func (s *Server) revokeToken(w http.ResponseWriter, r *http.Request) {
	svc := s.accountsService(w, r)
	if svc == nil {
		return
	}
	tokenID := chi.URLParam(r, "id")
	mine, err := ownTokens(r, svc)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	owned := slices.ContainsFunc(mine, func(t store.Token) bool { return t.ID == tokenID })
	if !owned {
		s.writeError(w, r, errorf(http.StatusNotFound, "not_found", "no token %q of yours", tokenID))
		return
	}
	signIns, err := svc.Store.SignIns(r.Context(), identity(r).Principal.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	tok, err := svc.Store.RevokeToken(r.Context(), tokenID)
	if errors.Is(err, store.ErrNotFound) {
		err = errorf(http.StatusNotFound, "not_found", "no token %q of yours", tokenID)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.opts.Auth.OnSignOut != nil {
		s.opts.Auth.OnSignOut(tok.ID)
		for _, si := range signIns {
			if si.TokenID == tok.ID {
				s.opts.Auth.OnSignOut(si.ID)
			}
		}
	}
	writeJSON(w, http.StatusOK, tok)
}
