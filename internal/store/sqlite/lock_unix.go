//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// fileLocks: lockFile keeps other processes off the file.
const fileLocks = true

// lockFile takes an exclusive, non-blocking flock on path, creating it. The
// kernel drops the lock when the process dies, so a crash never leaves a
// stale lock behind. flock belongs to the open file description, so a second
// open in the same process is refused too.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is held by another Tack process (lock file %s); stop that one, give this one another data directory (-data-dir / TACK_DATA_DIR), or use Postgres (DATABASE_URL) to run several instances",
				ErrDatabaseInUse, path[:len(path)-len(".lock")], path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
