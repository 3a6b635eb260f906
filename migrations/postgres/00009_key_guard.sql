-- +goose Up
-- tack_expect_key_free fails the statement, and so the transaction it is
-- in, unless free is true. An append with an Idempotency-Key made from the
-- state an instance cached checks with it, under the session's row lock,
-- that no live result is stored under its key; this error (SQLSTATE TK002)
-- aborts the pipeline when one is, and the append runs again the locking
-- way, which answers from the stored result. It is not TK001: the cached
-- state was not stale.
-- +goose StatementBegin
CREATE FUNCTION tack_expect_key_free(free boolean) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF free IS NOT TRUE THEN
        RAISE EXCEPTION 'a result is stored under this Idempotency-Key' USING ERRCODE = 'TK002';
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION tack_expect_key_free(boolean);
