// Package hook is the agents' side of Tack's hooks: Send forwards one hook
// event from the agent to the server and hands back what the agent should
// read; Install and Uninstall edit the agents' settings so they run
// `tack hook` on every event Tack maps, and Connect and Disconnect do that
// and register Tack's MCP server beside it.
package hook

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/hook/front"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/transcript"
)

// DefaultTimeout is how long Send waits for the server before it gives up
// and lets the agent go on.
const DefaultTimeout = front.DefaultTimeout

// MaxPayloadBytes bounds the hook payload Send reads, the server's own
// bound on a request body; a larger one is not sent.
const MaxPayloadBytes = front.MaxPayloadBytes

// Client is where Send sends hooks.
type Client struct {
	Server, Token string
	// Plan is the plan mode sent with each hook as ?plan= ("" sends
	// none): the server's choice of offering the model Tack's todo tool.
	Plan string
	// HTTP is the client to send with; nil is a plain one.
	HTTP *http.Client
	// StateDir is where what was sent of each transcript is kept between
	// hooks; "" is the user's cache folder ($XDG_CACHE_HOME/tack/hooks,
	// ~/.cache/tack/hooks).
	StateDir string
}

// Send posts the hook payload read from in to the server's
// /hooks/{agent} and returns the server's answer for the agent, or nil
// when there is none to give: the server is down, slower than timeout, or
// refused the hook. It never fails: a hook must never stand in the agent's
// way, and what it missed reaches Tack later from the transcript.
func Send(ctx context.Context, c Client, agent string, in io.Reader, timeout time.Duration) []byte {
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	payload, err := io.ReadAll(io.LimitReader(in, MaxPayloadBytes+1))
	if err != nil || len(payload) > MaxPayloadBytes {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hc := c.HTTP
	if hc == nil {
		hc = localClient(c.Server)
	}
	stateDir := c.StateDir
	if stateDir == "" {
		stateDir = front.StateDir()
	}
	target := strings.TrimSuffix(c.Server, "/") + "/hooks/" + url.PathEscape(agent)
	if c.Plan != "" {
		target += "?" + url.Values{"plan": {c.Plan}}.Encode()
	}
	var sent string
	asking := "" // the key, when asking the server to read the transcript itself
	post := func(body []byte, lines string, lag int) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		if sent != "" {
			req.Header.Set(transcript.SyncedHeader, sent)
		}
		if lines != "" {
			req.Header.Set(transcript.AppendHeader, lines)
		}
		if asking != "" {
			req.Header.Set(ReadHeader, ReadAsk)
			req.Header.Set(KeyHeader, asking)
		}
		if lag > 0 {
			req.Header.Set(LagHeader, strconv.Itoa(lag))
		}
		if c.Plan != "" && bytes.Contains(payload, []byte(`"SessionStart"`)) {
			req.Header.Set(transcript.TodoToolsHeader, TodoTools(agent, os.Getenv))
		}
		if c.Token != "" {
			req.Header.Set("Authorization", "Bearer "+c.Token)
		}
		return hc.Do(req)
	}
	// A server that reads this machine's transcripts itself (it said so,
	// and the hooks keep its word in a marker file) is sent the payload
	// alone: no transcript read here, no state read or written.
	marker := front.Marker(stateDir, c.Server)
	if marker != "" {
		if key, err := os.ReadFile(marker); err == nil && len(key) > 0 {
			asking = string(key)
			resp, err := post(payload, "", 0)
			asking = ""
			if err != nil {
				return nil
			}
			defer resp.Body.Close()
			switch resp.Header.Get(ReadHeader) {
			case ReadRefused:
				// Nothing of the hook was applied: it syncs the transcript
				// itself, as to a server that never read one.
				_ = os.Remove(marker)
			case ReadLocal:
				return answerOf(resp)
			default:
				// An older server put in its place: it took the hook as
				// one with no transcript; the next hooks sync themselves.
				_ = os.Remove(marker)
				return answerOf(resp)
			}
		}
	}
	// A server that said it takes a tool's hooks before their calls'
	// lines (the hooks keep its word in a marker file) is not kept
	// waiting for them.
	earlyMarker := front.EarlyMarker(stateDir, c.Server)
	early := false
	if earlyMarker != "" {
		_, err := os.Stat(earlyMarker)
		early = err == nil
	}
	var last lastFile
	syncAndPost := func(early bool) (*http.Response, error) {
		// The transcript may take most of the time: the hook's own
		// request is one small round trip.
		var lag int
		sent, last, lag = syncTranscripts(ctx, importer.Client{Server: c.Server, Token: c.Token, HTTP: hc}, stateDir, agent, payload, max(timeout/2, timeout-200*time.Millisecond), early)
		body, lines := payload, ""
		if last.batch != nil {
			if b, ok := withLines(payload, last.batch.Events); ok {
				body, lines = b, last.batch.Session
			} else {
				// Too large for one request: sent first, on its own.
				last.sendApart(ctx, &sent)
			}
		}
		resp, err := post(body, lines, lag)
		if err == nil && lines != "" && (resp.StatusCode != http.StatusOK || resp.Header.Get(transcript.AppendHeader) == "") {
			// Refused with the lines (409, 422, …): nothing of the hook
			// was applied. The lines go the usual way, which deals with a
			// refusal, then the hook on its own.
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				last.sendApart(ctx, &sent)
				resp, err = post(payload, "", lag)
			} else {
				// Answered by a server that does not say it takes the
				// lines (an older one put in its place): they are sent
				// apart, late rather than lost.
				last.sendApart(ctx, &sent)
			}
		}
		return resp, err
	}
	resp, err := syncAndPost(early)
	if err == nil && resp.StatusCode == http.StatusOK && resp.Header.Get(LagHeader) == LagWait {
		// Not answered: the answer shows the model the list, and is to
		// be counted on steps that hold the calls' messages. The lines
		// sent are Tack's; those of the calls come once they are written.
		resp.Body.Close()
		last.save(true, resp.Header.Get(transcript.AppendHeader) != "")
		resp, err = syncAndPost(false)
	}
	if err != nil {
		last.save(false, false)
		return nil
	}
	defer resp.Body.Close()
	last.save(true, resp.Header.Get(transcript.AppendHeader) != "")
	switch takes := resp.Header.Get(LagHeader) != ""; {
	case takes && !early && earlyMarker != "" && os.MkdirAll(stateDir, 0o700) == nil:
		_ = os.WriteFile(earlyMarker, nil, 0o600)
	case !takes && early:
		// An older server put in its place.
		_ = os.Remove(earlyMarker)
	}
	if marker != "" && resp.Header.Get(ReadHeader) == ReadLocal {
		// The server's key, where it says it lies, is this user's to
		// read only: the next hooks show it, as proof that they run as
		// the server's user on its machine.
		// Written rarely (the key is the user's for good), so under
		// another name and renamed: a hook reads one whole or none.
		if key, err := readKeyFile(resp.Header.Get(KeyFileHeader)); err == nil && os.MkdirAll(stateDir, 0o700) == nil {
			tmp := marker + ".new"
			if os.WriteFile(tmp, []byte(key), 0o600) == nil {
				_ = os.Rename(tmp, marker)
			}
		}
	}
	return answerOf(resp)
}

