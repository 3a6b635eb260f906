package hook_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/transcript"
)

// The files a user has before connecting, each in the layout Tack writes
// back, so that a disconnect must give back each byte.
const (
	claudeSettings = `{
  "model": "opus",
  "permissions": {
    "allow": [
      "Bash(go test:*)"
    ]
  },
  "hooks": {
    "PreToolUse": [
      {
        "hooks": [
          {
            "command": "/usr/bin/audit-bash",
            "type": "command"
          }
        ],
        "matcher": "Bash"
      }
    ]
  },
  "enabledMcpjsonServers": [
    "other"
  ]
}
`
	// Claude Code's own state: keys in its order, a number no float holds.
	claudeState = `{
  "numStartups": 12,
  "firstStartTime": "2026-12-04T18:42:46.132Z",
  "userID": 12345678901234567890123,
  "mcpServers": {
    "other": {
      "command": "other-mcp",
      "type": "stdio"
    }
  },
  "projects": {
    "/src/app": {
      "allowedTools": []
    }
  }
}
`
	mcpJSON = `{
  "mcpServers": {
    "other": {
      "type": "http",
      "url": "https://other.example/mcp"
    }
  }
}
`
	codexHooks = `{
  "hooks": {
    "SessionStart": [
      {
        "hooks": [
          {
            "command": "echo hi",
            "type": "command"
          }
        ]
      }
    ]
  }
}
`
	codexConfig = `# My codex set-up.
model = "gpt-5.5" # the best one
approval_policy = "never"
notes = """
[mcp_servers.tack]
not a table: a string
"""

[mcp_servers.other]
command = "other-mcp"
args = [
  "--flag",
  [1, 2],
]

[mcp_servers.other.env]
KEY = "value"

# Projects I trust.
[projects."/src/app"]
trust_level = "trusted"
`
)

// home is a user's folders with the files above in them.
type home struct {
	env                 func(string) string
	dir, project, codex string
}

func newHome(t *testing.T, withFiles bool) home {
	t.Helper()
	root := t.TempDir()
	h := home{dir: filepath.Join(root, "home"), project: filepath.Join(root, "project"), codex: filepath.Join(root, "codex")}
	h.env = func(k string) string { return map[string]string{"HOME": h.dir, "CODEX_HOME": h.codex}[k] }
	if !withFiles {
		return h
	}
	for path, text := range map[string]string{
		filepath.Join(h.dir, ".claude", "settings.json"):     claudeSettings,
		filepath.Join(h.dir, ".claude.json"):                 claudeState,
		filepath.Join(h.project, ".claude", "settings.json"): claudeSettings,
		filepath.Join(h.project, ".mcp.json"):                mcpJSON,
		filepath.Join(h.codex, "hooks.json"):                 codexHooks,
		filepath.Join(h.codex, "config.toml"):                codexConfig,
		filepath.Join(h.project, ".codex", "hooks.json"):     codexHooks,
		filepath.Join(h.project, ".codex", "config.toml"):    codexConfig,
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, raw)
	}
	return m
}

func read(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestConnect connects each agent at each scope, over a user's own files
// and over none: the hooks, the MCP server and its tools' permission go
// in, everything else stays; a second connect changes nothing; another
// server replaces Tack's lines; disconnect gives back the files as they
// were, byte for byte.
func TestConnect(t *testing.T) {
	t.Parallel()
	for _, agent := range []transcript.Format{transcript.ClaudeCode, transcript.Codex} {
		for _, project := range []bool{false, true} {
			for _, withFiles := range []bool{true, false} {
				name := string(agent)
				if project {
					name += " project"
				}
				if !withFiles {
					name += " no files"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					testConnect(t, agent, project, withFiles)
				})
			}
		}
	}
}

