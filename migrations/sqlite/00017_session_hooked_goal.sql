-- +goose Up
-- Whether an agent's hooks were ever heard for the session, and its goal
-- as JSON; see the Postgres migration of the same name.
ALTER TABLE sessions ADD COLUMN hooked INTEGER NOT NULL DEFAULT 0;
ALTER TABLE sessions ADD COLUMN goal TEXT;

-- +goose Down
ALTER TABLE sessions DROP COLUMN goal;
ALTER TABLE sessions DROP COLUMN hooked;
