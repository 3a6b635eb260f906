package transcript

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tack-dev/tack/internal/projection"
)

// Agent is everything Tack knows of one coding agent, in one place: each
// agent's file (claudecode.go, codex.go) describes it and registers it,
// and every part of Tack that differs by agent (reading its transcripts,
// its hooks' routes and settings, the folders `tack watch` follows, the
// policy of its sessions) reads it here rather than naming the agent.
// See docs/agents.md, "Adding an agent".
type Agent struct {
	// Name is the agent's name everywhere Tack names it: the prefix of
	// its sessions' keys, a session's agent, POST /hooks/{Name},
	// `tack hook -agent Name`.
	Name Format
	// Title is the agent's name as a person reads it ("Claude Code"): a
	// new session's title begins with it (projection.DefaultTitle).
	Title string
	// Detect reports whether a line of a transcript is one this agent
	// writes and no other does. Any line of a transcript names its agent;
	// a reader tries the lines in order until one does.
	Detect func(line []byte) bool
	// open sets up a parser for the file at path (a file that is a
	// subagent's, say); nil when the path says nothing more than the
	// session's id.
	open func(p *Parser, path string)
	// parse maps one line of the agent's transcripts to events.
	parse func(p *Parser, line []byte, out *emitter)
	// spawns is true when the result of a subagent call (Task, Agent)
	// names the subagent it started ({"agentId"}), whose session is then
	// made titled by its task.
	spawns bool
	// Harness names the kind of a user-role text the agent's harness
	// wrote itself (projection.Kind…), "" for a person's prompt.
	Harness func(text string) string

	// Home is the agent's own folder (its settings, transcripts and
	// registry): HomeEnv when it is set, else HomeDir under the user's
	// home directory; a project's settings are in DIR/HomeDir.
	HomeDir, HomeEnv string
	// Transcripts is the folder under Home where the agent writes its
	// transcripts, the one `tack watch` follows by default.
	Transcripts string
	// Settings is the file under Home holding the agent's hooks, which
	// `tack connect` and `tack hook install` edit.
	Settings string
	// MCP is where `tack connect` registers Tack's MCP server for the
	// agent.
	MCP MCPConfig
	// HookEvents are the hook events `tack hook install` registers: all
	// Tack maps that the agent has, in Tack's names (Hook…).
	HookEvents []string
	// HTTPHooks are the hook events the agent also takes as an HTTP hook
	// (it posts the hook's JSON to a URL itself, no process at all):
	// `tack hook install -hooks http` installs those so.
	HTTPHooks []string
	// HookNames are the agent's own names of the hook events it names
	// otherwise than Tack does, by Tack's name: `tack hook install`
	// registers them so, and a hook's payload naming one is read as
	// Tack's event (Agent.ParseHook). Nil when it names them all as Tack.
	HookNames map[string]string
	// Live is the folder under Home of the agent's live-session registry,
	// "" when it keeps none: one <pid>.json per running session,
	// {pid, sessionId, procStart, status, statusUpdatedAt}, from which
	// `tack watch` tells Tack whether the agent is busy or idle and ends
	// a session whose process is gone.
	Live string
	// MCPThreadMeta is the key of an MCP call's _meta that names the
	// session the agent's hooks name (their session_id), "" when its
	// calls carry none: a call is then tied to its session by the tool
	// call's id, as its PreToolUse hook told of it.
	MCPThreadMeta string

	// Parallel is the policy of the agent's sessions: whether its list may
	// hold more than one item in progress (projection.Config).
	Parallel bool
	// ListTool is the list tool the agent's model has unless it showed
	// another; Tack's texts about the plan name it. Its shape is Dialect's
	// (or a task tool's).
	ListTool string
	// Dialect is the shape of the agent's own list tool, nil when it has
	// none but the task tools. Registering the agent registers it
	// (projection.RegisterDialect): Tack then serves it at
	// POST /sessions/{id}/tools/{Tool}, derives list writes from its calls
	// in hooks and transcripts, and every store checks them as its
	// shape says, without knowing the agents.
	Dialect *projection.Dialect
	// NativeTodoTools reports whether the agent, run with this environment
	// and these command lines (its process's and its ancestors',
	// NUL-separated, "" where they cannot be read), offers its model a
	// list tool of its own.
	NativeTodoTools func(env func(string) string, cmdline string) bool
}

