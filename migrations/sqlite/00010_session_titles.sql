-- +goose Up
-- A session's title and whether it is listed move with its log; see the
-- Postgres migration of the same name.
ALTER TABLE sessions ADD COLUMN untitled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN listed INTEGER NOT NULL DEFAULT 1;
UPDATE sessions SET untitled = 1 WHERE external_key IS NOT NULL AND title = external_key;
UPDATE sessions SET listed = 0
WHERE external_key IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM events e WHERE e.session_id = sessions.id AND e.type <> 'session/end');

-- +goose Down
ALTER TABLE sessions DROP COLUMN listed;
ALTER TABLE sessions DROP COLUMN untitled;
