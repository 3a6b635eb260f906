-- +goose Up
-- A replayed append must answer the original bytes. jsonb re-orders and
-- re-spaces the event data nested in a stored result; json keeps it verbatim.
ALTER TABLE idempotency_keys ALTER COLUMN result TYPE json USING result::json;

-- +goose Down
ALTER TABLE idempotency_keys ALTER COLUMN result TYPE jsonb USING result::jsonb;