// agents are the registered agents, by name; sorted are the same, sorted
// by name, kept at registration for the paths that try each agent in turn
// (Detect, harnessKind).
var (
	agents = map[Format]*Agent{}
	sorted []*Agent
)

// register adds an agent; each agent's file calls it once, at init.
func register(a *Agent) {
	if _, dup := agents[a.Name]; dup || a.Name == "" || a.Detect == nil || a.parse == nil || a.Harness == nil {
		panic(fmt.Sprintf("transcript: agent %q registered twice or incomplete", a.Name))
	}
	agents[a.Name] = a
	i, _ := slices.BinarySearchFunc(sorted, a.Name, func(b *Agent, name Format) int { return strings.Compare(string(b.Name), string(name)) })
	sorted = slices.Insert(sorted, i, a)
	if a.Title != "" {
		projection.RegisterAgentName(string(a.Name), a.Title)
	}
	if a.Dialect != nil {
		projection.RegisterDialect(*a.Dialect)
	}
}

// Agents are the registered agents, by name.
func Agents() []*Agent { return slices.Clone(sorted) }

// Names are the registered agents' names, sorted, as a person reads them
// in a flag's help: "claude-code or codex".
func Names() string {
	names := make([]string, len(sorted))
	for i, a := range sorted {
		names[i] = string(a.Name)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Lookup is the agent named name, nil when none is.
func Lookup(name string) *Agent { return agents[Format(name)] }

// Config is the policy Tack applies to a session of the agent.
func (a *Agent) Config() projection.Config {
	return projection.Config{AllowParallel: a.Parallel, PlanLifetime: PlanLifetime}
}

// Home is the agent's folder for the user whose home directory is home
// (see HomeDir).
func (a *Agent) Home(env func(string) string, home string) string {
	if d := env(a.HomeEnv); a.HomeEnv != "" && d != "" {
		return d
	}
	return filepath.Join(home, a.HomeDir)
}

// MCPConfig is where and how `tack connect` registers Tack's MCP server
// (named "tack", at the server's /mcp, streamable HTTP, the token in an
// Authorization header) for an agent.
type MCPConfig struct {
	// Way is how: MCPConfigJSON, which the fields below say all of, or
	// one of the ways internal/hook writes by name (MCPConfigStateFile,
	// MCPConfigTOML).
	Way string
	// File is the JSON file, under the agent's folder (Home; a project's
	// DIR/HomeDir), that holds its MCP servers (MCPConfigJSON). It may be
	// the Settings file.
	File string
	// Servers is the key path of the object of the agent's MCP servers in
	// File, each under its name: ["mcpServers"].
	Servers []string
	// URLKey is the key of a server's entry that holds its URL ("url",
	// "httpUrl"); "headers" holds its headers, {"Authorization": "Bearer
	// <token>"}.
	URLKey string
	// Fields are keys Tack's entry has beside its URL and headers, as
	// they are: {"type": "http"}, or what approves its tools.
	Fields map[string]any
}

// The ways `tack connect` registers Tack's MCP server (MCPConfig.Way).
const (
	// MCPConfigJSON: in File's object at Servers, under "tack":
	// {URLKey: <url>, "headers": {"Authorization": …}, Fields…}. Every
	// other key of the entry, the file and its servers is kept.
	MCPConfigJSON = "json"
	// MCPConfigStateFile: the user's MCP servers are in the agent's state
	// file beside its folder (~/.claude.json, or in HomeEnv), a project's
	// in DIR/.mcp.json approved in the project's settings; Tack's tools
	// are allowed in the settings' permissions. Claude Code's way.
	MCPConfigStateFile = "state-file"
	// MCPConfigTOML: [mcp_servers.tack] in the config.toml beside the
	// settings file, its tools approved. codex's way.
	MCPConfigTOML = "config-toml"
)

// ParseHook reads a hook's payload as ParseHook does, and reads the
// event the agent names as Tack's (HookNames); AgentEvent keeps the
// agent's own name, which an answer names. A nil agent reads it as
// ParseHook.
func (a *Agent) ParseHook(raw []byte) (Hook, error) {
	h, err := ParseHook(raw)
	if err != nil || a == nil {
		return h, err
	}
	for tack, own := range a.HookNames {
		if h.Event == own {
			h.Event = tack
			break
		}
	}
	return h, nil
}
