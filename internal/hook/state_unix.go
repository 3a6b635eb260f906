//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package hook

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// A transcript's state is one small file rewritten in place, under flock:
// a new file renamed over it on every hook (the portable way, state_other.go)
// costs a fresh inode and, on ext4, the data's writeback at the rename,
// which was a third of a hook process's CPU. A reader holds the lock
// shared and a writer exclusive, so that no hook reads a state half
// written; the kernel drops a lock with its process, so a killed hook
// leaves none behind.

// stateLockWait bounds how long a hook waits for another's lock on a
// state: a state it cannot read is read as none (the transcript is read
// whole, and Tack stores nothing twice); one it cannot write is not
// saved (the next hook sends the same lines again).
const stateLockWait = 50 * time.Millisecond

// lockState takes f's flock (how: syscall.LOCK_SH or LOCK_EX), waiting
// at most stateLockWait.
func lockState(f *os.File, how int) error {
	deadline := time.Now().Add(stateLockWait)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// readState is the state file's content.
func readState(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := lockState(f, syscall.LOCK_SH); err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(f)
	if err == nil && len(raw) == 0 {
		// Made by a writer that has not taken its lock yet: no state so
		// far.
		return nil, os.ErrNotExist
	}
	return raw, err
}

// writeState writes raw over the state file, creating it. A state shorter
// than the file's is padded with spaces, which JSON reads past, rather
// than truncated (a truncation is a journaled change of its own), unless
// the file grew past twice what it holds.
func writeState(path string, raw []byte) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := lockState(f, syscall.LOCK_EX); err != nil {
		return err
	}
	info, err := f.Stat()
	if err != nil {
		return err
	}
	size, n := info.Size(), int64(len(raw))
	if size > n && size <= 2*n {
		raw = append(raw, bytes.Repeat([]byte{' '}, int(size-n))...)
	}
	if _, err := f.WriteAt(raw, 0); err != nil {
		return err
	}
	if size > int64(len(raw)) {
		return f.Truncate(int64(len(raw)))
	}
	return nil
}
