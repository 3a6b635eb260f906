package importer

import (
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/transcript"
)

// mirrorEvent is ev as Tack is sent it, for the mirror (this package's copy
// of the projection) to learn whether Tack accepts it and what it stores.
func mirrorEvent(ev transcript.Event) projection.NewEvent {
	ne := projection.NewEvent{Type: ev.Type, Data: ev.Data}
	if !ev.At.IsZero() {
		at := projection.NewTime(ev.At)
		ne.At = &at
	}
	return ne
}

// mirrorConfig is the policy Tack applies to a transcript's session of
// agent (transcript.Agent.Config), the one a hook's session gets.
func mirrorConfig(agent string) projection.Config {
	if a := transcript.Lookup(agent); a != nil {
		return a.Config()
	}
	return projection.Config{PlanLifetime: transcript.PlanLifetime}
}
