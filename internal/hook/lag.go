package hook

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// A hook that syncs its transcript itself, to a server that takes it
// (LagEarly), lets a tool's PreToolUse or PostToolUse go on without
// waiting for the call's line, which Claude Code writes tens of
// milliseconds after it starts the hook, the call held meanwhile: the
// hook says how many calls the lines it sent lack (LagHeader), and the
// server answers it at once unless the answer would show the model the
// list (LagWait: the hook then waits for the lines and sends again). Such
// calls are kept, one id a line, in the transcript's lag file among the
// hooks' states, until a hook that waits (any other event: a permission prompt's
// Notification, a prompt, a Stop) has waited for their lines, so that it
// finds them in Tack's log as if their hooks had waited. A server that
// reads the transcript itself answers so and records so too, in the same
// file (syncHook does both).

// lagFile is the lag file of the transcript at path among the hooks'
// states in dir: one a transcript, whichever server its hooks go to and
// whether a hook or a server reading the transcript recorded the calls,
// so that every hook of the file, and every server of the user (another
// instance, one restarted), finds them; "" when dir is.
func lagFile(dir, path string) string {
	if dir == "" {
		return ""
	}
	return strings.TrimSuffix(stateFile(dir, "", path), ".json") + ".lag"
}

// lagTail bounds what noteLag reads of a lag file, the newest calls, and
// maxLagBytes what a take reads of it (a lag file holds the calls of a
// turn at most: every hook but a tool's empties it).
const (
	lagTail     = 16 << 10
	maxLagBytes = 1 << 20
)

// noteLag records call in the lag file of the transcript at path (in
// dir) when its line was not in the transcript (lagging), and answers how
// many of the calls recorded there the transcript still lacks: from the
// newest back to the first whose line is there (the transcript's lines
// come in order). Without a folder, that is the call alone.
func noteLag(dir, path, call string, lagging bool) int {
	file := lagFile(dir, path)
	if file == "" {
		if lagging {
			return 1
		}
		return 0
	}
	if lagging && !strings.ContainsAny(call, " \t\r\n") { // an id a line
		_ = os.MkdirAll(filepath.Dir(file), 0o700)
		appendLag(file, call+"\n")
	}
	calls := readLagged(file, lagTail)
	n := 0
	for i := len(calls) - 1; i >= 0 && !textHeld(path, calls[i]); i-- {
		n++
	}
	if lagging {
		n = max(n, 1) // its own, should the file not be written
	}
	return n
}

// waitLagged empties the lag file of the transcript at path (in dir,
// takeLagged) and waits, at most closingWait, for the lines of the calls
// it recorded to reach the transcript.
func waitLagged(ctx context.Context, dir, path string) {
	file := lagFile(dir, path)
	if file == "" {
		return
	}
	calls := takeLagged(file)
	if len(calls) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, closingWait)
	defer cancel()
	for i := len(calls) - 1; i >= 0; i-- {
		// Newest first: once its line is there, the others' nearly
		// always are (the calls of one message record theirs in any
		// order), and each is one look.
		waitForText(ctx, path, calls[i], closingWait)
	}
}

// takenName is a name to take the lag file under, one of this taker's
// own.
func takenName(file string) string {
	return file + "." + strconv.FormatUint(rand.Uint64(), 36)
}

// readLagged is the calls the lag file records, oldest first, from its
// last limit bytes.
func readLagged(file string, limit int64) []string {
	f, err := os.Open(file)
	if err != nil {
		return nil
	}
	defer f.Close()
	return readLaggedFrom(f, limit)
}

// readLaggedFrom is readLagged of the open file f.
func readLaggedFrom(f *os.File, limit int64) []string {
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return nil
	}
	off := max(info.Size()-limit, 0)
	buf := make([]byte, info.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil && err != io.EOF {
		return nil
	}
	if off > 0 {
		// The first line may be cut: dropped.
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	return strings.Fields(string(buf))
}
