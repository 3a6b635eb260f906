-- +goose Up
-- tack_expect fails the statement, and so the transaction it is in, unless
-- ok is true. An append made from the state an instance cached sends its
-- whole transaction in one pipeline; its first statements check, under the
-- session's row lock, that the state it started from is still the stored
-- one, and this error (SQLSTATE TK001) aborts the pipeline, COMMIT
-- included, when it is not: the append then runs again from a locking read.
-- +goose StatementBegin
CREATE FUNCTION tack_expect(ok boolean) RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF ok IS NOT TRUE THEN
        RAISE EXCEPTION 'the session moved since its state was cached' USING ERRCODE = 'TK001';
    END IF;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION tack_expect(boolean);
