-- +goose Up
-- People steer the plan; see the Postgres migration of the same name. seen
-- is the latest version the model was shown (kept here: a todo_read and a
-- rejection append nothing), last_edit and edited_by the latest todo/edit,
-- steps the message/assistant events since the latest list write.
ALTER TABLE todo_lists ADD COLUMN seen INTEGER NOT NULL DEFAULT 0;
ALTER TABLE todo_lists ADD COLUMN last_edit INTEGER NOT NULL DEFAULT 0;
ALTER TABLE todo_lists ADD COLUMN edited_by TEXT NOT NULL DEFAULT '';
ALTER TABLE todo_lists ADD COLUMN steps INTEGER NOT NULL DEFAULT 0;
UPDATE todo_lists SET seen = version;
-- Items gain their timeline, from what is known: updatedAt.
UPDATE todo_lists SET items = (
    SELECT json_group_array(json_set(e.value,
        '$.createdAt', json_extract(e.value, '$.updatedAt'),
        '$.startedAt', CASE WHEN json_extract(e.value, '$.status') = 'in_progress' THEN json_extract(e.value, '$.updatedAt') END,
        '$.completedAt', CASE WHEN json_extract(e.value, '$.status') = 'completed' THEN json_extract(e.value, '$.updatedAt') END))
    FROM (SELECT value FROM json_each(todo_lists.items) ORDER BY key) AS e)
WHERE items <> '[]';

-- todo_versions is the list's history, one row per list write, kept in the
-- append transaction; a page is a range read of the primary key.
CREATE TABLE todo_versions (
    session_id  TEXT    NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    version     INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    author      TEXT    NOT NULL,
    todos       TEXT    NOT NULL,
    changes     TEXT    NOT NULL,
    PRIMARY KEY (session_id, version)
) STRICT;

-- +goose Down
DROP TABLE todo_versions;
ALTER TABLE todo_lists DROP COLUMN steps;
ALTER TABLE todo_lists DROP COLUMN edited_by;
ALTER TABLE todo_lists DROP COLUMN last_edit;
ALTER TABLE todo_lists DROP COLUMN seen;
