package api

import (
	"errors"
	"net/http"
	"net/netip"
	"net/url"
	"strings"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/store"
)

// The middleware that decides who a request acts as: a bearer token, a
// browser's sign-in cookie, or the local principal of -auth local. The
// limits it keeps are in limits.go, the sign-in routes in signins.go.

// CookieName names the browser sign-in cookie.
const CookieName = "tack_signin"

// AuthOptions configure who may use the API (docs/security.md).
type AuthOptions struct {
	// Service, when set, is -auth token: every route but the public ones
	// (health, readiness, signing in and out, the sign-in page and the UI's
	// assets) needs a bearer token or a signed-in browser. Nil is
	// -auth local: every request acts as the built-in local principal.
	Service *auth.Service
	// SecureCookie marks the sign-in cookie Secure even on plain HTTP
	// requests: the server sits behind a TLS proxy (-public-url https://…).
	SecureCookie bool
	// PublicOrigin is the origin browsers use (scheme://host[:port]) when
	// it is not the Host the server sees; a signed-in browser's requests
	// from any other origin are refused.
	PublicOrigin string
	// WriteRate is the sustained writes per second each principal may make
	// and WriteBurst how many at once; 0 means no limit.
	WriteRate  float64
	WriteBurst int
	// LoginRate is the sustained POST /login attempts per second each
	// client address may make and LoginBurst how many at once; GuessRate
	// and GuessBurst bound the same way the failures (unknown, revoked or
	// expired tokens, cookies and links) of one credential from an
	// address, and GuessSpread times them all of an address's failures:
	// one bad credential, retried, starves none of the good ones. 0 means
	// no limit; cmd/server sets the documented defaults.
	LoginRate  float64
	LoginBurst int
	GuessRate  float64
	GuessBurst int
	// OnSignOut is called with each credential id that stopped being
	// valid through this server (a sign-out), to close its sockets.
	OnSignOut func(credentialID string)
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// address the limits above are kept by; any other peer's is ignored.
	TrustedProxies []netip.Prefix
}

// authenticate is the one place a request's identity is decided. Every
// route but the public ones routes.go lists first passes through it (the
// route table test walks the router to hold every route to that). It
// answers 401 without a valid credential (a browser asking for a page goes
// to /login instead), 403 for a signed-in browser's request sent by another site and
// for a write with a read scope, and names the principal in the request log
// (observe writes it).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cred := s.presented(r)
		if cred != "" && s.guessesOver(w, r, cred) {
			return
		}
		id, err := s.identify(r)
		if cred != "" && isUnauthenticated(err) {
			s.chargeGuess(r, cred)
		}
		if err != nil {
			var e *Error
			if errors.As(err, &e) && e.Status == http.StatusUnauthorized && wantsPage(r) {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			s.writeError(w, r, err)
			return
		}
		if !safeMethod(r.Method) && !writesPerCall(r) {
			if err := readOnly(id); err != nil {
				s.writeError(w, r, err)
				return
			}
		}
		c := requestContextOf(r)
		if c == nil {
			next.ServeHTTP(w, r.WithContext(auth.With(r.Context(), id)))
			return
		}
		c.info.identity, c.info.identified = id, true // for the request's log line
		// auth.From finds it on the request's context (reqctx.go).
		if s.opts.Auth.Service == nil {
			c.identity = localIdentity
		} else {
			c.identity = id
		}
		next.ServeHTTP(w, r)
	})
}

// localIdentity is auth.Local, boxed once: every request of -auth local
// acts as it.
var localIdentity any = auth.Local

// readOnly refuses a write to a read scope.
func readOnly(id auth.Identity) error {
	if id.CanWrite() {
		return nil
	}
	return errorf(http.StatusForbidden, "forbidden", "this %s has the read scope; writing needs a write token", credentialNoun(id))
}

// writesPerCall reports whether r is a route whose requests are not each a
// write: /mcp, where one POST may read and the next write (JSON-RPC).
// Its write calls pass readOnly and writeLimited themselves (mcp.go).
func writesPerCall(r *http.Request) bool { return r.URL.Path == mcpPath }

// identify returns the request's identity from its bearer token or sign-in
// cookie, or the local principal in -auth local.
func (s *Server) identify(r *http.Request) (auth.Identity, error) {
	svc := s.opts.Auth.Service
	if svc == nil {
		return auth.Local, nil
	}
	unauth := errorf(http.StatusUnauthorized, "unauthenticated", "this route needs a token (Authorization: Bearer tack_…) or a signed-in browser")
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, ok := strings.Cut(h, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") {
			return auth.Identity{}, unauth
		}
		id, err := svc.Token(r.Context(), strings.TrimSpace(token))
		if errors.Is(err, auth.ErrUnauthenticated) {
			return auth.Identity{}, errorf(http.StatusUnauthorized, "unauthenticated", "the token is unknown or revoked")
		}
		return id, err
	}
	c, err := r.Cookie(CookieName)
	if err != nil {
		return auth.Identity{}, unauth
	}
	// SameSite=Strict keeps browsers from sending the cookie on another
	// site's requests; this refuses the ones that still say they are.
	if s.crossSite(r) {
		return auth.Identity{}, errorf(http.StatusForbidden, "forbidden", "a signed-in browser's requests must come from Tack's own pages")
	}
	id, err := svc.Cookie(r.Context(), c.Value)
	if errors.Is(err, auth.ErrUnauthenticated) {
		return auth.Identity{}, errorf(http.StatusUnauthorized, "unauthenticated", "the sign-in has ended; sign in again at /login")
	}
	return id, err
}

// presented is the token or sign-in cookie r comes with for identify to
// check (in -auth token), "" for none.
func (s *Server) presented(r *http.Request) string {
	if s.opts.Auth.Service == nil {
		return ""
	}
	if h := r.Header.Get("Authorization"); h != "" {
		return h
	}
	if c, err := r.Cookie(CookieName); err == nil {
		return "cookie\x00" + c.Value
	}
	return ""
}

func isUnauthenticated(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Status == http.StatusUnauthorized
}

// crossSite reports whether the browser says another origin sent r. It is
// the sign-in cookie's own rule, on top of the guard's CSRF check
// (CrossOriginProtection) rather than a copy of it, and stricter: it holds
// reads too, refuses Sec-Fetch-Site same-site whatever the Origin (a
// SameSite=Strict cookie still travels on those), and compares Origin even
// beside Sec-Fetch-Site same-origin. A bearer token, which no page sends on
// its own, needs only the guard's.
func (s *Server) crossSite(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return true
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	if s.opts.Auth.PublicOrigin != "" && strings.EqualFold(origin, s.opts.Auth.PublicOrigin) {
		return false
	}
	u, err := url.Parse(origin)
	return err != nil || !strings.EqualFold(u.Host, r.Host)
}

func credentialNoun(id auth.Identity) string {
	if id.Kind == store.KindCookie {
		return "sign-in"
	}
	return "token"
}

// wantsPage reports whether r is a browser navigating to a page.
func wantsPage(r *http.Request) bool {
	return r.Method == http.MethodGet && r.Header.Get("Authorization") == "" &&
		strings.Contains(r.Header.Get("Accept"), "text/html")
}

// identity is the identity authenticate put on r.
func identity(r *http.Request) auth.Identity {
	id, _ := auth.From(r.Context())
	return id
}
