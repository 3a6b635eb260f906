package api

import (
	"errors"
	"math"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/store"
)

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

// GuessSpread is how many times an address's failures of one credential
// it may fail with all its credentials together (AuthOptions.GuessRate).
const GuessSpread = 10

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
		if ri := infoOf(r); ri != nil {
			ri.identity, ri.identified = id, true // for the request's log line
		}
		next.ServeHTTP(w, r.WithContext(auth.With(r.Context(), id)))
	})
}

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

// guessesOver answers 429 when the request's client address has failed
// with credential cred more often than GuessRate and GuessBurst allow, or
// with all its credentials GuessSpread times that: the guess is not even
// checked. It reports whether it answered.
func (s *Server) guessesOver(w http.ResponseWriter, r *http.Request, cred string) bool {
	addr := s.clientAddr(r)
	wait, over := s.guesses.over(guessKey(addr, cred))
	if !over {
		wait, over = s.addrGuesses.over(addr)
	}
	if over {
		s.tooMany(w, r, wait, "too many failed credentials from this address")
	}
	return over
}

// chargeGuess counts a failure of credential cred from r's address.
func (s *Server) chargeGuess(r *http.Request, cred string) {
	addr := s.clientAddr(r)
	s.guesses.charge(guessKey(addr, cred))
	s.addrGuesses.charge(addr)
}

// guessKey is what one credential's failures from addr are kept by: its
// hash, not the secret itself.
func guessKey(addr, cred string) string { return addr + "\x00" + string(auth.Hash(cred)) }

// tooMany answers 429 rate_limited with Retry-After.
func (s *Server) tooMany(w http.ResponseWriter, r *http.Request, wait time.Duration, why string) {
	w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(wait.Seconds())))))
	s.writeError(w, r, errorf(http.StatusTooManyRequests, "rate_limited", "%s; retry after %s", why, wait.Round(time.Second)))
}

// clientAddr is the address the sign-in and guess limits are kept by: the
// peer's IP, or, when the peer is a trusted proxy (-trusted-proxy) that
// names the client in X-Forwarded-For, the last address it put there. An
// address further left is the client's own word and is never trusted, nor
// is the header of any other peer, a process on the same machine included.
func (s *Server) clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip, err := netip.ParseAddr(host); err == nil && s.trustedProxy(ip.Unmap()) {
		if fwd := r.Header.Values("X-Forwarded-For"); len(fwd) > 0 {
			last := fwd[len(fwd)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			if ip := net.ParseIP(strings.TrimSpace(last)); ip != nil {
				return ip.String()
			}
		}
	}
	return host
}

// trustedProxy reports whether ip is a peer whose X-Forwarded-For is taken.
func (s *Server) trustedProxy(ip netip.Addr) bool {
	for _, p := range s.opts.Auth.TrustedProxies {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// addrLimits hold one limiter per client address, of rate and burst; a
// zero rate limits nothing.
type addrLimits struct {
	rate  float64
	burst int
	mu    sync.Mutex
	m     map[string]*rate.Limiter
}

// maxAddrLimits bounds the addresses remembered: past it, the ones whose
// limiter is full again (no recent attempt) are forgotten.
const maxAddrLimits = 1 << 14

func (l *addrLimits) limiter(addr string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[string]*rate.Limiter{}
	}
	lim, ok := l.m[addr]
	if !ok {
		if len(l.m) >= maxAddrLimits {
			for a, old := range l.m {
				if old.Tokens() >= float64(l.burst) {
					delete(l.m, a)
				}
			}
			if len(l.m) >= maxAddrLimits {
				clear(l.m)
			}
		}
		lim = rate.NewLimiter(rate.Limit(l.rate), max(1, l.burst))
		l.m[addr] = lim
	}
	return lim
}

// take spends one attempt of addr's; over, it spends none and says how
// long to wait.
func (l *addrLimits) take(addr string) (time.Duration, bool) {
	if l.rate <= 0 {
		return 0, false
	}
	res := l.limiter(addr).Reserve()
	if d := res.Delay(); d > 0 {
		res.Cancel()
		return d, true
	}
	return 0, false
}

// over reports, spending nothing, whether addr has no attempt left.
func (l *addrLimits) over(addr string) (time.Duration, bool) {
	if l.rate <= 0 {
		return 0, false
	}
	if t := l.limiter(addr).Tokens(); t < 1 {
		return time.Duration((1 - t) / l.rate * float64(time.Second)), true
	}
	return 0, false
}

// charge spends one attempt of addr's, if it has one.
func (l *addrLimits) charge(addr string) {
	if l.rate > 0 {
		l.limiter(addr).Allow()
	}
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

// limiters hold one write limiter per principal.
type limiters struct {
	mu sync.Mutex
	m  map[string]*rate.Limiter
}

// limitWrites limits each principal's writes (every unsafe method) to
// WriteRate per second with bursts of WriteBurst. Reads are never limited.
// A write past the limit answers 429 with Retry-After.
func (s *Server) limitWrites(next http.Handler) http.Handler {
	if s.opts.Auth.WriteRate <= 0 {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if safeMethod(r.Method) || writesPerCall(r) {
			next.ServeHTTP(w, r)
			return
		}
		if wait, err := s.writeLimited(identity(r)); err != nil {
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
			s.writeError(w, r, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// writeLimited takes one write from id's principal's allowance, or answers
// how long until there is one, with the 429 to say so.
func (s *Server) writeLimited(id auth.Identity) (time.Duration, error) {
	if s.opts.Auth.WriteRate <= 0 {
		return 0, nil
	}
	res := s.limiter(id.Principal.ID).Reserve()
	wait := res.Delay()
	if wait <= 0 {
		return 0, nil
	}
	res.Cancel()
	return wait, errorf(http.StatusTooManyRequests, "rate_limited",
		"more than %g writes per second (bursts of %d); retry after %s", s.opts.Auth.WriteRate, s.opts.Auth.WriteBurst, wait.Round(time.Millisecond))
}

func (s *Server) limiter(principal string) *rate.Limiter {
	s.limits.mu.Lock()
	defer s.limits.mu.Unlock()
	if s.limits.m == nil {
		s.limits.m = map[string]*rate.Limiter{}
	}
	lim, ok := s.limits.m[principal]
	if !ok {
		lim = rate.NewLimiter(rate.Limit(s.opts.Auth.WriteRate), max(1, s.opts.Auth.WriteBurst))
		s.limits.m[principal] = lim
	}
	return lim
}

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
