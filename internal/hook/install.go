package hook

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tack-dev/tack/internal/transcript"
)

// Settings names the file holding an agent's hooks, and what Tack's hooks
// run.
type Settings struct {
	// Agent is a registered agent's name (transcript.Agents).
	Agent transcript.Format
	// Path is the settings file: Claude Code's settings.json, codex's
	// hooks.json (see SettingsPath).
	Path string
	// Tack is the tack binary's absolute path; Server and Token are what
	// it sends the hooks to.
	Tack, Server, Token string
	// Hook is the hook binary's absolute path (cmd/tack-hook: `tack hook`
	// alone, which starts in about half the time; cmd/tack-hook-local for
	// a server on this machine, quicker still): the hooks run it when set,
	// `tack hook` otherwise.
	Hook string
	// Plan is the plan mode the hook sends with each event
	// (transcript.PlanAuto…); "" sends none.
	Plan string
	// HTTP installs the agent's HTTP hooks for the events it takes them
	// for (transcript.Agent.HTTPHooks): the agent posts the event to the
	// server itself, showing ReadKey, and the server reads the transcript
	// (a server of this machine and user alone). The other events keep
	// the command hook.
	HTTP bool
	// ReadKey is the user's key for the server's transcript reads
	// (ReadKey), which HTTP hooks send.
	ReadKey string
}

// HookForms are the values of -hooks: command hooks for every event, or
// HTTP hooks wherever the agent takes them.
const (
	FormCommand = "command"
	FormHTTP    = "http"
)

// httpTimeout is how long the agent waits for an HTTP hook's answer, in
// seconds: the server's own bound on a transcript's sync and a hook's
// store work, with room to spare, well short of holding the agent up.
const httpTimeout = 3

// httpHook is the agent's HTTP hook entry for s: the server's
// /hooks/{agent}, asking it to read the transcript.
func (s Settings) httpHook() map[string]any {
	u := strings.TrimSuffix(s.Server, "/") + "/hooks/" + string(s.Agent)
	if s.Plan != "" {
		u += "?plan=" + s.Plan
	}
	headers := map[string]any{ReadHeader: ReadAsk, KeyHeader: s.ReadKey}
	if s.Token != "" {
		headers["Authorization"] = "Bearer " + s.Token
	}
	return map[string]any{"type": "http", "url": u, "headers": headers, "timeout": httpTimeout}
}

// isTackHTTP reports whether a hook entry is Tack's HTTP hook for agent:
// one that posts to /hooks/<agent> asking the server to read.
func isTackHTTP(h map[string]any, agent transcript.Format) bool {
	if t, _ := h["type"].(string); t != "http" {
		return false
	}
	u, _ := h["url"].(string)
	headers, _ := h["headers"].(map[string]any)
	path, _, _ := strings.Cut(u, "?")
	return headers != nil && headers[ReadHeader] != nil && strings.HasSuffix(path, "/hooks/"+string(agent))
}

// isTackEntry reports whether a hook entry is Tack's for agent, in either
// form.
func isTackEntry(h map[string]any, agent transcript.Format) bool {
	c, _ := h["command"].(string)
	return isTack(c, agent) || isTackHTTP(h, agent)
}

// SettingsPath is the file an agent keeps its hooks in
// (transcript.Agent.Settings): in its folder, for Claude Code
// ~/.claude/settings.json ($CLAUDE_CONFIG_DIR/settings.json), for codex
// ~/.codex/hooks.json ($CODEX_HOME/hooks.json); or in DIR/.claude,
// DIR/.codex for a project.
func SettingsPath(agent transcript.Format, project string, env func(string) string) (string, error) {
	a := transcript.Lookup(string(agent))
	if a == nil {
		return "", fmt.Errorf("no agent is named %q", agent)
	}
	if project != "" {
		abs, err := filepath.Abs(project)
		return filepath.Join(abs, a.HomeDir, a.Settings), err
	}
	if a.HomeEnv != "" && env(a.HomeEnv) != "" {
		return filepath.Join(env(a.HomeEnv), a.Settings), nil
	}
	home, err := homeDir(env)
	return filepath.Join(home, a.HomeDir, a.Settings), err
}

// homeDir is $HOME, or the system's idea of the user's home without one.
func homeDir(env func(string) string) (string, error) {
	if home := env("HOME"); home != "" {
		return home, nil
	}
	return os.UserHomeDir()
}

// Command is the command line of Tack's hook for s.
func (s Settings) Command() string {
	c := shellQuote(s.Tack) + " hook -agent " + string(s.Agent)
	if s.Hook != "" {
		c = shellQuote(s.Hook) + " -agent " + string(s.Agent)
	}
	if s.Plan != "" {
		c += " -plan " + shellQuote(s.Plan)
	}
	if s.Server != "" {
		c += " -server " + shellQuote(s.Server)
	}
	if s.Token != "" {
		c += " -token " + shellQuote(s.Token)
	}
	return c
}

// isTack reports whether a hook's command is Tack's for agent: a tack
// binary (its name starts with tack) run as `tack hook -agent <agent>`,
// or the tack-hook binary run as `tack-hook -agent <agent>`.
func isTack(command string, agent transcript.Format) bool {
	prog, rest, ok := cutProgram(command)
	base := strings.TrimSuffix(filepath.Base(prog), ".exe")
	if base == HookBinary || base == LocalHookBinary {
		rest = "hook " + rest
	}
	return ok && strings.HasPrefix(base, "tack") && (rest == "hook -agent "+string(agent) || strings.HasPrefix(rest, "hook -agent "+string(agent)+" "))
}

