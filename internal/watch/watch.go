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
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/transcript"
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
	// Registry is Claude Code's live-session folder (DefaultRegistry), ""
	// for none: a running agent's status (busy or idle) is told Tack when
	// it changes, and a session whose agent's process is gone without
	// SessionEnd is ended, reason "gone", within a poll.
	Registry string
}

// DefaultDirs are the session folders of the current user: each agent's
// transcripts folder (transcript.Agent.Transcripts), such as Claude Code's
// ~/.claude/projects (or $CLAUDE_CONFIG_DIR/projects) and codex's
// ~/.codex/sessions (or $CODEX_HOME/sessions). The agents use these paths
// under the home directory on Linux, macOS and Windows (%USERPROFILE%).
func DefaultDirs(env func(string) string) ([]string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, a := range transcript.Agents() {
		if a.Transcripts != "" {
			dirs = append(dirs, filepath.Join(a.Home(env, home), a.Transcripts))
		}
	}
	return dirs, nil
}

// watcher is Run's state: the files it follows, and what it last said of
// those it could not read.
type watcher struct {
	opts  Options
	fsw   *fsnotify.Watcher
	files map[string]*followed
	// failed is the last error logged for a file, so that each is said
	// once, not at every poll.
	failed map[string]string
	// old counts the transcripts a starting watcher left to tack import.
	old int
	// registry follows Options.Registry; nil without one.
	registry *registry
	// waiting are the folders of Dirs that do not exist yet (a fresh
	// machine, before the agent's first session), each with the nearest
	// ancestor that does, which is watched until the folder appears.
	waiting map[string]string
}

// followed is a transcript the watcher follows: its importer.File, which
// holds no open descriptor, and its size and time when last synced.
type followed struct {
	file *importer.File
	size int64
	mod  time.Time
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
	w := &watcher{opts: opts, fsw: fsw, files: map[string]*followed{}, failed: map[string]string{}, waiting: map[string]string{}}
	for _, d := range opts.Dirs {
		if _, err := os.Stat(d); errors.Is(err, fs.ErrNotExist) {
			fmt.Fprintf(opts.Log, "tack watch: waiting for %s to appear\n", d)
			w.waiting[d] = ""
			continue
		}
		if err := w.addTree(ctx, d, true); err != nil {
			return err
		}
	}
	w.await(ctx)
	if opts.Registry != "" {
		w.registry = newRegistry(opts.Registry)
		w.checkRegistry(ctx)
	}
	fmt.Fprintf(opts.Log, "tack watch: following %s into %s (%s)\n", strings.Join(opts.Dirs, ", "), opts.Client.Server, runtime.GOOS)
	if w.old > 0 {
		fmt.Fprintf(opts.Log, "tack watch: %d transcripts unchanged for more than %v are left to tack import (followed again if they change)\n", w.old, opts.Since)
	}
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
			w.await(ctx)
			w.checkRegistry(ctx)
			for path := range w.files {
				w.sync(ctx, path)
			}
		}
	}
}

// addTree watches dir and its subfolders, and follows the transcripts in
// them: at start only those changed within Since, later every one. A
// file's own session comes before its subagents'.
func (w *watcher) addTree(ctx context.Context, dir string, starting bool) error {
	var paths []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == dir {
				return fs.SkipDir // gone as it was found: its parent's watch or the poll says
			}
			w.fail(path, err)
			return nil // an unreadable subfolder is not the watcher's end
		}
		if d.IsDir() {
			if err := w.fsw.Add(path); err != nil {
				w.fail(path, err)
			}
			return nil
		}
		if !importer.IsTranscript(path) {
			return nil
		}
		if starting {
			if info, err := d.Info(); err == nil && time.Since(info.ModTime()) > w.opts.Since {
				w.old++
				return nil
			}
		}
		paths = append(paths, path)
		return nil
	})
	sort.SliceStable(paths, func(i, j int) bool { return !importer.IsSubagent(paths[i]) && importer.IsSubagent(paths[j]) })
	for _, p := range paths {
		w.sync(ctx, p)
	}
	return err
}

// fail logs err for path, once for each new error.
func (w *watcher) fail(path string, err error) {
	if msg := err.Error(); w.failed[path] != msg {
		w.failed[path] = msg
		fmt.Fprintf(w.opts.Log, "%s: cannot follow it: %v\n", path, err)
	}
}

