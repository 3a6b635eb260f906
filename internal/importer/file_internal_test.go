package importer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRememberCutShort: the file is cut short between its read and the
// hashes of what was read (an agent rewriting it in place truncates it
// first): no error, which `tack watch` would report as a file it cannot
// follow, and the next look finds the file changed.
func TestRememberCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(strings.Repeat("x", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	tf := &File{Path: path, offset: 100, seen: info}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := tf.remember(f); err != nil {
		t.Fatalf("remember of a file cut short: %v", err)
	}
	if err := os.WriteFile(path, []byte(strings.Repeat("y", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	info, _ = f.Stat()
	if why := tf.changed(f, info); why == "" {
		t.Error("the file rewritten to the same size: not changed")
	}
}
