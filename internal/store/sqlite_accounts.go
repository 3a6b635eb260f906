package store

import (
	"context"
	"database/sql"
	"strings"
	"time"
)

// EnsurePrincipal returns the principal named name, creating it if needed.
func (s *SQLite) EnsurePrincipal(ctx context.Context, name string) (Principal, bool, error) {
	pr := Principal{ID: newID("prn_"), Name: name, CreatedAt: Now()}
	created := false
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO principals (id, name, created_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO NOTHING`, pr.ID, pr.Name, ms(pr.CreatedAt))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 1 {
			created = true
			return nil
		}
		var at int64
		err = tx.QueryRowContext(ctx, `SELECT id, name, created_at FROM principals WHERE name = ?`, name).Scan(&pr.ID, &pr.Name, &at)
		pr.CreatedAt = fromMS(at)
		return err
	})
	return pr, created, err
}

// PrincipalCount counts the principals besides LocalPrincipal.
func (s *SQLite) PrincipalCount(ctx context.Context) (int, error) {
	var n int
	err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM principals WHERE id <> ?`, LocalPrincipal).Scan(&n)
	return n, sqliteErr(err)
}

// CreateToken stores a token by its hash.
func (s *SQLite) CreateToken(ctx context.Context, principalID, scope string, hash []byte) (Token, error) {
	t := Token{ID: newID("tok_"), PrincipalID: principalID, Scope: scope, CreatedAt: Now()}
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO tokens (id, principal_id, scope, hash, created_at) VALUES (?, ?, ?, ?, ?)`,
			t.ID, principalID, scope, hash, ms(t.CreatedAt)); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT name FROM principals WHERE id = ?`, principalID).Scan(&t.PrincipalName)
	})
	return t, err
}

const sqliteTokenColumns = `t.id, t.principal_id, p.name, t.scope, t.created_at, t.revoked_at`

func scanSQLiteToken(row scanner) (Token, error) {
	var (
		t       Token
		at      int64
		revoked sql.NullInt64
	)
	err := row.Scan(&t.ID, &t.PrincipalID, &t.PrincipalName, &t.Scope, &at, &revoked)
	t.CreatedAt = fromMS(at)
	if revoked.Valid {
		r := fromMS(revoked.Int64)
		t.RevokedAt = &r
	}
	return t, err
}

// Tokens lists every token, oldest first.
func (s *SQLite) Tokens(ctx context.Context) ([]Token, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+sqliteTokenColumns+`
		FROM tokens t JOIN principals p ON p.id = t.principal_id ORDER BY t.created_at, t.id`)
	if err != nil {
		return nil, sqliteErr(err)
	}
	defer rows.Close()
	list := []Token{}
	for rows.Next() {
		t, err := scanSQLiteToken(rows)
		if err != nil {
			return nil, sqliteErr(err)
		}
		list = append(list, t)
	}
	return list, sqliteErr(rows.Err())
}

// RevokeToken revokes a token; revoking twice keeps the first time.
func (s *SQLite) RevokeToken(ctx context.Context, id string) (Token, error) {
	var t Token
	err := s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, ms(Now()), id); err != nil {
			return err
		}
		var err error
		t, err = scanSQLiteToken(tx.QueryRowContext(ctx, `SELECT `+sqliteTokenColumns+`
			FROM tokens t JOIN principals p ON p.id = t.principal_id WHERE t.id = ?`, id))
		return err
	})
	return t, err
}

// Credential looks up an unrevoked token or an unexpired browser sign-in.
func (s *SQLite) Credential(ctx context.Context, kind string, hash []byte) (Credential, error) {
	c := Credential{Kind: kind}
	var q string
	args := []any{hash}
	switch kind {
	case KindToken:
		q = `SELECT t.id, t.hash, t.scope, p.id, p.name, p.created_at FROM tokens t JOIN principals p ON p.id = t.principal_id
			WHERE t.hash = ? AND t.revoked_at IS NULL`
	case KindCookie:
		q = `SELECT s.id, s.hash, s.scope, p.id, p.name, p.created_at FROM sign_ins s JOIN principals p ON p.id = s.principal_id
			WHERE s.hash = ? AND s.kind = 'cookie' AND s.expires_at > ?`
		args = append(args, time.Now().UnixMilli())
	default:
		return c, ErrNotFound
	}
	var at int64
	err := s.reader.QueryRowContext(ctx, q, args...).Scan(&c.ID, &c.Hash, &c.Scope, &c.Principal.ID, &c.Principal.Name, &at)
	c.Principal.CreatedAt = fromMS(at)
	return c, sqliteErr(err)
}

// CreateSignIn stores a browser sign-in or a one-time link.
func (s *SQLite) CreateSignIn(ctx context.Context, si SignIn) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO sign_ins (id, principal_id, kind, scope, hash, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, si.ID, si.PrincipalID, si.Kind, si.Scope, si.Hash, ms(Now()), si.ExpiresAt.UnixMilli())
		return err
	})
}

// RedeemSignInLink deletes an unexpired one-time link and returns it.
func (s *SQLite) RedeemSignInLink(ctx context.Context, hash []byte) (SignIn, error) {
	si := SignIn{Kind: KindLink, Hash: hash}
	err := s.write(ctx, func(tx *sql.Tx) error {
		var exp int64
		if err := tx.QueryRowContext(ctx, `DELETE FROM sign_ins WHERE hash = ? AND kind = 'link'
			RETURNING id, principal_id, scope, expires_at`, hash).Scan(&si.ID, &si.PrincipalID, &si.Scope, &exp); err != nil {
			return err
		}
		si.ExpiresAt = time.UnixMilli(exp)
		return nil
	})
	if err == nil && !si.ExpiresAt.After(time.Now()) {
		return SignIn{}, ErrNotFound
	}
	return si, err
}

// DeleteSignIn ends a sign-in.
func (s *SQLite) DeleteSignIn(ctx context.Context, id string) error {
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM sign_ins WHERE id = ?`, id)
		return err
	})
}

// LiveCredentials returns those of ids that are still valid credentials.
func (s *SQLite) LiveCredentials(ctx context.Context, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	marks := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	args := make([]any, 0, 2*len(ids)+1)
	for _, id := range ids {
		args = append(args, id)
	}
	args = append(args, args...)
	args = append(args, time.Now().UnixMilli())
	rows, err := s.reader.QueryContext(ctx, `
		SELECT id FROM tokens WHERE id IN (`+marks+`) AND revoked_at IS NULL
		UNION ALL
		SELECT id FROM sign_ins WHERE id IN (`+marks+`) AND kind = 'cookie' AND expires_at > ?`, args...)
	if err != nil {
		return nil, sqliteErr(err)
	}
	defer rows.Close()
	var live []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, sqliteErr(err)
		}
		live = append(live, id)
	}
	return live, sqliteErr(rows.Err())
}

// SessionOwner returns the principal id that owns a session.
func (s *SQLite) SessionOwner(ctx context.Context, id string) (string, error) {
	var owner string
	err := s.reader.QueryRowContext(ctx, `SELECT owner FROM sessions WHERE id = ?`, id).Scan(&owner)
	return owner, sqliteErr(err)
}
