-- +goose Up
-- See the Postgres migration of the same name. Times are Unix milliseconds.
-- token_id has no REFERENCES (SQLite could not drop such a column); a
-- token is never deleted but with its principal, whose sign-ins go too.
ALTER TABLE sign_ins ADD COLUMN token_id TEXT;
CREATE INDEX sign_ins_token ON sign_ins (token_id) WHERE token_id IS NOT NULL;
CREATE INDEX sign_ins_principal ON sign_ins (principal_id);
CREATE INDEX sign_ins_expiry ON sign_ins (expires_at);
ALTER TABLE tokens ADD COLUMN last_used_at INTEGER;
ALTER TABLE tokens ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE principals ADD COLUMN admin INTEGER NOT NULL DEFAULT 0 CHECK (admin IN (0, 1));
UPDATE principals SET admin = 1 WHERE name = 'admin';

-- +goose Down
ALTER TABLE tokens DROP COLUMN name;
DROP INDEX sign_ins_expiry;
DROP INDEX sign_ins_principal;
DROP INDEX sign_ins_token;
ALTER TABLE principals DROP COLUMN admin;
ALTER TABLE tokens DROP COLUMN last_used_at;
ALTER TABLE sign_ins DROP COLUMN token_id;
