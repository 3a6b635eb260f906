package projection_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
)

func TestNextGoal(t *testing.T) {
	user := func(text, source, kind string) projection.Event {
		d := map[string]string{"text": text}
		if source != "" {
			d["source"], d["kind"] = source, kind
		}
		b, _ := json.Marshal(d)
		return projection.Event{Type: projection.TypeMessageUser, Data: b, At: at(1)}
	}
	call := func(name, args string) projection.Event {
		return projection.Event{Type: projection.TypeMessageAssistant, At: at(2),
			Data: json.RawMessage(fmt.Sprintf(`{"text":"","toolCalls":[{"id":"c1","name":%q,"args":%s}]}`, name, args))}
	}
	active := &projection.Goal{Text: "All tests pass", Status: projection.GoalActive, SetAt: at(0), By: projection.GoalByUser}
	line := "<command-name>/goal</command-name>\n<command-message>goal</command-message>\n<command-args>All tests pass</command-args>"
	cases := []struct {
		name    string
		prev    *projection.Goal
		ev      projection.Event
		want    string // text/status/by, "" for none
		changed bool
	}{
		{"a hook's prompt sets it", nil, user("/goal All tests pass", "", ""), "All tests pass/active/user", true},
		{"the transcript's command line sets it", nil, user(line, projection.SourceHarness, projection.KindCommand), "All tests pass/active/user", true},
		{"the same goal by the other route", active, user(line, projection.SourceHarness, projection.KindCommand), "All tests pass/active/user", false},
		{"a bare /goal shows it", active, user("/goal", "", ""), "All tests pass/active/user", false},
		{"/goal clear clears it", active, user("/goal clear", "", ""), "All tests pass/cleared/user", true},
		{"clear with nothing set", nil, user("/goal stop", "", ""), "", false},
		{"a new goal replaces it", active, user("/goal Ship it", "", ""), "Ship it/active/user", true},
		{"a prompt that is no command", nil, user("set a /goal please", "", ""), "", false},
		{"someone else's command", nil, user("<command-name>/model</command-name>", projection.SourceHarness, projection.KindCommand), "", false},
		{"codex's create_goal", nil, call("create_goal", `{"objective":"Port the parser"}`), "Port the parser/active/agent", true},
		{"codex's update_goal complete", active, call("update_goal", `{"status":"complete"}`), "All tests pass/met/user", true},
		{"codex's update_goal blocked", active, call("update_goal", `{"status":"blocked"}`), "All tests pass/blocked/user", true},
		{"update_goal with no goal", nil, call("update_goal", `{"status":"complete"}`), "", false},
		{"an unknown status", active, call("update_goal", `{"status":"budgetLimited"}`), "All tests pass/active/user", false},
		{"another tool", nil, call("get_goal", `{}`), "", false},
	}
	for _, c := range cases {
		g, changed := projection.NextGoal(c.prev, c.ev)
		got := ""
		if g != nil {
			got = g.Text + "/" + g.Status + "/" + g.By
		}
		if got != c.want || changed != c.changed {
			t.Errorf("%s: %q changed %v, want %q changed %v", c.name, got, changed, c.want, c.changed)
		}
		if touched := projection.TouchesGoal(c.ev); c.changed && !touched {
			t.Errorf("%s: changes the goal but does not touch it", c.name)
		}
	}
}
