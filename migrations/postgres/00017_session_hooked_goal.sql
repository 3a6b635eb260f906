-- +goose Up
-- hooked is whether an agent's hooks were ever heard for the session
-- (`tack connect`): the board tells a session that has no plan because
-- Tack is not connected for its agent from one that has none yet. goal is
-- the session's goal (projection.Goal as JSON), derived from its log as
-- each append that may change it is stored; NULL before any.
ALTER TABLE sessions ADD COLUMN hooked boolean NOT NULL DEFAULT false,
    ADD COLUMN goal jsonb;

-- +goose Down
ALTER TABLE sessions DROP COLUMN goal, DROP COLUMN hooked;
