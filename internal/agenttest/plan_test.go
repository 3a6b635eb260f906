package agenttest

import (
	"net/http"
	"strings"
	"testing"
)

// TestClaudeOracleProposedPlan: Claude Code in plan mode, run with -p and
// no permission prompt tool, has ExitPlanMode disabled (it needs a person,
// or an SDK's prompt tool, to approve): the model's proposal is a call
// that fails. Heard live by the hooks and read from the transcript alike,
// the session holds the call with its plan and its error, and makes no
// list of it; the import of the transcript reads the same.
func TestClaudeOracleProposedPlan(t *testing.T) {
	requireAgent(t, claudeBinary())
	t.Parallel()
	u := newUser(t)
	u.ClaudeAsks = true
	k, w := liveTack(t, u, "claude-code")
	const plan = "# Greet\n\n1. Write greet.sh\n2. Run it\n"
	m := NewAnthropic(t,
		Turn{Text: "Here is my plan.", Tools: []Call{{Name: "ExitPlanMode", Input: map[string]any{"plan": plan}}}},
		Turn{Text: "Planned."},
	)
	r := u.claude(t, m, "Plan a greeting script.", "--permission-mode", "plan")
	if r.Err != nil {
		t.Fatalf("claude: %v", r.Err)
	}
	if m.Left() != 0 {
		t.Fatalf("%d turns of the script were never asked for", m.Left())
	}
	id := streamID(r)
	files := claudeTranscripts(t, u, id)
	checkFollowed(t, w, files)
	checkOracle(t, u, k, "claude-code:"+id, files)
	s, ok := k.sessionByKey(t, "claude-code:"+id)
	if !ok {
		t.Fatal("no live session")
	}
	var call, result string
	for _, ev := range k.events(t, s.ID) {
		switch {
		case ev.Type == "message/assistant" && strings.Contains(string(ev.Data), `"ExitPlanMode"`):
			call = string(ev.Data)
		case ev.Type == "tool/result" && strings.Contains(string(ev.Data), `"ExitPlanMode"`):
			result = string(ev.Data)
		}
	}
	if !strings.Contains(call, `"plan":"# Greet\n\n1. Write greet.sh\n2. Run it\n"`) {
		t.Errorf("the call: %s", call)
	}
	if !strings.Contains(result, `"isError":true`) {
		t.Errorf("the result: %s (ExitPlanMode is enabled in -p mode now: approve it and expect its list)", result)
	}
	var hist struct {
		Versions []struct {
			By string `json:"by"`
		} `json:"versions"`
	}
	k.do(t, http.MethodGet, "/sessions/"+s.ID+"/todos/history", nil, &hist)
	if len(hist.Versions) != 0 {
		t.Errorf("a refused proposal made a list: %+v", hist.Versions)
	}
}
