package projection

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// ToolExitPlanMode is Claude Code's tool with which the model proposes a
// plan, {"plan": "<markdown>"}, and waits for the person to approve it.
const ToolExitPlanMode = "ExitPlanMode"

// PlanAuthor is the author, in the list's history, of a list made of an
// approved proposal's steps (ExitPlanMode): neither the model's own list
// write nor a person's edit. No principal may take the name, as none may
// take AgentAuthor.
const PlanAuthor = "plan"

var (
	planHeading   = lazyRegexp(`^#{1,6}\s+(.*)$`)
	planChecklist = lazyRegexp(`^ {0,3}[-*+]\s+\[([ xX])\]\s+(.+)$`)
	planNumbered  = lazyRegexp(`^ {0,3}\d{1,3}[.)]\s+(.+)$`)
	planBullet    = lazyRegexp(`^[-*+]\s+(.+)$`)
	// planStepsHeading is a heading whose section's bullets are the steps.
	planStepsHeading = lazyRegexp(`(?i)\b(steps?|plan|tasks?|todos?|implementation|changes)\b`)
)

// PlanSteps are the steps of a proposed plan's Markdown, as the list it
// becomes: its checklist lines (`- [ ] x`, `- [x] x` done) if it has any,
// else its numbered lines (`1. x`), else the top-level bullets (`- x`) of
// the sections whose heading speaks of steps, a plan, tasks, todos, an
// implementation or changes. Lines in fenced code are not steps; a step
// is one line of at most MaxContentChars characters, the same step twice
// is kept once, and at most MaxTodos are kept. None when the plan has no
// such lines.
func PlanSteps(markdown string) []TodoInput {
	var checks, numbered, bullets []TodoInput
	fenced, stepsSection := false, false
	for _, line := range strings.Split(markdown, "\n") {
		line = strings.TrimRight(line, " \t\r")
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		if m := planHeading().FindStringSubmatch(line); m != nil {
			stepsSection = planStepsHeading().MatchString(m[1])
			continue
		}
		if m := planChecklist().FindStringSubmatch(line); m != nil {
			status := StatusPending
			if m[1] != " " {
				status = StatusCompleted
			}
			checks = append(checks, TodoInput{Content: m[2], Status: status})
			continue
		}
		if m := planNumbered().FindStringSubmatch(line); m != nil {
			numbered = append(numbered, TodoInput{Content: m[1], Status: StatusPending})
			continue
		}
		if m := planBullet().FindStringSubmatch(line); m != nil && stepsSection {
			bullets = append(bullets, TodoInput{Content: m[1], Status: StatusPending})
		}
	}
	steps := checks
	switch {
	case len(steps) == 0 && len(numbered) > 0:
		steps = numbered
	case len(steps) == 0:
		steps = bullets
	}
	var out []TodoInput
	seen := map[string]bool{}
	for _, s := range steps {
		s.Content = strings.TrimSpace(s.Content)
		if r := []rune(s.Content); len(r) > MaxContentChars {
			s.Content = strings.TrimSpace(string(r[:MaxContentChars-1])) + "…"
		}
		if s.Content == "" || seen[s.Content] || !utf8.ValidString(s.Content) || len(out) == MaxTodos {
			continue
		}
		seen[s.Content] = true
		out = append(out, s)
	}
	return out
}

// proposedPlan reads an ExitPlanMode call's arguments: its plan's steps.
func proposedPlan(args json.RawMessage) []TodoInput {
	var in struct {
		Plan string `json:"plan"`
	}
	if json.Unmarshal(args, &in) != nil {
		return nil
	}
	return PlanSteps(in.Plan)
}

// openItems reports whether any of items is not completed: a list the
// agent is still working through.
func openItems(items []Item) bool {
	for _, it := range items {
		if it.Status != StatusCompleted {
			return true
		}
	}
	return false
}
