-- +goose Up
-- An event may carry the agent's own ids for it (a transcript line's uuid,
-- a tool_use_id, a prompt_id), so that an event that reaches Tack twice, by
-- a hook and by the transcript, is stored once: event_keys holds each key
-- a session's log has taken, with the seq of the event that holds it, and
-- an append of an event whose key is held appends nothing for it.
-- needs_you_since is since when the agent has waited on a person (a
-- permission prompt), which the log does not hold; any later event ends it.
CREATE TABLE event_keys (
    session_id text   NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    key        text   NOT NULL,
    seq        bigint NOT NULL,
    PRIMARY KEY (session_id, key)
);
ALTER TABLE sessions ADD COLUMN needs_you_since timestamptz;

-- +goose Down
ALTER TABLE sessions DROP COLUMN needs_you_since;
DROP TABLE event_keys;
