//go:build !(darwin || dragonfly || freebsd || linux || netbsd || openbsd)

package hook

import "os"

// appendLag appends line to the lag file: one short write with O_APPEND,
// so that the lines of hooks that run at once never mix.
func appendLag(file, line string) {
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return
	}
	_, _ = f.WriteString(line)
	f.Close()
}

// takeLagged empties the lag file, answering the calls it recorded: it is
// renamed to a name of this taker's own first, so that a call recorded
// meanwhile goes to a new file (one written to the file as it is renamed
// may be missed: no lock here makes that safe).
func takeLagged(file string) []string {
	taken := takenName(file)
	if os.Rename(file, taken) != nil {
		return nil // none
	}
	defer os.Remove(taken)
	return readLagged(taken, maxLagBytes)
}
