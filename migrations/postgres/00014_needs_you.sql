-- +goose Up
-- needs_you is what the agent waits on its person for (a permission, a
-- question, a plan to approve; projection.NeedsYou as JSON), set with
-- needs_you_since and shown only while the session is in needs_you.
ALTER TABLE sessions ADD COLUMN needs_you jsonb;

-- +goose Down
ALTER TABLE sessions DROP COLUMN needs_you;
