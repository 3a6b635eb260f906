-- +goose Up
-- hooked is whether an agent's hooks were ever heard for the session
-- (`tack connect`): the board tells a session that has no plan because
-- Tack is not connected for its agent from one that has none yet.
ALTER TABLE sessions ADD COLUMN hooked boolean NOT NULL DEFAULT false;

-- +goose Down
ALTER TABLE sessions DROP COLUMN hooked;
