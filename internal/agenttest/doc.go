// Package agenttest drives the real Claude Code and codex CLIs (the npm
// packages pinned in node/) offline, each against a scripted model server
// in the test, with Tack's hooks and MCP server wired in as a user would
// wire them. Everything is in its tests; this file only names the package.
package agenttest