func testConnect(t *testing.T, agent transcript.Format, project, withFiles bool) {
	h := newHome(t, withFiles)
	c := hook.Connection{Settings: hook.Settings{Agent: agent, Tack: tackBin, Server: "http://127.0.0.1:8080/", Token: "tack_secret", Plan: transcript.PlanAlways}}
	if project {
		c.Project = h.project
	}
	// The two files of the agent at this scope.
	var settings, mcp string
	switch {
	case agent == transcript.ClaudeCode && project:
		settings, mcp = filepath.Join(h.project, ".claude", "settings.json"), filepath.Join(h.project, ".mcp.json")
	case agent == transcript.ClaudeCode:
		settings, mcp = filepath.Join(h.dir, ".claude", "settings.json"), filepath.Join(h.dir, ".claude.json")
	case project:
		settings, mcp = filepath.Join(h.project, ".codex", "hooks.json"), filepath.Join(h.project, ".codex", "config.toml")
	default:
		settings, mcp = filepath.Join(h.codex, "hooks.json"), filepath.Join(h.codex, "config.toml")
	}
	before := map[string]string{}
	for _, p := range []string{settings, mcp} {
		if raw, err := os.ReadFile(p); err == nil {
			before[p] = string(raw)
		}
	}

	res, err := hook.Connect(c, h.env)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 2 || res.Changes[0].Path != settings || res.Changes[1].Path != mcp {
		t.Fatalf("changes %+v", res.Changes)
	}
	for _, ch := range res.Changes {
		if !ch.Changed || !strings.Contains(ch.Diff, "+ ") || (ch.Backup != "") != withFiles {
			t.Errorf("%s: change %+v", ch.Path, ch)
		}
		if ch.Backup != "" && read(t, ch.Backup) != before[ch.Path] {
			t.Errorf("%s: the backup is not the file as it was", ch.Path)
		}
		if strings.Contains(ch.Diff, "- ") && agent == transcript.Codex && strings.HasSuffix(ch.Path, ".toml") {
			t.Errorf("%s: connect took lines out:\n%s", ch.Path, ch.Diff)
		}
	}
	if project && (len(res.Notes) == 0 || !strings.Contains(strings.Join(res.Notes, " "), "version control")) {
		t.Errorf("notes %q", res.Notes)
	}

	// The hooks, each event once, with the plan mode.
	got, s := hooksOf(t, settings)
	cmd := "'" + tackBin + "' hook -agent " + string(agent) + " -plan always -server http://127.0.0.1:8080/ -token tack_secret"
	for _, event := range transcript.HookEvents(agent) {
		if n := slices.Index(got[event], cmd); n < 0 || slices.Index(got[event][n+1:], cmd) >= 0 {
			t.Errorf("%s: hooks %q, want %q once", event, got[event], cmd)
		}
	}
	if withFiles && agent == transcript.ClaudeCode && (got["PreToolUse"][0] != "/usr/bin/audit-bash" || s["model"] != "opus") {
		t.Errorf("the user's settings lost: %v", s)
	}
	if withFiles && agent == transcript.Codex && got["SessionStart"][0] != "echo hi" {
		t.Errorf("codex's own hook lost: %q", got["SessionStart"])
	}

	// The MCP server, and what lets its tools run without asking.
	if agent == transcript.ClaudeCode {
		allow := s["permissions"].(map[string]any)["allow"].([]any)
		want := []any{"mcp__tack__todo_write", "mcp__tack__todo_read"}
		if withFiles {
			want = append([]any{"Bash(go test:*)"}, want...)
		}
		if !slices.Equal(allow, want) {
			t.Errorf("permissions.allow %v, want %v", allow, want)
		}
		approved, _ := s["enabledMcpjsonServers"].([]any)
		if project != slices.Contains(approved, any("tack")) || withFiles && approved[0] != "other" {
			t.Errorf("enabledMcpjsonServers %v", approved)
		}
		servers := readJSON(t, mcp)["mcpServers"].(map[string]any)
		server, _ := json.Marshal(servers["tack"])
		if string(server) != `{"headers":{"Authorization":"Bearer tack_secret"},"type":"http","url":"http://127.0.0.1:8080/mcp"}` {
			t.Errorf("mcpServers.tack %s", server)
		}
		if withFiles && servers["other"] == nil {
			t.Errorf("the other MCP server lost: %v", servers)
		}
		if withFiles && !project {
			// Claude Code's state keeps its order and its numbers.
			text := read(t, mcp)
			if !strings.HasPrefix(text, "{\n  \"numStartups\": 12,\n  \"firstStartTime\": \"2026-12-04T18:42:46.132Z\",\n  \"userID\": 12345678901234567890123,\n") ||
				!strings.Contains(text, "  \"projects\": {\n    \"/src/app\": {\n      \"allowedTools\": []\n    }\n  }\n}") {
				t.Errorf("~/.claude.json rewritten:\n%s", text)
			}
		}
	} else {
		text := read(t, mcp)
		want := "[mcp_servers.tack]\nurl = \"http://127.0.0.1:8080/mcp\"\ndefault_tools_approval_mode = \"approve\"\nhttp_headers = { Authorization = \"Bearer tack_secret\" }\n"
		if !strings.HasSuffix(text, want) {
			t.Errorf("config.toml:\n%s\nwant it to end with\n%s", text, want)
		}
		if withFiles && !strings.HasPrefix(text, codexConfig+"\n[mcp_servers.tack]") {
			t.Errorf("config.toml lost the user's lines:\n%s", text)
		}
	}

	// Twice: nothing changes, and it says so.
	after := map[string]string{settings: read(t, settings), mcp: read(t, mcp)}
	again, err := hook.Connect(c, h.env)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range again.Changes {
		if ch.Changed || ch.Backup != "" || read(t, ch.Path) != after[ch.Path] {
			t.Errorf("second connect: %+v", ch)
		}
	}

	// Another server, no token: Tack's lines change, and only those.
	moved := c
	moved.Server, moved.Token = "https://tack.example", ""
	res, err = hook.Connect(moved, h.env)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range res.Changes {
		for _, line := range strings.Split(ch.Diff, "\n") {
			if (strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "+ ")) && !strings.Contains(line, "tack") && !strings.Contains(line, "Bearer") && !strings.Contains(line, `"headers"`) && !strings.Contains(line, "127.0.0.1:8080") && strings.Trim(line, "-+ {}[],") != "" {
				t.Errorf("%s: re-pointing changed %q", ch.Path, line)
			}
		}
	}
	if text := read(t, mcp); !strings.Contains(text, "https://tack.example/mcp") || strings.Contains(text, "tack_secret") {
		t.Errorf("re-pointed:\n%s", text)
	}

	// Disconnect: the files as they were (or empty of Tack when there
	// were none); a second one changes nothing.
	res, err = hook.Disconnect(c, h.env)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range res.Changes {
		if !ch.Changed {
			t.Errorf("%s: disconnect changed nothing", ch.Path)
		}
		text := read(t, ch.Path)
		want, had := before[ch.Path]
		if !had {
			want = "{}\n"
			if strings.HasSuffix(ch.Path, ".toml") {
				want = ""
			}
		}
		if text != want {
			t.Errorf("%s after disconnect:\n%s\nwant\n%s", ch.Path, text, want)
		}
	}
	if res, err = hook.Disconnect(c, h.env); err != nil || slices.ContainsFunc(res.Changes, func(ch hook.Change) bool { return ch.Changed }) {
		t.Errorf("second disconnect: %+v %v", res, err)
	}
}

