//go:build unix

package hook

import (
	"os"
	"path/filepath"
	"syscall"

	"github.com/tack-dev/tack/internal/importer"
)

// Readable says whether a server may read the transcript at path for a
// hook of its own machine: an absolute path to a transcript (.jsonl) in a
// folder of the server's own user, and, once it is there, a regular file
// of that user. Another user's files are never read on a hook's word:
// that user's hooks sync them themselves.
func Readable(path string) bool {
	if !filepath.IsAbs(path) || !importer.IsTranscript(path) {
		return false
	}
	uid := uint32(os.Geteuid())
	dir, err := os.Stat(filepath.Dir(path))
	if err != nil || !dir.IsDir() || !ownedBy(dir, uid) {
		return false
	}
	info, err := os.Lstat(path)
	if os.IsNotExist(err) {
		return true // not written yet: read once it is
	}
	return err == nil && info.Mode().IsRegular() && ownedBy(info, uid)
}

func ownedBy(info os.FileInfo, uid uint32) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && st.Uid == uid
}
