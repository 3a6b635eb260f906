-- +goose Up
-- A read lease lets one instance answer a session's todo list from memory
-- (internal/store/postgres/fast/lease.go): while the row stands, unexpired by
-- Postgres' clock, no other instance may change the list. The holder
-- renews it while the session is read, and deletes it when another
-- instance asks (NOTIFY) or when it stops reading.
--
-- No foreign key to sessions: its check would share the session's row
-- lock (FOR KEY SHARE), which an append holds FOR UPDATE, and a lease
-- statement must never wait for a writer (see fast/lease.go). A lease is only
-- taken of a session whose todo_lists row it locks, and a lease left of a
-- session gone is pruned once expired.
CREATE TABLE read_leases (
    session_id text PRIMARY KEY,
    instance   text NOT NULL,
    expires_at timestamptz NOT NULL
);
CREATE INDEX read_leases_instance ON read_leases (instance);

-- tack_lease_guard runs before every change of a list's view (its
-- version, standing, items or time), by any writer of any version of
-- Tack, holding the list's row lock (Postgres locks the row before a
-- BEFORE UPDATE trigger runs), which an instance taking a lease must share
-- (FOR SHARE). It deletes an
-- expired lease of another instance, then fails the transaction (SQLSTATE
-- TK003) while an unexpired one stands: the writer then asks its holder to
-- let go, and tries again. The instance is the connection's tack.instance,
-- set when Tack connects; a connection without one holds no lease. The two
-- statements see two snapshots, the second taken after the first: a
-- renewal that committed meanwhile is seen, and one the DELETE waited for
-- kept its lease.
-- +goose StatementBegin
CREATE FUNCTION tack_lease_guard() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    me text := coalesce(current_setting('tack.instance', true), '');
BEGIN
    DELETE FROM read_leases WHERE session_id = NEW.session_id AND instance <> me AND expires_at <= now();
    IF EXISTS (SELECT FROM read_leases WHERE session_id = NEW.session_id AND instance <> me) THEN
        RAISE EXCEPTION 'the todo list of session % is leased to another instance', NEW.session_id USING ERRCODE = 'TK003';
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER todo_lists_lease_guard BEFORE UPDATE OF version, standing, items, updated_at ON todo_lists
    FOR EACH ROW EXECUTE FUNCTION tack_lease_guard();

-- +goose Down
DROP TRIGGER todo_lists_lease_guard ON todo_lists;
DROP FUNCTION tack_lease_guard();
DROP TABLE read_leases;
