package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/tack-dev/tack/internal/hook"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/transcript"
)

// connectionFlags parses the flags of connect, disconnect and hook
// install: which agent, where, and what its hooks and MCP server reach.
func connectionFlags(name string, args []string, env func(string) string) (hook.Connection, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	c := importer.ClientFlags(fs, env)
	agent := fs.String("agent", string(transcript.ClaudeCode), "the agent to connect: "+transcript.Names())
	project := fs.String("project", "", "edit this project's settings (DIR/.claude, DIR/.mcp.json, DIR/.codex) rather than the user's")
	plan := hook.PlanFlag(fs)
	form := fs.String("hooks", hook.FormCommand, "the hooks' form: command (a process per event, silent when Tack is away), or http wherever the agent takes HTTP hooks (no process; the agent warns on every event while Tack is away; a server on this machine only)")
	if err := fs.Parse(args); err != nil {
		return hook.Connection{}, err
	}
	if fs.NArg() > 0 {
		return hook.Connection{}, fmt.Errorf("%s: unexpected %q", name, fs.Arg(0))
	}
	f := transcript.Format(*agent)
	if transcript.Lookup(*agent) == nil {
		return hook.Connection{}, fmt.Errorf("%s: -agent must be %s", name, transcript.Names())
	}
	if !transcript.ValidPlan(*plan) {
		return hook.Connection{}, fmt.Errorf("%s: %w", name, hook.ErrPlan)
	}
	tack, err := os.Executable()
	if err != nil {
		return hook.Connection{}, err
	}
	st := hook.Settings{Agent: f, Tack: tack, Hook: hook.HookBeside(tack, c.Server), Server: c.Server, Token: c.Token, Plan: *plan}
	switch *form {
	case hook.FormCommand:
	case hook.FormHTTP:
		if len(transcript.Lookup(*agent).HTTPHooks) == 0 {
			return hook.Connection{}, fmt.Errorf("%s: %s takes command hooks alone", name, transcript.Lookup(*agent).Title)
		}
		if !hook.OnThisMachine(c.Server) {
			return hook.Connection{}, fmt.Errorf("%s: -hooks http needs a server on this machine (a loopback address): the server reads the transcripts itself", name)
		}
		if _, st.ReadKey, err = hook.ReadKey(); err != nil {
			return hook.Connection{}, fmt.Errorf("%s: the key of the server's transcript reads: %w", name, err)
		}
		st.HTTP = true
	default:
		return hook.Connection{}, fmt.Errorf("%s: -hooks must be %s or %s", name, hook.FormCommand, hook.FormHTTP)
	}
	return hook.Connection{Settings: st, Project: *project}, nil
}

// runConnect is `tack connect`: Tack's hooks and its MCP server in the
// agent's settings, in one step.
func runConnect(_ context.Context, args []string, env func(string) string, stdout, _ io.Writer) error {
	c, err := connectionFlags("connect", args, env)
	if err != nil {
		return err
	}
	res, err := hook.Connect(c, env)
	if printResult(stdout, res); err != nil {
		return err
	}
	if strings.Contains(c.Tack, string(filepath.Separator)+"go-build") {
		fmt.Fprintf(stdout, "Note: %s is `go run`'s temporary binary, gone when it ends: build tack (go build -o ~/bin/tack ./cmd/tack) and connect with that.\n", c.Tack)
	}
	fmt.Fprintf(stdout, "%s %s: connected to Tack at %s (its hooks, and the MCP server %q at %s).\n", c.Agent, scope(c), c.Server, hook.MCPName, hook.MCPURL(c.Server))
	return nil
}

// runDisconnect is `tack disconnect`: Tack's hooks, MCP server and
// permissions out of the agent's settings, and nothing else.
func runDisconnect(_ context.Context, args []string, env func(string) string, stdout, _ io.Writer) error {
	c, err := connectionFlags("disconnect", args, env)
	if err != nil {
		return err
	}
	res, err := hook.Disconnect(c, env)
	if printResult(stdout, res); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s %s: Tack's hooks and MCP server are out.\n", c.Agent, scope(c))
	return nil
}

func printResult(w io.Writer, res hook.Result) {
	for _, ch := range res.Changes {
		printChange(w, ch)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(w, "Note: %s\n", n)
	}
}

func scope(c hook.Connection) string {
	if c.Project != "" {
		return "in " + c.Project
	}
	return "for this user"
}
