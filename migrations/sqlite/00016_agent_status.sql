-- +goose Up
-- The log's last seq when the agent began to wait on its person, and what
-- the agent's own registry last said of it; see the Postgres migration of
-- the same name.
ALTER TABLE sessions ADD COLUMN needs_you_seq INTEGER;
ALTER TABLE sessions ADD COLUMN agent_status TEXT CHECK (agent_status IN ('busy', 'idle'));
ALTER TABLE sessions ADD COLUMN agent_status_at INTEGER;
UPDATE sessions SET needs_you_seq = last_seq
WHERE needs_you_since IS NOT NULL AND (last_seq = 0 OR updated_at <= needs_you_since);

-- +goose Down
ALTER TABLE sessions DROP COLUMN agent_status_at;
ALTER TABLE sessions DROP COLUMN agent_status;
ALTER TABLE sessions DROP COLUMN needs_you_seq;
