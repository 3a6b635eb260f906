package importer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
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
	// printBytes is how much of the file's start, and of the bytes before
	// where it was read to, a File remembers a hash of to notice a rewrite.
	printBytes = 4 << 10
)

// ErrNotTranscript is a file whose lines are neither agent's.
var ErrNotTranscript = errors.New("neither a Claude Code session nor a codex rollout")

// File follows one transcript into its Tack sessions: the file's own and
// one per subagent whose lines it holds.
//
// Position and idempotency: the events a transcript maps to are the same on
// every read, and those of a prefix of the file are a prefix of those of the
// whole (package transcript); each carries keys (transcript.Keys), and Tack
// stores an event one of whose keys its session holds only once. Each
// session is found by its key (POST /sessions with externalKey). While
// Tack's log is the file's alone, its lastSeq says how many of the file's
// events it holds: a File re-reads the file from the start and compares
// each of that many events with Tack's (a page of Tack's log at a time),
// sending none. From the first that differs (an event that came by
// another way, such as a hook's, or a line rewritten) it sends every
// event, and Tack answers those it holds under their keys as held.
// Nothing is kept on disk; a second import, a retry after a lost answer
// or a restarted watcher stores nothing twice and skips nothing.
//
// A File holds no open descriptor between Syncs: each Sync opens the file,
// reads what was added and closes it, so a watcher may follow any number.
// A file rewritten in place (another file under the name, a shrink, or
// different bytes where it was read) is read again from the start, the
// same way.
type File struct {
	Path   string
	client *Client
	parser *transcript.Parser
	offset int64 // bytes consumed: complete lines only
	seen   os.FileInfo
	head   [sha256.Size]byte // of the first printBytes, as far as read
	tail   [sha256.Size]byte // of the printBytes before offset
	// rewrites counts the times the file was read again from the start.
	rewrites int

	own      *sink
	children map[string]*sink
	order    []*sink // the sessions, in the order their first event came

	notes map[string]int
}

// readers are the Syncs' read buffers, shared: a server syncs a file on
// every hook, and 64 KiB made anew each time was most of what it
// allocated for one; a watcher follows thousands of files, and one kept
// by each would hold 64 KiB apiece.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 64<<10) }}

// sink is one session a File writes into.
type sink struct {
	key   string
	info  func() transcript.Info
	sess  *Session
	state projection.State // the file's events as Tack would take them, mirrored
	made  int64            // events the file has mapped to so far
	// held are mapped events waiting for the session to be found.
	held  []held
	batch []transcript.Event
	bytes int
	// tackLast is Tack's lastSeq when the session was found (-1 until it
	// is read again after a rewrite): while matching, the file's events up
	// to it are compared with Tack's, page holding Tack's events after
	// pageFrom.
	tackLast int64
	matching bool
	page     []projection.Event
	pageFrom int64

	Stored, Writes int
}

type held struct {
	ev    transcript.Event
	canon projection.Event // as the mirror stores it
	n     int64            // its number among the file's events of the session
	// none marks a derived list write the mirror made nothing of: it has
	// no number, and follows event n.
	none bool
}

// Open makes a File for a transcript, to sync into Tack through c. It
// reads nothing yet.
func Open(c *Client, path string) (*File, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	return &File{Path: path, client: c, notes: map[string]int{}}, nil
}

// ErrNotRegular is a transcript's name on something that is no regular
// file, or a link to one: a FIFO, a device such as /dev/zero, a socket.
// Reading one could wait for ever or never end, so it is never read.
var ErrNotRegular = errors.New("not a regular file (a FIFO, a device or a socket): not read")

// Offset is how far the file has been read: up to the last complete line.
func (t *File) Offset() int64 { return t.offset }

// SessionID is the Tack id of the file's own session, "" before its first
// event is sent.
func (t *File) SessionID() string {
	if t.own == nil || t.own.sess == nil {
		return ""
	}
	return t.own.sess.ID
}

// Rewrites counts the times the file was found rewritten in place and
// read again from the start.
func (t *File) Rewrites() int { return t.rewrites }

// Stored is how many events the File has stored, in all its sessions.
func (t *File) Stored() int {
	n := 0
	for _, s := range t.order {
		n += s.Stored
	}
	return n
}

// Sync reads the file from where it stopped to its end and sends what the
// new lines map to. A last line without its newline is left for the next
// Sync (an agent mid-write), unless final, when it is read if it is whole
// JSON and reported as truncated otherwise.
func (t *File) Sync(ctx context.Context, final bool) error {
	_, err := t.sync(ctx, final, false)
	return err
}

