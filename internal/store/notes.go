package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"
)

// Notes is the part of a Store that keeps what an agent's hook requests
// need of the earlier ones, in the database rather than in one instance's
// memory, so that any instance behind a balancer answers any request. What
// it keeps expires NoteRetention after it was last written.
type Notes interface {
	// SessionNote reads the note kept for the session: a JSON object, nil
	// when there is none or it expired.
	SessionNote(ctx context.Context, sessionID string) (json.RawMessage, error)
	// PatchSessionNote merges patch, a JSON object, into the session's
	// note, each of its keys replacing the note's, at once however many
	// instances patch it; the note's expiry starts again.
	PatchSessionNote(ctx context.Context, sessionID string, patch json.RawMessage) error
	// RememberCall records that owner's agent tool call callID (the
	// agent's tool_use_id) is in session sessionID.
	RememberCall(ctx context.Context, owner, callID, sessionID string) error
	// CallSession is the session RememberCall recorded for owner's callID;
	// ErrNotFound when none was, or it expired.
	CallSession(ctx context.Context, owner, callID string) (string, error)
}

// NoteRetention is how long a session's note and a remembered tool call are
// kept after their last write: far past any agent's turn. Expired rows are
// pruned by later RememberCalls, pruneBatch of each at a time.
const NoteRetention = 24 * time.Hour

// The Postgres statements. A patch of an expired note starts a new one.
const (
	pgSessionNote      = `SELECT note FROM session_notes WHERE session_id = $1 AND expires_at > $2`
	pgPatchSessionNote = `INSERT INTO session_notes (session_id, note, expires_at) VALUES ($1, $2, $3)
		ON CONFLICT (session_id) DO UPDATE SET expires_at = excluded.expires_at,
		note = CASE WHEN session_notes.expires_at > $4 THEN session_notes.note || excluded.note ELSE excluded.note END`
	pgRememberCall = `INSERT INTO hook_calls (owner, call_id, session_id, expires_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (owner, call_id) DO UPDATE SET session_id = excluded.session_id, expires_at = excluded.expires_at`
	pgCallSession = `SELECT session_id FROM hook_calls WHERE owner = $1 AND call_id = $2 AND expires_at > $3`
	// By ctid, skipping rows another write is pruning, as pgPruneIdempotent.
	pgPruneCalls = `DELETE FROM hook_calls WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM hook_calls WHERE expires_at < $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED))`
	pgPruneNotes = `DELETE FROM session_notes WHERE ctid = ANY (ARRAY(
		SELECT ctid FROM session_notes WHERE expires_at < $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED))`
)

// SessionNote reads the session's note.
func (p *Postgres) SessionNote(ctx context.Context, id string) (json.RawMessage, error) {
	var note []byte
	err := p.Pool.QueryRow(ctx, pgSessionNote, id, time.Now()).Scan(&note)
	if errors.Is(pgErr(err), ErrNotFound) {
		return nil, nil
	}
	return note, pgErr(err)
}

// PatchSessionNote merges patch into the session's note.
func (p *Postgres) PatchSessionNote(ctx context.Context, id string, patch json.RawMessage) error {
	now := time.Now()
	_, err := p.Pool.Exec(ctx, pgPatchSessionNote, id, string(patch), now.Add(NoteRetention), now)
	return pgErr(err)
}

// RememberCall records the session of owner's tool call, and prunes what
// expired.
func (p *Postgres) RememberCall(ctx context.Context, owner, callID, id string) error {
	now := time.Now()
	if _, err := p.Pool.Exec(ctx, pgRememberCall, owner, callID, id, now.Add(NoteRetention)); err != nil {
		return pgErr(err)
	}
	if _, err := p.Pool.Exec(ctx, pgPruneCalls, now, pruneBatch); err != nil {
		return pgErr(err)
	}
	_, err := p.Pool.Exec(ctx, pgPruneNotes, now, pruneBatch)
	return pgErr(err)
}

// CallSession reads the session of owner's tool call.
func (p *Postgres) CallSession(ctx context.Context, owner, callID string) (string, error) {
	var id string
	err := p.Pool.QueryRow(ctx, pgCallSession, owner, callID, time.Now()).Scan(&id)
	return id, pgErr(err)
}

// The SQLite statements, times in Unix milliseconds; json_patch merges as
// Postgres's || does on objects.
const (
	sqliteSessionNote      = `SELECT note FROM session_notes WHERE session_id = ? AND expires_at > ?`
	sqlitePatchSessionNote = `INSERT INTO session_notes (session_id, note, expires_at) VALUES (?1, json(?2), ?3)
		ON CONFLICT (session_id) DO UPDATE SET expires_at = excluded.expires_at,
		note = CASE WHEN session_notes.expires_at > ?4 THEN json_patch(session_notes.note, excluded.note) ELSE excluded.note END`
	sqliteRememberCall = `INSERT INTO hook_calls (owner, call_id, session_id, expires_at) VALUES (?, ?, ?, ?)
		ON CONFLICT (owner, call_id) DO UPDATE SET session_id = excluded.session_id, expires_at = excluded.expires_at`
	sqliteCallSession = `SELECT session_id FROM hook_calls WHERE owner = ? AND call_id = ? AND expires_at > ?`
	sqlitePruneCalls  = `DELETE FROM hook_calls WHERE rowid IN (
		SELECT rowid FROM hook_calls WHERE expires_at < ? ORDER BY expires_at LIMIT ?)`
	sqlitePruneNotes = `DELETE FROM session_notes WHERE rowid IN (
		SELECT rowid FROM session_notes WHERE expires_at < ? ORDER BY expires_at LIMIT ?)`
)

// SessionNote reads the session's note.
func (s *SQLite) SessionNote(ctx context.Context, id string) (json.RawMessage, error) {
	var note string
	err := s.reader.QueryRowContext(ctx, sqliteSessionNote, id, time.Now().UnixMilli()).Scan(&note)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return json.RawMessage(note), sqliteErr(err)
}

// PatchSessionNote merges patch into the session's note.
func (s *SQLite) PatchSessionNote(ctx context.Context, id string, patch json.RawMessage) error {
	now := time.Now()
	return s.write(ctx, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, sqlitePatchSessionNote, id, string(patch), now.Add(NoteRetention).UnixMilli(), now.UnixMilli())
		return err
	})
}

// RememberCall records the session of owner's tool call, and prunes what
// expired.
func (s *SQLite) RememberCall(ctx context.Context, owner, callID, id string) error {
	now := time.Now()
	return s.write(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, sqliteRememberCall, owner, callID, id, now.Add(NoteRetention).UnixMilli()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, sqlitePruneCalls, now.UnixMilli(), pruneBatch); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, sqlitePruneNotes, now.UnixMilli(), pruneBatch)
		return err
	})
}

// CallSession reads the session of owner's tool call.
func (s *SQLite) CallSession(ctx context.Context, owner, callID string) (string, error) {
	var id string
	err := s.reader.QueryRowContext(ctx, sqliteCallSession, owner, callID, time.Now().UnixMilli()).Scan(&id)
	return id, sqliteErr(err)
}
