-- +goose Up
-- What the agent waits on its person for, as JSON; see the Postgres
-- migration of the same name.
ALTER TABLE sessions ADD COLUMN needs_you TEXT;

-- +goose Down
ALTER TABLE sessions DROP COLUMN needs_you;
