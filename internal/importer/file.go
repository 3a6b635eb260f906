package importer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/transcript"
)

// Limits on what a File holds in memory, whatever the transcript's size.
const (
	// MaxLineBytes is the longest line read; a longer one (a huge tool
	// output) is skipped and reported.
	MaxLineBytes = 8 << 20
	// batchEvents and batchBytes bound one append.
	batchEvents = 500
	batchBytes  = 2 << 20
)

// File follows one transcript into one Tack session.
//
// Position and idempotency: the events a transcript maps to are the same on
// every read, and those of a prefix of the file are a prefix of those of the
// whole (package transcript). The session is found by the transcript's key
// (POST /sessions with externalKey), and its lastSeq says how many of the
// file's events Tack already holds: a File re-reads the file from the start,
// counts that many events without sending them, and appends the rest with
// expectedSeq. Nothing is kept on disk; a second import, a retry after a
// lost answer (a 409 makes it re-read lastSeq) or a restarted watcher stores
// nothing twice and skips nothing.
type File struct {
	Path   string
	client *Client
	parser *transcript.Parser
	f      *os.File
	rd     *bufio.Reader
	offset int64 // bytes consumed: complete lines only

	sess  *Session
	state projection.State // the log as Tack holds it, mirrored
	made  int64            // events the file has mapped to so far
	batch []projection.NewEvent
	bytes int

	// Report.
	Stored, Writes, Rejected int
	notes                    map[string]int
}

// Open opens a transcript for syncing into Tack through c.
func Open(c *Client, path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	rd := bufio.NewReaderSize(f, 64<<10)
	head, _ := rd.Peek(64 << 10)
	first, _, _ := bytes.Cut(head, []byte("\n"))
	format := transcript.Detect(first)
	if format == "" {
		// An empty file (an agent that has just started) has no format
		// yet: errEmpty, for a watcher to open again when it grows.
		f.Close()
		if len(bytes.TrimSpace(head)) != 0 {
			return nil, fmt.Errorf("%s: neither a Claude Code session nor a codex rollout", path)
		}
		return nil, errEmpty
	}
	return &File{Path: path, client: c, parser: transcript.New(format, path), f: f, rd: rd, notes: map[string]int{}}, nil
}

// errEmpty is a transcript with nothing in it yet.
var errEmpty = errors.New("empty transcript")

// Close closes the file.
func (t *File) Close() error { return t.f.Close() }

// Offset is how far the file has been read: up to the last complete line.
func (t *File) Offset() int64 { return t.offset }

// SessionID is the Tack session's id, "" before the first event is sent.
func (t *File) SessionID() string {
	if t.sess == nil {
		return ""
	}
	return t.sess.ID
}

// Sync reads the file from where it stopped to its end and sends what the
// new lines map to. A last line without its newline is left for the next
// Sync (an agent mid-write), unless final, when it is read if it is whole
// JSON and reported as truncated otherwise.
func (t *File) Sync(ctx context.Context, final bool) error {
	for {
		line, err := t.readLine()
		if errors.Is(err, io.EOF) {
			if len(line) > 0 {
				// Not consumed: read again, whole, next time.
				if _, err := t.f.Seek(t.offset, io.SeekStart); err != nil {
					return err
				}
				t.rd.Reset(t.f)
				if !final {
					return t.flush(ctx)
				}
				if !jsonLine(line) {
					t.notes["a truncated last line"]++
				} else {
					t.offset += int64(len(line))
					if err := t.take(ctx, line); err != nil {
						return err
					}
				}
			}
			return t.flush(ctx)
		}
		if err != nil {
			return err
		}
		if err := t.take(ctx, line); err != nil {
			return err
		}
	}
}

