package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tack-dev/tack/internal/projection"
)

// EnsurePrincipal returns the principal named name, creating it if needed.
func (p *Postgres) EnsurePrincipal(ctx context.Context, name string) (Principal, bool, error) {
	pr := Principal{ID: newID("prn_"), Name: name, CreatedAt: Now()}
	tag, err := p.Pool.Exec(ctx, `INSERT INTO principals (id, name, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO NOTHING`, pr.ID, pr.Name, pr.CreatedAt.Time)
	if err != nil {
		return Principal{}, false, pgErr(err)
	}
	if tag.RowsAffected() == 1 {
		return pr, true, nil
	}
	var at time.Time
	err = p.Pool.QueryRow(ctx, `SELECT id, name, created_at FROM principals WHERE name = $1`, name).Scan(&pr.ID, &pr.Name, &at)
	pr.CreatedAt = projection.NewTime(at)
	return pr, false, pgErr(err)
}

// PrincipalCount counts the principals besides LocalPrincipal.
func (p *Postgres) PrincipalCount(ctx context.Context) (int, error) {
	var n int
	err := p.Pool.QueryRow(ctx, `SELECT count(*) FROM principals WHERE id <> $1`, LocalPrincipal).Scan(&n)
	return n, pgErr(err)
}

// CreateToken stores a token by its hash.
func (p *Postgres) CreateToken(ctx context.Context, principalID, scope string, hash []byte) (Token, error) {
	t := Token{ID: newID("tok_"), PrincipalID: principalID, Scope: scope, CreatedAt: Now()}
	err := p.Pool.QueryRow(ctx, `
		WITH t AS (
			INSERT INTO tokens (id, principal_id, scope, hash, created_at) VALUES ($1, $2, $3, $4, $5) RETURNING principal_id
		)
		SELECT p.name FROM t JOIN principals p ON p.id = t.principal_id`,
		t.ID, principalID, scope, hash, t.CreatedAt.Time).Scan(&t.PrincipalName)
	return t, pgErr(err)
}

const pgTokenColumns = `t.id, t.principal_id, p.name, t.scope, t.created_at, t.revoked_at`

func scanToken(row pgx.Row) (Token, error) {
	var (
		t       Token
		at      time.Time
		revoked *time.Time
	)
	err := row.Scan(&t.ID, &t.PrincipalID, &t.PrincipalName, &t.Scope, &at, &revoked)
	t.CreatedAt = projection.NewTime(at)
	if revoked != nil {
		r := projection.NewTime(*revoked)
		t.RevokedAt = &r
	}
	return t, err
}

// Tokens lists every token, oldest first.
func (p *Postgres) Tokens(ctx context.Context) ([]Token, error) {
	rows, err := p.Pool.Query(ctx, `SELECT `+pgTokenColumns+`
		FROM tokens t JOIN principals p ON p.id = t.principal_id ORDER BY t.created_at, t.id`)
	if err != nil {
		return nil, pgErr(err)
	}
	defer rows.Close()
	list := []Token{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, pgErr(err)
		}
		list = append(list, t)
	}
	return list, pgErr(rows.Err())
}

// RevokeToken revokes a token; revoking twice keeps the first time.
func (p *Postgres) RevokeToken(ctx context.Context, id string) (Token, error) {
	t, err := scanToken(p.Pool.QueryRow(ctx, `
		WITH t AS (
			UPDATE tokens SET revoked_at = coalesce(revoked_at, $2) WHERE id = $1 RETURNING *
		)
		SELECT `+pgTokenColumns+` FROM t JOIN principals p ON p.id = t.principal_id`, id, Now().Time))
	return t, pgErr(err)
}

// Credential looks up an unrevoked token or an unexpired browser sign-in.
func (p *Postgres) Credential(ctx context.Context, kind string, hash []byte) (Credential, error) {
	c := Credential{Kind: kind}
	var at time.Time
	var q string
	args := []any{hash}
	switch kind {
	case KindToken:
		q = `SELECT t.id, t.hash, t.scope, p.id, p.name, p.created_at FROM tokens t JOIN principals p ON p.id = t.principal_id
			WHERE t.hash = $1 AND t.revoked_at IS NULL`
	case KindCookie:
		q = `SELECT s.id, s.hash, s.scope, p.id, p.name, p.created_at FROM sign_ins s JOIN principals p ON p.id = s.principal_id
			WHERE s.hash = $1 AND s.kind = 'cookie' AND s.expires_at > $2`
		args = append(args, time.Now())
	default:
		return c, ErrNotFound
	}
	err := p.Pool.QueryRow(ctx, q, args...).Scan(&c.ID, &c.Hash, &c.Scope, &c.Principal.ID, &c.Principal.Name, &at)
	c.Principal.CreatedAt = projection.NewTime(at)
	return c, pgErr(err)
}

// CreateSignIn stores a browser sign-in or a one-time link.
func (p *Postgres) CreateSignIn(ctx context.Context, s SignIn) error {
	_, err := p.Pool.Exec(ctx, `INSERT INTO sign_ins (id, principal_id, kind, scope, hash, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`, s.ID, s.PrincipalID, s.Kind, s.Scope, s.Hash, Now().Time, s.ExpiresAt)
	return pgErr(err)
}

// RedeemSignInLink deletes an unexpired one-time link and returns it.
func (p *Postgres) RedeemSignInLink(ctx context.Context, hash []byte) (SignIn, error) {
	s := SignIn{Kind: KindLink, Hash: hash}
	err := p.Pool.QueryRow(ctx, `DELETE FROM sign_ins WHERE hash = $1 AND kind = 'link'
		RETURNING id, principal_id, scope, expires_at`, hash).Scan(&s.ID, &s.PrincipalID, &s.Scope, &s.ExpiresAt)
	if err == nil && !s.ExpiresAt.After(time.Now()) {
		return SignIn{}, ErrNotFound
	}
	return s, pgErr(err)
}

// DeleteSignIn ends a sign-in.
func (p *Postgres) DeleteSignIn(ctx context.Context, id string) error {
	_, err := p.Pool.Exec(ctx, `DELETE FROM sign_ins WHERE id = $1`, id)
	return pgErr(err)
}

// LiveCredentials returns those of ids that are still valid credentials.
func (p *Postgres) LiveCredentials(ctx context.Context, ids []string) ([]string, error) {
	rows, err := p.Pool.Query(ctx, `
		SELECT id FROM tokens WHERE id = ANY($1) AND revoked_at IS NULL
		UNION ALL
		SELECT id FROM sign_ins WHERE id = ANY($1) AND kind = 'cookie' AND expires_at > $2`, ids, time.Now())
	if err != nil {
		return nil, pgErr(err)
	}
	live, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return live, pgErr(err)
}

// SessionOwner returns the principal id that owns a session.
func (p *Postgres) SessionOwner(ctx context.Context, id string) (string, error) {
	var owner string
	err := p.Pool.QueryRow(ctx, `SELECT owner FROM sessions WHERE id = $1`, id).Scan(&owner)
	return owner, pgErr(err)
}
