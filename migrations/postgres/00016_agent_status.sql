-- +goose Up
-- needs_you_seq is the log's last_seq when needs_you_since was set: the
-- wait ends with the next event appended (a higher seq), however close in
-- time, and not with the events appended before the mark (a question's
-- own call). A wait no event has followed yet stands; the others are over.
--
-- agent_status is what the agent's own registry (Claude Code's
-- ~/.claude/sessions/<pid>.json) last said of it, busy or idle, and
-- agent_status_at since when: it decides working or idle while no event
-- is newer.
ALTER TABLE sessions
    ADD COLUMN needs_you_seq bigint,
    ADD COLUMN agent_status text CHECK (agent_status IN ('busy', 'idle')),
    ADD COLUMN agent_status_at timestamptz;
UPDATE sessions SET needs_you_seq = last_seq
WHERE needs_you_since IS NOT NULL AND (last_seq = 0 OR updated_at <= needs_you_since);

-- +goose Down
ALTER TABLE sessions DROP COLUMN agent_status_at, DROP COLUMN agent_status, DROP COLUMN needs_you_seq;
