package watch_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/importer"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
	"github.com/tack-dev/tack/internal/transcript"
	"github.com/tack-dev/tack/internal/watch"
)

// TestWatch appends a real-shaped transcript to a file line by line at an
// agent's pace and sees each line's events over the session's websocket
// within a second; half way it stops the watcher, writes more lines while
// none runs, and starts another: every event arrives exactly once, in
// order, none missing.
func TestWatch(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			st := f.Open(t, projection.Config{})
			hub := live.New(st, live.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() { _ = hub.Run(ctx) }()
			client := serve(t, api.New(st, api.Options{OnAppend: hub.OnAppend, Live: hub}).Handler())

			lines := readLines(t, filepath.Join("..", "transcript", "testdata", "claude-code-edge.jsonl"))
			// What each prefix of the file maps to, as the parser says.
			dir := t.TempDir()
			path := filepath.Join(dir, "project", "edge-0001.jsonl")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			p := transcript.New(transcript.ClaudeCode, path)
			want := make([]int, len(lines)) // events after line i
			total := 0
			for i, l := range lines {
				for _, ev := range p.Line([]byte(l)) {
					if ev.Session == "" { // a subagent's go to its own session
						total++
					}
				}
				want[i] = total
			}

			var log storetest.LogBuffer
			start := func() context.CancelFunc {
				wctx, stop := context.WithCancel(ctx)
				done := make(chan struct{})
				ready := "tack watch: following " + dir + " into "
				started := strings.Count(log.String(), ready)
				go func() {
					defer close(done)
					_ = watch.Run(wctx, watch.Options{Client: client, Dirs: []string{dir}, Poll: 200 * time.Millisecond, Log: &log})
				}()
				// Its folders are watched once it says it follows them.
				eventually.True(t, 10*time.Second, "the watcher following "+dir, func() bool { return strings.Count(log.String(), ready) > started }, log.String)
				return func() { stop(); <-done }
			}
			stop := start()
			file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			if err != nil {
				t.Fatal(err)
			}
			defer file.Close()

			var (
				ws   *websocket.Conn
				seen []projection.Event
			)
			restartAt := len(lines) / 2
			for i, l := range lines {
				if i == restartAt {
					stop()
					// Lines written while no watcher runs; the one after
					// them is the first the new watcher sees written.
					for _, l := range lines[restartAt : restartAt+3] {
						if _, err := file.WriteString(l + "\n"); err != nil {
							t.Fatal(err)
						}
					}
					stop = start()
				}
				if i >= restartAt && i < restartAt+3 {
					continue
				}
				if _, err := file.WriteString(l + "\n"); err != nil {
					t.Fatal(err)
				}
				written := time.Now()
				if want[i] == 0 {
					continue
				}
				if ws == nil {
					ws = dialSession(t, ctx, client.Server, log.String)
				}
				deadline, dcancel := context.WithTimeout(ctx, time.Second)
				for len(seen) < want[i] {
					ev, err := nextEvent(deadline, ws)
					if err != nil {
						t.Fatalf("line %d: %d of %d events after %v: %v\nwatch log:\n%s", i+1, len(seen), want[i], time.Since(written), err, log.String())
					}
					seen = append(seen, ev)
				}
				dcancel()
			}
			stop()
			for i, ev := range seen {
				if ev.Seq != int64(i+1) {
					t.Fatalf("event %d has seq %d: a duplicate or a gap", i+1, ev.Seq)
				}
			}
			if len(seen) != total {
				t.Errorf("saw %d events, the file maps to %d", len(seen), total)
			}
			// Nothing more arrives: the restart sent nothing twice.
			quiet, qcancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer qcancel()
			if ev, err := nextEvent(quiet, ws); err == nil {
				t.Errorf("an extra event after the last line: %+v", ev)
			}
		})
	}
}

func readLines(t *testing.T, path string) []string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	// The fixture's last line is truncated; a watched file ends whole.
	return out[:len(out)-1]
}

