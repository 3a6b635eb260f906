// Package accounts is the Postgres store's accounts (principals, tokens,
// sign-ins) and hook notes (sessions' notes, the sessions of tool calls):
// what it keeps beside the sessions' logs and projections, which the plain
// store (store/postgres) serves by embedding Accounts.
package accounts

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/internal/engine"
	"github.com/tack-dev/tack/internal/store/postgres/internal/pgerr"
)

// Accounts serves the accounts and the hook notes from pool, stamping
// what it creates with now.
type Accounts struct {
	pool *pgxpool.Pool
	now  func() projection.Time
}

// New is the accounts and notes in pool; now is the store's clock.
func New(pool *pgxpool.Pool, now func() projection.Time) Accounts {
	return Accounts{pool: pool, now: now}
}

// EnsurePrincipal returns the principal named name, creating it if needed.
func (p *Accounts) EnsurePrincipal(ctx context.Context, name string) (store.Principal, bool, error) {
	pr := store.Principal{ID: engine.NewID("prn_"), Name: name, CreatedAt: p.now()}
	tag, err := p.pool.Exec(ctx, `INSERT INTO principals (id, name, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO NOTHING`, pr.ID, pr.Name, pr.CreatedAt.Time)
	if err != nil {
		return store.Principal{}, false, pgerr.Map(err)
	}
	if tag.RowsAffected() == 1 {
		return pr, true, nil
	}
	var at time.Time
	err = p.pool.QueryRow(ctx, `SELECT id, name, created_at, admin FROM principals WHERE name = $1`, name).Scan(&pr.ID, &pr.Name, &at, &pr.Admin)
	pr.CreatedAt = projection.NewTime(at)
	return pr, false, pgerr.Map(err)
}

// PrincipalCount counts the principals besides LocalPrincipal.
func (p *Accounts) PrincipalCount(ctx context.Context) (int, error) {
	var n int
	err := p.pool.QueryRow(ctx, `SELECT count(*) FROM principals WHERE id <> $1`, store.LocalPrincipal).Scan(&n)
	return n, pgerr.Map(err)
}

// CreateToken stores a token by its hash.
func (p *Accounts) CreateToken(ctx context.Context, principalID, name, scope string, hash []byte) (store.Token, error) {
	t := store.Token{ID: engine.NewID("tok_"), PrincipalID: principalID, Name: name, Scope: scope, CreatedAt: p.now()}
	err := p.pool.QueryRow(ctx, `
		WITH t AS (
			INSERT INTO tokens (id, principal_id, scope, hash, created_at, name) VALUES ($1, $2, $3, $4, $5, $6) RETURNING principal_id
		)
		SELECT p.name FROM t JOIN principals p ON p.id = t.principal_id`,
		t.ID, principalID, scope, hash, t.CreatedAt.Time, name).Scan(&t.PrincipalName)
	return t, pgerr.Map(err)
}

const pgTokenColumns = `t.id, t.principal_id, p.name, t.name, t.scope, t.created_at, t.revoked_at, t.last_used_at`

func scanToken(row pgx.Row) (store.Token, error) {
	var (
		t       store.Token
		at      time.Time
		revoked *time.Time
		used    *time.Time
	)
	err := row.Scan(&t.ID, &t.PrincipalID, &t.PrincipalName, &t.Name, &t.Scope, &at, &revoked, &used)
	t.CreatedAt = projection.NewTime(at)
	if revoked != nil {
		r := projection.NewTime(*revoked)
		t.RevokedAt = &r
	}
	if used != nil {
		u := projection.NewTime(*used)
		t.LastUsedAt = &u
	}
	return t, err
}

// Tokens lists every token, oldest first.
func (p *Accounts) Tokens(ctx context.Context) ([]store.Token, error) {
	rows, err := p.pool.Query(ctx, `SELECT `+pgTokenColumns+`
		FROM tokens t JOIN principals p ON p.id = t.principal_id ORDER BY t.created_at, t.id`)
	if err != nil {
		return nil, pgerr.Map(err)
	}
	defer rows.Close()
	list := []store.Token{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, pgerr.Map(err)
		}
		list = append(list, t)
	}
	return list, pgerr.Map(rows.Err())
}

