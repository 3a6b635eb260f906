// Package auth is who may do what in Tack: tokens and their scopes, browser
// sign-ins and one-time sign-in links, the identity a request carries, and
// closing the sockets of credentials that stopped being valid. It stores
// nothing itself; the store keeps principals, token hashes and sign-ins.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// Scopes a token or a sign-in grants.
const (
	// Read reads and subscribes.
	Read = "read"
	// Write also appends, creates sessions and calls the tools.
	Write = "write"
)

// ValidScope reports whether s is a scope.
func ValidScope(s string) bool { return s == Read || s == Write }

// Documented defaults (docs/security.md).
const (
	// TokenPrefix starts every token, so that a leaked one is recognisable
	// (secret scanners, logs) and never mistaken for a cookie.
	TokenPrefix = "tack_"
	// SecretBytes is the randomness of every token, cookie and link.
	SecretBytes = 32
	// DefaultSignInTTL is how long a browser sign-in lasts.
	DefaultSignInTTL = 7 * 24 * time.Hour
	// DefaultLinkTTL is how long a one-time sign-in link can be used.
	DefaultLinkTTL = 15 * time.Minute
	// MaxNameChars bounds a principal's name.
	MaxNameChars = 100
)

// ErrUnauthenticated is a missing, unknown, revoked or expired credential.
var ErrUnauthenticated = errors.New("unauthenticated")

