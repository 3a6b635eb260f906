-- +goose Up
-- The session summary shows how the last turn ended and the item in
-- progress, kept in the append transaction so that a page of the sessions
-- list stays a range read of the activity index: turn_end_reason is the
-- reason of the turn/end that closed the turn (NULL while a turn is open and
-- before any), current_item the content of the list's first in_progress
-- item (NULL when none is).
ALTER TABLE sessions ADD COLUMN turn_end_reason text;
ALTER TABLE todo_lists ADD COLUMN current_item text;
UPDATE todo_lists SET current_item = (
    SELECT i->>'content' FROM jsonb_array_elements(items) WITH ORDINALITY AS e(i, n)
    WHERE i->>'status' = 'in_progress' ORDER BY n LIMIT 1)
WHERE items <> '[]'::jsonb;
UPDATE sessions s SET turn_end_reason = (
    SELECT e.data->>'reason' FROM events e
    WHERE e.session_id = s.id AND e.turn = s.turn AND e.type = 'turn/end'
    ORDER BY e.seq DESC LIMIT 1)
WHERE s.turn > 0 AND NOT s.turn_open;

-- +goose Down
ALTER TABLE todo_lists DROP COLUMN current_item;
ALTER TABLE sessions DROP COLUMN turn_end_reason;
