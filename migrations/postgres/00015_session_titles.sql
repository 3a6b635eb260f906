-- +goose Up
-- A session's title and whether it is listed move with its log. untitled
-- is true while the title is the one Tack made up (agent, project, time):
-- the first person's prompt an append brings replaces it, in the append's
-- transaction; a title given at creation or by a rename is final. listed
-- is false for a session an agent's hook made before the agent said
-- anything: it joins the list (and the feed, the board, notifications)
-- with its first event other than a session/end, so that `claude mcp list`
-- and the like leave no empty sessions behind.
ALTER TABLE sessions
    ADD COLUMN untitled boolean NOT NULL DEFAULT false,
    ADD COLUMN listed boolean NOT NULL DEFAULT true;
-- The sessions titled by their raw key before read from their agent,
-- project and creation time (projection.DefaultTitle's form) until a prompt
-- titles them: a key is no title.
UPDATE sessions SET untitled = true, title =
    CASE agent WHEN 'claude-code' THEN 'Claude Code' WHEN 'codex' THEN 'Codex' ELSE coalesce(agent, 'Session') END
    || coalesce(' · ' || nullif(substring(rtrim(cwd, '/') from '[^/]*$'), ''), '')
    || ' · ' || to_char(created_at AT TIME ZONE 'UTC', 'HH24:MI') || ' UTC'
WHERE external_key IS NOT NULL AND title = external_key;
UPDATE sessions s SET listed = false
WHERE external_key IS NOT NULL
    AND NOT EXISTS (SELECT FROM events e WHERE e.session_id = s.id AND e.type <> 'session/end');

-- +goose Down
ALTER TABLE sessions DROP COLUMN listed, DROP COLUMN untitled;
