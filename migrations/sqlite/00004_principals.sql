-- +goose Up
-- The same tables as the Postgres schema (see its 00005_principals.sql).
-- 'prn_local' is the built-in principal of -auth local, owner of every
-- session made before principals existed.
CREATE TABLE principals (
    id          TEXT    PRIMARY KEY,
    name        TEXT    NOT NULL UNIQUE,
    created_at  INTEGER NOT NULL
) STRICT;
INSERT INTO principals (id, name, created_at) VALUES ('prn_local', 'local', CAST(unixepoch('subsec') * 1000 AS INTEGER));

CREATE TABLE tokens (
    id            TEXT    PRIMARY KEY,
    principal_id  TEXT    NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    scope         TEXT    NOT NULL CHECK (scope IN ('read', 'write')),
    hash          BLOB    NOT NULL UNIQUE,
    created_at    INTEGER NOT NULL,
    revoked_at    INTEGER
) STRICT;

CREATE TABLE sign_ins (
    id            TEXT    PRIMARY KEY,
    principal_id  TEXT    NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    kind          TEXT    NOT NULL CHECK (kind IN ('cookie', 'link')),
    scope         TEXT    NOT NULL CHECK (scope IN ('read', 'write')),
    hash          BLOB    NOT NULL UNIQUE,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL
) STRICT;

ALTER TABLE sessions ADD COLUMN owner TEXT NOT NULL DEFAULT 'prn_local'; -- SQLite cannot add a column with a REFERENCES clause and a non-NULL default
CREATE INDEX sessions_owner_activity ON sessions (owner, updated_at DESC, id DESC);
-- An external key (an imported transcript) names a session among its owner's.
DROP INDEX sessions_external_key;
CREATE UNIQUE INDEX sessions_owner_external_key ON sessions (owner, external_key) WHERE external_key IS NOT NULL;

-- +goose Down
DROP INDEX sessions_owner_external_key;
CREATE UNIQUE INDEX sessions_external_key ON sessions (external_key) WHERE external_key IS NOT NULL;
DROP INDEX sessions_owner_activity;
ALTER TABLE sessions DROP COLUMN owner;
DROP TABLE sign_ins;
DROP TABLE tokens;
DROP TABLE principals;
