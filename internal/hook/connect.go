package hook

import (
	"bytes"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tack-dev/tack/internal/transcript"
)

// MCPName is the name Tack's MCP server is registered under, so its tools
// reach the model as mcp__tack__todo_write and mcp__tack__todo_read.
const MCPName = "tack"

// mcpTools are the tools of Tack's MCP server as the agents name them:
// the ones Connect lets run without asking.
var mcpTools = []string{"mcp__" + MCPName + "__todo_write", "mcp__" + MCPName + "__todo_read"}

// Connection is Tack's place in one agent's settings, at one scope: its
// hooks (Settings, whose Path Connect works out) and its MCP server.
type Connection struct {
	Settings
	// Project is the project whose settings to change; "" is the user's
	// own.
	Project string
}

// Result is what Connect or Disconnect did: each file's change, and what
// the user needs to know that no file can say.
type Result struct {
	Changes []Change
	Notes   []string
}

// MCPURL is the URL of the server's MCP endpoint.
func MCPURL(server string) string { return strings.TrimSuffix(server, "/") + "/mcp" }

// Connect puts Tack in the agent's settings at the connection's scope:
//
//   - Claude Code: the hooks and permissions.allow for Tack's tools in
//     settings.json, and Tack's MCP server (streamable HTTP, the token in
//     an Authorization header) in ~/.claude.json's mcpServers, where
//     `claude mcp add --scope user` puts it; for a project, DIR/.mcp.json,
//     approved in DIR/.claude/settings.json's enabledMcpjsonServers.
//   - codex: the hooks in hooks.json, and [mcp_servers.tack] in the
//     config.toml beside it, its tools approved.
//   - an agent whose MCP servers are in a JSON file of its folder
//     (transcript.MCPConfigJSON): the hooks in its settings, and Tack's
//     entry where the agent's MCPConfig says, in the same file or
//     another.
//
// Every file is worked out before any is written; every other setting,
// hook, MCP server and comment is kept; connecting twice changes nothing.
func Connect(c Connection, env func(string) string) (Result, error) {
	return c.change(env, true)
}

// Disconnect takes out what Connect put in, and nothing else.
func Disconnect(c Connection, env func(string) string) (Result, error) {
	return c.change(env, false)
}

func (c Connection) change(env func(string) string, connect bool) (Result, error) {
	var err error
	if c.Path, err = SettingsPath(c.Agent, c.Project, env); err != nil {
		return Result{}, err
	}
	a := transcript.Lookup(string(c.Agent))
	var edits []fileEdit
	var notes []string
	switch a.MCP.Way {
	case transcript.MCPConfigJSON:
		edits, err = c.jsonMCP(a.MCP, connect)
	case transcript.MCPConfigTOML:
		edits, err = c.codex(connect)
		if connect && c.Project != "" {
			notes = append(notes, fmt.Sprintf("codex reads %s only in a project it trusts (it asks the first time it runs there).", filepath.Dir(c.Path)))
		}
	case transcript.MCPConfigStateFile:
		edits, err = c.claude(env, connect)
		if connect && c.Project != "" {
			notes = append(notes, fmt.Sprintf("Claude Code applies %s (its permissions, and its approval of %s) only in a folder you trust: an interactive claude asks the first time. Until then claude -p asks before Tack's tools (--allowedTools %s).", c.Path, edits[1].path, strings.Join(mcpTools, ",")))
		}
	default:
		return Result{}, fmt.Errorf("tack connect cannot register its MCP server for %s", c.Agent)
	}
	if err != nil {
		return Result{}, err
	}
	if connect && c.Project != "" && c.Token != "" {
		notes = append(notes, "The token is written into the project's files: keep them out of version control.")
	}
	changes, err := applyAll(edits)
	return Result{Changes: changes, Notes: notes}, err
}

