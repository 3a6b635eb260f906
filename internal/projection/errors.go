package projection

import "fmt"

// Code classifies a rejected event.
type Code string

const (
	// CodeInvalid means the event itself is malformed (HTTP 422).
	CodeInvalid Code = "invalid"
	// CodeConflict means the event breaks a rule of the log's current state (HTTP 409).
	CodeConflict Code = "conflict"
)

// Error is why an event was rejected. Message is model-facing for todo/write:
// the tool endpoints prefix it with "Error: " and hand it to the model as is.
type Error struct {
	Code    Code
	Message string
	// Shown is the version of the list the message shows the model (a
	// todo_write rejected for an edit it had not seen): a store records it
	// as seen, though the rejection appends nothing. 0 otherwise.
	Shown int64
}

func (e *Error) Error() string { return e.Message }

func invalidf(format string, args ...any) *Error {
	return &Error{Code: CodeInvalid, Message: fmt.Sprintf(format, args...)}
}

func conflictf(format string, args ...any) *Error {
	return &Error{Code: CodeConflict, Message: fmt.Sprintf(format, args...)}
}
