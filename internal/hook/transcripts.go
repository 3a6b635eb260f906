package hook

import (
	"context"
	"path/filepath"
	"sync"
	"time"

	"github.com/tack-dev/tack/internal/hook/front"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/transcript"
)

// The headers of a hook that asks the server to read its transcript, and
// of the server's answer (see package front).
const (
	ReadHeader    = front.ReadHeader
	KeyHeader     = front.KeyHeader
	KeyFileHeader = front.KeyFileHeader
)

// Transcripts are the transcripts a server reads itself, for the hooks
// that come from its own machine and user (Readable): a hook then sends
// its payload alone, and the server syncs the transcript as the hook would
// have (syncTranscripts), keeping what it sent of each file in memory
// rather than in a state file that every hook process reads and writes.
// Its Files are a cache: one dropped, or lost with a restart, is opened
// again and matched with what Tack holds, as `tack watch` does.
type Transcripts struct {
	mu    sync.Mutex
	files map[string]*heldFile
}

// heldFile is one transcript a server reads: its File, synced by one hook
// at a time (lock), from the sync to the hook's answer.
type heldFile struct {
	lock   chan struct{}
	client importer.Client
	f      *importer.File
	used   time.Time
}

// maxHeldFiles bounds the transcripts a server keeps; past it, those no
// hook used for heldIdle are dropped.
const (
	maxHeldFiles = 1024
	heldIdle     = 10 * time.Minute
)

// Sync sends the transcripts of the hook h that Tack does not hold yet,
// within budget, through c (the server's own handler, as the hook's
// caller), exactly as the hook's own syncTranscripts would: it answers
// what the hook would have said in its SyncedHeader, and the last file's
// last append unsent, for the hook's request to carry. The caller applies
// that append and then says so with Applied (or that it did not, with
// Applied(false)); until then, no other hook syncs the file.
//
// With early, the PreToolUse or PostToolUse of a tool other than a list
// tool does not wait for its call's line, which Claude Code writes tens of
// milliseconds after it starts the PreToolUse, the call held meanwhile
// (and a fast tool's PostToolUse comes before it): lag is then how many
// calls answered so (this one among them) the file still lacks, at most
// the model's messages that Tack's count of its steps lacks. The caller
// must not show the model anything on those steps (a reminder read or
// not, a person's edit defended, a reminder made due by the missing
// messages) before it has synced again without early, which waits for the
// lines; and every later hook of the file but such tool hooks waits for
// them before its own sync.
func (ts *Transcripts) Sync(ctx context.Context, c importer.Client, h transcript.Hook, budget time.Duration, early bool) (sent string, batch *importer.Batch, applied func(bool), lag int) {
	// The calls answered early are recorded among the hooks' states of
	// the server's user, which are the hooks' own: every server of the
	// user, and the hooks, find them.
	sent, last, lag := syncHook(ctx, h, budget, early, front.StateDir(), func(ctx context.Context, path string, final, isLast bool) (lastFile, error) {
		return ts.syncFile(ctx, c, path, final, isLast)
	})
	if last.f == nil || last.batch == nil {
		last.save(false, false)
		return sent, nil, func(bool) {}, lag
	}
	return sent, last.batch, func(ok bool) {
		if !ok {
			// Not taken where it came: sent the usual way, which deals with
			// a refusal as `tack watch` does; a file that fails even so is
			// opened again by the next hook.
			last.sendApart(ctx, &sent)
		}
		last.save(ok, true)
	}, lag
}

// syncFile is syncFile for a server: the File kept in memory, held by
// this hook (for the last file, until lastFile.save).
func (ts *Transcripts) syncFile(ctx context.Context, c importer.Client, path string, final, last bool) (lastFile, error) {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	hf := ts.held(path)
	select {
	case hf.lock <- struct{}{}:
	case <-ctx.Done():
		return lastFile{}, ctx.Err()
	}
	release := func(keep bool) {
		if !keep {
			hf.f = nil
		}
		hf.used = time.Now()
		<-hf.lock
	}
	if hf.f == nil || hf.client.Token != c.Token || hf.client.Server != c.Server {
		hf.client = c
		f, err := importer.Open(&hf.client, path)
		if err != nil {
			release(false)
			return lastFile{}, err
		}
		hf.f = f
	}
	l := lastFile{f: hf.f}
	var err error
	if last {
		l.batch, err = hf.f.SyncBatch(ctx, final)
	} else {
		err = hf.f.Sync(ctx, final)
	}
	if err != nil {
		release(false)
		return lastFile{}, err
	}
	if !last {
		release(true)
		return l, nil
	}
	l.release = release
	return l, nil
}

// held is path's heldFile, made when there is none; past maxHeldFiles it
// drops the files no hook holds or used for heldIdle.
func (ts *Transcripts) held(path string) *heldFile {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if hf, ok := ts.files[path]; ok {
		return hf
	}
	if ts.files == nil {
		ts.files = map[string]*heldFile{}
	}
	if len(ts.files) >= maxHeldFiles {
		for p, hf := range ts.files {
			select {
			case hf.lock <- struct{}{}:
				if time.Since(hf.used) > heldIdle {
					delete(ts.files, p)
				}
				<-hf.lock
			default:
			}
		}
	}
	hf := &heldFile{lock: make(chan struct{}, 1), used: time.Now()}
	ts.files[path] = hf
	return hf
}
