package main

import (
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
)

// TestAgentsRegistered: the server knows every agent's list tool and name,
// which the agents' files in internal/transcript declare and register at
// init, and which projection (the stores' checks, the titles) reads
// without importing them. The server links them through internal/api; no
// file of this package names internal/transcript, so this test fails if
// that link goes.
func TestAgentsRegistered(t *testing.T) {
	t.Parallel()
	for _, tool := range []string{"TodoWrite", "update_plan"} {
		if _, ok := projection.DialectOf(tool); !ok {
			t.Errorf("the server takes no %s", tool)
		}
	}
	if got := strings.Join(projection.DerivedTools(), ", "); got != "TaskCreate, TaskUpdate, TodoWrite, update_plan, ExitPlanMode" {
		t.Errorf("derived tools %s", got)
	}
	for agent, title := range map[string]string{"claude-code": "Claude Code", "codex": "Codex"} {
		if got := projection.DefaultTitle(agent, "", projection.Time{}); !strings.HasPrefix(got, title+" · ") {
			t.Errorf("%s: a new session is titled %q", agent, got)
		}
	}
}