// newSecret returns prefix + SecretBytes random bytes (URL-safe base64)
// and its hash.
func newSecret(prefix string) (string, []byte) {
	b := make([]byte, SecretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	s := prefix + base64.RawURLEncoding.EncodeToString(b)
	return s, Hash(s)
}

// Hash is what the store keeps of a secret: its SHA-256. A token carries
// 256 random bits, so unlike a password it needs no slow, salted hash: no
// dictionary holds it, and inverting SHA-256 is the only way back.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Identity is who a request acts as, and with what.
type Identity struct {
	Principal store.Principal
	Scope     string
	// Kind is store.KindToken, store.KindCookie or "local".
	Kind string
	// CredentialID is the token's or the sign-in's id ("" for local): what
	// revocation and sign-out close the sockets of.
	CredentialID string
}

// CanWrite reports whether the identity may write.
func (i Identity) CanWrite() bool { return i.Scope == Write }

// Admin reports whether the identity's principal is an admin: it reads
// every session of the instance.
func (i Identity) Admin() bool { return i.Principal.Admin }

// Local is the identity of every request in -auth local.
var Local = Identity{Principal: store.Principal{ID: store.LocalPrincipal, Name: "local"}, Scope: Write, Kind: "local"}

type identityKey struct{}

// With returns ctx carrying id.
func With(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// ContextKey is the key With keeps an identity under, for a context of
// another kind that carries one to answer From (the API's request context).
func ContextKey() any { return identityKey{} }

// From returns the identity ctx carries.
func From(ctx context.Context) (Identity, bool) {
	id, ok := ctx.Value(identityKey{}).(Identity)
	return id, ok
}

// Service checks credentials and makes new ones against a store.
type Service struct {
	Store store.Accounts
	// SignInTTL and LinkTTL default to DefaultSignInTTL and DefaultLinkTTL.
	SignInTTL, LinkTTL time.Duration

	// touched is when each token's use was last recorded (TouchEvery).
	touchMu sync.Mutex
	touched map[string]time.Time
}

// TouchEvery is how often a token's last use is written: a token in use
// costs the store one write a minute, not one a request.
const TouchEvery = time.Minute

func (a *Service) signInTTL() time.Duration {
	if a.SignInTTL > 0 {
		return a.SignInTTL
	}
	return DefaultSignInTTL
}

func (a *Service) linkTTL() time.Duration {
	if a.LinkTTL > 0 {
		return a.LinkTTL
	}
	return DefaultLinkTTL
}

// Token authenticates a bearer token.
func (a *Service) Token(ctx context.Context, token string) (Identity, error) {
	if !strings.HasPrefix(token, TokenPrefix) || len(token) > 200 {
		return Identity{}, ErrUnauthenticated
	}
	id, err := a.lookup(ctx, store.KindToken, token)
	if err == nil {
		a.touch(ctx, id.CredentialID)
	}
	return id, err
}

// touch records a token's use, at most once per TouchEvery. A failed write
// fails nothing: the last use is a hint to the person, not a credential.
func (a *Service) touch(ctx context.Context, tokenID string) {
	now := time.Now()
	a.touchMu.Lock()
	if a.touched == nil {
		a.touched = map[string]time.Time{}
	}
	last, ok := a.touched[tokenID]
	if ok && now.Sub(last) < TouchEvery {
		a.touchMu.Unlock()
		return
	}
	if len(a.touched) >= maxTouched {
		clear(a.touched)
	}
	a.touched[tokenID] = now
	a.touchMu.Unlock()
	_ = a.Store.TouchToken(ctx, tokenID, now.Truncate(time.Millisecond))
}

// maxTouched bounds the tokens touch remembers; past it, it starts over.
const maxTouched = 1 << 16

// Cookie authenticates the secret of a browser sign-in.
func (a *Service) Cookie(ctx context.Context, secret string) (Identity, error) {
	if secret == "" || len(secret) > 200 {
		return Identity{}, ErrUnauthenticated
	}
	return a.lookup(ctx, store.KindCookie, secret)
}

func (a *Service) lookup(ctx context.Context, kind, secret string) (Identity, error) {
	hash := Hash(secret)
	c, err := a.Store.Credential(ctx, kind, hash)
	if errors.Is(err, store.ErrNotFound) {
		return Identity{}, ErrUnauthenticated
	}
	if err != nil {
		return Identity{}, err
	}
	// The store found the row by its hash; the compare in constant time
	// holds even a store whose lookup were looser than equality to it.
	if !Equal(c.Hash, hash) {
		return Identity{}, ErrUnauthenticated
	}
	return Identity{Principal: c.Principal, Scope: c.Scope, Kind: kind, CredentialID: c.ID}, nil
}

// AgentName is what the model's own changes are attributed to ("changed
// by agent"): no principal may take it, or a person's edit would pose as
// the model's.
const AgentName = "agent"

// PlanName is what a list made of an agent's approved proposal is
// attributed to ("changed by plan"), reserved as AgentName is.
const PlanName = projection.PlanAuthor

// CheckName returns a principal's name trimmed, or why it cannot be one:
// empty, too long, not printable, or reserved (the model's "agent", a
// proposal's "plan" and -auth local's "local", in any case).
func CheckName(name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", errors.New("a token needs a principal name (-name)")
	case len([]rune(name)) > MaxNameChars || strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return "", fmt.Errorf("a principal name is at most %d printable characters", MaxNameChars)
	case strings.EqualFold(name, Local.Principal.Name):
		return "", errors.New(`"local" is the built-in principal of -auth local; choose another name`)
	case strings.EqualFold(name, AgentName):
		return "", errors.New(`"agent" names the model's own changes; choose another name`)
	case strings.EqualFold(name, PlanName):
		return "", errors.New(`"plan" names the lists made of an agent's approved plan; choose another name`)
	}
	return name, nil
}

// CreateToken makes a token for the principal named name, creating the
// principal if needed. The token is returned once and never stored.
func (a *Service) CreateToken(ctx context.Context, name, scope string) (string, store.Token, error) {
	name, err := CheckName(name)
	if err != nil {
		return "", store.Token{}, err
	}
	if !ValidScope(scope) {
		return "", store.Token{}, fmt.Errorf("scope %q: want read or write", scope)
	}
	p, _, err := a.Store.EnsurePrincipal(ctx, name)
	if err != nil {
		return "", store.Token{}, err
	}
	return a.CreateTokenFor(ctx, p, "", scope)
}

// CreateTokenFor makes a token named label ("laptop"; "" for none) for an
// existing principal, such as the one a request acts as. The token is
// returned once and never stored.
func (a *Service) CreateTokenFor(ctx context.Context, p store.Principal, label, scope string) (string, store.Token, error) {
	if !ValidScope(scope) {
		return "", store.Token{}, fmt.Errorf("scope %q: want read or write", scope)
	}
	label = strings.TrimSpace(label)
	if len([]rune(label)) > MaxNameChars || strings.ContainsFunc(label, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return "", store.Token{}, fmt.Errorf("a token's name is at most %d printable characters", MaxNameChars)
	}
	secret, hash := newSecret(TokenPrefix)
	t, err := a.Store.CreateToken(ctx, p.ID, label, scope, hash)
	if err != nil {
		return "", store.Token{}, err
	}
	return secret, t, nil
}

// SignIn is a browser sign-in just made: the cookie's secret and when it ends.
type SignIn struct {
	Secret   string
	Expires  time.Time
	Identity Identity
}

// SignInWithToken signs a browser in with a token: the sign-in acts as the
// token's principal, with the token's scope, and ends when the token is
// revoked.
func (a *Service) SignInWithToken(ctx context.Context, token string) (SignIn, error) {
	id, err := a.Token(ctx, token)
	if err != nil {
		return SignIn{}, err
	}
	return a.signIn(ctx, id.Principal, id.Scope, id.CredentialID)
}

// SignInWithLink redeems a one-time sign-in link.
func (a *Service) SignInWithLink(ctx context.Context, code string) (SignIn, error) {
	if code == "" || len(code) > 200 {
		return SignIn{}, ErrUnauthenticated
	}
	link, err := a.Store.RedeemSignInLink(ctx, Hash(code))
	if errors.Is(err, store.ErrNotFound) {
		return SignIn{}, ErrUnauthenticated
	}
	if err != nil {
		return SignIn{}, err
	}
	return a.signIn(ctx, store.Principal{ID: link.PrincipalID}, link.Scope, "")
}

// signIn makes a browser sign-in, tied to the token tokenID when it was
// made with one. Each one made prunes the sign-ins that ended, so that the
// table holds the live ones and few more.
func (a *Service) signIn(ctx context.Context, p store.Principal, scope, tokenID string) (SignIn, error) {
	if _, err := a.Store.PruneSignIns(ctx); err != nil {
		return SignIn{}, err
	}
	secret, hash := newSecret("")
	si := store.SignIn{ID: newSignInID(), PrincipalID: p.ID, Kind: store.KindCookie, TokenID: tokenID,
		Scope: scope, Hash: hash, ExpiresAt: time.Now().Add(a.signInTTL()).Truncate(time.Millisecond)}
	if err := a.Store.CreateSignIn(ctx, si); err != nil {
		return SignIn{}, err
	}
	id, err := a.Cookie(ctx, secret)
	if err != nil {
		return SignIn{}, err
	}
	return SignIn{Secret: secret, Expires: si.ExpiresAt, Identity: id}, nil
}

// newSignInID names a sign-in or a one-time link: both are sign-in rows.
func newSignInID() string { return "sgn_" + strings.ToLower(rand.Text()) }

// SignOut ends a browser sign-in.
func (a *Service) SignOut(ctx context.Context, id Identity) error {
	if id.Kind != store.KindCookie {
		return nil
	}
	return a.Store.DeleteSignIn(ctx, id.CredentialID)
}

// NewLink makes a one-time sign-in link code for the principal named name
// (created if needed): the code goes in the URL /login#code=<code>.
func (a *Service) NewLink(ctx context.Context, name, scope string) (code string, expires time.Time, err error) {
	if name, err = CheckName(name); err != nil {
		return "", time.Time{}, err
	}
	p, _, err := a.Store.EnsurePrincipal(ctx, name)
	if err != nil {
		return "", time.Time{}, err
	}
	code, hash := newSecret("")
	expires = time.Now().Add(a.linkTTL()).Truncate(time.Millisecond)
	err = a.Store.CreateSignIn(ctx, store.SignIn{ID: newSignInID(), PrincipalID: p.ID,
		Kind: store.KindLink, Scope: scope, Hash: hash, ExpiresAt: expires})
	return code, expires, err
}

// FirstName is the principal a first start in token mode signs in as, and
// the first admin.
const FirstName = "admin"

// Bootstrap makes a one-time sign-in link for a first principal, an admin,
// when the store has none yet; ok is false when it has.
func (a *Service) Bootstrap(ctx context.Context) (code string, expires time.Time, ok bool, err error) {
	n, err := a.Store.PrincipalCount(ctx)
	if err != nil || n > 0 {
		return "", time.Time{}, false, err
	}
	if code, expires, err = a.NewLink(ctx, FirstName, Write); err != nil {
		return "", time.Time{}, false, err
	}
	p, _, err := a.Store.EnsurePrincipal(ctx, FirstName)
	if err == nil {
		err = a.Store.SetAdmin(ctx, p.ID, true)
	}
	return code, expires, err == nil, err
}

// PruneEvery deletes, every interval until ctx ends, the sign-ins that
// expired or whose token was revoked (each new sign-in prunes too).
func (a *Service) PruneEvery(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		_, _ = a.Store.PruneSignIns(ctx) // the database is away: next tick
	}
}