// answerOf is the agent's answer in the server's response: its body when
// the hook was taken, nil otherwise.
func answerOf(resp *http.Response) []byte {
	answer, err := io.ReadAll(io.LimitReader(resp.Body, MaxPayloadBytes))
	if err != nil || resp.StatusCode != http.StatusOK {
		return nil
	}
	return answer
}

// The values of LagHeader.
const (
	LagHeader = front.LagHeader
	LagEarly  = front.LagEarly
	LagWait   = front.LagWait
)

// The values of ReadHeader.
const (
	ReadAsk     = front.ReadAsk
	ReadLocal   = front.ReadLocal
	ReadRefused = front.ReadRefused
)

// withLines is payload with events, as POST /sessions/{id}/events takes
// them, in its first field (transcript.AppendField), as the server reads
// it; false when the two would pass the server's bound on a request.
func withLines(payload []byte, events []transcript.Event) ([]byte, bool) {
	p := bytes.TrimSpace(payload)
	if len(p) < 2 || p[0] != '{' {
		return nil, false
	}
	lines, err := json.Marshal(map[string]any{"events": events})
	if err != nil {
		return nil, false
	}
	var b bytes.Buffer
	b.Grow(len(p) + len(lines) + 32)
	b.WriteString(`{"` + transcript.AppendField + `":`)
	b.Write(lines)
	rest := bytes.TrimSpace(p[1:])
	if len(rest) > 0 && rest[0] != '}' {
		b.WriteByte(',')
	}
	b.Write(rest)
	if b.Len() > MaxPayloadBytes {
		return nil, false
	}
	return b.Bytes(), true
}

