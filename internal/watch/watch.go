// Package watch follows the folders where coding agents write their session
// transcripts and streams every new line into Tack as it is written: new
// files are picked up, and a restart resumes from what Tack holds (see
// importer.File), so nothing is sent twice or skipped.
package watch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/tack-dev/tack/internal/importer"
)

// DefaultPoll is how often every followed file is also checked for growth,
// for the file systems (network mounts, some containers) whose changes
// never reach fsnotify.
const DefaultPoll = time.Second

// DefaultSince is how recently a transcript must have changed for a
// starting watcher to follow it; older ones are left to `tack import`.
const DefaultSince = 24 * time.Hour

// Options configure Run.
type Options struct {
	Client *importer.Client
	Dirs   []string
	Poll   time.Duration
	Since  time.Duration
	Log    io.Writer
}

// DefaultDirs are the session folders of the current user: Claude Code's
// ~/.claude/projects (or $CLAUDE_CONFIG_DIR/projects) and codex's
// ~/.codex/sessions (or $CODEX_HOME/sessions). Both agents use these paths
// under the home directory on Linux, macOS and Windows (%USERPROFILE%).
func DefaultDirs(env func(string) string) ([]string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, err
	}
	claude := filepath.Join(home, ".claude")
	if d := env("CLAUDE_CONFIG_DIR"); d != "" {
		claude = d
	}
	codex := filepath.Join(home, ".codex")
	if d := env("CODEX_HOME"); d != "" {
		codex = d
	}
	return []string{filepath.Join(claude, "projects"), filepath.Join(codex, "sessions")}, nil
}

// watcher is Run's state: the files it follows.
type watcher struct {
	opts  Options
	fsw   *fsnotify.Watcher
	files map[string]*importer.File
}

// Run follows opts.Dirs until ctx ends.
func Run(ctx context.Context, opts Options) error {
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Since <= 0 {
		opts.Since = DefaultSince
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	fsw, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	defer fsw.Close()
	w := &watcher{opts: opts, fsw: fsw, files: map[string]*importer.File{}}
	defer func() {
		for _, f := range w.files {
			f.Close()
		}
	}()
	for _, d := range opts.Dirs {
		if err := w.addTree(ctx, d, true); err != nil {
			return err
		}
	}
	fmt.Fprintf(opts.Log, "tack watch: following %s into %s (%s)\n", strings.Join(opts.Dirs, ", "), opts.Client.Server, runtime.GOOS)
	tick := time.NewTicker(opts.Poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-fsw.Events:
			if !ok {
				return nil
			}
			w.handle(ctx, ev)
		case err, ok := <-fsw.Errors:
			if !ok {
				return nil
			}
			fmt.Fprintf(opts.Log, "tack watch: %v (the poll goes on)\n", err)
		case <-tick.C:
			for path := range w.files {
				w.sync(ctx, path)
			}
		}
	}
}

// addTree watches dir and its subfolders, and follows the transcripts in
// them: at start only those changed within Since, later every one.
func (w *watcher) addTree(ctx context.Context, dir string, starting bool) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == dir {
				fmt.Fprintf(w.opts.Log, "tack watch: %s does not exist (yet); create it or name another folder\n", dir)
				return fs.SkipDir
			}
			return nil // an unreadable subfolder is not the watcher's end
		}
		if d.IsDir() {
			if err := w.fsw.Add(path); err != nil {
				fmt.Fprintf(w.opts.Log, "tack watch: %s: %v\n", path, err)
			}
			return nil
		}
		if !isTranscript(path) {
			return nil
		}
		if starting {
			if info, err := d.Info(); err != nil || time.Since(info.ModTime()) > w.opts.Since {
				return nil
			}
		}
		w.sync(ctx, path)
		return nil
	})
	return err
}

func isTranscript(path string) bool { return strings.HasSuffix(path, ".jsonl") }

func (w *watcher) handle(ctx context.Context, ev fsnotify.Event) {
	if ev.Has(fsnotify.Create) {
		if info, err := os.Stat(ev.Name); err == nil && info.IsDir() {
			_ = w.addTree(ctx, ev.Name, false)
			return
		}
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		if f := w.files[ev.Name]; f != nil {
			f.Close()
			delete(w.files, ev.Name)
			fmt.Fprintf(w.opts.Log, "%s: gone; Tack keeps what it stored\n", ev.Name)
		}
		return
	}
	if isTranscript(ev.Name) && (ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create)) {
		w.sync(ctx, ev.Name)
	}
}

// sync sends what path has grown by. A file that shrank was truncated or
// rewritten: it is read again from the start, against what Tack holds.
func (w *watcher) sync(ctx context.Context, path string) {
	f := w.files[path]
	if f != nil {
		info, err := os.Stat(path)
		if err != nil {
			return
		}
		if info.Size() == f.Offset() {
			return
		}
		if info.Size() < f.Offset() {
			fmt.Fprintf(w.opts.Log, "%s: truncated or rewritten (%d bytes, %d were read); reading it again from the start\n", path, info.Size(), f.Offset())
			f.Close()
			delete(w.files, path)
			f = nil
		}
	}
	if f == nil {
		var err error
		if f, err = importer.Open(w.opts.Client, path); err != nil {
			return // empty for now, or not a transcript; looked at again when it changes
		}
		w.files[path] = f
	}
	before, id := f.Stored, f.SessionID()
	if err := f.Sync(ctx, false); err != nil {
		fmt.Fprintf(w.opts.Log, "%s: %v\n", path, err)
		return
	}
	if id == "" && f.SessionID() != "" {
		fmt.Fprintf(w.opts.Log, "%s: following into %s\n", path, w.opts.Client.URL(f.SessionID()))
	}
	if f.Behind() > 0 {
		fmt.Fprintf(w.opts.Log, "%s: Tack holds %d events beyond what the file now maps to (rewritten?); new lines are stored after them\n", path, f.Behind())
	}
	if n := f.Stored - before; n > 0 {
		fmt.Fprintf(w.opts.Log, "%s: +%d events\n", path, n)
	}
}
