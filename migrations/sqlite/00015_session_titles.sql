-- +goose Up
-- A session's title and whether it is listed move with its log; see the
-- Postgres migration of the same name.
ALTER TABLE sessions ADD COLUMN untitled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN listed INTEGER NOT NULL DEFAULT 1;
UPDATE sessions SET untitled = 1, title =
    CASE agent WHEN 'claude-code' THEN 'Claude Code' WHEN 'codex' THEN 'Codex' ELSE coalesce(agent, 'Session') END
    || coalesce(' · ' || nullif(replace(rtrim(cwd, '/'), rtrim(rtrim(cwd, '/'), replace(rtrim(cwd, '/'), '/', '')), ''), ''), '')
    || ' · ' || strftime('%H:%M', created_at / 1000, 'unixepoch') || ' UTC'
WHERE external_key IS NOT NULL AND title = external_key;
UPDATE sessions SET listed = 0
WHERE external_key IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM events e WHERE e.session_id = sessions.id AND e.type <> 'session/end');

-- +goose Down
ALTER TABLE sessions DROP COLUMN listed;
ALTER TABLE sessions DROP COLUMN untitled;
