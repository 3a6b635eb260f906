package api_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// The findings of probing Tack from outside, each held by a test that
// failed before its fix (docs/security.md).

// TestTwoIdempotencyKeys: a request that carries the header twice is
// refused, not answered by whichever copy a reader picks.
func TestTwoIdempotencyKeys(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.SQLite(t, projection.Config{}), api.Options{})
	id := b.newSession()
	req, _ := http.NewRequest("POST", b.url+"/sessions/"+id+"/events", strings.NewReader(`{"events":[{"type":"turn/start"}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Add("Idempotency-Key", "one")
	req.Header.Add("Idempotency-Key", "two")
	b.wantError(b.send(req), http.StatusBadRequest, "invalid")
	if s := b.session(id); s.LastSeq != 0 {
		t.Errorf("the refused request wrote: lastSeq %d", s.LastSeq)
	}
}

// TestTitleIsOneLine: a title refuses what a todo's content refuses, a
// line break or another control character.
func TestTitleIsOneLine(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.SQLite(t, projection.Config{}), api.Options{})
	for _, title := range []string{"a\nb", "a\rb", "a\tb", "a\u0085b", "a\u2028b", "a\x1b[31mb"} {
		b.wantError(b.do("POST", "/sessions", map[string]string{"title": title}), http.StatusUnprocessableEntity, "invalid")
	}
	var s store.Session
	b.want(b.do("POST", "/sessions", map[string]string{"title": "  one line, trimmed \n"}), http.StatusCreated, &s)
	if s.Title != "one line, trimmed" {
		t.Errorf("title %q", s.Title)
	}
}

// TestExpectContinueTooLarge: a body announced larger than the limit is
// refused before the client is told to send it.
func TestExpectContinueTooLarge(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.SQLite(t, projection.Config{}), api.Options{})
	id := b.newSession()
	host := strings.TrimPrefix(b.url, "http://")
	c, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "POST /sessions/%s/events HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n",
		id, host, api.MaxBodyBytes+1)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("Expect: 100-continue with Content-Length %d: %d, want 413", api.MaxBodyBytes+1, resp.StatusCode)
	}
}

// TestForgedCursor: a cursor of the right encoding whose id is not a
// session id this server could have issued is refused.
func TestForgedCursor(t *testing.T) {
	t.Parallel()
	b := setup(t, storetest.SQLite(t, projection.Config{}), api.Options{})
	b.newSession()
	for _, raw := range []string{"1:x", "1700000000000:x", "-1:ses_x"} {
		c := base64.RawURLEncoding.EncodeToString([]byte(raw))
		b.wantError(b.do("GET", "/sessions?cursor="+c, nil), http.StatusBadRequest, "invalid")
	}
	b.wantError(b.do("GET", "/sessions?cursor=1:x", nil), http.StatusBadRequest, "invalid")
}

// TestReservedNames: no principal may be named as the model or the
// built-in principal, in any case.
func TestReservedNames(t *testing.T) {
	t.Parallel()
	svc := &auth.Service{Store: storetest.SQLite(t, projection.Config{})}
	ctx := context.Background()
	for _, name := range []string{"agent", "Agent", " AGENT ", "local", "Local"} {
		if _, _, err := svc.CreateToken(ctx, name, auth.Write); err == nil {
			t.Errorf("a token for a principal named %q was made", name)
		}
		if _, _, err := svc.NewLink(ctx, name, auth.Write); err == nil {
			t.Errorf("a sign-in link for a principal named %q was made", name)
		}
	}
	if _, _, err := svc.CreateToken(ctx, "agent smith", auth.Write); err != nil {
		t.Errorf("a name that holds agent: %v", err)
	}
}

// TestSignInEndsWithItsToken: a browser signed in with a token is signed
// out when the token is revoked, by another process (the store) or through
// the server: its requests answer 401 and its sockets close.
func TestSignInEndsWithItsToken(t *testing.T) {
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			st := f.Open(t, projection.Config{})
			a := setupAuth(t, st, 0, 0)
			ctx := context.Background()
			for _, through := range []string{"store", "server"} {
				secret, tok, err := a.svc.CreateToken(ctx, "alice", auth.Write)
				if err != nil {
					t.Fatal(err)
				}
				cookie := []string{"Cookie", api.CookieName + "=" + a.signIn(map[string]string{"token": secret})}
				a.want(a.do("GET", "/me", nil, cookie...), http.StatusOK, nil)
				feed, _, err := a.dial("/live", cookie)
				if err != nil {
					t.Fatal(err)
				}
				defer feed.CloseNow()
				waitSockets(t, a, 1)
				if through == "store" { // tack token revoke
					if _, err := st.RevokeToken(ctx, tok.ID); err != nil {
						t.Fatal(err)
					}
				} else {
					a.want(a.do("DELETE", "/tokens/"+tok.ID, nil, "Authorization", "Bearer "+a.write), http.StatusOK, nil)
				}
				a.wantError(a.do("GET", "/me", nil, cookie...), http.StatusUnauthorized, "unauthenticated")
				a.wantError(a.do("POST", "/sessions/"+a.session+"/events", bodies["POST /sessions/{id}/events"], cookie...), http.StatusUnauthorized, "unauthenticated")
				if through == "store" {
					a.svc.CloseStale(ctx, a.hub) // what the server runs every 5 s
				}
				if code := closeCode(t, feed); code != live.CodeRevoked {
					t.Errorf("revoked through the %s: the sign-in's socket closed with %d, want %d", through, code, live.CodeRevoked)
				}
			}
		})
	}
}

// TestSignInsListedAndEnded: a principal lists its browser sign-ins and
// ends one, whose cookie then answers 401 and whose socket closes; another
// principal's sign-in is not found.
func TestSignInsListedAndEnded(t *testing.T) {
	t.Parallel()
	a := setupAuth(t, storetest.Factories[0].Open(t, projection.Config{}), 0, 0)
	mine := []string{"Cookie", api.CookieName + "=" + a.cookie}
	other := []string{"Cookie", api.CookieName + "=" + a.signIn(map[string]string{"token": a.write})}
	bobs := []string{"Cookie", api.CookieName + "=" + a.signIn(map[string]string{"token": a.other})}
	var list struct {
		SignIns []struct {
			ID, Scope, TokenID string
			Current            bool
		}
	}
	a.want(a.do("GET", "/me/sign-ins", nil, mine...), http.StatusOK, &list)
	if len(list.SignIns) != 2 {
		t.Fatalf("alice's sign-ins: %+v, want 2", list.SignIns)
	}
	var current, end string
	for _, si := range list.SignIns {
		if si.TokenID == "" || si.Scope != auth.Write {
			t.Errorf("sign-in %+v: want its token and scope", si)
		}
		if si.Current {
			current = si.ID
		} else {
			end = si.ID
		}
	}
	if current == "" || end == "" {
		t.Fatalf("sign-ins %+v: want one current", list.SignIns)
	}
	feed, _, err := a.dial("/live", other)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.CloseNow()
	waitSockets(t, a, 1)
	a.wantError(a.do("DELETE", "/me/sign-ins/"+end, nil, bobs...), http.StatusNotFound, "not_found")
	a.want(a.do("DELETE", "/me/sign-ins/"+end, nil, mine...), http.StatusNoContent, nil)
	a.wantError(a.do("GET", "/me", nil, other...), http.StatusUnauthorized, "unauthenticated")
	if code := closeCode(t, feed); code != live.CodeRevoked {
		t.Errorf("the ended sign-in's socket closed with %d", code)
	}
	a.want(a.do("GET", "/me", nil, mine...), http.StatusOK, nil)
	a.wantError(a.do("DELETE", "/me/sign-ins/"+end, nil, mine...), http.StatusNotFound, "not_found")
}

// TestLoginRateLimited: sign-ins from one client address past the burst
// answer 429 with Retry-After, and make no sign-in.
func TestLoginRateLimited(t *testing.T) {
	t.Parallel()
	a := setupAuth(t, storetest.Factories[0].Open(t, projection.Config{}), 0, 0, func(o *api.AuthOptions, _ *live.Options) {
		o.LoginRate, o.LoginBurst = 0.01, 5
	})
	// setupAuth signed in three times already: alice twice, bob once.
	for range 2 {
		a.signIn(map[string]string{"token": a.write})
	}
	r := a.do("POST", "/login", map[string]string{"token": a.write})
	a.wantError(r, http.StatusTooManyRequests, "rate_limited")
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}
	a.wantError(a.do("POST", "/login", map[string]string{"code": "nope"}), http.StatusTooManyRequests, "rate_limited")
	alice, _, _ := a.store.EnsurePrincipal(context.Background(), "alice")
	if list, _ := a.store.SignIns(context.Background(), alice.ID); len(list) != 3 {
		t.Errorf("%d sign-ins, want the 3 allowed", len(list))
	}
}

// TestFailedGuessesThrottled: a client address whose credentials keep
// failing is refused with 429 before its next guess is checked; other
// addresses, and requests without a credential, are not.
func TestFailedGuessesThrottled(t *testing.T) {
	t.Parallel()
	a := setupAuth(t, storetest.Factories[0].Open(t, projection.Config{}), 0, 0, func(o *api.AuthOptions, _ *live.Options) {
		o.GuessRate, o.GuessBurst = 0.01, 5
	})
	for i := range 5 * api.GuessSpread {
		a.wantError(a.do("GET", "/sessions", nil, "Authorization", fmt.Sprintf("Bearer tack_guess%d", i)), http.StatusUnauthorized, "unauthenticated")
	}
	r := a.do("GET", "/sessions", nil, "Authorization", "Bearer tack_guess6")
	a.wantError(r, http.StatusTooManyRequests, "rate_limited")
	if r.Header.Get("Retry-After") == "" {
		t.Errorf("429 without Retry-After")
	}
	a.wantError(a.do("GET", "/sessions", nil, "Cookie", api.CookieName+"=guess"), http.StatusTooManyRequests, "rate_limited")
	a.wantError(a.do("POST", "/login", map[string]string{"token": "tack_guess7"}), http.StatusTooManyRequests, "rate_limited")
	a.wantError(a.do("GET", "/sessions", nil), http.StatusUnauthorized, "unauthenticated")
	a.want(a.do("GET", "/healthz", nil), http.StatusOK, nil)
}

// TestOneBadCredentialStarvesNone: one bad token retried from an address
// is refused with 429 once it has failed its burst, while the good tokens
// and other credentials from the same address are still checked.
func TestOneBadCredentialStarvesNone(t *testing.T) {
	t.Parallel()
	a := setupAuth(t, storetest.Factories[0].Open(t, projection.Config{}), 0, 0, func(o *api.AuthOptions, _ *live.Options) {
		o.GuessRate, o.GuessBurst = 0.01, 5
	})
	stale := []string{"Authorization", "Bearer tack_stale"}
	for range 5 {
		a.wantError(a.do("GET", "/sessions", nil, stale...), http.StatusUnauthorized, "unauthenticated")
	}
	a.wantError(a.do("GET", "/sessions", nil, stale...), http.StatusTooManyRequests, "rate_limited")
	a.want(a.do("GET", "/sessions", nil, "Authorization", "Bearer "+a.write), http.StatusOK, nil)
	a.wantError(a.do("GET", "/sessions", nil, "Authorization", "Bearer tack_other"), http.StatusUnauthorized, "unauthenticated")
	a.want(a.do("POST", "/login", map[string]string{"token": a.read}), http.StatusOK, nil)
}

// TestForwardedForTrustedOnlyFromProxies: X-Forwarded-For names the client
// address of the guess limits only when the peer is a trusted proxy; from
// any other peer (a process on the same machine included) it is ignored,
// and guesses that rotate it share the peer's limit.
func TestForwardedForTrustedOnlyFromProxies(t *testing.T) {
	t.Parallel()
	for _, trusted := range []bool{false, true} {
		a := setupAuth(t, storetest.Factories[0].Open(t, projection.Config{}), 0, 0, func(o *api.AuthOptions, _ *live.Options) {
			o.GuessRate, o.GuessBurst = 0.01, 1
			if trusted {
				o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
			}
		})
		for i := range api.GuessSpread {
			a.wantError(a.do("GET", "/sessions", nil, "Authorization", fmt.Sprintf("Bearer tack_guess%d", i), "X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i)),
				http.StatusUnauthorized, "unauthenticated")
		}
		want, code := http.StatusTooManyRequests, "rate_limited"
		if trusted {
			want, code = http.StatusUnauthorized, "unauthenticated"
		}
		r := a.do("GET", "/sessions", nil, "Authorization", "Bearer tack_guess99", "X-Forwarded-For", "203.0.113.99")
		if r.Status != want {
			t.Errorf("trusted %t: a guess from a new forwarded address: %d %s, want %d", trusted, r.Status, r.Body, want)
			continue
		}
		a.wantError(r, want, code)
	}
}

// TestExpiredSignInsPruned: sign-ins that expired, links that expired and
// sign-ins whose token was revoked are deleted, by the prune and by the
// next sign-in.
func TestExpiredSignInsPruned(t *testing.T) {
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			st := f.Open(t, projection.Config{})
			a := setupAuth(t, st, 0, 0)
			ctx := context.Background()
			alice, _, _ := st.EnsurePrincipal(ctx, "alice")
			stale := func() {
				past := time.Now().Add(-time.Minute)
				for i, kind := range []string{store.KindCookie, store.KindLink} {
					if err := st.CreateSignIn(ctx, store.SignIn{ID: fmt.Sprintf("sgn_old%s%d", kind, time.Now().UnixNano()), PrincipalID: alice.ID,
						Kind: kind, Scope: auth.Read, Hash: auth.Hash(fmt.Sprint(kind, i, time.Now().UnixNano())), ExpiresAt: past}); err != nil {
						t.Fatal(err)
					}
				}
			}
			stale()
			secret, tok, _ := a.svc.CreateToken(ctx, "alice", auth.Read)
			a.signIn(map[string]string{"token": secret})
			if _, err := st.RevokeToken(ctx, tok.ID); err != nil {
				t.Fatal(err)
			}
			stale()
			// The sign-in pruned the first two; now two more expired and
			// the revoked token's are left.
			n, err := st.PruneSignIns(ctx)
			if err != nil || n != 3 {
				t.Errorf("pruned %d (%v), want 3: the expired ones and the revoked token's", n, err)
			}
			if n, _ := st.PruneSignIns(ctx); n != 0 {
				t.Errorf("pruned %d the second time, want 0", n)
			}
			stale()
			a.signIn(map[string]string{"token": a.write})
			if n, _ := st.PruneSignIns(ctx); n != 0 {
				t.Errorf("a sign-in left %d ended ones to prune, want 0", n)
			}
			if list, _ := st.SignIns(ctx, alice.ID); len(list) != 2 {
				t.Errorf("alice has %d sign-ins, want setupAuth's and the last", len(list))
			}
		})
	}
}

// waitSockets waits until the hub counts exactly n open sockets: a client
// has its 101 a moment before the hub has the socket on its books, and a
// closed one leaves them a moment after.
func waitSockets(t *testing.T, a *authBundle, n int64) {
	t.Helper()
	eventually.True(t, 5*time.Second, fmt.Sprintf("%d sockets on the hub's books", n), func() bool { return a.hub.Stats().Connections.Load() == n },
		func() string { return fmt.Sprintf("the hub counts %d", a.hub.Stats().Connections.Load()) })
}

// TestSocketCap: one principal's sockets past -max-sockets-per-principal
// are refused with 429, and the server's past what its descriptors allow
// with 503, while other principals and the plain routes keep working.
func TestSocketCap(t *testing.T) {
	t.Parallel()
	a := setupAuth(t, storetest.Factories[0].Open(t, projection.Config{}), 0, 0, func(_ *api.AuthOptions, o *live.Options) {
		o.MaxSocketsPerPrincipal, o.MaxSockets = 3, 5
	})
	alice := []string{"Authorization", "Bearer " + a.write}
	bob := []string{"Authorization", "Bearer " + a.other}
	var open []*websocket.Conn
	defer func() {
		for _, c := range open {
			c.CloseNow()
		}
	}()
	dial := func(path string, hdr []string, want int) {
		t.Helper()
		c, status, err := a.dial(path, hdr)
		if want == http.StatusSwitchingProtocols {
			if err != nil {
				t.Fatalf("%s: %v (%d), want a socket", path, err, status)
			}
			open = append(open, c)
			return
		}
		if err == nil {
			c.CloseNow()
			t.Fatalf("%s: opened, want %d", path, want)
		}
		if status != want {
			t.Fatalf("%s: %d (%v), want %d", path, status, err, want)
		}
	}
	dial("/live", alice, 101)
	dial("/sessions/"+a.session+"/live", alice, 101)
	dial("/live", alice, 101)
	// The cap holds both sockets, and answers in the API's error shape.
	dial("/live", alice, http.StatusTooManyRequests)
	dial("/sessions/"+a.session+"/live", alice, http.StatusTooManyRequests)
	r := a.send(false, "GET", "/live", nil, "Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
		"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", alice[0], alice[1])
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" || !strings.Contains(string(r.Body), `"rate_limited"`) {
		t.Errorf("over the cap: %d %v %s, want 429 rate_limited with Retry-After", r.Status, r.Header, r.Body)
	}
	a.want(a.do("GET", "/sessions", nil, alice...), http.StatusOK, nil)
	dial("/live", bob, 101)
	dial("/live", bob, 101)
	// Five open: the server keeps the rest of its descriptors.
	dial("/live", bob, http.StatusServiceUnavailable)
	a.want(a.do("GET", "/healthz", nil), http.StatusOK, nil)
	a.want(a.do("GET", "/sessions", nil, bob...), http.StatusOK, nil)
	// A socket closed frees its place.
	open[0].Close(websocket.StatusNormalClosure, "")
	open = open[1:]
	waitSockets(t, a, 4)
	dial("/live", alice, 101)
}