// await follows each waiting folder that has appeared, and watches the
// nearest existing ancestor of each other one, so that its creation (or
// the creation of a folder on its way) is heard; the poll calls it too,
// for the file systems whose events never come.
func (w *watcher) await(ctx context.Context) {
	for dir, watched := range w.waiting {
		anc := dir
		for {
			if _, err := os.Stat(anc); err == nil {
				break
			}
			up := filepath.Dir(anc)
			if up == anc {
				break
			}
			anc = up
		}
		if anc == watched {
			continue
		}
		w.unwatch(watched, dir)
		if anc == dir {
			delete(w.waiting, dir)
			fmt.Fprintf(w.opts.Log, "tack watch: following %s\n", dir)
			_ = w.addTree(ctx, dir, false)
			continue
		}
		if err := w.fsw.Add(anc); err != nil {
			w.fail(anc, err) // the poll still finds the folder
		}
		w.waiting[dir] = anc
	}
}

// unwatch stops watching anc, an ancestor watched for waiting folder dir,
// unless another waiting folder still needs it.
func (w *watcher) unwatch(anc, dir string) {
	if anc == "" {
		return
	}
	for d, a := range w.waiting {
		if a == anc && d != dir {
			return
		}
	}
	_ = w.fsw.Remove(anc)
}

// waitedOn reports whether path is in a folder watched only for a waiting
// folder's sake, whose other entries the watcher does not follow.
func (w *watcher) waitedOn(path string) bool {
	parent := filepath.Dir(path)
	for _, anc := range w.waiting {
		if anc == parent {
			return true
		}
	}
	return false
}

func (w *watcher) handle(ctx context.Context, ev fsnotify.Event) {
	if w.waitedOn(ev.Name) {
		if ev.Has(fsnotify.Create) {
			w.await(ctx)
		}
		return
	}
	if ev.Has(fsnotify.Create) {
		if info, err := os.Stat(ev.Name); err == nil && info.IsDir() {
			_ = w.addTree(ctx, ev.Name, false)
			return
		}
	}
	if ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename) {
		if w.files[ev.Name] != nil {
			delete(w.files, ev.Name)
			fmt.Fprintf(w.opts.Log, "%s: gone; Tack keeps what it stored\n", ev.Name)
		}
		delete(w.failed, ev.Name)
		return
	}
	if importer.IsTranscript(ev.Name) && (ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create)) {
		w.sync(ctx, ev.Name)
	}
}

// sync sends what path has gained since it was last synced, when its size
// or time says it changed: the importer.File opens it, reads the new
// lines, and reads it again from the start if it was rewritten.
func (w *watcher) sync(ctx context.Context, path string) {
	info, err := os.Stat(path)
	if err != nil {
		if w.files[path] == nil {
			w.fail(path, err)
		}
		return
	}
	fl := w.files[path]
	if fl != nil && info.Size() == fl.size && info.ModTime().Equal(fl.mod) {
		return
	}
	if fl == nil {
		f, err := importer.Open(w.opts.Client, path)
		if err != nil {
			w.fail(path, err)
			return
		}
		fl = &followed{file: f}
		w.files[path] = fl
	}
	f := fl.file
	before, id, rewrites := f.Stored(), f.SessionID(), f.Rewrites()
	if err := f.Sync(ctx, false); err != nil {
		if errors.Is(err, importer.ErrNotTranscript) {
			delete(w.files, path) // followed again if it changes
		}
		w.fail(path, err)
		return
	}
	delete(w.failed, path)
	fl.size, fl.mod = info.Size(), info.ModTime()
	if f.Rewrites() > rewrites {
		fmt.Fprintf(w.opts.Log, "%s: rewritten in place; read again from the start, against what Tack holds\n", path)
	}
	if id == "" && f.SessionID() != "" {
		fmt.Fprintf(w.opts.Log, "%s: following into %s\n", path, w.opts.Client.URL(f.SessionID()))
	}
	if n := f.Stored() - before; n > 0 {
		fmt.Fprintf(w.opts.Log, "%s: +%d events\n", path, n)
	}
}
