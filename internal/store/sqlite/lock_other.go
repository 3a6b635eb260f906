//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package sqlite

// fileLocks: lockFile keeps no process off the file.
const fileLocks = false

// lockFile does nothing where flock is missing. Two processes on one file are
// still safe for the data (SQLite locks the file itself); only live updates
// would not reach subscribers of the other process.
func lockFile(path string) (unlock func(), err error) { return func() {}, nil }
