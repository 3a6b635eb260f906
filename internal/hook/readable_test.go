//go:build unix

package hook_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tack-dev/tack/internal/hook"
)

// TestReadable: a server reads, on a hook's word, only a transcript of its
// own user in a folder of its own user, named by its absolute path, and
// no link, FIFO or other user's file put under that name.
func TestReadable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	own := filepath.Join(dir, "own.jsonl")
	if err := os.WriteFile(own, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.jsonl")
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]bool{
		own:                                   true,
		filepath.Join(dir, "later.jsonl"):     true, // not written yet
		link:                                  false,
		text:                                  false,
		"own.jsonl":                           false, // relative
		filepath.Join(dir, "none", "x.jsonl"): false,
	}
	if os.Geteuid() == 0 {
		// Another user's file, and a file of ours in another user's
		// folder.
		other := filepath.Join(dir, "other.jsonl")
		if err := os.WriteFile(other, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		theirs := filepath.Join(dir, "theirs")
		if err := os.Mkdir(theirs, 0o755); err != nil {
			t.Fatal(err)
		}
		inTheirs := filepath.Join(theirs, "mine.jsonl")
		if err := os.WriteFile(inTheirs, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{other, theirs} {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
		cases[other], cases[inTheirs] = false, false
	}
	for path, want := range cases {
		if got := hook.Readable(path); got != want {
			t.Errorf("Readable(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestReadKey: the servers of a user share one key, in a file of that
// user alone; a key file others may read is no key.
func TestReadKey(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	path, key, err := hook.ReadKey()
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Mode().Perm() != 0o600 || len(key) != 64 {
		t.Errorf("key file mode %v, key %d characters; want 0600 and 64", info.Mode().Perm(), len(key))
	}
	if p2, k2, err := hook.ReadKey(); err != nil || p2 != path || k2 != key {
		t.Errorf("a second server: %q %q %v; want the same key", p2, k2, err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := hook.ReadKey(); err == nil {
		t.Error("a key file others may read was taken")
	}
}
