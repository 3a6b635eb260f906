package api

import (
	"net/http"
	"slices"

	"github.com/go-chi/chi/v5"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// The sign-in routes list the browsers a principal is signed in on and end
// one (a lost laptop), and the principals route shows an admin who uses
// the instance. Under -auth local there are neither.

// signInView is a browser sign-in as GET /me/sign-ins shows it.
type signInView struct {
	ID        string          `json:"id"`
	Scope     string          `json:"scope"`
	CreatedAt projection.Time `json:"createdAt"`
	ExpiresAt projection.Time `json:"expiresAt"`
	TokenID   string          `json:"tokenId,omitempty"`
	Current   bool            `json:"current"`
}

// accountsService is the auth service of the token, sign-in and principal
// routes, or a 404 under -auth local, which has none of them.
func (s *Server) accountsService(w http.ResponseWriter, r *http.Request) *auth.Service {
	svc := s.opts.Auth.Service
	if svc == nil {
		s.writeError(w, r, errorf(http.StatusNotFound, "not_found", "this server runs -auth local: it has no tokens, sign-ins or principals"))
	}
	return svc
}

// listSignIns is GET /me/sign-ins: the caller's sign-ins that have not
// ended, newest first.
func (s *Server) listSignIns(w http.ResponseWriter, r *http.Request) {
	svc := s.accountsService(w, r)
	if svc == nil {
		return
	}
	id := identity(r)
	list, err := svc.Store.SignIns(r.Context(), id.Principal.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	views := make([]signInView, 0, len(list))
	for _, si := range list {
		views = append(views, signInView{ID: si.ID, Scope: si.Scope, TokenID: si.TokenID,
			CreatedAt: projection.NewTime(si.CreatedAt), ExpiresAt: projection.NewTime(si.ExpiresAt),
			Current: id.Kind == store.KindCookie && id.CredentialID == si.ID})
	}
	writeJSON(w, http.StatusOK, map[string]any{"signIns": views})
}

// endSignIn is DELETE /me/sign-ins/{id}: ends one of the caller's sign-ins
// and closes its sockets; another principal's is not found.
func (s *Server) endSignIn(w http.ResponseWriter, r *http.Request) {
	svc := s.accountsService(w, r)
	if svc == nil {
		return
	}
	signInID := chi.URLParam(r, "id")
	list, err := svc.Store.SignIns(r.Context(), identity(r).Principal.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if !slices.ContainsFunc(list, func(si store.SignIn) bool { return si.ID == signInID }) {
		s.writeError(w, r, errorf(http.StatusNotFound, "not_found", "no sign-in %q of yours", signInID))
		return
	}
	if err := svc.Store.DeleteSignIn(r.Context(), signInID); err != nil {
		s.writeError(w, r, err)
		return
	}
	if s.opts.Auth.OnSignOut != nil {
		s.opts.Auth.OnSignOut(signInID)
	}
	s.log.InfoContext(r.Context(), "sign-in ended", "signIn", signInID, "principal", identity(r).Principal.ID)
	w.WriteHeader(http.StatusNoContent)
}

// listPrincipals is GET /principals: every principal, for an admin.
func (s *Server) listPrincipals(w http.ResponseWriter, r *http.Request) {
	svc := s.accountsService(w, r)
	if svc == nil {
		return
	}
	if !identity(r).Admin() {
		s.writeError(w, r, errorf(http.StatusForbidden, "forbidden", "only an admin lists the principals"))
		return
	}
	list, err := svc.Store.Principals(r.Context())
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"principals": list})
}

// ownerOf is the owner a sessions query keeps: the caller's own sessions,
// or every one ("") for an admin.
func ownerOf(id auth.Identity) string {
	if id.Admin() {
		return ""
	}
	return id.Principal.ID
}
