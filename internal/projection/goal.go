package projection

import (
	"encoding/json"
	"strings"
)

// Goal is a session's goal: the condition the agent pursues until it is
// met or ended (Claude Code's `/goal <condition>`, codex's thread goal),
// derived from the log (NextGoal).
type Goal struct {
	Text   string `json:"text"`
	Status string `json:"status"`
	// SetAt is when the goal was set.
	SetAt Time `json:"setAt"`
	// By is who set it: GoalByUser (a person's /goal) or AgentAuthor (a
	// codex create_goal call).
	By string `json:"by"`
}

// A goal's statuses: pursued, or ended (met, cleared by a person, or
// stopped by the agent as blocked or paused).
const (
	GoalActive  = "active"
	GoalMet     = "met"
	GoalCleared = "cleared"
	GoalBlocked = "blocked"
	GoalPaused  = "paused"
)

// GoalByUser is the author of a goal a person set with /goal.
const GoalByUser = "user"

// MaxGoalChars bounds a goal's text; a longer one is cut.
const MaxGoalChars = 1000

// Ended reports whether the goal is no longer pursued.
func (g *Goal) Ended() bool { return g != nil && g.Status != GoalActive }

var goalArgs = lazyRegexp(`(?s)<command-args>(.*?)</command-args>`)

// goalClears are the /goal arguments that end the goal (Claude Code's).
var goalClears = map[string]bool{"clear": true, "stop": true, "off": true, "reset": true, "none": true, "cancel": true}

// NextGoal is the goal after ev, given the goal before it (nil for none),
// and whether ev changed it:
//   - a person's prompt "/goal <condition>" (as a hook sends it) or Claude
//     Code's command line of it (<command-name>/goal</command-name> with
//     <command-args>, as its transcript holds it) sets the goal; "/goal
//     clear" (stop, off, reset, none, cancel) clears it; a bare "/goal"
//     only shows it;
//   - codex's create_goal call ({"objective"}) sets it, and update_goal
//     ({"status": "complete"|"blocked"|"paused"|"active"}) moves it.
//
// The same goal set again, by the other route, changes nothing.
func NextGoal(prev *Goal, ev Event) (*Goal, bool) {
	switch ev.Type {
	case TypeMessageUser:
		var d userData
		if json.Unmarshal(ev.Data, &d) != nil {
			return prev, false
		}
		args, ok := goalCommand(d)
		if !ok || args == "" {
			return prev, false
		}
		if goalClears[strings.ToLower(args)] {
			return endGoal(prev, GoalCleared)
		}
		return setGoal(prev, args, ev.At, GoalByUser)
	case TypeMessageAssistant:
		var d assistantData
		if json.Unmarshal(ev.Data, &d) != nil {
			return prev, false
		}
		changed := false
		for _, c := range d.ToolCalls {
			var a struct {
				Objective string `json:"objective"`
				Status    string `json:"status"`
			}
			_ = json.Unmarshal(c.Args, &a)
			var ch bool
			switch c.Name {
			case "create_goal":
				if strings.TrimSpace(a.Objective) != "" {
					prev, ch = setGoal(prev, a.Objective, ev.At, AgentAuthor)
				}
			case "update_goal":
				if s, ok := codexGoalStatus[a.Status]; ok {
					prev, ch = endGoal(prev, s)
				}
			}
			changed = changed || ch
		}
		return prev, changed
	}
	return prev, false
}

// codexGoalStatus maps update_goal's statuses onto a goal's.
var codexGoalStatus = map[string]string{"complete": GoalMet, "blocked": GoalBlocked, "paused": GoalPaused, "active": GoalActive}

// goalCommand is the argument of a /goal command the message is, and
// whether it is one.
func goalCommand(d userData) (string, bool) {
	t := strings.TrimSpace(d.Text)
	switch {
	case d.Source == "" && (t == "/goal" || strings.HasPrefix(t, "/goal ") || strings.HasPrefix(t, "/goal\n")):
		return strings.TrimSpace(strings.TrimPrefix(t, "/goal")), true
	case d.Source == SourceHarness && strings.Contains(t, "<command-name>/goal</command-name>"):
		m := goalArgs().FindStringSubmatch(t)
		if m == nil {
			return "", true
		}
		return strings.TrimSpace(m[1]), true
	}
	return "", false
}

func setGoal(prev *Goal, text string, at Time, by string) (*Goal, bool) {
	text = strings.TrimSpace(text)
	if r := []rune(text); len(r) > MaxGoalChars {
		text = string(r[:MaxGoalChars-1]) + "…"
	}
	if prev != nil && prev.Status == GoalActive && prev.Text == text {
		return prev, false
	}
	return &Goal{Text: text, Status: GoalActive, SetAt: at, By: by}, true
}

func endGoal(prev *Goal, status string) (*Goal, bool) {
	if prev == nil || prev.Status == status {
		return prev, false
	}
	g := *prev
	g.Status = status
	return &g, true
}

// TouchesGoal reports whether ev may change a goal: a /goal command, a
// codex goal call. A store reads the goal as it stands for such an event.
func TouchesGoal(ev Event) bool {
	switch ev.Type {
	case TypeMessageUser:
		var d userData
		if json.Unmarshal(ev.Data, &d) != nil {
			return false
		}
		_, ok := goalCommand(d)
		return ok
	case TypeMessageAssistant:
		var d assistantData
		if json.Unmarshal(ev.Data, &d) != nil {
			return false
		}
		for _, c := range d.ToolCalls {
			if c.Name == "create_goal" || c.Name == "update_goal" {
				return true
			}
		}
	}
	return false
}

// GoalOf is the goal after events, given the one before them, and whether
// they changed it.
func GoalOf(prev *Goal, events []Event) (*Goal, bool) {
	changed := false
	for _, ev := range events {
		var ch bool
		prev, ch = NextGoal(prev, ev)
		changed = changed || ch
	}
	return prev, changed
}
