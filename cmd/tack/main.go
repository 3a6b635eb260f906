// Command tack is Tack's command line: `tack import PATH...` and
// `tack watch [DIR...]` send agents' transcripts into a Tack server,
// `tack hook` is the agents' command hook (`tack connect` puts it and
// Tack's MCP server in their settings, `tack hook install` the hook
// alone), `tack token …` manages tokens in the server's
// store, and `tack mcp` bridges stdio to the server's MCP endpoint; the
// server itself is
// cmd/server. Each subcommand parses its flags and calls the package that
// does the work.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/watch"
)

// commands maps each subcommand to the function that runs it.
var commands = map[string]func(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error{
	"import": runImport,
	"watch":  runWatch,
	"token":  runToken,
	"mcp":    runMCP,
	"hook":   runHook,
	// connect and disconnect put Tack in an agent's settings (connect.go).
	"connect":    runConnect,
	"disconnect": runDisconnect,
	// principal manages who uses the instance (principal.go).
	"principal": runPrincipal,
}

const usage = `usage: tack <command> [flags] [args]

commands:
  import PATH...   import Claude Code / codex transcripts (files, or the
                   folders that hold them), one session per session file
  watch [DIR...]   follow the agents' session folders and stream them live
  token create -name NAME [-scope read|write]
                   make a token (and its principal) in the server's store
  token create -for PRINCIPAL -name NAME
                   make a token named NAME ("laptop") of PRINCIPAL
  token create -server URL -token TOKEN -name NAME
                   make a token of your own through a running server
  token list       list tokens (with -server: your own)
  token revoke ID  revoke a token, and the browser sign-ins made with it
  principal create -name NAME [-admin]
                   make a principal; -admin lets it read every session
  principal list   list principals
  mcp [-session ID] serve the server's MCP tools (/mcp) on stdio, for an
                   agent that starts its MCP servers as commands
  connect [-agent claude-code|codex] [-project DIR] [-plan auto|always|off]
                   put Tack's hooks and MCP server in the agent's settings
                   (the user's, or DIR's), its tools allowed
  disconnect [-agent A] [-project DIR]
                   take them out, and nothing else
  hook [-agent claude-code|codex]
                   an agent's command hook: the hook's JSON on stdin to
                   Tack, Tack's answer on stdout (nothing when Tack is away)
  hook install [-agent A] [-project DIR]
                   add Tack's hooks to the agent's settings
  hook uninstall [-agent A] [-project DIR]
                   remove them

Run "tack <command> -h" for a command's flags.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "tack:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, env func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 1 && (args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprint(stdout, usage)
		return nil
	}
	if len(args) == 0 || commands[args[0]] == nil {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return fmt.Errorf("no command")
		}
		return fmt.Errorf("unknown command %q", args[0])
	}
	err := commands[args[0]](ctx, args[1:], env, stdout, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil // "tack watch -h" asked for the flags, which were printed
	}
	return err
}

func runImport(ctx context.Context, args []string, env func(string) string, out, _ io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	c := importer.ClientFlags(fs, env)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("import: name at least one transcript file or folder")
	}
	return importer.Import(ctx, c, fs.Args(), out)
}

func runWatch(ctx context.Context, args []string, env func(string) string, out, _ io.Writer) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	c := importer.ClientFlags(fs, env)
	poll := fs.Duration("poll", watch.DefaultPoll, "also look for changes this often (file events may be missed on some file systems)")
	reg, err := watch.DefaultRegistry(env)
	if err != nil {
		return err
	}
	registry := fs.String("registry", reg, "Claude Code's live-session folder: a session whose process is gone ends (reason gone); \"\" for none")
	if err := fs.Parse(args); err != nil {
		return err
	}
	dirs := fs.Args()
	if len(dirs) == 0 {
		if dirs, err = watch.DefaultDirs(env); err != nil {
			return err
		}
	}
	return watch.Run(ctx, watch.Options{Client: c, Dirs: dirs, Poll: *poll, Log: out, Registry: *registry})
}
