package store

import (
	"context"
	"encoding/json"
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
// pruned by later RememberCalls, a few of each at a time.
const NoteRetention = 24 * time.Hour
