package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"github.com/tack-dev/tack/internal/store/sqlite/internal/stmts"
	"time"

	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/internal/engine"
)

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
func (s *Store) SessionNote(ctx context.Context, id string) (json.RawMessage, error) {
	var note string
	err := s.reader.QueryRowContext(ctx, sqliteSessionNote, id, time.Now().UnixMilli()).Scan(&note)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return json.RawMessage(note), sqliteErr(err)
}

// PatchSessionNote merges patch into the session's note.
func (s *Store) PatchSessionNote(ctx context.Context, id string, patch json.RawMessage) error {
	now := time.Now()
	return s.write(ctx, func(tx *stmts.Tx) error {
		_, err := tx.ExecContext(ctx, sqlitePatchSessionNote, id, string(patch), now.Add(store.NoteRetention).UnixMilli(), now.UnixMilli())
		return err
	})
}

// RememberCall records the session of owner's tool call, and prunes what
// expired.
func (s *Store) RememberCall(ctx context.Context, owner, callID, id string) error {
	now := time.Now()
	return s.write(ctx, func(tx *stmts.Tx) error {
		if _, err := tx.ExecContext(ctx, sqliteRememberCall, owner, callID, id, now.Add(store.NoteRetention).UnixMilli()); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, sqlitePruneCalls, now.UnixMilli(), engine.PruneBatch); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, sqlitePruneNotes, now.UnixMilli(), engine.PruneBatch)
		return err
	})
}

// CallSession reads the session of owner's tool call.
func (s *Store) CallSession(ctx context.Context, owner, callID string) (string, error) {
	var id string
	err := s.reader.QueryRowContext(ctx, sqliteCallSession, owner, callID, time.Now().UnixMilli()).Scan(&id)
	return id, sqliteErr(err)
}
