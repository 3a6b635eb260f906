package hook

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/transcript"
)

// ErrPlan answers a -plan that is not a plan mode.
var ErrPlan = errors.New("-plan must be auto, always or off")

// PlanFlag is -plan: the plan mode the hooks send the server (Client.Plan).
func PlanFlag(fs *flag.FlagSet) *string {
	return fs.String("plan", transcript.PlanAuto, "offer the model Tack's todo tool when the agent has none (auto), always, or never (off)")
}

// Command is the agent's command hook, `tack hook` and tack-hook alike
// (name is the command's, for its flags' help): it parses the hook's
// flags, reads the hook's JSON from stdin, sends it to the server and
// prints the server's answer for the agent. It prints nothing and returns
// nil whenever Tack is away, slow or refuses; it fails only on its flags.
func Command(ctx context.Context, name string, args []string, env func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := importer.ClientFlags(fs, env)
	agent := fs.String("agent", string(transcript.ClaudeCode), "the agent whose hook this is: "+transcript.Names())
	timeout := fs.Duration("timeout", DefaultTimeout, "give up on the server after this long, printing nothing")
	plan := PlanFlag(fs)
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
		return ErrPlan
	}
	answer := Send(ctx, Client{Server: c.Server, Token: c.Token, Plan: *plan}, *agent, stdin, *timeout)
	_, _ = stdout.Write(answer)
	return nil
}
