package api

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/tack-dev/tack/internal/auth"
)

// The limits the API keeps: a principal's writes, and, kept by client
// address, sign-in attempts and failed credentials (guesses).

// GuessSpread is how many times an address's failures of one credential
// it may fail with all its credentials together (AuthOptions.GuessRate).
const GuessSpread = 10

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
