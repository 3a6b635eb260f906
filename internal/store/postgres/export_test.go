package postgres

// WarmStatements are the reads WarmPool prepares on every connection.
var WarmStatements = warmStatements

// PgPruneIdempotent is the Postgres prune of expired idempotency keys.
const PgPruneIdempotent = pgPruneIdempotent