// lastFile is the hook's last transcript, synced but for its last
// append (batch, nil for none) when the server takes the lines in the
// hook's request, and its state not saved yet.
type lastFile struct {
	f      *importer.File
	batch  *importer.Batch
	state  string
	append bool // the server said it takes the lines in the hook's request
	// release, when set, lets another hook sync the file (a server's
	// Transcripts hold it from the sync until save); keep is false when
	// the File is not to be trusted since (sendApart failed).
	release func(keep bool)
}

// sendApart sends the held batch in a request of its own; when that
// fails, the hook's transcript is unsent and its state is not saved, for
// the next hook to send the batch again.
func (l *lastFile) sendApart(ctx context.Context, sent *string) {
	if err := l.f.Send(ctx, l.batch); err != nil {
		*sent = "unsent"
		l.f = nil
	}
	l.batch = nil
}

// save keeps what was sent of the transcript once the hook's request is
// answered (answered false: it was not); heard is whether that answer
// said the server takes the lines in the request. A batch the server did
// not answer for is not counted sent: the next hook sends it again (its
// events' keys keep Tack from storing any twice).
func (l *lastFile) save(answered, heard bool) {
	if l.release != nil {
		defer func() { l.release(l.f != nil) }()
	}
	if l.f == nil {
		return
	}
	if l.batch != nil {
		if !answered {
			return
		}
		l.f.Sent(l.batch)
	}
	if answered {
		l.append = heard
	}
	saveState(l.state, l.f, l.append)
}

// syncTranscripts sends the lines of the hook's transcripts that Tack does
// not hold yet, as `tack watch` and `tack import` send them, within budget,
// so that the conversation Tack shows is the transcript's, in its order and
// as the model saw it, before the hook moves the session on (a turn's end
// after its closing text). It answers the Tack-Transcript header to send:
// "synced" when every transcript was sent; "unsent" when the hook names a
// transcript that could not be sent in time (a slow server, a file this
// machine cannot read), so that the server adds no call of its own out of
// the transcript's order and the transcript fills in later; "" when there
// is none, so that the server maps the hook's own payload.
//
// With early (the server takes it, LagEarly), a tool's PreToolUse or
// PostToolUse does not wait for its call's line, and lag is how many calls
// the lines sent lack, its own among them (lag.go); every other hook
// waits for the lines of those first.
func syncTranscripts(ctx context.Context, c importer.Client, stateDir, agent string, payload []byte, budget time.Duration, early bool) (sent string, last lastFile, lag int) {
	h, err := transcript.Lookup(agent).ParseHook(payload)
	if err != nil {
		return "", lastFile{}, 0
	}
	return syncHook(ctx, h, budget, early, stateDir, func(ctx context.Context, path string, final, last bool) (lastFile, error) {
		return syncFile(ctx, &c, stateDir, path, final, last)
	})
}