// readLine reads one line with its newline, up to MaxLineBytes; a longer
// line is read through, dropped and counted. At the end of the file it
// answers the unfinished rest (not counted in the offset) with io.EOF.
func (t *File) readLine() ([]byte, error) {
	var (
		line    []byte
		n       int64
		tooLong bool
	)
	for {
		chunk, err := t.rd.ReadSlice('\n')
		n += int64(len(chunk))
		if !tooLong {
			if len(line)+len(chunk) > MaxLineBytes {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			t.offset += n
			if tooLong {
				t.notes[fmt.Sprintf("lines longer than %d bytes", MaxLineBytes)]++
				line, n, tooLong = nil, 0, false
				continue
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if tooLong {
				return []byte("-"), io.EOF // unfinished, and too long to keep
			}
			return line, io.EOF
		default:
			return nil, err
		}
	}
}

func jsonLine(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && bytes.HasSuffix(b, []byte("}")) && json.Valid(b)
}

// take maps one line and queues what Tack does not hold yet.
func (t *File) take(ctx context.Context, line []byte) error {
	for _, ev := range t.parser.Line(bytes.TrimRight(line, "\r\n")) {
		if err := t.ensureSession(ctx); err != nil {
			return err
		}
		// The mirror applies every event, as Tack will; one it would refuse
		// (a list with a duplicate, an item too long) is left out and said,
		// and leaves out the same on every read, so counting stays true.
		// The mirror stamps events with its own clock; Tack stamps its own.
		at := projection.NewTime(time.Now())
		next := t.state
		cfg := projection.Config{AllowParallel: t.sess.ParallelInProgress}
		if _, err := next.Apply(ev, at, cfg, nil); err != nil {
			t.Rejected++
			t.notes["events Tack refuses ("+shortErr(err)+")"]++
			continue
		}
		t.state = next
		t.made++
		if t.made <= t.sess.LastSeq {
			continue // Tack holds it already
		}
		t.batch = append(t.batch, ev)
		t.bytes += len(ev.Data)
		if ev.Type == projection.TypeTodoWrite {
			t.Writes++
		}
		if len(t.batch) >= batchEvents || t.bytes >= batchBytes {
			if err := t.flush(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

func shortErr(err error) string {
	s := err.Error()
	if i := strings.IndexAny(s, ":"); i > 0 && i < 40 {
		s = s[:i]
	}
	if len(s) > 60 {
		s = s[:60]
	}
	return s
}

// ensureSession finds or creates the session, when the first event comes:
// by then the transcript has said its key and, mostly, its title.
func (t *File) ensureSession(ctx context.Context) error {
	if t.sess != nil {
		return nil
	}
	title := t.parser.Title()
	if title == "" {
		title = t.parser.Key()
	}
	// Claude Code runs tasks in parallel; codex's update_plan keeps one.
	parallel := strings.HasPrefix(t.parser.Key(), string(transcript.ClaudeCode)+":")
	s, err := t.client.OpenSession(ctx, t.parser.Key(), title, parallel)
	if err != nil {
		return err
	}
	t.sess = &s
	return nil
}

// flush appends the queued events at the position Tack holds. On a 409
// another writer (a second import of the same file) has moved the log: the
// position is read again and the events Tack now holds are dropped.
func (t *File) flush(ctx context.Context) error {
	for len(t.batch) > 0 {
		first := t.made - int64(len(t.batch)) // seq before the batch
		err := t.client.Append(ctx, t.sess.ID, t.batch, first)
		if err == nil {
			t.Stored += len(t.batch)
			t.sess.LastSeq = t.made
			t.batch, t.bytes = t.batch[:0], 0
			return nil
		}
		if !errors.Is(err, errConflict) {
			return err
		}
		s, serr := t.client.Session(ctx, t.sess.ID)
		if serr != nil {
			return serr
		}
		if s.LastSeq < first || s.LastSeq > t.made {
			return fmt.Errorf("%s: Tack's session %s holds %d events where this file maps to %d: was the file rewritten? %w", t.Path, s.ID, s.LastSeq, t.made, err)
		}
		held := int(s.LastSeq - first)
		for _, ev := range t.batch[:held] {
			if ev.Type == projection.TypeTodoWrite {
				t.Writes--
			}
		}
		t.batch = t.batch[held:]
		t.sess.LastSeq = s.LastSeq
	}
	return nil
}

// Behind reports events Tack holds beyond what the file maps to: the file
// was truncated or rewritten since they were stored.
func (t *File) Behind() int64 {
	if t.sess == nil {
		return 0
	}
	return t.sess.LastSeq - t.made
}

// Report is the one line `tack import` prints for the file.
func (t *File) Report() string {
	var b strings.Builder
	if t.sess == nil {
		fmt.Fprintf(&b, "%s: nothing to import", t.Path)
	} else {
		fmt.Fprintf(&b, "%s: %s  %d events stored (%d list writes)", t.Path, t.client.URL(t.sess.ID), t.Stored, t.Writes)
		if t.Stored == 0 {
			b.WriteString(", already imported")
		}
	}
	var skipped []string
	if s := t.parser.SkippedText(); s != "" {
		skipped = append(skipped, s)
	}
	for k, n := range t.notes {
		skipped = append(skipped, fmt.Sprintf("%s ×%d", k, n))
	}
	if len(skipped) > 0 {
		b.WriteString("; not mapped: " + strings.Join(skipped, ", "))
	}
	return b.String()
}