// Batch is the last append of a Sync, handed back unsent by SyncBatch for
// the caller to carry in a request of its own (`tack hook` sends it in the
// hook's request): Session is the Tack session it goes to, Events what
// POST /sessions/{id}/events would be sent.
type Batch struct {
	Session string
	Events  []transcript.Event
	sink    *sink
}

// SyncBatch is Sync, except that the last append it would send is handed
// back instead (nil when there is none): every other request is sent as
// Sync sends it, in the same order, and the Batch is the last. Until the
// caller says what became of it (Sent, or Send to send it the usual way),
// the File's state cannot be saved.
func (t *File) SyncBatch(ctx context.Context, final bool) (*Batch, error) {
	return t.sync(ctx, final, true)
}

// Sent tells the File that Tack took b as POST /sessions/{id}/events
// would have.
func (t *File) Sent(b *Batch) {
	b.sink.batch, b.sink.bytes = b.sink.batch[:0], 0
}

// Send sends b the usual way: Tack refused it where it came in another
// request, or it did not fit there. A refusal is dealt with as Sync deals
// with one.
func (t *File) Send(ctx context.Context, b *Batch) error {
	return t.flushSink(ctx, b.sink)
}

func (t *File) sync(ctx context.Context, final, hold bool) (*Batch, error) {
	// The name is checked before the open and what was opened after it:
	// a FIFO or a device put there meanwhile is refused either way.
	if info, err := os.Stat(t.Path); err != nil {
		return nil, err
	} else if !info.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	f, err := openRead(t.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, ErrNotRegular
	}
	if why := t.changed(f, info); why != "" {
		t.notes["rewritten in place ("+why+"), read again"]++
		t.rewrites++
		t.restart()
	}
	t.seen = info
	if _, err := f.Seek(t.offset, io.SeekStart); err != nil {
		return nil, err
	}
	rd := readers.Get().(*bufio.Reader)
	rd.Reset(f)
	defer func() { rd.Reset(nil); readers.Put(rd) }()
	for {
		if err := ctx.Err(); err != nil {
			return nil, err // interrupted (SIGINT, SIGTERM): the next sync goes on from t.offset
		}
		line, err := t.readLine(rd)
		if errors.Is(err, io.EOF) {
			if len(line) > 0 && final {
				if !jsonLine(line) {
					t.notes["a truncated last line"]++
				} else {
					t.offset += int64(len(line))
					if err := t.take(ctx, line); err != nil {
						return nil, err
					}
				}
			}
			break
		}
		if err != nil {
			return nil, err
		}
		if err := t.take(ctx, line); err != nil {
			return nil, err
		}
	}
	b, err := t.flush(ctx, hold)
	if err != nil {
		return nil, err
	}
	return b, t.remember(f)
}

// changed says why the open file is not the one read so far, "" when it
// is that one, grown or not.
func (t *File) changed(f *os.File, info os.FileInfo) string {
	switch {
	case t.seen == nil:
		return ""
	case !os.SameFile(t.seen, info):
		return "another file under the name"
	case info.Size() < t.offset:
		return fmt.Sprintf("%d bytes where %d were read", info.Size(), t.offset)
	}
	head, tail, err := prints(f, t.offset)
	if err != nil || head != t.head || tail != t.tail {
		return "its bytes changed"
	}
	return ""
}

// remember keeps the hashes changed compares, for the bytes read so far.
// A file cut shorter than that meanwhile (rewritten in place: truncated,
// then written) is no error: the next sync finds it changed and reads it
// again.
func (t *File) remember(f *os.File) error {
	var err error
	t.head, t.tail, err = prints(f, t.offset)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		t.head, t.tail = [sha256.Size]byte{}, [sha256.Size]byte{}
		return nil
	}
	return err
}

// prints hashes the file's first printBytes and the printBytes before n,
// both within its first n bytes.
func prints(f *os.File, n int64) (head, tail [sha256.Size]byte, err error) {
	buf := make([]byte, min(n, printBytes))
	if _, err = f.ReadAt(buf, 0); err != nil {
		return head, tail, err
	}
	head = sha256.Sum256(buf)
	if _, err = f.ReadAt(buf, n-int64(len(buf))); err != nil {
		return head, tail, err
	}
	return head, sha256.Sum256(buf), nil
}