// syncHook is syncTranscripts of the parsed hook h, each of its
// transcripts sent by syncOne (the hook's own, with its state on disk; or
// a server's, which keeps its Files in memory: Transcripts). With early,
// the PreToolUse or PostToolUse of a tool other than a list tool does not
// wait for its call's line: it is synced as the transcript stands, the
// call recorded in the lag file among the hooks' states in lagDir when
// its line is not there yet, and lag is how many recorded calls the
// transcript lacks (lag.go); every other hook first waits for the lines
// of the calls recorded.
func syncHook(ctx context.Context, h transcript.Hook, budget time.Duration, early bool, lagDir string, syncOne func(ctx context.Context, path string, final, last bool) (lastFile, error)) (sent string, last lastFile, lag int) {
	paths := h.Transcripts()
	if len(paths) == 0 {
		return "", lastFile{}, 0
	}
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	early = early && mayLag(h)
	if !early {
		// The calls of tools' hooks that went on without their lines are
		// in Tack's log for this hook, as if those hooks had waited.
		for _, path := range paths {
			waitLagged(ctx, lagDir, path)
		}
	}
	if (h.Event == transcript.HookStop || h.Event == transcript.HookSubagentStop) && h.LastAssistantMessage != "" {
		// Claude Code writes its transcript lazily: the turn's last lines
		// (its closing text, a parallel call's result) may come around the
		// Stop hook. The closing text's line is the last of the turn.
		waitForText(ctx, paths[0], h.LastAssistantMessage, closingWait)
	}
	// A tool's hook waits for its call's line: the call is a step of the
	// model, which the server counts (a list gone stale, a reminder read by
	// the model's next message: a denied call's retry goes through, and so
	// does a write after a reminder of a person's edit). A list tool's
	// write is the hook's, made where the transcript's call already
	// stands: without its line the hook says the transcript is unsent.
	callShown, lagging := true, false
	switch {
	case h.ToolUseID == "" || (h.Event != transcript.HookPreToolUse && h.Event != transcript.HookPostToolUse):
	case early:
		lagging = !textHeld(paths[0], h.ToolUseID)
	default:
		callShown = waitForText(ctx, paths[0], h.ToolUseID, closingWait) || !listCall(h)
	}
	final := h.Event == transcript.HookSessionEnd
	sent = "synced"
	for i, path := range paths {
		l, err := syncOne(ctx, path, final, i == len(paths)-1)
		if err != nil {
			sent, last, lagging = "unsent", lastFile{}, false
			break
		}
		last = l
	}
	if !callShown {
		sent = "unsent"
	}
	if early {
		lag = noteLag(lagDir, paths[0], h.ToolUseID, lagging)
	}
	return sent, last, lag
}

// listCall says whether h is a hook of a list tool's call: the model's
// own list tool, or Tack's at its PreToolUse.
func listCall(h transcript.Hook) bool {
	return transcript.IsTodoTool(h.ToolName) || (h.Event == transcript.HookPreToolUse && h.ToolName == transcript.TackTodoTool)
}

// mayLag says whether h may be answered before its call's line is in the
// transcript (syncHook's early): a PreToolUse or PostToolUse of a tool
// other than a list tool.
func mayLag(h transcript.Hook) bool {
	return h.ToolUseID != "" && (h.Event == transcript.HookPreToolUse || h.Event == transcript.HookPostToolUse) && !listCall(h)
}

// syncFile sends what the transcript at path holds that Tack does not,
// resuming from where the last hook left it (its state is kept in the
// user's cache folder, see stateFile): a hook reads what the agent wrote
// since, not the whole transcript. A state that no longer fits (Tack's
// store reset, the file rewritten) is dropped and the file read whole.
// For the hook's last transcript (last), the state is saved once the
// hook's request is answered (lastFile.save), and when the server said it
// takes the lines in the hook's request, the last append is left for it.
func syncFile(ctx context.Context, c *importer.Client, stateDir, path string, final, last bool) (lastFile, error) {
	state := stateFile(stateDir, c.Server, path)
	l := lastFile{state: state}
	sync := func(f *importer.File) error {
		l.f = f
		if last && l.append {
			b, err := f.SyncBatch(ctx, final)
			l.batch = b
			return err
		}
		return f.Sync(ctx, final)
	}
	if raw, err := readState(state); state != "" && err == nil {
		var hs hookState
		if json.Unmarshal(raw, &hs) == nil && len(hs.File) > 0 {
			raw, l.append = hs.File, hs.Append
		}
		if f, err := importer.Resume(c, path, raw); err == nil {
			if err := sync(f); err == nil {
				if !last {
					saveState(state, f, l.append)
				}
				return l, nil
			}
		}
		_ = os.Remove(state)
		if ctx.Err() != nil {
			return lastFile{}, ctx.Err()
		}
	}
	f, err := importer.Open(c, path)
	if err == nil {
		err = sync(f)
	}
	if err != nil {
		return lastFile{}, err
	}
	if !last {
		saveState(state, f, l.append)
	}
	return l, nil
}

// hookState is what a hook keeps of one transcript between hooks: what
// was sent of it (importer.File's state) and whether the server said it
// takes the transcript's lines in the hook's own request. A state of an
// older hook, the File's alone, is read as one with Append false.
type hookState struct {
	File   json.RawMessage `json:"file"`
	Append bool            `json:"append,omitempty"`
}