// TestConnectRefuses: a file Connect cannot edit safely leaves every file
// as it was.
func TestConnectRefuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		agent transcript.Format
		file  string // under the home folder
		text  string
	}{
		{transcript.ClaudeCode, ".claude.json", `{"mcpServers": []}`},
		{transcript.ClaudeCode, ".claude.json", `{"a": 1} {"b": 2}`},
		{transcript.ClaudeCode, ".claude/settings.json", `{"permissions": {"allow": "Bash"}}`},
		{transcript.Codex, "codex/config.toml", "[mcp_servers]\ntack = { url = \"http://x/mcp\" }\n"},
		{transcript.Codex, "codex/config.toml", "mcp_servers.tack.url = \"http://x/mcp\"\n"},
		{transcript.Codex, "codex/config.toml", "mcp_servers = { other = { command = \"x\" } }\n"},
		{transcript.Codex, "codex/config.toml", "[[mcp_servers.tack]]\nurl = \"x\"\n"},
		{transcript.Codex, "codex/config.toml", "[mcp_servers.tack]\nurl = \"x\"\n[mcp_servers.tack]\nurl = \"y\"\n"},
	} {
		h := newHome(t, false)
		path := filepath.Join(filepath.Dir(h.dir), tc.file)
		if tc.agent == transcript.ClaudeCode {
			path = filepath.Join(h.dir, tc.file)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		c := hook.Connection{Settings: hook.Settings{Agent: tc.agent, Tack: tackBin, Server: "http://127.0.0.1:8080"}}
		if _, err := hook.Connect(c, h.env); err == nil {
			t.Errorf("%s %q: connected", tc.file, tc.text)
		}
		if read(t, path) != tc.text {
			t.Errorf("%s: changed", tc.file)
		}
		// The hooks' file is not written either.
		settings, _ := hook.SettingsPath(tc.agent, "", h.env)
		if _, err := os.Stat(settings); err == nil && settings != path {
			t.Errorf("%s: written although %s was refused", settings, tc.file)
		}
	}
}

