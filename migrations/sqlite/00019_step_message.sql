-- +goose Up
-- The id of the latest step's message; see the Postgres migration of the
-- same name.
ALTER TABLE todo_lists ADD COLUMN step_message TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE todo_lists DROP COLUMN step_message;
