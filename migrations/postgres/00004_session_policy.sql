-- +goose Up
-- parallel_in_progress is the session's own "at most one in_progress" policy:
-- NULL follows the server's default (-parallel-in-progress), which is what
-- every session made before this column meant.
ALTER TABLE sessions ADD COLUMN parallel_in_progress boolean;
-- external_key names a session by where it came from (an imported transcript),
-- so that creating it again finds the one already made.
ALTER TABLE sessions ADD COLUMN external_key text;
CREATE UNIQUE INDEX sessions_external_key ON sessions (external_key) WHERE external_key IS NOT NULL;

-- +goose Down
DROP INDEX sessions_external_key;
ALTER TABLE sessions DROP COLUMN external_key;
ALTER TABLE sessions DROP COLUMN parallel_in_progress;
