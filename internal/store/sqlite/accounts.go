package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"github.com/tack-dev/tack/internal/store/sqlite/internal/stmts"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/internal/engine"
)

// EnsurePrincipal returns the principal named name, creating it if needed.
func (s *Store) EnsurePrincipal(ctx context.Context, name string) (store.Principal, bool, error) {
	pr := store.Principal{ID: engine.NewID("prn_"), Name: name, CreatedAt: s.clock.Now()}
	created := false
	err := s.write(ctx, func(tx *stmts.Tx) error {
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
		err = tx.QueryRowContext(ctx, `SELECT id, name, created_at, admin FROM principals WHERE name = ?`, name).Scan(&pr.ID, &pr.Name, &at, &pr.Admin)
		pr.CreatedAt = fromMS(at)
		return err
	})
	return pr, created, err
}

// PrincipalCount counts the principals besides LocalPrincipal.
func (s *Store) PrincipalCount(ctx context.Context) (int, error) {
	var n int
	err := s.reader.QueryRowContext(ctx, `SELECT count(*) FROM principals WHERE id <> ?`, store.LocalPrincipal).Scan(&n)
	return n, sqliteErr(err)
}

// CreateToken stores a token by its hash.
func (s *Store) CreateToken(ctx context.Context, principalID, name, scope string, hash []byte) (store.Token, error) {
	t := store.Token{ID: engine.NewID("tok_"), PrincipalID: principalID, Name: name, Scope: scope, CreatedAt: s.clock.Now()}
	err := s.write(ctx, func(tx *stmts.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO tokens (id, principal_id, scope, hash, created_at, name) VALUES (?, ?, ?, ?, ?, ?)`,
			t.ID, principalID, scope, hash, ms(t.CreatedAt), name); err != nil {
			return err
		}
		return tx.QueryRowContext(ctx, `SELECT name FROM principals WHERE id = ?`, principalID).Scan(&t.PrincipalName)
	})
	return t, err
}

const sqliteTokenColumns = `t.id, t.principal_id, p.name, t.name, t.scope, t.created_at, t.revoked_at, t.last_used_at`

func scanSQLiteToken(row scanner) (store.Token, error) {
	var (
		t       store.Token
		at      int64
		revoked sql.NullInt64
		used    sql.NullInt64
	)
	err := row.Scan(&t.ID, &t.PrincipalID, &t.PrincipalName, &t.Name, &t.Scope, &at, &revoked, &used)
	t.CreatedAt = fromMS(at)
	if revoked.Valid {
		r := fromMS(revoked.Int64)
		t.RevokedAt = &r
	}
	if used.Valid {
		u := fromMS(used.Int64)
		t.LastUsedAt = &u
	}
	return t, err
}

// Tokens lists every token, oldest first.
func (s *Store) Tokens(ctx context.Context) ([]store.Token, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT `+sqliteTokenColumns+`
		FROM tokens t JOIN principals p ON p.id = t.principal_id ORDER BY t.created_at, t.id`)
	if err != nil {
		return nil, sqliteErr(err)
	}
	defer rows.Close()
	list := []store.Token{}
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
func (s *Store) RevokeToken(ctx context.Context, id string) (store.Token, error) {
	var t store.Token
	err := s.write(ctx, func(tx *stmts.Tx) error {
		if _, err := tx.ExecContext(ctx, `UPDATE tokens SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?`, ms(s.clock.Now()), id); err != nil {
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
func (s *Store) Credential(ctx context.Context, kind string, hash []byte) (store.Credential, error) {
	c := store.Credential{Kind: kind}
	var q string
	args := []any{hash}
	switch kind {
	case store.KindToken:
		q = `SELECT t.id, t.hash, t.scope, p.id, p.name, p.created_at, p.admin FROM tokens t JOIN principals p ON p.id = t.principal_id
			WHERE t.hash = ? AND t.revoked_at IS NULL`
	case store.KindCookie:
		q = `SELECT s.id, s.hash, s.scope, p.id, p.name, p.created_at, p.admin FROM sign_ins s JOIN principals p ON p.id = s.principal_id
			WHERE s.hash = ? AND s.kind = 'cookie' AND s.expires_at > ? AND ` + sqliteSignInTokenValid
		args = append(args, time.Now().UnixMilli())
	default:
		return c, store.ErrNotFound
	}
	var at int64
	err := s.reader.QueryRowContext(ctx, q, args...).Scan(&c.ID, &c.Hash, &c.Scope, &c.Principal.ID, &c.Principal.Name, &at, &c.Principal.Admin)
	c.Principal.CreatedAt = fromMS(at)
	return c, sqliteErr(err)
}

// CreateSignIn stores a browser sign-in or a one-time link.
func (s *Store) CreateSignIn(ctx context.Context, si store.SignIn) error {
	return s.write(ctx, func(tx *stmts.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO sign_ins (id, principal_id, kind, scope, hash, created_at, expires_at, token_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, NULLIF(?, ''))`, si.ID, si.PrincipalID, si.Kind, si.Scope, si.Hash, ms(s.clock.Now()), si.ExpiresAt.UnixMilli(), si.TokenID)
		return err
	})
}

// RedeemSignInLink deletes an unexpired one-time link and returns it.
func (s *Store) RedeemSignInLink(ctx context.Context, hash []byte) (store.SignIn, error) {
	si := store.SignIn{Kind: store.KindLink, Hash: hash}
	err := s.write(ctx, func(tx *stmts.Tx) error {
		var exp int64
		if err := tx.QueryRowContext(ctx, `DELETE FROM sign_ins WHERE hash = ? AND kind = 'link'
			RETURNING id, principal_id, scope, expires_at`, hash).Scan(&si.ID, &si.PrincipalID, &si.Scope, &exp); err != nil {
			return err
		}
		si.ExpiresAt = time.UnixMilli(exp)
		return nil
	})
	if err == nil && !si.ExpiresAt.After(time.Now()) {
		return store.SignIn{}, store.ErrNotFound
	}
	return si, err
}

// DeleteSignIn ends a sign-in.
func (s *Store) DeleteSignIn(ctx context.Context, id string) error {
	return s.write(ctx, func(tx *stmts.Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM sign_ins WHERE id = ?`, id)
		return err
	})
}

// LiveCredentials returns those of ids that are still valid credentials.
func (s *Store) LiveCredentials(ctx context.Context, ids []string) ([]string, error) {
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
		SELECT s.id FROM sign_ins s WHERE s.id IN (`+marks+`) AND s.kind = 'cookie' AND s.expires_at > ? AND `+sqliteSignInTokenValid, args...)
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
func (s *Store) SessionOwner(ctx context.Context, id string) (string, error) {
	var owner string
	err := s.reader.QueryRowContext(ctx, `SELECT owner FROM sessions WHERE id = ?`, id).Scan(&owner)
	return owner, sqliteErr(err)
}

// sqliteSignInTokenValid holds for a sign-in s that was made with no token
// or with one that is not revoked.
const sqliteSignInTokenValid = `(s.token_id IS NULL OR EXISTS (SELECT 1 FROM tokens t WHERE t.id = s.token_id AND t.revoked_at IS NULL))`

// SignIns lists a principal's valid browser sign-ins, newest first.
func (s *Store) SignIns(ctx context.Context, principalID string) ([]store.SignIn, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT s.id, s.principal_id, s.kind, s.scope, s.created_at, s.expires_at, coalesce(s.token_id, '')
		FROM sign_ins s WHERE s.principal_id = ? AND s.kind = 'cookie' AND s.expires_at > ? AND `+sqliteSignInTokenValid+`
		ORDER BY s.created_at DESC, s.id`, principalID, time.Now().UnixMilli())
	if err != nil {
		return nil, sqliteErr(err)
	}
	defer rows.Close()
	list := []store.SignIn{}
	for rows.Next() {
		var (
			si           store.SignIn
			made, expiry int64
		)
		if err := rows.Scan(&si.ID, &si.PrincipalID, &si.Kind, &si.Scope, &made, &expiry, &si.TokenID); err != nil {
			return nil, sqliteErr(err)
		}
		si.CreatedAt, si.ExpiresAt = time.UnixMilli(made), time.UnixMilli(expiry)
		list = append(list, si)
	}
	return list, sqliteErr(rows.Err())
}

// PruneSignIns deletes the expired sign-ins and links and the sign-ins
// whose token was revoked.
func (s *Store) PruneSignIns(ctx context.Context) (int64, error) {
	var n int64
	err := s.write(ctx, func(tx *stmts.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM sign_ins AS s WHERE s.expires_at <= ? OR NOT `+sqliteSignInTokenValid, time.Now().UnixMilli())
		if err == nil {
			n, _ = res.RowsAffected()
		}
		return err
	})
	return n, err
}

// TouchToken records that token id was used at at.
func (s *Store) TouchToken(ctx context.Context, id string, at time.Time) error {
	return s.write(ctx, func(tx *stmts.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE tokens SET last_used_at = ? WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
			at.UnixMilli(), id, at.UnixMilli())
		return err
	})
}

// Principals lists every principal but LocalPrincipal, oldest first.
func (s *Store) Principals(ctx context.Context) ([]store.Principal, error) {
	rows, err := s.reader.QueryContext(ctx, `SELECT id, name, created_at, admin FROM principals WHERE id <> ? ORDER BY created_at, id`, store.LocalPrincipal)
	if err != nil {
		return nil, sqliteErr(err)
	}
	defer rows.Close()
	list := []store.Principal{}
	for rows.Next() {
		var (
			pr store.Principal
			at int64
		)
		if err := rows.Scan(&pr.ID, &pr.Name, &at, &pr.Admin); err != nil {
			return nil, sqliteErr(err)
		}
		pr.CreatedAt = fromMS(at)
		list = append(list, pr)
	}
	return list, sqliteErr(rows.Err())
}

// Principal is the principal id.
func (s *Store) Principal(ctx context.Context, id string) (store.Principal, error) {
	var (
		pr store.Principal
		at int64
	)
	err := s.reader.QueryRowContext(ctx, `SELECT id, name, created_at, admin FROM principals WHERE id = ?`, id).Scan(&pr.ID, &pr.Name, &at, &pr.Admin)
	if errors.Is(err, sql.ErrNoRows) {
		return pr, store.ErrNotFound
	}
	pr.CreatedAt = fromMS(at)
	return pr, sqliteErr(err)
}

// SetAdmin makes a principal an admin or not.
func (s *Store) SetAdmin(ctx context.Context, principalID string, admin bool) error {
	return s.write(ctx, func(tx *stmts.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE principals SET admin = ? WHERE id = ?`, admin, principalID)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return store.ErrNotFound
		}
		return nil
	})
}
