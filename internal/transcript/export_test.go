package transcript

import "github.com/tack-dev/tack/internal/projection"

// FakeAgent is an agent that only this package's tests know, registered
// as an agent's own file registers it, with nothing else of Tack edited:
// TestAFileIsAnAgent shows every part of Tack that differs by agent picks
// it up. It is shaped like Gemini CLI (its hooks named otherwise than
// Claude Code's, its MCP servers in its settings.json, its own list tool),
// yet is none: it reads no transcript.
const FakeAgent Format = "fake-agent"

func init() {
	register(&Agent{
		Name:    FakeAgent,
		Title:   "Fake Agent",
		Detect:  func([]byte) bool { return false },
		parse:   func(*Parser, []byte, *emitter) {},
		Harness: func(string) string { return "" },
		HomeDir: ".fake-agent", HomeEnv: "FAKE_AGENT_HOME",
		Transcripts: "tmp",
		Settings:    "settings.json",
		MCP: MCPConfig{Way: MCPConfigJSON, File: "settings.json", Servers: []string{"mcpServers"},
			URLKey: "httpUrl", Fields: map[string]any{"trust": true}},
		HookEvents: []string{HookSessionStart, HookUserPromptSubmit, HookPreToolUse, HookPostToolUse, HookStop, HookSessionEnd},
		HookNames: map[string]string{HookUserPromptSubmit: "BeforeAgent", HookPreToolUse: "BeforeTool",
			HookPostToolUse: "AfterTool", HookStop: "AfterAgent"},
		ListTool:        "write_todos",
		Dialect:         &projection.Dialect{Tool: "write_todos", List: "todos", Item: "description"},
		NativeTodoTools: func(func(string) string, string) bool { return true },
	})
}
