//go:build unix

package watch_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestWatchNotRegular: a *.jsonl that is a link to /dev/zero or a FIFO is
// said to be no transcript it follows, once, and the watcher goes on to
// follow the real transcript written after it.
func TestWatchNotRegular(t *testing.T) {
	t.Parallel()
	client := serve(t, api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler())
	dir := t.TempDir()
	zero, fifo := filepath.Join(dir, "zero.jsonl"), filepath.Join(dir, "fifo.jsonl")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	var log storetest.LogBuffer
	startWatch(t, client, dir, &log)
	raw, err := os.ReadFile(filepath.Join("..", "transcript", "testdata", "claude-code-real.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "fresh-0001.jsonl")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 10*time.Second, "the real transcript followed", func() bool { return strings.Contains(log.String(), path+": following into ") }, log.String)
	for _, p := range []string{zero, fifo} {
		if n := strings.Count(log.String(), p+": cannot follow it: "+importer.ErrNotRegular.Error()); n != 1 {
			t.Errorf("%s said %d times, want once:\n%s", p, n, log.String())
		}
	}
}