// restart forgets what was read of the file: the next read is from its
// start, compared with what Tack holds.
func (t *File) restart() {
	t.offset, t.parser = 0, nil
	for _, s := range t.order {
		*s = sink{key: s.key, sess: s.sess, Stored: s.Stored, Writes: s.Writes}
		if s.sess != nil {
			s.matching, s.tackLast = true, -1
		}
	}
}

// readLine reads one line with its newline, up to MaxLineBytes; a longer
// line is read through, dropped and counted. At the end of the file it
// answers the unfinished rest (not counted in the offset) with io.EOF.
func (t *File) readLine(rd *bufio.Reader) ([]byte, error) {
	var (
		line    []byte
		n       int64
		tooLong bool
	)
	for {
		chunk, err := rd.ReadSlice('\n')
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

// take maps one line and queues what Tack does not hold yet. The first
// line that says the format (of any length) makes the parser; a file whose
// first line says none is not a transcript.
func (t *File) take(ctx context.Context, line []byte) error {
	line = bytes.TrimRight(line, "\r\n")
	if t.parser == nil {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		f := transcript.Detect(line)
		if f == "" {
			return fmt.Errorf("%s: %w", t.Path, ErrNotTranscript)
		}
		t.parser = transcript.New(f, t.Path)
	}
	for _, ev := range t.parser.Line(line) {
		s := t.sinkOf(ev.Session)
		if ev.At.After(time.Now()) {
			ev.At = time.Now() // a clock ahead of Tack's: Tack refuses a future at
		}
		// The mirror applies every event, as Tack will; one it would refuse
		// (a list with a duplicate, an item too long) is left out and said,
		// and leaves out the same on every read, so counting stays true.
		at := ev.At
		if at.IsZero() {
			at = time.Now()
		}
		next := s.state
		cfg := mirrorConfig(s.info().Agent)
		canon, err := next.Apply(mirrorEvent(ev), projection.NewTime(at), cfg, nil)
		switch {
		case errors.Is(err, projection.ErrNoWrite):
			// A list write derived from a call that changes nothing of the
			// mirror's list: none of the file's events, but sent all the
			// same once Tack's log parts from the file's, for Tack to
			// derive from its own list, which hooks may have moved.
			s.held = append(s.held, held{ev: ev, n: s.made, none: true})
		case err != nil:
			t.notes["events Tack refuses ("+shortErr(err)+")"]++
			continue
		default:
			s.state = next
			s.made++
			s.held = append(s.held, held{ev: ev, canon: canon, n: s.made})
		}
		if s.sess == nil && s.info().Title == "" && len(s.held) < batchEvents {
			continue // the session is made once the transcript names it
		}
		if err := t.drain(ctx, s); err != nil {
			return err
		}
	}
	// A subagent the file's agent started: its session is made now, titled
	// by its task and under this one, as the hook that told of it live
	// made it; its own file fills it.
	for _, child := range t.parser.Spawned() {
		own := t.sinkOf("")
		if err := t.ensureSession(ctx, own); err != nil {
			return err
		}
		ns := newSession(child, child.Key, child.Title)
		ns.ParentID = own.sess.ID
		if _, err := t.client.OpenSession(ctx, ns); err != nil {
			return err
		}
	}
	return nil
}

// sinkOf is the sink of the session named key ("" for the file's own).
func (t *File) sinkOf(key string) *sink {
	if key == "" {
		if t.own == nil {
			t.own = &sink{}
			t.order = append(t.order, t.own)
		}
		if t.own.info == nil {
			t.own.info = t.parser.Info
		}
		return t.own
	}
	if t.children == nil {
		t.children = map[string]*sink{}
	}
	s := t.children[key]
	if s == nil {
		s = &sink{key: key}
		t.children[key] = s
		t.order = append(t.order, s)
	}
	if s.info == nil {
		child := t.parser.Child(key)
		s.info = child.Info
	}
	return s
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

// drain finds the session of s if need be and moves its held events on:
// those Tack holds at their place are dropped, the rest queued.
func (t *File) drain(ctx context.Context, s *sink) error {
	if err := t.ensureSession(ctx, s); err != nil {
		return err
	}
	if s.matching && s.tackLast < 0 {
		// Read again after a rewrite: where Tack's log stands now.
		cur, err := t.client.Session(ctx, s.sess.ID)
		if err != nil {
			return err
		}
		s.tackLast = cur.LastSeq
	}
	for _, h := range s.held {
		if s.matching && h.n <= s.tackLast {
			if h.none {
				continue // Tack's log, the file's alone so far, made nothing of it either
			}
			same, err := t.holds(ctx, s, h.n, h.canon)
			if err != nil {
				return err
			}
			if same {
				continue
			}
		}
		// Past Tack's last, or Tack's log parts from the file's here:
		// everything from here on is sent, and what Tack holds under its
		// keys is answered held.
		s.matching, s.page = false, nil
		t.queue(s, h.ev)
	}
	s.held = s.held[:0]
	if len(s.batch) >= batchEvents || s.bytes >= batchBytes {
		return t.flushSink(ctx, s)
	}
	return nil
}

func (t *File) queue(s *sink, ev transcript.Event) {
	s.batch = append(s.batch, ev)
	s.bytes += len(ev.Data)
}

// holds reports whether Tack's event n of s is canon, reading Tack's log
// a page at a time as far as needed.
func (t *File) holds(ctx context.Context, s *sink, n int64, canon projection.Event) (bool, error) {
	for n > s.pageFrom+int64(len(s.page)) {
		from := s.pageFrom + int64(len(s.page))
		page, _, err := t.client.Events(ctx, s.sess.ID, from)
		if err != nil {
			return false, err
		}
		if len(page) == 0 {
			return false, nil
		}
		s.page, s.pageFrom = page, from
	}
	if n <= s.pageFrom {
		return false, nil
	}
	got := s.page[n-s.pageFrom-1]
	return got.Seq == n && got.Type == canon.Type && sameJSON(got.Data, canon.Data), nil
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
}

// ensureSession finds or creates the session of s, its parent's first for
// a subagent: by then the transcript has said its key and, mostly, its
// title.
func (t *File) ensureSession(ctx context.Context, s *sink) error {
	if s.sess != nil {
		return nil
	}
	info := s.info()
	// No title yet (no prompt read): the session is untitled, and Tack
	// titles it with the first prompt the lines bring. A key is no title.
	// Nor is a subagent's prompt (StandIn): Tack titles the session by it
	// until the task its parent's call gave it replaces it, in whichever
	// order the two reach Tack.
	title := info.Title
	if info.StandIn {
		title = ""
	}
	ns := newSession(info, info.Key, title)
	if info.Parent != "" {
		parent, err := t.parentOf(ctx, s, info)
		if err != nil {
			return err
		}
		ns.ParentID = parent
	}
	sess, err := t.client.OpenSession(ctx, ns)
	if err != nil {
		return err
	}
	s.sess = &sess
	s.matching, s.tackLast = sess.LastSeq > 0, sess.LastSeq
	return nil
}

// parentOf is the Tack id of a subagent's parent session: the file's own
// for its sidechain lines, found (or made, for its file to fill) by key
// for a subagent's own file.
func (t *File) parentOf(ctx context.Context, s *sink, info transcript.Info) (string, error) {
	if s != t.own && t.own != nil {
		if err := t.ensureSession(ctx, t.own); err != nil {
			return "", err
		}
		return t.own.sess.ID, nil
	}
	p, err := t.client.OpenSession(ctx, newSession(info, info.Parent, ""))
	return p.ID, err
}

// newSession is what Tack is sent to find or make the session of key of a
// transcript that says info, with the policy the mirror applies.
func newSession(info transcript.Info, key, title string) NewSession {
	cfg := mirrorConfig(info.Agent)
	return NewSession{ExternalKey: key, Title: title, Agent: info.Agent, Cwd: info.Cwd,
		PlanLifetime: cfg.PlanLifetime, ParallelInProgress: cfg.AllowParallel}
}

// flush sends every session's queued events, the file's own first. With
// hold, the last append is handed back unsent: that of the last session
// with events queued once every session's are drained.
func (t *File) flush(ctx context.Context, hold bool) (*Batch, error) {
	var last *sink
	for i, s := range t.order {
		if len(s.held) > 0 {
			if err := t.drain(ctx, s); err != nil {
				return nil, err
			}
		}
		if hold && len(s.batch) > 0 && !slices.ContainsFunc(t.order[i+1:], func(n *sink) bool { return len(n.held) > 0 || len(n.batch) > 0 }) {
			last = s
			continue
		}
		if err := t.flushSink(ctx, s); err != nil {
			return nil, err
		}
	}
	if last == nil {
		return nil, nil
	}
	return &Batch{Session: last.sess.ID, Events: last.batch, sink: last}, nil
}

// flushSink appends the queued events of s; Tack stores those it does not
// hold under their keys. An event Tack refuses where the mirror took it
// (the log holds events of another way, such as a hook's turn opened or
// closed already) is dealt with and the batch sent again: a turn's start
// or end that the log has made already is left out, an event that needs
// an open turn gets one, and an invalid event is left out and said.
func (t *File) flushSink(ctx context.Context, s *sink) error {
	for tries := 0; len(s.batch) > 0; tries++ {
		res, err := t.client.Append(ctx, s.sess.ID, s.batch)
		if err == nil {
			s.Stored += len(res.Events)
			for _, ev := range res.Events {
				if ev.Type == projection.TypeTodoWrite {
					s.Writes++
				}
			}
			s.batch, s.bytes = s.batch[:0], 0
			return nil
		}
		var re *RefusedError
		if !errors.As(err, &re) || re.Index < 0 || re.Index >= len(s.batch) || tries > 2*batchEvents {
			return err
		}
		ev := s.batch[re.Index]
		switch {
		case re.Status == http.StatusConflict && (ev.Type == projection.TypeTurnStart || ev.Type == projection.TypeTurnEnd):
			s.batch = slices.Delete(s.batch, re.Index, re.Index+1)
		case re.Status == http.StatusConflict && !ev.Late:
			// Its turn was ended by another way (a hook's Stop before the
			// line was read): the event joins that turn, late, rather
			// than opening one of its own after it.
			for j := re.Index; j < len(s.batch) && s.batch[j].Type != projection.TypeTurnStart && s.batch[j].Type != projection.TypeTurnEnd; j++ {
				s.batch[j].Late = true
			}
		case re.Status == http.StatusConflict:
			// No turn at all to join (the log has none yet): a turn of its
			// own for the events up to the batch's next turn start or end
			// (which the log may hold already).
			ev.Late = false
			for j := re.Index; j < len(s.batch) && s.batch[j].Type != projection.TypeTurnStart && s.batch[j].Type != projection.TypeTurnEnd; j++ {
				s.batch[j].Late = false
			}
			j := re.Index + 1
			for j < len(s.batch) && s.batch[j].Type != projection.TypeTurnStart && s.batch[j].Type != projection.TypeTurnEnd {
				j++
			}
			open := transcript.Event{Type: projection.TypeTurnStart, At: ev.At, Data: json.RawMessage("{}")}
			end := transcript.Event{Type: projection.TypeTurnEnd, At: s.batch[j-1].At, Data: json.RawMessage(`{"reason":"completed"}`)}
			if len(ev.Keys) > 0 {
				k := ev.Keys[len(ev.Keys)-1]
				open.Keys, end.Keys = []string{k + ":turn"}, []string{k + ":end"}
			}
			s.batch = slices.Insert(s.batch, j, end)
			s.batch = slices.Insert(s.batch, re.Index, open)
		default:
			t.notes["events Tack refuses ("+shortErr(errors.New(re.Message))+")"]++
			s.batch = slices.Delete(s.batch, re.Index, re.Index+1)
		}
	}
	return nil
}

// Report is what `tack import` prints for the file: one line, and one more
// per subagent session.
func (t *File) Report() string {
	var b strings.Builder
	if t.own == nil || t.own.sess == nil {
		fmt.Fprintf(&b, "%s: nothing to import", t.Path)
	} else {
		fmt.Fprintf(&b, "%s: %s  %d events stored (%d list writes)", t.Path, t.client.URL(t.own.sess.ID), t.own.Stored, t.own.Writes)
		if t.own.Stored == 0 {
			b.WriteString(", already imported")
		}
	}
	var skipped []string
	if t.parser != nil {
		if s := t.parser.SkippedText(); s != "" {
			skipped = append(skipped, s)
		}
	}
	notes := make([]string, 0, len(t.notes))
	for k, n := range t.notes {
		notes = append(notes, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(notes)
	skipped = append(skipped, notes...)
	if len(skipped) > 0 {
		b.WriteString("; not mapped: " + strings.Join(skipped, ", "))
	}
	for _, s := range t.order {
		if s != t.own && s.sess != nil {
			fmt.Fprintf(&b, "\n  subagent %s: %s  %d events stored (%d list writes)", s.info().Key, t.client.URL(s.sess.ID), s.Stored, s.Writes)
		}
	}
	return b.String()
}
