-- +goose Up
-- What a session's agent gives Tack beyond the log itself. An event's at is
-- the agent's own time when it gave one; received_at is then when Tack
-- received it (NULL when at is that time already). A session names its
-- agent, its working directory, the session it is a subagent of, and how
-- long its lists stand (plan_lifetime: 'turn' or 'session'). turn_at (the
-- open turn's turn/start), ended_at (a session/end no event followed) and
-- todo_lists.task_high (the highest task id a list write held) move with the
-- log in the append transaction, like the rest of the projection's state;
-- the latest event's time is sessions.updated_at. The children of a session
-- are a range read of sessions_parent_activity, in the list's order.
ALTER TABLE events ADD COLUMN received_at timestamptz;
ALTER TABLE sessions
    ADD COLUMN agent text,
    ADD COLUMN cwd text,
    ADD COLUMN parent_id text REFERENCES sessions (id),
    ADD COLUMN plan_lifetime text NOT NULL DEFAULT 'turn' CHECK (plan_lifetime IN ('turn', 'session')),
    ADD COLUMN turn_at timestamptz,
    ADD COLUMN ended_at timestamptz;
ALTER TABLE todo_lists ADD COLUMN task_high bigint NOT NULL DEFAULT 0;
UPDATE sessions s SET turn_at = (
    SELECT e.at FROM events e
    WHERE e.session_id = s.id AND e.turn = s.turn AND e.type = 'turn/start'
    ORDER BY e.seq LIMIT 1)
WHERE s.turn_open;
CREATE INDEX sessions_parent_activity ON sessions (parent_id, updated_at DESC, id DESC) WHERE parent_id IS NOT NULL;

-- +goose Down
DROP INDEX sessions_parent_activity;
ALTER TABLE todo_lists DROP COLUMN task_high;
ALTER TABLE sessions DROP COLUMN ended_at, DROP COLUMN turn_at, DROP COLUMN plan_lifetime,
    DROP COLUMN parent_id, DROP COLUMN cwd, DROP COLUMN agent;
ALTER TABLE events DROP COLUMN received_at;
