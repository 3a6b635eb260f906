// Command tack-hook is `tack hook` in a binary of its own: an agent's
// command hook, run as a fresh process on every tool call (twice: before
// and after), so it links only what a hook needs. The tack binary carries
// the whole command line (the SQLite and Postgres drivers, the MCP SDK,
// the metrics library), whose package initialisation alone costs a hook
// more than the hook's own work; `tack connect` installs tack-hook when
// it lies beside tack. It takes the flags and variables of `tack hook`.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/tack-dev/tack/internal/hook"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintln(os.Stderr, "tack-hook:", err)
			os.Exit(2)
		}
	}
}

// run is the hook: hook.Command, as `tack hook` runs it.
func run(ctx context.Context, args []string, env func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	return hook.Command(ctx, "tack-hook", args, env, stdin, stdout, stderr)
}
