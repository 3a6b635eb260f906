package transcript_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/transcript"
)

// TestAgents: every registered agent says all a part of Tack reads of it,
// and is found by its name.
func TestAgents(t *testing.T) {
	t.Parallel()
	var names []transcript.Format
	for _, a := range transcript.Agents() {
		names = append(names, a.Name)
		if transcript.Lookup(string(a.Name)) != a {
			t.Errorf("%s: Lookup finds another", a.Name)
		}
		if a.HomeDir == "" || a.Settings == "" || a.Transcripts == "" || len(a.HookEvents) == 0 {
			t.Errorf("%s: folder %q, settings %q, transcripts %q, hooks %v", a.Name, a.HomeDir, a.Settings, a.Transcripts, a.HookEvents)
		}
		switch m := a.MCP; m.Way {
		case transcript.MCPConfigStateFile, transcript.MCPConfigTOML:
		case transcript.MCPConfigJSON:
			if m.File == "" || len(m.Servers) == 0 || m.URLKey == "" {
				t.Errorf("%s: MCP config %+v lacks its place", a.Name, m)
			}
		default:
			t.Errorf("%s: MCP config %q is none tack connect writes", a.Name, m.Way)
		}
		if d, dialect := projection.DialectOf(a.ListTool); !dialect || a.Dialect == nil || d.Tool != a.Dialect.Tool {
			t.Errorf("%s: list tool %q is not its dialect", a.Name, a.ListTool)
		}
		if !strings.HasPrefix(projection.DefaultTitle(string(a.Name), "", projection.Time{}), a.Title+" · ") || a.Title == "" {
			t.Errorf("%s: a new session is not titled by %q", a.Name, a.Title)
		}
		got := transcript.HookEvents(a.Name)
		for i, e := range a.HookEvents {
			if own := a.HookNames[e]; (own == "" && got[i] != e) || (own != "" && got[i] != own) {
				t.Errorf("%s: HookEvents %v, not %v as it names them", a.Name, got, a.HookEvents)
			}
		}
		if a.Home(func(string) string { return "" }, "/home/u") != "/home/u/"+a.HomeDir {
			t.Errorf("%s: home %s", a.Name, a.Home(func(string) string { return "" }, "/home/u"))
		}
		if a.HomeEnv != "" && a.Home(func(k string) string { return map[string]string{a.HomeEnv: "/elsewhere"}[k] }, "/home/u") != "/elsewhere" {
			t.Errorf("%s: $%s is not its folder", a.Name, a.HomeEnv)
		}
	}
	// The tests' own agent (export_test.go) is one too.
	if !slices.Equal(names, []transcript.Format{transcript.ClaudeCode, transcript.Codex, transcript.FakeAgent}) {
		t.Errorf("agents %v", names)
	}
	if got := transcript.Names(); got != "claude-code, codex or fake-agent" {
		t.Errorf("Names %q", got)
	}
	if transcript.Lookup("gemini") != nil || transcript.Lookup("") != nil {
		t.Error("Lookup finds an agent never registered")
	}
	if c := transcript.Lookup("claude-code").Config(); !c.AllowParallel || c.PlanLifetime != transcript.PlanLifetime {
		t.Errorf("Claude Code's policy %+v", c)
	}
	if c := transcript.Lookup("codex").Config(); c.AllowParallel || c.PlanLifetime != transcript.PlanLifetime {
		t.Errorf("codex's policy %+v", c)
	}
}

// TestModelHasTodoTools: Claude Code's models with a list tool of their
// own, as observed on Claude Code 2.1.328.
func TestModelHasTodoTools(t *testing.T) {
	t.Parallel()
	for model, want := range map[string]bool{
		"claude-sonnet-4-5": true, "claude-sonnet-4-5-20250929": true, "claude-3-5-sonnet-20241022": true, "claude-opus-4-1": true,
		"claude-opus-4-8": false, "claude-sonnet-5": false, "claude-opus-5": false, "opus": false, "": false,
	} {
		if got := transcript.ModelHasTodoTools(model); got != want {
			t.Errorf("%q: %v, want %v", model, got, want)
		}
	}
}
