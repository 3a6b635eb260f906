package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/transcript"
)

// Settings names the file holding an agent's hooks, and what Tack's hooks
// run.
type Settings struct {
	// Agent is transcript.ClaudeCode or transcript.Codex.
	Agent transcript.Format
	// Path is the settings file: Claude Code's settings.json, codex's
	// hooks.json (see SettingsPath).
	Path string
	// Tack is the tack binary's absolute path; Server and Token are what
	// it sends the hooks to.
	Tack, Server, Token string
}

// SettingsPath is the file an agent keeps its hooks in: for Claude Code
// ~/.claude/settings.json, or DIR/.claude/settings.json for a project;
// for codex $CODEX_HOME/hooks.json (~/.codex by default), or
// DIR/.codex/hooks.json for a project.
func SettingsPath(agent transcript.Format, project string, env func(string) string) (string, error) {
	dir, file := ".claude", "settings.json"
	if agent == transcript.Codex {
		dir, file = ".codex", "hooks.json"
	}
	if project != "" {
		abs, err := filepath.Abs(project)
		return filepath.Join(abs, dir, file), err
	}
	if agent == transcript.Codex && env("CODEX_HOME") != "" {
		return filepath.Join(env("CODEX_HOME"), file), nil
	}
	home := env("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", err
		}
	}
	return filepath.Join(home, dir, file), nil
}

// Command is the command line of Tack's hook for s.
func (s Settings) Command() string {
	c := shellQuote(s.Tack) + " hook -agent " + string(s.Agent)
	if s.Server != "" {
		c += " -server " + shellQuote(s.Server)
	}
	if s.Token != "" {
		c += " -token " + shellQuote(s.Token)
	}
	return c
}

// isTack reports whether a hook's command is Tack's for agent: a tack
// binary (its name starts with tack) run as `tack hook -agent <agent>`.
func isTack(command string, agent transcript.Format) bool {
	prog, rest, ok := cutProgram(command)
	base := strings.TrimSuffix(filepath.Base(prog), ".exe")
	return ok && strings.HasPrefix(base, "tack") && (rest == "hook -agent "+string(agent) || strings.HasPrefix(rest, "hook -agent "+string(agent)+" "))
}

// Change is what Install or Uninstall did to the settings file.
type Change struct {
	// Changed is false when the file already was as asked: nothing written.
	Changed bool
	// Backup is the copy of the file as it was, "" when none was made
	// (nothing changed, or there was no file).
	Backup string
	// Diff is the change, line by line ("-" removed, "+" added).
	Diff string
}

// Install adds Tack's command hook for every event Tack maps to the
// agent's settings, keeping every other hook and setting; a Tack hook
// already there with another command line (another server) is replaced.
// Installing twice changes nothing the second time.
func Install(s Settings) (Change, error) {
	return edit(s, func(hooks map[string]any) {
		cmd := s.Command()
		for _, event := range transcript.HookEvents(s.Agent) {
			groups, _ := hooks[event].([]any)
			found := false
			for _, g := range groups {
				for _, h := range entries(g) {
					if c, _ := h["command"].(string); isTack(c, s.Agent) {
						if found {
							h["command"] = nil // a second one: dropped below
							continue
						}
						h["type"], h["command"], found = "command", cmd, true
					}
				}
			}
			groups = prune(groups, func(h map[string]any) bool { return h["command"] == nil && h["type"] == "command" })
			if !found {
				groups = append(groups, map[string]any{"hooks": []any{map[string]any{"type": "command", "command": cmd}}})
			}
			hooks[event] = groups
		}
	})
}

// Uninstall removes Tack's hooks from the agent's settings, and nothing
// else.
func Uninstall(s Settings) (Change, error) {
	return edit(s, func(hooks map[string]any) {
		for event, v := range hooks {
			groups, ok := v.([]any)
			if !ok {
				continue
			}
			groups = prune(groups, func(h map[string]any) bool {
				c, _ := h["command"].(string)
				return isTack(c, s.Agent)
			})
			if len(groups) == 0 {
				delete(hooks, event)
			} else {
				hooks[event] = groups
			}
		}
	})
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

// edit applies change to the settings file's "hooks" object and writes the
// file back when that changed anything, after a backup of it.
func edit(s Settings, change func(hooks map[string]any)) (Change, error) {
	old, err := os.ReadFile(s.Path)
	mode := fs.FileMode(0o600)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		old = nil
	case err != nil:
		return Change{}, err
	default:
		if info, err := os.Stat(s.Path); err == nil {
			mode = info.Mode().Perm()
		}
	}
	settings := map[string]any{}
	if len(bytes.TrimSpace(old)) > 0 {
		if err := json.Unmarshal(old, &settings); err != nil {
			return Change{}, fmt.Errorf("%s is not a JSON object: %w", s.Path, err)
		}
	}
	before, _ := json.Marshal(settings)
	hooks, ok := settings["hooks"].(map[string]any)
	if settings["hooks"] != nil && !ok {
		return Change{}, fmt.Errorf("%s: `hooks` is not an object", s.Path)
	}
	if hooks == nil {
		hooks = map[string]any{}
	}
	change(hooks)
	if len(hooks) > 0 || settings["hooks"] != nil {
		settings["hooks"] = hooks
	}
	if len(hooks) == 0 {
		delete(settings, "hooks")
	}
	after, _ := json.Marshal(settings)
	if bytes.Equal(before, after) {
		return Change{}, nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(settings); err != nil {
		return Change{}, err
	}
	ch := Change{Changed: true, Diff: lineDiff(string(old), buf.String())}
	if old != nil {
		ch.Backup = s.Path + ".bak-" + time.Now().UTC().Format("20060102T150405.000")
		if err := os.WriteFile(ch.Backup, old, mode); err != nil {
			return Change{}, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(s.Path), 0o755); err != nil {
		return Change{}, err
	}
	tmp := s.Path + ".tack-tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), mode); err != nil {
		return Change{}, err
	}
	return ch, os.Rename(tmp, s.Path)
}

// lineDiff is a line diff of a and b: the lines of a not kept marked "-",
// those of b added marked "+", two lines of context around each change.
func lineDiff(a, b string) string {
	x, y := splitLines(a), splitLines(b)
	// lcs[i][j] is the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type line struct {
		mark byte
		text string
	}
	var lines []line
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			lines = append(lines, line{' ', x[i]})
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			lines = append(lines, line{'+', y[j]})
			j++
		default:
			lines = append(lines, line{'-', x[i]})
			i++
		}
	}
	var out strings.Builder
	for k, l := range lines {
		near := false
		for d := max(0, k-2); d <= min(len(lines)-1, k+2); d++ {
			near = near || lines[d].mark != ' '
		}
		if near {
			fmt.Fprintf(&out, "%c %s\n", l.mark, l.text)
		}
	}
	return out.String()
}

func splitLines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
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
