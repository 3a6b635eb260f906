-- +goose Up
-- The session summary shows how the last turn ended and the item in
-- progress; see the Postgres migration of the same name.
ALTER TABLE sessions ADD COLUMN turn_end_reason TEXT;
ALTER TABLE todo_lists ADD COLUMN current_item TEXT;
UPDATE todo_lists SET current_item = (
    SELECT json_extract(e.value, '$.content') FROM json_each(todo_lists.items) AS e
    WHERE json_extract(e.value, '$.status') = 'in_progress' ORDER BY e.key LIMIT 1)
WHERE items <> '[]';
UPDATE sessions SET turn_end_reason = (
    SELECT json_extract(e.data, '$.reason') FROM events e
    WHERE e.session_id = sessions.id AND e.turn = sessions.turn AND e.type = 'turn/end'
    ORDER BY e.seq DESC LIMIT 1)
WHERE turn > 0 AND NOT turn_open;

-- +goose Down
ALTER TABLE todo_lists DROP COLUMN current_item;
ALTER TABLE sessions DROP COLUMN turn_end_reason;
