// Package notify tells people when a session needs them: it reads each
// committed append for the moments worth a message (the agent waits on a
// person, a turn ends, a turn fails, a plan is done, a goal ends) and
// delivers each to
// the webhooks the server is given, signed, retried with backoff, and
// logged. Nothing it does slows an append: deliveries queue per receiver,
// and a receiver that is down or slow fills only its own queue.
package notify

import (
	"encoding/json"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// Kind names a moment worth telling a person of.
type Kind string

const (
	// NeedsYou: the agent waits on a person (a permission prompt, a
	// question).
	NeedsYou Kind = "needs_you"
	// TurnEnded: a turn ended, completed or interrupted.
	TurnEnded Kind = "turn_ended"
	// TurnFailed: a turn ended in error.
	TurnFailed Kind = "turn_failed"
	// PlanCompleted: a list write left every item of the session's list
	// completed.
	PlanCompleted Kind = "plan_completed"
	// GoalEnded: an event of the batch ended the session's goal (met,
	// cleared, blocked or paused: the session's goal.status says which).
	GoalEnded Kind = "goal_ended"
)

// Moment is one thing to tell: its kind, the event that made it (its seq),
// and the turn's end reason for a turn's end.
type Moment struct {
	Kind   Kind
	Seq    int64
	At     projection.Time
	Reason projection.EndReason
}

// Detect is what an append res holds worth telling. A session that needs
// its person after the append is told once, at the append that made it so
// (its state since is that append's last event).
func Detect(res store.AppendResult) []Moment {
	if res.Replayed {
		return nil // told when first committed
	}
	var out []Moment
	wrote := false // a list write in the batch: only one can complete a plan
	for _, ev := range res.Events {
		switch ev.Type {
		case projection.TypeTodoWrite, projection.TypeTodoEdit:
			wrote = true
		case projection.TypeTurnEnd:
			var d struct {
				Reason projection.EndReason `json:"reason"`
			}
			reason := projection.EndCompleted
			if json.Unmarshal(ev.Data, &d) == nil && d.Reason != "" {
				reason = d.Reason
			}
			k := TurnEnded
			if reason == projection.EndError {
				k = TurnFailed
			}
			out = append(out, Moment{Kind: k, Seq: ev.Seq, At: ev.At, Reason: reason})
		}
	}
	if wrote && res.TodosChanged && res.Todos != nil && len(res.Todos.Todos) > 0 && allCompleted(res.Todos.Todos) && len(res.Events) > 0 {
		last := res.Events[len(res.Events)-1]
		out = append(out, Moment{Kind: PlanCompleted, Seq: last.Seq, At: last.At})
	}
	// The goal ended: the batch may change it and left it ended.
	if g := res.Session.Goal; g.Ended() && len(res.Events) > 0 {
		for _, ev := range res.Events {
			if projection.TouchesGoal(ev) {
				last := res.Events[len(res.Events)-1]
				out = append(out, Moment{Kind: GoalEnded, Seq: last.Seq, At: last.At})
				break
			}
		}
	}
	// The agent waits on its person: told by the notice that set it (a
	// hook's, with no event), or by the append whose last event began it.
	if s := res.Session; s.State == projection.StateNeedsYou {
		if len(res.Events) == 0 {
			out = append(out, Moment{Kind: NeedsYou, Seq: s.LastSeq, At: s.StateSince})
		} else if last := res.Events[len(res.Events)-1]; !s.StateSince.Before(last.At.Time) {
			out = append(out, Moment{Kind: NeedsYou, Seq: last.Seq, At: s.StateSince})
		}
	}
	return out
}

func allCompleted(items []projection.Item) bool {
	for _, it := range items {
		if it.Status != projection.StatusCompleted {
			return false
		}
	}
	return true
}
