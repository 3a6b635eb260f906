package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/transcript"
)

// stdin is what `tack hook` reads the agent's payload from.
var stdin io.Reader = os.Stdin

// runHook is `tack hook`: the agent's command hook. It reads the hook's
// JSON on stdin, sends it to the server and prints the server's answer for
// the agent; it prints nothing and exits 0 whenever Tack is away, slow or
// refuses. `tack hook install` and `tack hook uninstall` edit the agent's
// settings.
func runHook(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) > 0 && (args[0] == "install" || args[0] == "uninstall") {
		return runHookInstall(args[0], args[1:], env, stdout)
	}
	fs := flag.NewFlagSet("hook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := clientFlags(fs, env)
	agent := fs.String("agent", string(transcript.ClaudeCode), "the agent whose hook this is: claude-code or codex")
	timeout := fs.Duration("timeout", hook.DefaultTimeout, "give up on the server after this long, printing nothing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *agent != string(transcript.ClaudeCode) && *agent != string(transcript.Codex) {
		return fmt.Errorf("hook: -agent must be claude-code or codex")
	}
	answer := hook.Send(ctx, hook.Client{Server: c.Server, Token: c.Token}, *agent, stdin, *timeout)
	_, _ = stdout.Write(answer)
	return nil
}

// runHookInstall is `tack hook install` and `tack hook uninstall`.
func runHookInstall(verb string, args []string, env func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("hook "+verb, flag.ContinueOnError)
	c := clientFlags(fs, env)
	agent := fs.String("agent", string(transcript.ClaudeCode), "the agent to connect: claude-code or codex")
	project := fs.String("project", "", "edit this project's settings (DIR/.claude/settings.json, DIR/.codex/hooks.json) rather than the user's")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f := transcript.Format(*agent)
	if f != transcript.ClaudeCode && f != transcript.Codex {
		return fmt.Errorf("hook %s: -agent must be claude-code or codex", verb)
	}
	path, err := hook.SettingsPath(f, *project, env)
	if err != nil {
		return err
	}
	tack, err := os.Executable()
	if err != nil {
		return err
	}
	s := hook.Settings{Agent: f, Path: path, Tack: tack, Server: c.Server, Token: c.Token}
	change := hook.Install
	if verb == "uninstall" {
		change = hook.Uninstall
	}
	ch, err := change(s)
	if err != nil {
		return err
	}
	if !ch.Changed {
		fmt.Fprintf(stdout, "%s: already as asked, nothing changed\n", path)
		return nil
	}
	fmt.Fprintf(stdout, "%s: changed", path)
	if ch.Backup != "" {
		fmt.Fprintf(stdout, " (the file as it was: %s)", ch.Backup)
	}
	fmt.Fprintf(stdout, "\n%s", ch.Diff)
	return nil
}
