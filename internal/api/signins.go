package api

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// The sign-in routes: signing a browser in (a token or a one-time link's
// code) and out, who a request acts as, the browsers a principal is signed
// in on and ending one (a lost laptop), and, for an admin, who uses the
// instance. Under -auth local there is nothing to sign in to.

type loginRequest struct {
	Token *string `json:"token"`
	Code  *string `json:"code"`
}

type whoami struct {
	Principal store.Principal `json:"principal"`
	Scope     string          `json:"scope"`
	Via       string          `json:"via"`
	Auth      string          `json:"auth"`
	ExpiresAt *time.Time      `json:"expiresAt,omitempty"`
}

func (s *Server) authMode() string {
	if s.opts.Auth.Service == nil {
		return "local"
	}
	return "token"
}

// login signs a browser in with a token or a one-time link's code and sets
// the sign-in cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	svc := s.opts.Auth.Service
	if svc == nil {
		s.writeError(w, r, errorf(http.StatusNotFound, "not_found", "this server runs -auth local: there is nothing to sign in to"))
		return
	}
	// Every attempt counts against the client address, and a guess needs
	// a guess left: a sign-in is a row, and a token a secret to find.
	if wait, over := s.logins.take(s.clientAddr(r)); over {
		s.tooMany(w, r, wait, "too many sign-ins from this address")
		return
	}
	var req loginRequest
	if err := decodeStrict(bodyOf(r), &req, false); err != nil {
		s.writeError(w, r, err)
		return
	}
	cred := "login\x00"
	if req.Token != nil {
		cred += strings.TrimSpace(*req.Token)
	} else if req.Code != nil {
		cred += "code\x00" + *req.Code
	}
	if s.guessesOver(w, r, cred) {
		return
	}
	var (
		si  auth.SignIn
		err error
	)
	switch {
	case (req.Token == nil) == (req.Code == nil):
		err = errorf(http.StatusBadRequest, "invalid", "give exactly one of `token` and `code`")
	case req.Token != nil:
		si, err = svc.SignInWithToken(r.Context(), strings.TrimSpace(*req.Token))
	default:
		si, err = svc.SignInWithLink(r.Context(), *req.Code)
	}
	if errors.Is(err, auth.ErrUnauthenticated) {
		s.chargeGuess(r, cred)
		err = errorf(http.StatusUnauthorized, "unauthenticated", "that token or sign-in link is unknown, revoked, used or expired")
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c := s.signInCookie(r, si.Secret)
	c.Expires, c.MaxAge = si.Expires, int(time.Until(si.Expires).Seconds())
	http.SetCookie(w, c)
	s.log.InfoContext(r.Context(), "signed in", "principal", si.Identity.Principal.ID, "name", si.Identity.Principal.Name, "scope", si.Identity.Scope)
	writeJSON(w, http.StatusOK, whoami{Principal: si.Identity.Principal, Scope: si.Identity.Scope, Via: store.KindCookie, Auth: "token", ExpiresAt: &si.Expires})
}

// logout ends the browser's sign-in, if any, closes its sockets and clears
// the cookie. It answers 204 whether or not there was one.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if svc := s.opts.Auth.Service; svc != nil {
		if c, err := r.Cookie(CookieName); err == nil && !s.crossSite(r) {
			if id, err := svc.Cookie(r.Context(), c.Value); err == nil {
				if err := svc.SignOut(r.Context(), id); err != nil {
					s.writeError(w, r, err)
					return
				}
				if s.opts.Auth.OnSignOut != nil {
					s.opts.Auth.OnSignOut(id.CredentialID)
				}
				s.log.InfoContext(r.Context(), "signed out", "principal", id.Principal.ID, "name", id.Principal.Name)
			}
		}
	}
	c := s.signInCookie(r, "")
	c.MaxAge = -1
	http.SetCookie(w, c)
	w.WriteHeader(http.StatusNoContent)
}

// signInCookie is the sign-in cookie with value: the attributes that set
// it and the ones that clear it must be the same.
func (s *Server) signInCookie(r *http.Request, value string) *http.Cookie {
	return &http.Cookie{Name: CookieName, Value: value, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || s.opts.Auth.SecureCookie}
}

// me answers who the request acts as.
func (s *Server) me(w http.ResponseWriter, r *http.Request) {
	id := identity(r)
	// The built-in principal of -auth local is known by its id and name
	// alone; its row has when it was made.
	if id.Principal.CreatedAt.IsZero() {
		p, err := s.store.Principal(r.Context(), id.Principal.ID)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		id.Principal.CreatedAt = p.CreatedAt
	}
	writeJSON(w, http.StatusOK, whoami{Principal: id.Principal, Scope: id.Scope, Via: id.Kind, Auth: s.authMode()})
}

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
