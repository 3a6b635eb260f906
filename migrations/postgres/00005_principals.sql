-- +goose Up
-- principals are the people and programs that use Tack. 'prn_local' is the
-- built-in principal of -auth local; every session that existed before
-- principals did was made by it.
CREATE TABLE principals (
    id          text        PRIMARY KEY,
    name        text        NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL
);
INSERT INTO principals (id, name, created_at) VALUES ('prn_local', 'local', now());

-- tokens hold only the SHA-256 of each token: the token itself is shown once.
CREATE TABLE tokens (
    id            text        PRIMARY KEY,
    principal_id  text        NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    scope         text        NOT NULL CHECK (scope IN ('read', 'write')),
    hash          bytea       NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL,
    revoked_at    timestamptz
);

-- sign_ins are browser sign-ins (kind 'cookie') and one-time sign-in links
-- (kind 'link'), each keyed by the SHA-256 of its secret, each expiring.
CREATE TABLE sign_ins (
    id            text        PRIMARY KEY,
    principal_id  text        NOT NULL REFERENCES principals (id) ON DELETE CASCADE,
    kind          text        NOT NULL CHECK (kind IN ('cookie', 'link')),
    scope         text        NOT NULL CHECK (scope IN ('read', 'write')),
    hash          bytea       NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL,
    expires_at    timestamptz NOT NULL
);

-- Every session belongs to the principal that created it.
ALTER TABLE sessions ADD COLUMN owner text NOT NULL DEFAULT 'prn_local' REFERENCES principals (id);
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