// TestConnectCodexTable: Tack's table as the user left it: their own keys
// and comments in it stay, a bearer_token_env_var gives way to the token,
// a CRLF file stays CRLF.
func TestConnectCodexTable(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, before, want string }{
		{"own keys kept",
			"[mcp_servers.tack]\n# Tack, at work.\nurl = \"http://old/mcp\" # old\nstartup_timeout_sec = 20\nbearer_token_env_var = \"TACK_TOKEN\"\n\n# Next.\n[other]\nx = 1\n",
			"[mcp_servers.tack]\n# Tack, at work.\nurl = \"http://127.0.0.1:8080/mcp\"\nstartup_timeout_sec = 20\ndefault_tools_approval_mode = \"approve\"\nhttp_headers = { Authorization = \"Bearer t\" }\n\n# Next.\n[other]\nx = 1\n"},
		{"value kept with its comment",
			"[mcp_servers.tack]\nurl = \"http://127.0.0.1:8080/mcp\" # mine\n",
			"[mcp_servers.tack]\nurl = \"http://127.0.0.1:8080/mcp\" # mine\ndefault_tools_approval_mode = \"approve\"\nhttp_headers = { Authorization = \"Bearer t\" }\n"},
		{"crlf",
			"a = 1\r\n",
			"a = 1\r\n\r\n[mcp_servers.tack]\r\nurl = \"http://127.0.0.1:8080/mcp\"\r\ndefault_tools_approval_mode = \"approve\"\r\nhttp_headers = { Authorization = \"Bearer t\" }\r\n"},
		{"subtables stay under it",
			"[mcp_servers.tack]\nurl = \"u\"\n\n[mcp_servers.tack.env]\nA = \"b\"\n",
			"[mcp_servers.tack]\nurl = \"http://127.0.0.1:8080/mcp\"\ndefault_tools_approval_mode = \"approve\"\nhttp_headers = { Authorization = \"Bearer t\" }\n\n[mcp_servers.tack.env]\nA = \"b\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHome(t, false)
			path := filepath.Join(h.codex, "config.toml")
			if err := os.MkdirAll(h.codex, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tc.before), 0o600); err != nil {
				t.Fatal(err)
			}
			c := hook.Connection{Settings: hook.Settings{Agent: transcript.Codex, Tack: tackBin, Server: "http://127.0.0.1:8080", Token: "t"}}
			if _, err := hook.Connect(c, h.env); err != nil {
				t.Fatal(err)
			}
			if got := read(t, path); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
			// Disconnect takes the table out, subtables and all.
			if _, err := hook.Disconnect(c, h.env); err != nil {
				t.Fatal(err)
			}
			if got := read(t, path); strings.Contains(got, "mcp_servers.tack") || strings.Contains(got, "Authorization") {
				t.Errorf("after disconnect:\n%s", got)
			}
		})
	}
}

// TestSettingsPathClaudeConfigDir: $CLAUDE_CONFIG_DIR moves Claude Code's
// settings and its state file, as it moves its projects.
func TestSettingsPathClaudeConfigDir(t *testing.T) {
	t.Parallel()
	h := newHome(t, false)
	cfg := filepath.Join(filepath.Dir(h.dir), "cfg")
	env := func(k string) string { return map[string]string{"HOME": h.dir, "CLAUDE_CONFIG_DIR": cfg}[k] }
	res, err := hook.Connect(hook.Connection{Settings: hook.Settings{Agent: transcript.ClaudeCode, Tack: tackBin, Server: "http://127.0.0.1:8080"}}, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Changes) != 2 || res.Changes[0].Path != filepath.Join(cfg, "settings.json") || res.Changes[1].Path != filepath.Join(cfg, ".claude.json") {
		t.Errorf("changes %+v", res.Changes)
	}
}