// dialSession subscribes to the one session the watcher made.
func dialSession(t *testing.T, ctx context.Context, server string, log func() string) *websocket.Conn {
	t.Helper()
	var id string
	eventually.True(t, time.Second, "a session", func() bool {
		l := log()
		i := strings.Index(l, "/s/ses_")
		if i >= 0 {
			id, _, _ = strings.Cut(l[i+3:], "\n")
		}
		return i >= 0
	}, log)
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(server, "http")+"/sessions/"+id+"/live?after=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(8 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func nextEvent(ctx context.Context, c *websocket.Conn) (projection.Event, error) {
	for {
		_, raw, err := c.Read(ctx)
		if err != nil {
			return projection.Event{}, err
		}
		var m struct {
			Type  string
			Event projection.Event
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return projection.Event{}, err
		}
		if m.Type == "event" {
			return m.Event, nil
		}
	}
}

// startWatch runs a watcher over dir until the test ends.
func startWatch(t *testing.T, client *importer.Client, dir string, log *storetest.LogBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = watch.Run(ctx, watch.Options{Client: client, Dirs: []string{dir}, Poll: 100 * time.Millisecond, Log: log})
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// TestWatchRewrite rewrites a followed file in place, once at the same
// size and once truncated and written longer: each time the watcher says
// so, reads it again, and stores the lines Tack did not hold, the new
// file's first ones included.
func TestWatchRewrite(t *testing.T) {
	t.Parallel()
	client := serve(t, api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler())
	dir := t.TempDir()
	path := filepath.Join(dir, "p", "rewrite-0001.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join("..", "transcript", "testdata")
	first, err := os.ReadFile(filepath.Join(src, "claude-code-real.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, first, 0o644); err != nil {
		t.Fatal(err)
	}
	var log storetest.LogBuffer
	startWatch(t, client, dir, &log)
	id := func() string {
		l := log.String()
		i := strings.Index(l, "/s/ses_")
		if i < 0 {
			return ""
		}
		id, _, _ := strings.Cut(l[i+3:], "\n")
		return id
	}
	eventually.True(t, 5*time.Second, "session", func() bool { return id() != "" && len(stored(t, client, id())) == 9 }, log.String)
	prompts := func() []string {
		var out []string
		for _, ev := range stored(t, client, id()) {
			var d struct{ Text string }
			if ev.Type == "message/user" && json.Unmarshal(ev.Data, &d) == nil {
				out = append(out, d.Text)
			}
		}
		return out
	}

	// The same size, one word changed: only its bytes say it.
	same := strings.Replace(string(first), `"content":"Hey"`, `"content":"Hay"`, 1)
	if len(same) != len(first) {
		t.Fatal("the rewrite must keep the size")
	}
	if err := os.WriteFile(path, []byte(same), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(2 * time.Second) // a time the poll sees change
	_ = os.Chtimes(path, future, future)
	eventually.True(t, 5*time.Second, "re-read of the same-size rewrite", func() bool { return slices.Contains(prompts(), "Hay") }, log.String)

	// Truncated, then written longer with another session's lines.
	edge, err := os.ReadFile(filepath.Join(src, "claude-code-edge.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	edge = edge[:bytes.LastIndexByte(edge[:len(edge)-1], '\n')+1] // its truncated last line off
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, edge, 0o644); err != nil {
		t.Fatal(err)
	}
	eventually.True(t, 5*time.Second, "re-read of the rewritten file", func() bool {
		p := prompts()
		return slices.Contains(p, "Fix the flaky parser test\nand run the suite") && slices.Contains(p, "Now track it with tasks")
	}, log.String)
	// The watcher logs a rewrite once the Sync that found it has returned,
	// after the events it sent, so the log may trail what Tack holds.
	eventually.True(t, 5*time.Second, "the log to name both rewrites", func() bool {
		return strings.Count(log.String(), "rewritten in place") == 2
	}, log.String)
}

// TestWatchAtScale follows 2,000 transcripts, and some files it cannot
// follow, with a bounded number of open descriptors and bounded memory:
// no descriptor or read buffer is held per file. Every file ends in Tack
// or in a log line naming it.
func TestWatchAtScale(t *testing.T) {
	t.Parallel()
	const n = 2000
	client := serve(t, api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler())
	dir := t.TempDir()
	for i := range n {
		d := filepath.Join(dir, fmt.Sprintf("project-%02d", i%20))
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		line := fmt.Sprintf(`{"type":"user","sessionId":"s%d","timestamp":"2026-01-12T09:00:00Z","message":{"role":"user","content":"task %d"}}`+"\n", i, i)
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("s-%04d.jsonl", i)), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var bad []string
	for i := range 5 {
		broken := filepath.Join(dir, fmt.Sprintf("broken-%d.jsonl", i)) // a link to nothing
		if err := os.Symlink(filepath.Join(dir, "nowhere", fmt.Sprint(i)), broken); err != nil {
			t.Fatal(err)
		}
		other := filepath.Join(dir, fmt.Sprintf("other-%d.jsonl", i)) // some other tool's JSONL
		if err := os.WriteFile(other, []byte(`{"level":"info","msg":"hello"}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, broken, other)
	}
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	before := fds()
	var log storetest.LogBuffer
	startWatch(t, client, dir, &log)
	eventually.True(t, 3*time.Minute, "session for every file", func() bool { return strings.Count(log.String(), ": following into ") == n }, log.String)
	for _, b := range bad {
		if !strings.Contains(log.String(), b+": cannot follow it: ") {
			t.Errorf("no log line for %s", b)
		}
	}
	// Nothing opened stays open: the test's own server and the watcher's
	// client hold a few connections; a descriptor per file would be 2,000
	// more.
	eventually.True(t, 10*time.Second, "at most 40 descriptors more than before", func() bool { return fds() <= before+40 },
		func() string {
			return fmt.Sprintf("%d descriptors open while following %d files (%d before)", fds(), n, before)
		})
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	// A 64 KiB buffer per file would be 125 MiB alone; the other tests of
	// the package run beside this one, so the bound leaves them room.
	if m.HeapInuse > 96<<20 {
		t.Errorf("heap in use %d MiB while following %d files", m.HeapInuse>>20, n)
	}
	t.Logf("%d files: %d descriptors (%d before), heap in use %d MiB", n, fds(), before, m.HeapInuse>>20)
	if c := strings.Count(log.String(), "cannot follow it"); c != len(bad) {
		t.Errorf("%d files said they cannot be followed, want %d (each once)", c, len(bad))
	}
}

// serve serves h (the real API's handler) for the test.
func serve(t *testing.T, h http.Handler) *importer.Client {
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &importer.Client{Server: srv.URL}
}

// stored is the log Tack holds of session id.
func stored(t *testing.T, c *importer.Client, id string) []projection.Event {
	var all []projection.Event
	for {
		page, more, err := c.Events(context.Background(), id, int64(len(all)))
		if err != nil {
			t.Error(err)
			return all
		}
		all = append(all, page...)
		if !more {
			return all
		}
	}
}

// TestWatchFolderAppears: started before the agent's folder exists (a
// fresh machine), the watcher says it waits for it, and once the agent
// makes it, two levels at once, says it follows it and streams the
// transcript written there; each said once.
func TestWatchFolderAppears(t *testing.T) {
	t.Parallel()
	client := serve(t, api.New(storetest.SQLite(t, projection.Config{}), api.Options{}).Handler())
	home := t.TempDir()
	dir := filepath.Join(home, ".claude", "projects")
	var log storetest.LogBuffer
	startWatch(t, client, dir, &log)
	eventually.True(t, 5*time.Second, "the waiting line", func() bool {
		return strings.Contains(log.String(), "tack watch: waiting for "+dir+" to appear\n")
	}, log.String)

	// Something else appears beside it first: not followed, not said.
	if err := os.MkdirAll(filepath.Join(home, ".cache"), 0o755); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join("..", "transcript", "testdata", "claude-code-real.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "-work-app", "fresh-0001.jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	id := func() string {
		_, after, ok := strings.Cut(log.String(), path+": following into ")
		if !ok {
			return ""
		}
		u, _, _ := strings.Cut(after, "\n")
		return u[strings.LastIndex(u, "/")+1:]
	}
	eventually.True(t, 5*time.Second, "the transcript in Tack", func() bool { return id() != "" && len(stored(t, client, id())) == 9 }, log.String)
	l := log.String()
	if strings.Count(l, "waiting for") != 1 || strings.Count(l, "tack watch: following "+dir+"\n") != 1 || strings.Contains(l, ".cache") {
		t.Errorf("log:\n%s", l)
	}
}
