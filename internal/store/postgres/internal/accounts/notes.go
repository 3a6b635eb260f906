package accounts

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/internal/engine"
	"github.com/tack-dev/tack/internal/store/postgres/internal/pgerr"
)

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
func (p *Accounts) SessionNote(ctx context.Context, id string) (json.RawMessage, error) {
	var note []byte
	err := p.pool.QueryRow(ctx, pgSessionNote, id, time.Now()).Scan(&note)
	if errors.Is(pgerr.Map(err), store.ErrNotFound) {
		return nil, nil
	}
	return note, pgerr.Map(err)
}

// PatchSessionNote merges patch into the session's note.
func (p *Accounts) PatchSessionNote(ctx context.Context, id string, patch json.RawMessage) error {
	now := time.Now()
	_, err := p.pool.Exec(ctx, pgPatchSessionNote, id, string(patch), now.Add(store.NoteRetention), now)
	return pgerr.Map(err)
}

// RememberCall records the session of owner's tool call, and prunes what
// expired.
func (p *Accounts) RememberCall(ctx context.Context, owner, callID, id string) error {
	now := time.Now()
	if _, err := p.pool.Exec(ctx, pgRememberCall, owner, callID, id, now.Add(store.NoteRetention)); err != nil {
		return pgerr.Map(err)
	}
	if _, err := p.pool.Exec(ctx, pgPruneCalls, now, engine.PruneBatch); err != nil {
		return pgerr.Map(err)
	}
	_, err := p.pool.Exec(ctx, pgPruneNotes, now, engine.PruneBatch)
	return pgerr.Map(err)
}

// CallSession reads the session of owner's tool call.
func (p *Accounts) CallSession(ctx context.Context, owner, callID string) (string, error) {
	var id string
	err := p.pool.QueryRow(ctx, pgCallSession, owner, callID, time.Now()).Scan(&id)
	return id, pgerr.Map(err)
}
