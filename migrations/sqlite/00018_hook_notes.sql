-- +goose Up
-- What a session's hooks need of their earlier requests; see the Postgres
-- migration of the same name. Times are Unix milliseconds.
CREATE TABLE session_notes (
    session_id  TEXT    PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    note        TEXT    NOT NULL,
    expires_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX session_notes_expiry ON session_notes (expires_at);
CREATE TABLE hook_calls (
    owner       TEXT    NOT NULL,
    call_id     TEXT    NOT NULL,
    session_id  TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (owner, call_id)
) STRICT;
CREATE INDEX hook_calls_expiry ON hook_calls (expires_at);

-- +goose Down
DROP TABLE hook_calls;
DROP TABLE session_notes;
