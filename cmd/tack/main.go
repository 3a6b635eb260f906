// Command tack is Tack's command line. `tack token …` manages tokens; the
// server itself is cmd/server.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "tack:", err)
		os.Exit(1)
	}
}

const usage = `usage: tack <command> [arguments]

commands:
  token create -name NAME [-scope read|write]   make a token (and its principal)
  token list                                     list tokens
  token revoke ID                                revoke a token`

// run dispatches a command; each lives in its own file.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("no command\n%s", usage)
	}
	switch args[0] {
	case "token":
		return runToken(ctx, args[1:], getenv, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", args[0], usage)
}