// stateFile is where the hooks keep, in dir, what they sent of the
// transcript at path to the server: one small file per transcript and
// server; "" when dir is.
func stateFile(dir, server, path string) string {
	if dir == "" {
		return ""
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	sum := sha256.Sum256([]byte(strings.TrimSuffix(server, "/") + "\n" + path))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])+".json")
}

// stateMaxAge is how long a transcript's state is kept unused.
const stateMaxAge = 7 * 24 * time.Hour

// saveState writes f's state to the file state, whole or not at all
// (writeState); now and then it drops states unused for stateMaxAge.
func saveState(state string, f *importer.File, appendLines bool) {
	if state == "" {
		return
	}
	file, err := json.Marshal(f)
	if err != nil {
		return
	}
	raw, err := json.Marshal(hookState{File: file, Append: appendLines})
	if err != nil {
		return
	}
	dir := filepath.Dir(state)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	if writeState(state, raw) != nil {
		return
	}
	if rand.IntN(64) == 0 {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) > stateMaxAge {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
}

// closingWait bounds how long a Stop hook waits for the closing text to
// reach the transcript.
const closingWait = 500 * time.Millisecond

// waitForText waits, at most wait, until the last tailBytes of the file
// at path hold text as a JSON string holds it, and says whether they do.
// It looks again each time the file changes (fileChanges), and at least
// every changeCheck.
func waitForText(ctx context.Context, path, text string, wait time.Duration) bool {
	return waitWatching(ctx, path, text, wait, fileChanges)
}

// waitWatching is waitForText with the file's changes from watch.
func waitWatching(ctx context.Context, path, text string, wait time.Duration, watch func(string) changes) bool {
	needle := needleOf(text)
	if tailHolds(path, needle) {
		return true // nearly always, but at a PreToolUse: nothing to watch
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	// Watched before the next look: a line written between the look and
	// the watch would otherwise be seen only at the next changeCheck.
	changes := watch(path)
	defer changes.Close()
	for {
		if tailHolds(path, needle) {
			return true
		}
		if !changes.Next(ctx) {
			return false
		}
	}
}

// textHeld is waitForText without the wait: whether the file's tail
// holds text now.
func textHeld(path, text string) bool { return tailHolds(path, needleOf(text)) }

// needleOf is text as a JSON string holds it, at most tailBytes/2 of it.
func needleOf(text string) []byte {
	enc, _ := json.Marshal(text)
	needle := bytes.Trim(enc, `"`)
	if len(needle) > tailBytes/2 {
		needle = needle[:tailBytes/2]
	}
	return needle
}

// changeCheck bounds how long waitForText goes without looking, changed
// or not: where the file cannot be watched, and for a change a watch
// does not report (the file replaced under its name).
const changeCheck = 20 * time.Millisecond

// changes is what fileChanges returns: Next waits for the file to change
// or for changeCheck, and says false once ctx is done.
type changes interface {
	Next(ctx context.Context) bool
	Close() error
}

// ticks is the changes of a file that cannot be watched: every
// changeCheck.
type ticks struct{ t *time.Ticker }

func newTicks(string) changes { return ticks{time.NewTicker(changeCheck)} }

func (t ticks) Next(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-t.t.C:
		return true
	}
}

func (t ticks) Close() error { t.t.Stop(); return nil }

// tailBytes is how much of a transcript's end waitForText reads; it reads
// the last firstTailBytes first, where the line it waits for almost always
// is (the call's line is the transcript's last or nearly), and the rest
// only when they lack it.
const (
	tailBytes      = 256 << 10
	firstTailBytes = 16 << 10
)

func tailHolds(path string, needle []byte) bool {
	// A transcript is a regular file: a FIFO or a device under its name
	// would block the open (the importer refuses them too).
	if info, err := os.Stat(path); err != nil || !info.Mode().IsRegular() {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return false
	}
	for _, n := range []int64{firstTailBytes, tailBytes} {
		off := max(info.Size()-n, 0)
		buf := make([]byte, info.Size()-off)
		if _, err := f.ReadAt(buf, off); err != nil && !errors.Is(err, io.EOF) {
			return false
		}
		if bytes.Contains(buf, needle) {
			return true
		}
		if off == 0 {
			return false
		}
	}
	return false
}
