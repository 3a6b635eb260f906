package projection

import "time"

// Config holds the rules a session's log is held to: the server's, or a
// session's own policy.
type Config struct {
	// AllowParallel lifts the "at most one in_progress" rule.
	AllowParallel bool
	// PlanLifetime is PlanTurn (or "") or PlanSession: whether a turn/start
	// ends the standing plan.
	PlanLifetime string
	// IdleAfter is how long an open turn may go without an event before
	// its session is idle (SessionState); zero is DefaultIdleAfter.
	IdleAfter time.Duration
}

// sessionPlan reports whether a plan outlives the turn that wrote it.
func (c Config) sessionPlan() bool { return c.PlanLifetime == PlanSession }
