package store

import (
	"context"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

// LocalPrincipal is the id of the built-in principal of -auth local. Every
// session made before principals existed belongs to it.
const LocalPrincipal = "prn_local"

// Principal is a person or a program that uses Tack.
type Principal struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	CreatedAt projection.Time `json:"createdAt"`
	// Admin reads every session of the instance, each with its owner.
	Admin bool `json:"admin"`
}

// Token is a stored token: never the token itself, which is shown once.
type Token struct {
	ID            string `json:"id"`
	PrincipalID   string `json:"principalId"`
	PrincipalName string `json:"principal"`
	// Name says what the token is for ("laptop", "ci"); "" when unnamed.
	Name      string           `json:"name"`
	Scope     string           `json:"scope"`
	CreatedAt projection.Time  `json:"createdAt"`
	RevokedAt *projection.Time `json:"revokedAt,omitempty"`
	// LastUsedAt is when a request last came with the token, to about a
	// minute (auth.TouchEvery); nil when none has.
	LastUsedAt *projection.Time `json:"lastUsedAt,omitempty"`
}

// Credential kinds.
const (
	KindToken  = "token"
	KindCookie = "cookie"
	KindLink   = "link"
)

// Credential is what a request presented, once looked up: a token or a
// browser sign-in, with its principal and scope.
type Credential struct {
	ID        string
	Kind      string
	Scope     string
	Principal Principal
	// Hash is the stored hash the secret matched.
	Hash []byte
}

// SignIn is a browser sign-in (KindCookie) or a one-time sign-in link
// (KindLink), stored by the hash of its secret.
type SignIn struct {
	ID          string
	PrincipalID string
	Kind        string
	Scope       string
	Hash        []byte
	ExpiresAt   time.Time
	// TokenID is the token a browser sign-in was made with: the sign-in
	// ends when that token is revoked. "" for a one-time link's.
	TokenID   string
	CreatedAt time.Time
}

// Accounts is the part of a Store that keeps principals, tokens, sign-ins and
// who owns each session.
type Accounts interface {
	// EnsurePrincipal returns the principal named name, creating it if needed.
	EnsurePrincipal(ctx context.Context, name string) (p Principal, created bool, err error)
	// PrincipalCount counts the principals besides LocalPrincipal.
	PrincipalCount(ctx context.Context) (int, error)
	// CreateToken stores a token of a principal by its hash; name says
	// what it is for.
	CreateToken(ctx context.Context, principalID, name, scope string, hash []byte) (Token, error)
	// Tokens lists every token, revoked ones included, oldest first.
	Tokens(ctx context.Context) ([]Token, error)
	// RevokeToken revokes a token (ErrNotFound for an unknown id); revoking
	// twice keeps the first time.
	RevokeToken(ctx context.Context, id string) (Token, error)
	// Credential looks up an unrevoked token (KindToken) or an unexpired
	// browser sign-in (KindCookie) by the hash of its secret.
	Credential(ctx context.Context, kind string, hash []byte) (Credential, error)
	CreateSignIn(ctx context.Context, s SignIn) error
	// RedeemSignInLink deletes an unexpired one-time link and returns it.
	RedeemSignInLink(ctx context.Context, hash []byte) (SignIn, error)
	DeleteSignIn(ctx context.Context, id string) error
	// LiveCredentials returns those of ids that are still valid
	// credentials: a browser sign-in made with a token is valid only while
	// the token is.
	LiveCredentials(ctx context.Context, ids []string) ([]string, error)
	// SignIns lists a principal's valid browser sign-ins, newest first.
	SignIns(ctx context.Context, principalID string) ([]SignIn, error)
	// PruneSignIns deletes the sign-ins and links that expired and the
	// sign-ins whose token was revoked, and returns how many.
	PruneSignIns(ctx context.Context) (int64, error)
	// TouchToken records that token id was used at at.
	TouchToken(ctx context.Context, id string, at time.Time) error
	// Principals lists every principal but LocalPrincipal, oldest first.
	Principals(ctx context.Context) ([]Principal, error)
	// Principal is the principal id, LocalPrincipal included (ErrNotFound
	// for an unknown id).
	Principal(ctx context.Context, id string) (Principal, error)
	// SetAdmin makes a principal an admin or not (ErrNotFound for an
	// unknown id).
	SetAdmin(ctx context.Context, principalID string, admin bool) error

	// SessionOwner returns the principal id that owns a session.
	SessionOwner(ctx context.Context, id string) (string, error)
}
