-- +goose Up
-- What a session's hooks need of their earlier requests, kept where every
-- instance reads it (an instance behind a balancer answers any request):
-- session_notes holds what the hook answers told each session's model of
-- its plan (a JSON object of the API's), hook_calls the session of each
-- tool call a PreToolUse hook told of, by the agent's tool_use_id, for the
-- MCP call that names it. Both expire: a note a day after its last change,
-- a call a day after its hook; expired rows are pruned by later writes.
CREATE TABLE session_notes (
    session_id  text        PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
    note        jsonb       NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX session_notes_expiry ON session_notes (expires_at);
CREATE TABLE hook_calls (
    owner       text        NOT NULL,
    call_id     text        NOT NULL,
    session_id  text        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (owner, call_id)
);
CREATE INDEX hook_calls_expiry ON hook_calls (expires_at);

-- +goose Down
DROP TABLE hook_calls;
DROP TABLE session_notes;
