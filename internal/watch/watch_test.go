package watch_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/api"
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
			srv := httptest.NewServer(api.New(st, api.Options{OnAppend: hub.OnAppend, Live: hub}).Handler())
			defer srv.Close()
			client := &importer.Client{Server: srv.URL}

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
				total += len(p.Line([]byte(l)))
				want[i] = total
			}

			var log storetest.LogBuffer
			start := func() context.CancelFunc {
				wctx, stop := context.WithCancel(ctx)
				done := make(chan struct{})
				go func() {
					defer close(done)
					_ = watch.Run(wctx, watch.Options{Client: client, Dirs: []string{dir}, Poll: 200 * time.Millisecond, Log: &log})
				}()
				time.Sleep(100 * time.Millisecond) // its folders are watched
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
					ws = dialSession(t, ctx, srv.URL, log.String)
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
				time.Sleep(150 * time.Millisecond) // the agent thinks
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
	deadline := time.Now().Add(time.Second)
	for {
		l := log()
		if i := strings.Index(l, "/s/ses_"); i >= 0 {
			id, _, _ := strings.Cut(l[i+3:], "\n")
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(server, "http")+"/sessions/"+id+"/live?after=0", nil)
			if err != nil {
				t.Fatal(err)
			}
			c.SetReadLimit(8 << 20)
			t.Cleanup(func() { c.CloseNow() })
			return c
		}
		if time.Now().After(deadline) {
			t.Fatalf("no session within a second; log:\n%s", l)
		}
		time.Sleep(20 * time.Millisecond)
	}
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
