-- +goose Up
-- A browser sign-in made with a token is as good as that token: token_id
-- names it, and the sign-in ends when the token is revoked (NULL for a
-- sign-in made with a one-time link). Expired sign-ins are pruned by
-- expires_at. A token has a name (what it is for: "laptop") and remembers
-- when it was last used (to the minute), and
-- an admin principal reads every session of the instance; the first
-- principal, made by the one-time link of a fresh install, is named admin.
ALTER TABLE sign_ins ADD COLUMN token_id text REFERENCES tokens (id) ON DELETE CASCADE;
CREATE INDEX sign_ins_token ON sign_ins (token_id) WHERE token_id IS NOT NULL;
CREATE INDEX sign_ins_principal ON sign_ins (principal_id);
CREATE INDEX sign_ins_expiry ON sign_ins (expires_at);
ALTER TABLE tokens ADD COLUMN last_used_at timestamptz;
ALTER TABLE tokens ADD COLUMN name text NOT NULL DEFAULT '';
ALTER TABLE principals ADD COLUMN admin boolean NOT NULL DEFAULT false;
UPDATE principals SET admin = true WHERE name = 'admin';

-- +goose Down
ALTER TABLE tokens DROP COLUMN name;
ALTER TABLE principals DROP COLUMN admin;
ALTER TABLE tokens DROP COLUMN last_used_at;
DROP INDEX sign_ins_expiry;
DROP INDEX sign_ins_principal;
DROP INDEX sign_ins_token;
ALTER TABLE sign_ins DROP COLUMN token_id;
