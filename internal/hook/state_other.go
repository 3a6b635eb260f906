//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package hook

import (
	"os"
	"path/filepath"
)

// readState is the state file's content.
func readState(path string) ([]byte, error) { return os.ReadFile(path) }

// writeState writes raw to the state file whole or not at all: a new file
// renamed over it (parallel hooks of one transcript write the same state).
func writeState(path string, raw []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".state-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(raw)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
	}
	return err
}
