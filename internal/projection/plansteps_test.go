package projection_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
)

// stepLines writes a list as "status content" lines.
func stepLines(todos []projection.TodoInput) []string {
	out := []string{}
	for _, t := range todos {
		out = append(out, t.Status+" "+t.Content)
	}
	return out
}

func TestPlanSteps(t *testing.T) {
	long := strings.Repeat("x", projection.MaxContentChars+5)
	cases := []struct {
		name, plan string
		want       []string
	}{
		{"checklist wins over numbers", "# Plan\n\n1. Context\n- [ ] Write the parser\n- [x] Read the spec\n  - [ ] Nested step\n", []string{"pending Write the parser", "completed Read the spec", "pending Nested step"}},
		{"numbered", "# Fix the bug\n\nSome context.\n\n1. Reproduce it\n2) Fix `parse`\n   - detail bullet\n3. Run the tests\n", []string{"pending Reproduce it", "pending Fix `parse`", "pending Run the tests"}},
		{"bullets under a steps heading", "# Title\n\n## Context\n- not a step\n\n## Implementation steps\n- Add the column\n- Backfill it\n  - a detail\n\n## Risks\n- not one either\n", []string{"pending Add the column", "pending Backfill it"}},
		{"code is no step", "## Plan\n```\n1. not this\n- nor this\n```\n- This\n", []string{"pending This"}},
		{"the same step once", "1. Same\n2. Same\n3. Other\n", []string{"pending Same", "pending Other"}},
		{"prose only", "# Plan\n\nJust do it carefully.\n", []string{}},
		{"bullets without a heading", "- a\n- b\n", []string{}},
		{"empty", "", []string{}},
		{"a long step is cut", "1. " + long, []string{"pending " + strings.Repeat("x", projection.MaxContentChars-1) + "…"}},
	}
	for _, c := range cases {
		if got := stepLines(projection.PlanSteps(c.plan)); !slices.Equal(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	var many strings.Builder
	for i := range projection.MaxTodos + 10 {
		fmt.Fprintf(&many, "%d. step %d\n", i+1, i)
	}
	if n := len(projection.PlanSteps(many.String())); n != projection.MaxTodos {
		t.Errorf("%d steps kept, want %d", n, projection.MaxTodos)
	}
}

// proposal is the derived list write of an approved ExitPlanMode call.
func proposal(plan string) projection.NewEvent {
	args, _ := json.Marshal(map[string]string{"plan": plan})
	d, _ := json.Marshal(projection.Derivation{Tool: projection.ToolExitPlanMode, Args: args})
	return projection.NewEvent{Type: projection.TypeTodoWrite, Data: d}
}

// An approved proposal's steps become the list, by "plan", while no list
// with open items stands; over one, or with no steps, it writes nothing.
func TestProposalList(t *testing.T) {
	s := openState(t)
	cfg := projection.Config{PlanLifetime: projection.PlanSession}
	if projection.Derivable(projection.ToolExitPlanMode, json.RawMessage(`{"plan":"no steps here"}`)) {
		t.Fatal("a plan without steps is derivable")
	}
	if _, err := s.Apply(proposal("no steps"), at(2), cfg, nil); !errors.Is(err, projection.ErrNoWrite) {
		t.Fatalf("a plan without steps: %v", err)
	}
	prev := s.Items
	ev, err := s.Apply(proposal("1. One\n2. Two"), at(3), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := stepLines(inputs(s.Items)); !slices.Equal(got, []string{"pending One", "pending Two"}) {
		t.Fatalf("list %q", got)
	}
	if v := s.VersionOf(prev, ev); v.By != projection.PlanAuthor {
		t.Fatalf("history says by %q", v.By)
	}
	if h := projection.ReplayHistory(append([]projection.Event{{Seq: 1, Type: "turn/start", Turn: 1, Data: json.RawMessage(`{}`)}}, ev)); h[0].By != projection.PlanAuthor {
		t.Fatalf("replayed history says by %q", h[0].By)
	}
	// The agent's own list stands with an open item: a new proposal
	// leaves it.
	if _, err := s.Apply(proposal("1. Three"), at(4), cfg, nil); !errors.Is(err, projection.ErrNoWrite) {
		t.Fatalf("over an open list: %v", err)
	}
	log(t, &s, cfg, write("One", "completed", "Two", "completed"))
	if _, err := s.Apply(proposal("1. Three"), at(6), cfg, nil); err != nil || len(s.Items) != 1 || s.Items[0].Content != "Three" {
		t.Fatalf("over a finished list: %v %+v", err, s.Items)
	}
}

func inputs(items []projection.Item) []projection.TodoInput {
	out := make([]projection.TodoInput, len(items))
	for i, it := range items {
		out[i] = projection.TodoInput{Content: it.Content, Status: it.Status}
	}
	return out
}
