package hook

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestTailHolds: the needle is found in the last tailBytes of the file,
// near its end or far from it, and not before them.
func TestTailHolds(t *testing.T) {
	t.Parallel()
	needle := []byte("toolu_01ABC")
	for _, tc := range []struct {
		name          string
		before, after int // bytes of filler around the needle
		want          bool
	}{
		{"short file", 10, 10, true},
		{"at the end", 1 << 20, 100, true},
		{"past the first read", 1 << 20, 100 << 10, true},
		{"before the tail", 10, tailBytes, false},
	} {
		path := filepath.Join(t.TempDir(), "t.jsonl")
		content := append(append(bytes.Repeat([]byte("x"), tc.before), needle...), bytes.Repeat([]byte("y"), tc.after)...)
		if err := os.WriteFile(path, content, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := tailHolds(path, needle); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
	if tailHolds(filepath.Join(t.TempDir(), "none"), needle) {
		t.Error("a missing file holds the needle")
	}
}
