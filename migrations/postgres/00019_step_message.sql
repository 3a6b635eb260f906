-- +goose Up
-- A model's step is its message, which an agent may write as several
-- message/assistant events sharing the message's id (data.messageId):
-- step_message is the id of the latest step's message, so that the
-- events after it that continue that message add no step. '' when the
-- latest message/assistant had none.
ALTER TABLE todo_lists ADD COLUMN step_message text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE todo_lists DROP COLUMN step_message;
