package importer

import (
	"encoding/json"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/transcript"
)

// mirrorEvent is ev as the mirror (this package's copy of the projection)
// applies it, to learn whether Tack accepts it and what it stores.
//
// TODO(integrator): the projection in this tree reads neither a harness
// line's source and kind nor an item's activeForm, blockedBy, owner and
// taskId; until it does, the mirror applies the event without them. Once
// the projection reads them, this is projection.NewEvent{Type, Data} of ev
// as it is (and its at), and Downgrade goes.
func mirrorEvent(ev transcript.Event) projection.NewEvent {
	return projection.NewEvent{Type: ev.Type, Data: Downgrade(ev.Type, ev.Data)}
}

// Downgrade strips from an event's data what a server that predates the
// harness lines and the native items' fields refuses: message/user keeps
// its text, each item its content and status. See mirrorEvent.
func Downgrade(typ string, data json.RawMessage) json.RawMessage {
	switch typ {
	case projection.TypeMessageUser:
		var d struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(data, &d) == nil {
			data, _ = json.Marshal(d)
		}
	case projection.TypeTodoWrite:
		var d struct {
			Todos []projection.TodoInput `json:"todos"`
		}
		if json.Unmarshal(data, &d) == nil && d.Todos != nil {
			data, _ = json.Marshal(d)
		}
	}
	return data
}