// RevokeToken revokes a token; revoking twice keeps the first time.
func (p *Accounts) RevokeToken(ctx context.Context, id string) (store.Token, error) {
	t, err := scanToken(p.pool.QueryRow(ctx, `
		WITH t AS (
			UPDATE tokens SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1 RETURNING *
		)
		SELECT `+pgTokenColumns+` FROM t JOIN principals p ON p.id = t.principal_id`, id, p.now().Time))
	return t, pgerr.Map(err)
}

// Credential looks up an unrevoked token or an unexpired browser sign-in.
func (p *Accounts) Credential(ctx context.Context, kind string, hash []byte) (store.Credential, error) {
	c := store.Credential{Kind: kind}
	var at time.Time
	var q string
	args := []any{hash}
	switch kind {
	case store.KindToken:
		q = `SELECT t.id, t.hash, t.scope, p.id, p.name, p.created_at, p.admin FROM tokens t JOIN principals p ON p.id = t.principal_id
			WHERE t.hash = $1 AND t.revoked_at IS NULL`
	case store.KindCookie:
		q = `SELECT s.id, s.hash, s.scope, p.id, p.name, p.created_at, p.admin FROM sign_ins s JOIN principals p ON p.id = s.principal_id
			WHERE s.hash = $1 AND s.kind = 'cookie' AND s.expires_at > $2 AND ` + pgSignInTokenValid
		args = append(args, time.Now())
	default:
		return c, store.ErrNotFound
	}
	err := p.pool.QueryRow(ctx, q, args...).Scan(&c.ID, &c.Hash, &c.Scope, &c.Principal.ID, &c.Principal.Name, &at, &c.Principal.Admin)
	c.Principal.CreatedAt = projection.NewTime(at)
	return c, pgerr.Map(err)
}

// CreateSignIn stores a browser sign-in or a one-time link.
func (p *Accounts) CreateSignIn(ctx context.Context, s store.SignIn) error {
	_, err := p.pool.Exec(ctx, `INSERT INTO sign_ins (id, principal_id, kind, scope, hash, created_at, expires_at, token_id)
		VALUES ($1, $2, $3, $4, $5, $6, $7, NULLIF($8, ''))`, s.ID, s.PrincipalID, s.Kind, s.Scope, s.Hash, p.now().Time, s.ExpiresAt, s.TokenID)
	return pgerr.Map(err)
}

// RedeemSignInLink deletes an unexpired one-time link and returns it.
func (p *Accounts) RedeemSignInLink(ctx context.Context, hash []byte) (store.SignIn, error) {
	s := store.SignIn{Kind: store.KindLink, Hash: hash}
	err := p.pool.QueryRow(ctx, `DELETE FROM sign_ins WHERE hash = $1 AND kind = 'link'
		RETURNING id, principal_id, scope, expires_at`, hash).Scan(&s.ID, &s.PrincipalID, &s.Scope, &s.ExpiresAt)
	if err == nil && !s.ExpiresAt.After(time.Now()) {
		return store.SignIn{}, store.ErrNotFound
	}
	return s, pgerr.Map(err)
}

// DeleteSignIn ends a sign-in.
func (p *Accounts) DeleteSignIn(ctx context.Context, id string) error {
	_, err := p.pool.Exec(ctx, `DELETE FROM sign_ins WHERE id = $1`, id)
	return pgerr.Map(err)
}

// LiveCredentials returns those of ids that are still valid credentials.
func (p *Accounts) LiveCredentials(ctx context.Context, ids []string) ([]string, error) {
	rows, err := p.pool.Query(ctx, `
		SELECT id FROM tokens WHERE id = ANY($1) AND revoked_at IS NULL
		UNION ALL
		SELECT s.id FROM sign_ins s WHERE s.id = ANY($1) AND s.kind = 'cookie' AND s.expires_at > $2 AND `+pgSignInTokenValid, ids, time.Now())
	if err != nil {
		return nil, pgerr.Map(err)
	}
	live, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return live, pgerr.Map(err)
}

