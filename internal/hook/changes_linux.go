package hook

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// fileChanges watches the file at path with inotify: a PreToolUse hook
// waits for its call's line, which Claude Code writes tens of
// milliseconds after it starts the hook, and a watch wakes the hook at
// the write rather than at the next tick of a poll (docs/performance.md,
// "Hooks per tool call"). The inotify descriptor is read through the
// runtime's poller (os.NewFile of a non-blocking descriptor), so a
// deadline bounds each wait. Where the file cannot be watched it ticks.
func fileChanges(path string) changes {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return newTicks(path)
	}
	if _, err := syscall.InotifyAddWatch(fd, path, syscall.IN_MODIFY|syscall.IN_CLOSE_WRITE|syscall.IN_ATTRIB|syscall.IN_MOVE_SELF|syscall.IN_DELETE_SELF); err != nil {
		syscall.Close(fd)
		return newTicks(path)
	}
	return &inotify{f: os.NewFile(uintptr(fd), "inotify")}
}

// inotify is the changes of one watched file.
type inotify struct {
	f   *os.File
	buf [4096]byte
}

// Next waits until the file changes, changeCheck passes or ctx is done,
// reading every event that came (their content does not matter: any
// change is a reason to look).
func (w *inotify) Next(ctx context.Context) bool {
	deadline := time.Now().Add(changeCheck)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	err := w.f.SetReadDeadline(deadline)
	if err == nil {
		_, err = w.f.Read(w.buf[:])
	}
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		// Not pollable after all: wait out the tick.
		select {
		case <-ctx.Done():
		case <-time.After(time.Until(deadline)):
		}
	}
	return ctx.Err() == nil
}

func (w *inotify) Close() error { return w.f.Close() }