// Sockets is what WatchSockets closes: the live hub's sockets and the
// streams it counts as sockets (MCP's).
type Sockets interface {
	// Credentials lists the credential ids of the open sockets.
	Credentials() []string
	// CloseCredential closes every socket opened with the credential id.
	CloseCredential(id string)
	// Admins lists the principals with sockets they opened as admins.
	Admins() []string
	// CloseAdmin closes the sockets principal opened as an admin.
	CloseAdmin(principal string)
}

// WatchSockets closes, every interval until ctx ends, the sockets whose
// credential was revoked, signed out or expired since it opened them, and
// those an admin opened who is an admin no longer, by any process sharing
// the store (`tack token revoke` and `tack principal create -admin=false`
// included). Revocation through this server closes them at once; this
// bounds the rest.
func (a *Service) WatchSockets(ctx context.Context, sockets Sockets, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		a.CloseStale(ctx, sockets)
	}
}

// CloseStale closes the sockets whose credential is no longer valid, and
// those opened as an admin by a principal that is no longer one.
func (a *Service) CloseStale(ctx context.Context, sockets Sockets) {
	for _, id := range sockets.Admins() {
		p, err := a.Store.Principal(ctx, id)
		if errors.Is(err, store.ErrNotFound) || err == nil && !p.Admin {
			sockets.CloseAdmin(id)
		}
	}
	ids := sockets.Credentials()
	if len(ids) == 0 {
		return
	}
	live, err := a.Store.LiveCredentials(ctx, ids)
	if err != nil {
		return // the database is away: try again on the next tick
	}
	valid := make(map[string]bool, len(live))
	for _, id := range live {
		valid[id] = true
	}
	for _, id := range ids {
		if !valid[id] {
			sockets.CloseCredential(id)
		}
	}
}

// Equal compares two secrets' hashes in constant time.
func Equal(a, b []byte) bool { return subtle.ConstantTimeCompare(a, b) == 1 }
