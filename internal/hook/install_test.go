package hook_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/transcript"
)

const tackBin = "/opt/my tools/tack"

// hooksOf reads a settings file's hooks: event -> the commands, in order.
func hooksOf(t *testing.T, path string) (map[string][]string, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, raw)
	}
	out := map[string][]string{}
	hooks, _ := s["hooks"].(map[string]any)
	for event, groups := range hooks {
		for _, g := range groups.([]any) {
			for _, h := range g.(map[string]any)["hooks"].([]any) {
				c, _ := h.(map[string]any)["command"].(string)
				if c == "" {
					c, _ = h.(map[string]any)["url"].(string)
				}
				out[event] = append(out[event], c)
			}
		}
	}
	return out, s
}

func TestInstall(t *testing.T) {
	t.Parallel()
	userHook := `{"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/bin/audit-bash"}]}`
	for _, tc := range []struct {
		name   string
		agent  transcript.Format
		before string // "" for no file
	}{
		{"claude no file", transcript.ClaudeCode, ""},
		{"claude empty file", transcript.ClaudeCode, "\n"},
		{"claude with settings and hooks", transcript.ClaudeCode, `{"model": "opus", "permissions": {"allow": ["Bash(go test:*)"]}, "hooks": {"PreToolUse": [` + userHook + `], "Stop": [{"hooks": [{"type": "http", "url": "http://example.test/stop"}]}]}}`},
		{"claude with an old tack hook", transcript.ClaudeCode, `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "/old/tack hook -agent claude-code -server http://old:1"}]}]}}`},
		{"codex", transcript.Codex, `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "settings.json")
			if tc.before != "" {
				if err := os.WriteFile(path, []byte(tc.before), 0o640); err != nil {
					t.Fatal(err)
				}
			}
			s := hook.Settings{Agent: tc.agent, Path: path, Tack: tackBin, Server: "http://127.0.0.1:8080"}
			ch, err := hook.Install(s)
			if err != nil {
				t.Fatal(err)
			}
			if !ch.Changed || !strings.Contains(ch.Diff, "+ ") || (tc.before != "") != (ch.Backup != "") {
				t.Fatalf("change %+v", ch)
			}
			if ch.Backup != "" {
				if raw, _ := os.ReadFile(ch.Backup); string(raw) != tc.before {
					t.Errorf("backup holds %q, want %q", raw, tc.before)
				}
			}
			got, settings := hooksOf(t, path)
			want := s.Command()
			if !strings.HasPrefix(want, "'"+tackBin+"' hook -agent "+string(tc.agent)) {
				t.Errorf("command %q", want)
			}
			for _, event := range transcript.HookEvents(tc.agent) {
				n := 0
				for _, c := range got[event] {
					if c == want {
						n++
					}
					if strings.Contains(c, "/old/tack") {
						t.Errorf("%s: the old tack hook is kept: %q", event, c)
					}
				}
				if n != 1 {
					t.Errorf("%s: %d tack hooks, want 1 (%q)", event, n, got[event])
				}
			}
			// Everything else is kept.
			if strings.Contains(tc.before, "opus") {
				if settings["model"] != "opus" || settings["permissions"] == nil {
					t.Errorf("settings lost: %v", settings)
				}
				if got["PreToolUse"][0] != "/usr/bin/audit-bash" {
					t.Errorf("user's PreToolUse hook lost: %q", got["PreToolUse"])
				}
				stop := settings["hooks"].(map[string]any)["Stop"].([]any)
				if len(stop) != 2 {
					t.Errorf("Stop groups %v", stop)
				}
			}
			if strings.Contains(tc.before, "echo hi") && got["SessionStart"][0] != "echo hi" {
				t.Errorf("codex's own hook lost: %q", got["SessionStart"])
			}
			if info, _ := os.Stat(path); tc.before != "" && info.Mode().Perm() != 0o640 {
				t.Errorf("mode %v, want the file's own", info.Mode().Perm())
			}

			// Again: nothing changes.
			raw, _ := os.ReadFile(path)
			again, err := hook.Install(s)
			if err != nil || again.Changed || again.Backup != "" {
				t.Fatalf("second install: %+v %v", again, err)
			}
			if raw2, _ := os.ReadFile(path); string(raw2) != string(raw) {
				t.Errorf("second install rewrote the file")
			}

			// Uninstall leaves exactly what was not Tack's.
			un, err := hook.Uninstall(s)
			if err != nil || !un.Changed || !strings.Contains(un.Diff, "- ") {
				t.Fatalf("uninstall: %+v %v", un, err)
			}
			left, _ := hooksOf(t, path)
			for event, cmds := range left {
				for _, c := range cmds {
					if strings.Contains(c, " hook -agent ") {
						t.Errorf("%s: uninstall left %q", event, c)
					}
				}
			}
			if strings.Contains(tc.before, "opus") && (left["PreToolUse"][0] != "/usr/bin/audit-bash" || len(left) != 2 || left["Stop"][0] != "http://example.test/stop") {
				t.Errorf("after uninstall: %q", left)
			}
			if un2, err := hook.Uninstall(s); err != nil || un2.Changed {
				t.Errorf("second uninstall: %+v %v", un2, err)
			}
		})
	}
}

// TestInstallHookBinary: with tack-hook beside tack, the hooks run it, and
// tack-hook-local for a server on this machine where it lies there too;
// each takes the place of a `tack hook` installed before, and the other way
// round, and uninstall takes any out.
func TestInstallHookBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tack := filepath.Join(dir, "tack")
	const local, remote = "http://127.0.0.1:8080", "https://tack.example.test"
	if got := hook.HookBeside(tack, local); got != "" {
		t.Errorf("HookBeside found %q in an empty folder", got)
	}
	if err := os.WriteFile(filepath.Join(dir, hook.HookBinary), []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := hook.HookBeside(tack, local); got != "" {
		t.Errorf("HookBeside took a file that is not executable: %q", got)
	}
	if err := os.Chmod(filepath.Join(dir, hook.HookBinary), 0o755); err != nil {
		t.Fatal(err)
	}
	hookBin := hook.HookBeside(tack, local)
	if hookBin != filepath.Join(dir, hook.HookBinary) {
		t.Fatalf("HookBeside %q", hookBin)
	}
	if err := os.WriteFile(filepath.Join(dir, hook.LocalHookBinary), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	localBin := filepath.Join(dir, hook.LocalHookBinary)
	for server, want := range map[string]string{local: localBin, "http://localhost:9": localBin, remote: hookBin, "http://10.0.0.7:8080": hookBin} {
		if got := hook.HookBeside(tack, server); got != want {
			t.Errorf("HookBeside for %s: %q, want %q", server, got, want)
		}
	}
	path := filepath.Join(t.TempDir(), "settings.json")
	plain := hook.Settings{Agent: transcript.ClaudeCode, Path: path, Tack: tack, Server: local}
	fast := plain
	fast.Hook = hookBin
	if want := hookBin + " -agent claude-code -server http://127.0.0.1:8080"; fast.Command() != want {
		t.Errorf("command %q, want %q", fast.Command(), want)
	}
	quick := plain
	quick.Hook = localBin
	for _, step := range []hook.Settings{plain, fast, plain, quick, fast, quick} {
		if _, err := hook.Install(step); err != nil {
			t.Fatal(err)
		}
		got, _ := hooksOf(t, path)
		for _, event := range transcript.HookEvents(transcript.ClaudeCode) {
			if len(got[event]) != 1 || got[event][0] != step.Command() {
				t.Errorf("%s: %q, want only %q", event, got[event], step.Command())
			}
		}
	}
	if _, err := hook.Uninstall(plain); err != nil {
		t.Fatal(err)
	}
	if got, _ := hooksOf(t, path); len(got) != 0 {
		t.Errorf("uninstall left %q", got)
	}
}

// TestInstallHTTP: -hooks http puts the agent's HTTP hook wherever it
// takes one (asking the server to read, with the user's key and token)
// and the command hook elsewhere (SessionStart); either form replaces the
// other, a second install changes nothing, a user's own HTTP hook is kept,
// and uninstall takes out both forms.
func TestInstallHTTP(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "settings.json")
	user := `{"hooks": {"Stop": [{"hooks": [{"type": "http", "url": "http://127.0.0.1:9/hooks/claude-code"}]}]}}`
	if err := os.WriteFile(path, []byte(user), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := hook.Settings{Agent: transcript.ClaudeCode, Path: path, Tack: tackBin, Server: "http://127.0.0.1:8080", Token: "tk", Plan: "auto"}
	web := cmd
	web.HTTP, web.ReadKey = true, "k3y"
	const url = "http://127.0.0.1:8080/hooks/claude-code?plan=auto"
	check := func(s hook.Settings) {
		t.Helper()
		got, doc := hooksOf(t, path)
		for _, event := range transcript.HookEvents(transcript.ClaudeCode) {
			want := []string{s.Command()}
			if s.HTTP && event != transcript.HookSessionStart {
				want = []string{url}
			}
			if event == transcript.HookStop {
				want = append([]string{"http://127.0.0.1:9/hooks/claude-code"}, want...)
			}
			if strings.Join(got[event], "|") != strings.Join(want, "|") {
				t.Errorf("%s: %q, want %q", event, got[event], want)
			}
		}
		if !s.HTTP {
			return
		}
		pre := doc["hooks"].(map[string]any)["PreToolUse"].([]any)[0].(map[string]any)["hooks"].([]any)[0].(map[string]any)
		h, _ := json.Marshal(pre["headers"])
		if want := `{"Authorization":"Bearer tk","Tack-Read-Key":"k3y","Tack-Read-Transcript":"read"}`; string(h) != want || pre["timeout"] != 3.0 {
			t.Errorf("PreToolUse's HTTP hook: headers %s, timeout %v; want %s and 3", h, pre["timeout"], want)
		}
	}
	for _, step := range []hook.Settings{web, web, cmd, web} {
		if _, err := hook.Install(step); err != nil {
			t.Fatal(err)
		}
		check(step)
	}
	if ch, err := hook.Install(web); err != nil || ch.Changed {
		t.Errorf("a second install: changed %v, %v", ch.Changed, err)
	}
	if _, err := hook.Uninstall(cmd); err != nil {
		t.Fatal(err)
	}
	if got, _ := hooksOf(t, path); len(got) != 1 || strings.Join(got["Stop"], "|") != "http://127.0.0.1:9/hooks/claude-code" {
		t.Errorf("uninstall left %q, want the user's own Stop hook alone", got)
	}
}

func TestInstallRefusesWhatItCannotRead(t *testing.T) {
	t.Parallel()
	for _, before := range []string{`[1]`, `{"hooks": []}`, `{not json`} {
		path := filepath.Join(t.TempDir(), "settings.json")
		if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := hook.Install(hook.Settings{Agent: transcript.ClaudeCode, Path: path, Tack: tackBin}); err == nil {
			t.Errorf("%s: installed", before)
		}
		if raw, _ := os.ReadFile(path); string(raw) != before {
			t.Errorf("%s: file changed to %s", before, raw)
		}
	}
}

func TestSettingsPath(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		agent   transcript.Format
		project string
		env     map[string]string
		want    string
	}{
		{transcript.ClaudeCode, "", map[string]string{"HOME": "/home/a"}, "/home/a/.claude/settings.json"},
		{transcript.ClaudeCode, "/src/app", nil, "/src/app/.claude/settings.json"},
		{transcript.Codex, "", map[string]string{"HOME": "/home/a"}, "/home/a/.codex/hooks.json"},
		{transcript.Codex, "", map[string]string{"HOME": "/home/a", "CODEX_HOME": "/etc/codex"}, "/etc/codex/hooks.json"},
	} {
		got, err := hook.SettingsPath(tc.agent, tc.project, env(tc.env))
		if err != nil || got != tc.want {
			t.Errorf("%s %q: %q %v, want %q", tc.agent, tc.project, got, err, tc.want)
		}
	}
}