// claude is Claude Code's two files: settings.json, and the file of its
// MCP servers.
func (c Connection) claude(env func(string) string, connect bool) ([]fileEdit, error) {
	edits := make([]fileEdit, 2)
	var err error
	edits[0], err = editJSON(c.Path, func(d *jsonDoc) error {
		if !connect {
			if err := uninstallHooks(d, c.Agent); err != nil {
				return err
			}
			if c.Project != "" {
				if err := listed(d, "enabledMcpjsonServers", false, MCPName); err != nil {
					return err
				}
			}
			return allowed(d, false)
		}
		if err := installHooks(d, c.Settings); err != nil {
			return err
		}
		if c.Project != "" {
			if err := listed(d, "enabledMcpjsonServers", true, MCPName); err != nil {
				return err
			}
		}
		return allowed(d, true)
	})
	if err != nil {
		return edits, err
	}
	path := filepath.Join(filepath.Dir(filepath.Dir(c.Path)), ".mcp.json")
	if c.Project == "" {
		if path, err = claudeState(env); err != nil {
			return edits, err
		}
	}
	edits[1], err = editJSON(path, func(d *jsonDoc) error {
		return c.mcpEntry(d, claudeMCP, connect)
	})
	return edits, err
}

// claudeMCP is Claude Code's entry of an MCP server, in its state file or
// a project's .mcp.json: {"type": "http", "url", "headers"}.
var claudeMCP = transcript.MCPConfig{Servers: []string{"mcpServers"}, URLKey: "url", Fields: map[string]any{"type": "http"}}

// claudeState is Claude Code's own state file, which holds the user's MCP
// servers: ~/.claude.json, or .claude.json in $CLAUDE_CONFIG_DIR.
func claudeState(env func(string) string) (string, error) {
	if d := env("CLAUDE_CONFIG_DIR"); d != "" {
		return filepath.Join(d, ".claude.json"), nil
	}
	home, err := homeDir(env)
	return filepath.Join(home, ".claude.json"), err
}

// allowed puts Tack's tools in, or takes them out of, permissions.allow:
// Claude Code then calls them without asking, in -p mode too.
func allowed(d *jsonDoc, in bool) error {
	perms, err := d.object("permissions")
	if err != nil {
		return err
	}
	allow, ok := perms["allow"].([]any)
	if perms["allow"] != nil && !ok {
		return fmt.Errorf("`permissions.allow` is not a list")
	}
	allow = edited(allow, in, mcpTools...)
	perms["allow"] = allow
	if len(allow) == 0 {
		delete(perms, "allow")
	}
	return nil
}

// listed puts names in, or takes them out of, the top-level list key.
func listed(d *jsonDoc, key string, in bool, names ...string) error {
	v, err := d.get(key)
	if err != nil {
		return err
	}
	list, ok := v.([]any)
	if v != nil && !ok {
		return fmt.Errorf("`%s` is not a list", key)
	}
	d.set(key, edited(list, in, names...))
	return nil
}

// edited is list with names added at its end (those it lacks) or taken
// out.
func edited(list []any, in bool, names ...string) []any {
	if !in {
		return slices.DeleteFunc(slices.Clone(list), func(v any) bool {
			s, ok := v.(string)
			return ok && slices.Contains(names, s)
		})
	}
	for _, n := range names {
		if !slices.Contains(list, any(n)) {
			list = append(list, n)
		}
	}
	return list
}

