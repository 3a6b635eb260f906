-- +goose Up
-- Whether an agent's hooks were ever heard for the session; see the
-- Postgres migration of the same name.
ALTER TABLE sessions ADD COLUMN hooked INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE sessions DROP COLUMN hooked;
