-- +goose Up
-- The agent's own ids of events, and since when the agent has waited on a
-- person; see the Postgres migration of the same name. Times are Unix
-- milliseconds, as everywhere.
CREATE TABLE event_keys (
    session_id TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    key        TEXT    NOT NULL,
    seq        INTEGER NOT NULL,
    PRIMARY KEY (session_id, key)
) STRICT, WITHOUT ROWID;
ALTER TABLE sessions ADD COLUMN needs_you_since INTEGER;

-- +goose Down
ALTER TABLE sessions DROP COLUMN needs_you_since;
DROP TABLE event_keys;
