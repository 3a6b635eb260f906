package main

import (
	"context"
	"flag"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/mcpbridge"
)

// runMCP is `tack mcp`: the server's /mcp on stdin and stdout.
func runMCP(ctx context.Context, args []string, env func(string) string, _, stderr io.Writer) error {
	fs := flag.NewFlagSet("tack mcp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := importer.ClientFlags(fs, env)
	session := fs.String("session", env("TACK_SESSION"), "the Tack session the tool calls land in (TACK_SESSION)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return mcpbridge.Run(ctx, &mcp.StdioTransport{}, mcpbridge.Options{Server: c.Server, Token: c.Token, Session: *session})
}
