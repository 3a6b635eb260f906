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
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/transcript"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		if err != flag.ErrHelp {
			fmt.Fprintln(os.Stderr, "tack-hook:", err)
			os.Exit(2)
		}
	}
}

// run reads the hook's JSON from stdin, sends it to the server and prints
// the server's answer for the agent; it prints nothing and exits 0
// whenever Tack is away, slow or refuses, as `tack hook` does.
func run(ctx context.Context, args []string, env func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("tack-hook", flag.ContinueOnError)
	fs.SetOutput(stderr)
	server := env("TACK_SERVER")
	if server == "" {
		server = importer.DefaultServer
	}
	fs.StringVar(&server, "server", server, "Tack server URL (TACK_SERVER)")
	token := fs.String("token", env("TACK_TOKEN"), "token sent as Authorization: Bearer (TACK_TOKEN)")
	agent := fs.String("agent", string(transcript.ClaudeCode), "the agent whose hook this is: "+transcript.Names())
	timeout := fs.Duration("timeout", hook.DefaultTimeout, "give up on the server after this long, printing nothing")
	plan := fs.String("plan", transcript.PlanAuto, "offer the model Tack's todo tool when the agent has none (auto), always, or never (off)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected %q", fs.Arg(0))
	}
	if transcript.Lookup(*agent) == nil {
		return fmt.Errorf("-agent must be %s", transcript.Names())
	}
	if !transcript.ValidPlan(*plan) {
		return fmt.Errorf("-plan must be auto, always or off")
	}
	answer := hook.Send(ctx, hook.Client{Server: server, Token: *token, Plan: *plan}, *agent, stdin, *timeout)
	_, _ = stdout.Write(answer)
	return nil
}
