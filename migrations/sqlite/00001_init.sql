-- +goose Up
-- The SQLite schema mirrors the Postgres one table for table. Times are
-- INTEGER milliseconds since the Unix epoch (UTC), so what is stored is
-- exactly what is served; booleans are 0 or 1; JSON is TEXT, kept verbatim.
-- Appends run in BEGIN IMMEDIATE on the one writer connection, which is what
-- makes seq gapless and the projection consistent with the log.
CREATE TABLE sessions (
    id          TEXT    PRIMARY KEY,
    title       TEXT    NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    last_seq    INTEGER NOT NULL DEFAULT 0,
    turn        INTEGER NOT NULL DEFAULT 0,
    turn_open   INTEGER NOT NULL DEFAULT 0 CHECK (turn_open IN (0, 1))
) STRICT, WITHOUT ROWID;
CREATE INDEX sessions_activity ON sessions (updated_at DESC, id DESC);

-- events is the append-only log, one row per event, keyed by (session, seq).
CREATE TABLE events (
    session_id  TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,
    type        TEXT    NOT NULL,
    turn        INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    data        TEXT    NOT NULL,
    PRIMARY KEY (session_id, seq)
) STRICT;

-- todo_lists is the todos projection, kept in the append transaction so that
-- every read is a point read.
CREATE TABLE todo_lists (
    session_id   TEXT    PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    version      INTEGER NOT NULL DEFAULT 0,
    standing     INTEGER NOT NULL DEFAULT 0 CHECK (standing IN (0, 1)),
    items        TEXT    NOT NULL DEFAULT '[]',
    pending      INTEGER NOT NULL DEFAULT 0,
    in_progress  INTEGER NOT NULL DEFAULT 0,
    completed    INTEGER NOT NULL DEFAULT 0,
    updated_at   INTEGER
) STRICT;

-- idempotency_keys remembers the result of each append made with an
-- Idempotency-Key, so a retry gets the original answer.
CREATE TABLE idempotency_keys (
    session_id    TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    key           TEXT    NOT NULL,
    request_hash  TEXT    NOT NULL,
    result        TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (session_id, key)
) STRICT;

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE todo_lists;
DROP TABLE events;
DROP TABLE sessions;