// SessionOwner returns the principal id that owns a session.
func (p *Accounts) SessionOwner(ctx context.Context, id string) (string, error) {
	var owner string
	err := p.pool.QueryRow(ctx, `SELECT owner FROM sessions WHERE id = $1`, id).Scan(&owner)
	return owner, pgerr.Map(err)
}

// pgSignInTokenValid holds for a sign-in s that was made with no token or
// with one that is not revoked.
const pgSignInTokenValid = `(s.token_id IS NULL OR EXISTS (SELECT 1 FROM tokens t WHERE t.id = s.token_id AND t.revoked_at IS NULL))`

// SignIns lists a principal's valid browser sign-ins, newest first.
func (p *Accounts) SignIns(ctx context.Context, principalID string) ([]store.SignIn, error) {
	rows, err := p.pool.Query(ctx, `SELECT s.id, s.principal_id, s.kind, s.scope, s.created_at, s.expires_at, coalesce(s.token_id, '')
		FROM sign_ins s WHERE s.principal_id = $1 AND s.kind = 'cookie' AND s.expires_at > $2 AND `+pgSignInTokenValid+`
		ORDER BY s.created_at DESC, s.id`, principalID, time.Now())
	if err != nil {
		return nil, pgerr.Map(err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.SignIn, error) {
		var si store.SignIn
		err := row.Scan(&si.ID, &si.PrincipalID, &si.Kind, &si.Scope, &si.CreatedAt, &si.ExpiresAt, &si.TokenID)
		return si, err
	})
	if list == nil {
		list = []store.SignIn{}
	}
	return list, pgerr.Map(err)
}

// PruneSignIns deletes the expired sign-ins and links and the sign-ins
// whose token was revoked.
func (p *Accounts) PruneSignIns(ctx context.Context) (int64, error) {
	tag, err := p.pool.Exec(ctx, `DELETE FROM sign_ins s WHERE s.expires_at <= $1 OR NOT `+pgSignInTokenValid, time.Now())
	return tag.RowsAffected(), pgerr.Map(err)
}

// TouchToken records that token id was used at at.
func (p *Accounts) TouchToken(ctx context.Context, id string, at time.Time) error {
	_, err := p.pool.Exec(ctx, `UPDATE tokens SET last_used_at = $2 WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < $2)`, id, at)
	return pgerr.Map(err)
}

// Principals lists every principal but LocalPrincipal, oldest first.
func (p *Accounts) Principals(ctx context.Context) ([]store.Principal, error) {
	rows, err := p.pool.Query(ctx, `SELECT id, name, created_at, admin FROM principals WHERE id <> $1 ORDER BY created_at, id`, store.LocalPrincipal)
	if err != nil {
		return nil, pgerr.Map(err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (store.Principal, error) {
		var (
			pr store.Principal
			at time.Time
		)
		err := row.Scan(&pr.ID, &pr.Name, &at, &pr.Admin)
		pr.CreatedAt = projection.NewTime(at)
		return pr, err
	})
	if list == nil {
		list = []store.Principal{}
	}
	return list, pgerr.Map(err)
}

// Principal is the principal id.
func (p *Accounts) Principal(ctx context.Context, id string) (store.Principal, error) {
	var (
		pr store.Principal
		at time.Time
	)
	err := p.pool.QueryRow(ctx, `SELECT id, name, created_at, admin FROM principals WHERE id = $1`, id).Scan(&pr.ID, &pr.Name, &at, &pr.Admin)
	if errors.Is(err, pgx.ErrNoRows) {
		return pr, store.ErrNotFound
	}
	pr.CreatedAt = projection.NewTime(at)
	return pr, pgerr.Map(err)
}

// SetAdmin makes a principal an admin or not.
func (p *Accounts) SetAdmin(ctx context.Context, principalID string, admin bool) error {
	tag, err := p.pool.Exec(ctx, `UPDATE principals SET admin = $2 WHERE id = $1`, principalID, admin)
	if err == nil && tag.RowsAffected() == 0 {
		return store.ErrNotFound
	}
	return pgerr.Map(err)
}
