//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package hook

import (
	"os"
	"syscall"
)

// appendLag appends line to the lag file under the file's flock, once it
// holds the lock on the file the name still holds: takeLagged renames the
// file away and then takes its lock, so an append is either in what it
// reads or in the file made under the name since.
func appendLag(file, line string) {
	for range 100 { // each try lost to a take; takes are rare
		f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return
		}
		lockLag(f)
		held, err1 := f.Stat()
		named, err2 := os.Stat(file)
		if err1 == nil && err2 == nil && os.SameFile(held, named) {
			_, _ = f.WriteString(line)
			f.Close() // and its lock
			return
		}
		f.Close() // taken meanwhile: appended to the name's new file
	}
}

// takeLagged empties the lag file, answering the calls it recorded: it is
// renamed to a name of this taker's own, then read under its lock, once
// no append to it is under way (appendLag).
func takeLagged(file string) []string {
	taken := takenName(file)
	if os.Rename(file, taken) != nil {
		return nil // none
	}
	defer os.Remove(taken)
	f, err := os.Open(taken)
	if err != nil {
		return nil
	}
	defer f.Close()
	lockLag(f)
	return readLaggedFrom(f, maxLagBytes)
}

// lockLag takes f's flock, waiting as long as it takes: a lag file's
// lock is held for one short write or read, and a killed holder's goes
// with it.
func lockLag(f *os.File) {
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX) == syscall.EINTR {
	}
}
