-- +goose Up
-- Idempotency keys expire (store.IdempotencyRetention); keyed appends prune
-- the expired ones oldest first, which this index makes a range read.
CREATE INDEX idempotency_keys_age ON idempotency_keys (created_at);

-- +goose Down
DROP INDEX idempotency_keys_age;
