package main

import (
	"bytes"
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestRun drives the command line as a user does: the dispatch, the flags,
// and an import against a real server named by -server.
func TestRun(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler())
	defer srv.Close()
	env := func(string) string { return "" }
	var out bytes.Buffer
	if err := run(context.Background(), []string{"nope"}, env, &out, io.Discard); err == nil || !strings.Contains(err.Error(), `unknown command "nope"`) {
		t.Errorf("unknown command: %v", err)
	}
	if err := run(context.Background(), []string{"import"}, env, &out, io.Discard); err == nil {
		t.Error("import with no file succeeded")
	}
	err := run(context.Background(), []string{"import", "-server", srv.URL, "../../internal/transcript/testdata/codex-edge.jsonl"}, env, &out, io.Discard)
	if err != nil || !strings.Contains(out.String(), srv.URL+"/s/ses_") || !strings.Contains(out.String(), "12 events stored (2 list writes)") {
		t.Errorf("import: %v\n%s", err, out.String())
	}
}
