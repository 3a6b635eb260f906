package api_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// conformanceDir holds the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in its package-lock.json;
// npm ci --prefix internal/api/testdata/mcp-conformance installs it).
const conformanceDir = "testdata/mcp-conformance"

// TestMCPConformance runs the suite's server scenarios against /mcp. The scenarios that drive fixtures of the suite's own
// reference server do not apply, and are listed, each with why, in
// not-applicable.yml, which the suite takes as its expected failures: one
// of them failing is no failure, any other is. Without node or the suite
// the test skips, except under CI=true, where that fails.
func TestMCPConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("the conformance suite is not short")
	}
	t.Parallel()
	node, err := exec.LookPath("node")
	suite := filepath.Join(conformanceDir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not installed"
	case !exists(suite):
		missing = conformanceDir + "/node_modules is missing (npm ci --prefix internal/api/" + conformanceDir + ")"
	}
	if missing != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the MCP conformance suite needs what is missing under CI: %s", missing)
		}
		t.Skip(missing)
	}
	// The protocol is the SDK's and the router's, whatever the store: one
	// store (the zero-setup one) is enough here; TestMCP runs on each.
	b := setup(t, storetest.Factories[sqliteFactory(t)].Open(t, projection.Config{}), api.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// node20.mjs lends Node 20 the fs.globSync the suite imports.
	cmd := exec.CommandContext(ctx, node, "--import", "./node20.mjs", filepath.Join("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
		"server", "--url", b.url+"/mcp", "--expected-failures", "not-applicable.yml", "-o", t.TempDir())
	cmd.Dir = conformanceDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the conformance suite failed (%v):\n%s", err, out)
	}
}

// sqliteFactory is the index of the SQLite store among storetest.Factories.
func sqliteFactory(t *testing.T) int {
	for i, f := range storetest.Factories {
		if f.Name == "sqlite" {
			return i
		}
	}
	t.Fatal("no sqlite store among storetest.Factories")
	return 0
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
