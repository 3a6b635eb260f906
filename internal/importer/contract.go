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
// agent: Claude Code runs tasks in parallel, codex's update_plan keeps one;
// both keep their list across prompts.
func mirrorConfig(agent string) projection.Config {
	return projection.Config{AllowParallel: agent == string(transcript.ClaudeCode), PlanLifetime: transcript.PlanLifetime}
}
