-- +goose Up
-- People steer the plan. todo_lists gains what the model has seen and what
-- the reminder counts: seen is the latest version the model was shown (its
-- own write, a todo_read answer, a rejection that showed it the list; the
-- last two append nothing, so seen lives here, not in the log); last_edit
-- and edited_by the latest todo/edit; steps the message/assistant events
-- since the latest list write.
ALTER TABLE todo_lists
    ADD COLUMN seen       bigint  NOT NULL DEFAULT 0,
    ADD COLUMN last_edit  bigint  NOT NULL DEFAULT 0,
    ADD COLUMN edited_by  text    NOT NULL DEFAULT '',
    ADD COLUMN steps      integer NOT NULL DEFAULT 0;
-- Every list so far was the model's own write.
UPDATE todo_lists SET seen = version;
-- Items gain their timeline. For a list written before, what is known is
-- updatedAt: when the item appeared or last changed status.
UPDATE todo_lists SET items = (
    SELECT coalesce(jsonb_agg(i || jsonb_build_object(
        'createdAt', i->'updatedAt',
        'startedAt', CASE WHEN i->>'status' = 'in_progress' THEN i->'updatedAt' ELSE 'null'::jsonb END,
        'completedAt', CASE WHEN i->>'status' = 'completed' THEN i->'updatedAt' ELSE 'null'::jsonb END
    ) ORDER BY n), '[]'::jsonb)
    FROM jsonb_array_elements(items) WITH ORDINALITY AS e(i, n))
WHERE items <> '[]'::jsonb;

-- todo_versions is the list's history, one row per list write (todo/write
-- or todo/edit), kept in the append transaction: a page of it is a range
-- read of the primary key from any version back, whatever the log's length.
-- author is "agent" for a todo/write, the person for a todo/edit.
CREATE TABLE todo_versions (
    session_id  text        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    version     bigint      NOT NULL,
    at          timestamptz NOT NULL,
    author      text        NOT NULL,
    todos       json        NOT NULL,
    changes     json        NOT NULL,
    PRIMARY KEY (session_id, version)
);

-- +goose Down
DROP TABLE todo_versions;
ALTER TABLE todo_lists DROP COLUMN seen, DROP COLUMN last_edit, DROP COLUMN edited_by, DROP COLUMN steps;
