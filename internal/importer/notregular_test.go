//go:build unix

package importer_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestImportNotRegular: a *.jsonl that is a link to /dev/zero or a FIFO is
// reported and skipped, never read (a read of either would never end), and
// the transcripts beside it are imported; an interrupted import (SIGINT,
// SIGTERM cancel its context) stops.
func TestImportNotRegular(t *testing.T) {
	t.Parallel()
	c := serve(t, storetest.SQLite(t, projection.Config{}))
	dir := fixtureDir(t, "claude-code-real.jsonl")
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.jsonl")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.jsonl"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- importer.Import(ctx, c, []string{dir}, &out) }()
	var err error
	select {
	case err = <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("import hangs on a FIFO or a device")
	}
	report := out.String()
	if !errors.Is(err, importer.ErrNotRegular) || strings.Count(report, importer.ErrNotRegular.Error()) != 2 || !strings.Contains(report, "claude-code-real.jsonl: ") {
		t.Errorf("import: %v\n%s", err, report)
	}
	if strings.Contains(report, "claude-code-real.jsonl: "+importer.ErrNotRegular.Error()) {
		t.Errorf("the regular transcript was refused:\n%s", report)
	}

	stopped, stop := context.WithCancel(context.Background())
	stop()
	out.Reset()
	if err := importer.Import(stopped, c, []string{dir}, &out); !errors.Is(err, context.Canceled) {
		t.Errorf("an interrupted import: %v, want it stopped\n%s", err, out.String())
	}
}