// codex is codex's two files: hooks.json, and config.toml beside it.
func (c Connection) codex(connect bool) ([]fileEdit, error) {
	edits := make([]fileEdit, 2)
	var err error
	edits[0], err = editJSON(c.Path, c.hooks(connect))
	if err != nil {
		return edits, err
	}
	path := filepath.Join(filepath.Dir(c.Path), "config.toml")
	table := []string{"mcp_servers", MCPName}
	edits[1], err = prepare(path, func(old []byte) ([]byte, error) {
		var out []byte
		var err error
		if connect {
			out, err = setTable(old, table, c.codexEntries())
		} else {
			out, err = removeTable(old, table)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if bytes.Equal(out, parseTOML(old).bytes()) {
			return nil, nil
		}
		return out, nil
	})
	return edits, err
}

// codexEntries are the keys of [mcp_servers.tack]: the URL, the token as
// a header (the token given replaces a bearer_token_env_var), and its
// tools approved, which codex otherwise refuses under approval_policy =
// "never" and asks about otherwise.
func (c Connection) codexEntries() []tomlEntry {
	entries := []tomlEntry{
		{"url", tomlString(MCPURL(c.Server))},
		{"default_tools_approval_mode", tomlString("approve")},
		{"http_headers", ""},
	}
	if c.Token != "" {
		entries[2].value = "{ Authorization = " + tomlString("Bearer "+c.Token) + " }"
		entries = append(entries, tomlEntry{"bearer_token_env_var", ""})
	}
	return entries
}

// jsonMCP is an agent's hooks in its settings and Tack's MCP server in
// the JSON file m names (transcript.MCPConfigJSON): one edit when that is
// the settings file, else two.
func (c Connection) jsonMCP(m transcript.MCPConfig, connect bool) ([]fileEdit, error) {
	hooks := c.hooks(connect)
	server := func(d *jsonDoc) error { return c.mcpEntry(d, m, connect) }
	path := filepath.Join(filepath.Dir(c.Path), m.File)
	if path == c.Path {
		e, err := editJSON(path, func(d *jsonDoc) error {
			if err := hooks(d); err != nil {
				return err
			}
			return server(d)
		})
		return []fileEdit{e}, err
	}
	edits := make([]fileEdit, 2)
	var err error
	if edits[0], err = editJSON(c.Path, hooks); err != nil {
		return edits, err
	}
	edits[1], err = editJSON(path, server)
	return edits, err
}

// hooks is the edit of the agent's settings that puts Tack's hooks in
// (connect) or takes them out.
func (c Connection) hooks(connect bool) func(d *jsonDoc) error {
	return func(d *jsonDoc) error {
		if connect {
			return installHooks(d, c.Settings)
		}
		return uninstallHooks(d, c.Agent)
	}
}

// mcpEntry puts Tack's entry in, or takes it out of, the object of the
// agent's MCP servers at m.Servers: {m.URLKey: the URL, "headers":
// {"Authorization": "Bearer <token>"}, m.Fields…}, every other key of the
// entry kept. Objects on the way that the change leaves empty are left
// out.
func (c Connection) mcpEntry(d *jsonDoc, m transcript.MCPConfig, connect bool) error {
	if len(m.Servers) == 0 || m.URLKey == "" {
		return fmt.Errorf("%s names no place for its MCP servers", c.Agent)
	}
	top, err := d.object(m.Servers[0])
	if err != nil {
		return err
	}
	path := []map[string]any{top}
	for i, key := range m.Servers[1:] {
		v := path[len(path)-1][key]
		next, ok := v.(map[string]any)
		if v != nil && !ok {
			return fmt.Errorf("`%s` is not an object", strings.Join(m.Servers[:i+2], "."))
		}
		if next == nil {
			if !connect {
				return nil
			}
			next = map[string]any{}
			path[len(path)-1][key] = next
		}
		path = append(path, next)
	}
	servers := path[len(path)-1]
	if !connect {
		delete(servers, MCPName)
		for i := len(path) - 1; i > 0 && len(path[i]) == 0; i-- {
			delete(path[i-1], m.Servers[i])
		}
		return nil
	}
	entry, _ := servers[MCPName].(map[string]any)
	if entry == nil {
		entry = map[string]any{}
	}
	for k, v := range m.Fields {
		entry[k] = v
	}
	entry[m.URLKey] = MCPURL(c.Server)
	headers, _ := entry["headers"].(map[string]any)
	if headers == nil {
		headers = map[string]any{}
	}
	delete(headers, "Authorization")
	if c.Token != "" {
		headers["Authorization"] = "Bearer " + c.Token
	}
	entry["headers"] = headers
	if len(headers) == 0 {
		delete(entry, "headers")
	}
	servers[MCPName] = entry
	return nil
}
