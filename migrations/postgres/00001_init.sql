-- +goose Up
-- sessions holds one row per session: its identity and the head of its log.
-- The row is locked for the length of every append, which is what makes seq
-- gapless and the projection consistent with the log.
CREATE TABLE sessions (
    id          text        PRIMARY KEY,
    title       text        NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    last_seq    bigint      NOT NULL DEFAULT 0,
    turn        integer     NOT NULL DEFAULT 0,
    turn_open   boolean     NOT NULL DEFAULT false
);
CREATE INDEX sessions_activity ON sessions (updated_at DESC, id DESC);

-- events is the append-only log, one row per event, keyed by (session, seq).
CREATE TABLE events (
    session_id  text        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq         bigint      NOT NULL,
    type        text        NOT NULL,
    turn        integer     NOT NULL,
    at          timestamptz NOT NULL,
    data        json        NOT NULL,
    PRIMARY KEY (session_id, seq)
);

-- todo_lists is the todos projection, kept in the append transaction so that
-- every read is a point read.
CREATE TABLE todo_lists (
    session_id   text        PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    version      bigint      NOT NULL DEFAULT 0,
    standing     boolean     NOT NULL DEFAULT false,
    items        jsonb       NOT NULL DEFAULT '[]',
    pending      integer     NOT NULL DEFAULT 0,
    in_progress  integer     NOT NULL DEFAULT 0,
    completed    integer     NOT NULL DEFAULT 0,
    updated_at   timestamptz
);

-- idempotency_keys remembers the result of each append made with an
-- Idempotency-Key, so a retry gets the original answer.
CREATE TABLE idempotency_keys (
    session_id    text        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    key           text        NOT NULL,
    request_hash  text        NOT NULL,
    result        jsonb       NOT NULL,
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (session_id, key)
);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE todo_lists;
DROP TABLE events;
DROP TABLE sessions;