// HookBinary is the name of the hook's own binary (cmd/tack-hook), and
// LocalHookBinary that of the hook for a server on this machine
// (cmd/tack-hook-local), which hands what it does not cover to the one
// beside it.
const (
	HookBinary      = "tack-hook"
	LocalHookBinary = "tack-hook-local"
)

// HookBeside is the quickest hook binary in the folder of the tack binary
// at tack for a server at server: tack-hook-local for a plain HTTP server
// on this machine, tack-hook otherwise; "" when there is none there
// (`go install ./cmd/...` and the releases put them side by side).
func HookBeside(tack, server string) string {
	if strings.HasPrefix(server, "http://") && OnThisMachine(server) {
		if path := binaryBeside(tack, LocalHookBinary); path != "" {
			return path
		}
	}
	return binaryBeside(tack, HookBinary)
}

// binaryBeside is the executable name in the folder of tack, "" when there
// is none.
func binaryBeside(tack, name string) string {
	if strings.HasSuffix(tack, ".exe") {
		name += ".exe"
	}
	path := filepath.Join(filepath.Dir(tack), name)
	if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
		return ""
	}
	return path
}

// Install adds Tack's command hook for every event Tack maps to the
// agent's settings, keeping every other hook and setting; a Tack hook
// already there with another command line (another server) is replaced.
// Installing twice changes nothing the second time.
func Install(s Settings) (Change, error) {
	return applyOne(editJSON(s.Path, func(d *jsonDoc) error { return installHooks(d, s) }))
}

// Uninstall removes Tack's hooks from the agent's settings, and nothing
// else.
func Uninstall(s Settings) (Change, error) {
	return applyOne(editJSON(s.Path, func(d *jsonDoc) error { return uninstallHooks(d, s.Agent) }))
}

func applyOne(e fileEdit, err error) (Change, error) {
	if err != nil {
		return Change{}, err
	}
	return e.apply()
}

// installHooks puts Tack's hook for every event in the settings' hooks.
func installHooks(d *jsonDoc, s Settings) error {
	hooks, err := d.object("hooks")
	if err != nil {
		return err
	}
	cmd := map[string]any{"type": "command", "command": s.Command()}
	var httpEvents []string
	if a := transcript.Lookup(string(s.Agent)); s.HTTP && a != nil {
		httpEvents = a.HTTPHooks
	}
	for _, event := range transcript.HookEvents(s.Agent) {
		want := cmd
		if slices.Contains(httpEvents, event) {
			want = s.httpHook()
		}
		groups, _ := hooks[event].([]any)
		found := false
		for _, g := range groups {
			for _, h := range entries(g) {
				if !isTackEntry(h, s.Agent) {
					continue
				}
				if found || h["type"] != want["type"] {
					// A second one is dropped below; one of the other
					// form is made anew.
					clear(h)
				}
				if !found {
					// Tack's first, in the form wanted, where it was,
					// keeping what else the user set on it.
					maps.Copy(h, want)
					found = true
				}
			}
		}
		groups = prune(groups, func(h map[string]any) bool { return len(h) == 0 })
		if !found {
			groups = append(groups, map[string]any{"hooks": []any{want}})
		}
		hooks[event] = groups
	}
	return nil
}

// uninstallHooks takes Tack's hooks out of the settings' hooks.
func uninstallHooks(d *jsonDoc, agent transcript.Format) error {
	hooks, err := d.object("hooks")
	if err != nil {
		return err
	}
	for event, v := range hooks {
		groups, ok := v.([]any)
		if !ok {
			continue
		}
		groups = prune(groups, func(h map[string]any) bool { return isTackEntry(h, agent) })
		if len(groups) == 0 {
			delete(hooks, event)
		} else {
			hooks[event] = groups
		}
	}
	return nil
}

// entries are the hooks of a matcher group {"matcher"?, "hooks": [...]}.
func entries(group any) []map[string]any {
	g, _ := group.(map[string]any)
	list, _ := g["hooks"].([]any)
	var out []map[string]any
	for _, h := range list {
		if m, ok := h.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// prune drops the hooks drop says of from each group, and the groups it
// leaves empty of hooks.
func prune(groups []any, drop func(map[string]any) bool) []any {
	out := groups[:0:0]
	for _, group := range groups {
		g, ok := group.(map[string]any)
		list, _ := g["hooks"].([]any)
		if !ok || list == nil {
			out = append(out, group) // not a group Tack knows: kept as it is
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(list), func(h any) bool {
			m, ok := h.(map[string]any)
			return ok && drop(m)
		})
		if len(kept) == 0 {
			continue
		}
		g["hooks"] = kept
		out = append(out, g)
	}
	return out
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// cutProgram splits a command line into its program (unquoted) and the
// rest.
func cutProgram(command string) (prog, rest string, ok bool) {
	command = strings.TrimSpace(command)
	if strings.HasPrefix(command, "'") {
		var b strings.Builder
		i := 1
		for i < len(command) {
			if command[i] == '\'' {
				if strings.HasPrefix(command[i:], `'\''`) {
					b.WriteByte('\'')
					i += 4
					continue
				}
				return b.String(), strings.TrimSpace(command[i+1:]), true
			}
			b.WriteByte(command[i])
			i++
		}
		return "", "", false
	}
	prog, rest, ok = strings.Cut(command, " ")
	return prog, strings.TrimSpace(rest), ok
}
