package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/tack-dev/tack/internal/hook"
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
	if err := hook.Command(ctx, "hook", args, env, stdin, stdout, stderr); err != nil {
		return fmt.Errorf("hook: %w", err)
	}
	return nil
}

// runHookInstall is `tack hook install` and `tack hook uninstall`: the
// hooks alone, the part of `tack connect` that edits the hooks' file.
func runHookInstall(verb string, args []string, env func(string) string, stdout io.Writer) error {
	c, err := connectionFlags("hook "+verb, args, env)
	if err != nil {
		return err
	}
	if c.Path, err = hook.SettingsPath(c.Agent, c.Project, env); err != nil {
		return err
	}
	change := hook.Install
	if verb == "uninstall" {
		change = hook.Uninstall
	}
	ch, err := change(c.Settings)
	if err != nil {
		return err
	}
	printChange(stdout, ch)
	return nil
}

// printChange says what one file's change was: nothing, or the file as it
// was and the lines changed.
func printChange(w io.Writer, ch hook.Change) {
	if !ch.Changed {
		fmt.Fprintf(w, "%s: already as asked, nothing changed\n", ch.Path)
		return
	}
	fmt.Fprintf(w, "%s: changed", ch.Path)
	if ch.Backup != "" {
		fmt.Fprintf(w, " (the file as it was: %s)", ch.Backup)
	}
	fmt.Fprintf(w, "\n%s", ch.Diff)
}
