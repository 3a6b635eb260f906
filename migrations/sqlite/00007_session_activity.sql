-- +goose Up
-- What a session's agent gives Tack beyond the log itself; see the Postgres
-- migration of the same name. Times are Unix milliseconds, as everywhere.
-- parent_id has no REFERENCES (SQLite could not drop such a column): the
-- store checks the parent in the write transaction that makes the child.
ALTER TABLE events ADD COLUMN received_at INTEGER;
ALTER TABLE sessions ADD COLUMN agent TEXT;
ALTER TABLE sessions ADD COLUMN cwd TEXT;
ALTER TABLE sessions ADD COLUMN parent_id TEXT;
ALTER TABLE sessions ADD COLUMN plan_lifetime TEXT NOT NULL DEFAULT 'turn' CHECK (plan_lifetime IN ('turn', 'session'));
ALTER TABLE sessions ADD COLUMN turn_at INTEGER;
ALTER TABLE sessions ADD COLUMN ended_at INTEGER;
ALTER TABLE todo_lists ADD COLUMN task_high INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET turn_at = (
    SELECT e.at FROM events e
    WHERE e.session_id = sessions.id AND e.turn = sessions.turn AND e.type = 'turn/start'
    ORDER BY e.seq LIMIT 1)
WHERE turn_open;
CREATE INDEX sessions_parent_activity ON sessions (parent_id, updated_at DESC, id DESC) WHERE parent_id IS NOT NULL;

-- +goose Down
DROP INDEX sessions_parent_activity;
ALTER TABLE todo_lists DROP COLUMN task_high;
ALTER TABLE sessions DROP COLUMN ended_at;
ALTER TABLE sessions DROP COLUMN turn_at;
ALTER TABLE sessions DROP COLUMN plan_lifetime;
ALTER TABLE sessions DROP COLUMN parent_id;
ALTER TABLE sessions DROP COLUMN cwd;
ALTER TABLE sessions DROP COLUMN agent;
ALTER TABLE events DROP COLUMN received_at;
