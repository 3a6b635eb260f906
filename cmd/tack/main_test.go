package main

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestRun drives the command line as a user does: the dispatch, the flags,
// and an import against a real server named by -server.
func TestRun(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler())
	t.Cleanup(srv.Close)
	c := &importer.Client{Server: srv.URL}
	env := func(string) string { return "" }
	var out bytes.Buffer
	if err := run(context.Background(), []string{"nope"}, env, &out, io.Discard); err == nil || !strings.Contains(err.Error(), `unknown command "nope"`) {
		t.Errorf("unknown command: %v", err)
	}
	if err := run(context.Background(), []string{"import"}, env, &out, io.Discard); err == nil {
		t.Error("import with no file succeeded")
	}
	err := run(context.Background(), []string{"import", "-server", c.Server, "../../internal/transcript/testdata/codex-edge.jsonl"}, env, &out, io.Discard)
	if err != nil || !strings.Contains(out.String(), c.Server+"/s/ses_") || !strings.Contains(out.String(), "19 events stored (2 list writes)") {
		t.Errorf("import: %v\n%s", err, out.String())
	}
	// A folder: each transcript under it, subagents after their session.
	out.Reset()
	err = run(context.Background(), []string{"import", "-server", c.Server, "../../internal/transcript/testdata"}, env, &out, io.Discard)
	if lines := strings.Split(strings.TrimSpace(out.String()), "\n"); err != nil || !strings.Contains(lines[len(lines)-1], "agent-cd34.jsonl: ") || strings.Count(out.String(), "/s/ses_") < 9 {
		t.Errorf("import of a folder: %v\n%s", err, out.String())
	}
	// Each command's -h prints its flags and succeeds.
	for _, cmd := range []string{"watch", "import"} {
		var help bytes.Buffer
		if err := run(context.Background(), []string{cmd, "-h"}, env, &help, &help); err != nil {
			t.Errorf("tack %s -h: %v", cmd, err)
		}
	}
}
