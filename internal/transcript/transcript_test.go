package transcript_test

import (
	"bufio"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/transcript"
)

// short names an event type in the tables below.
var short = map[string]string{
	"turn/start": "S", "turn/end": "E", "message/user": "U", "message/assistant": "A",
	"tool/result": "R", "todo/write": "W",
}

func TestParse(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file   string
		format transcript.Format
		key    string
		title  string
		events string // one letter per event, a space per line that maps to some
	}{
		{"claude-code-real.jsonl", transcript.ClaudeCode, "claude-code:claude-code-real", "Hey", "SU A A R A WR A"},
		{"codex-real.jsonl", transcript.Codex, "codex:019982b8-3422-79e0-8b3b-05abaf4f3c3e", "Evaluate @packages/services and create a new package called @packages/services-…", "SU A R A WR"},
		{"claude-code-edge.jsonl", transcript.ClaudeCode, "claude-code:claude-code-edge", "Fix the flaky parser test", "SU A WR A R A WR A WR ESU A WR WR A WR WR A"},
		{"codex-edge.jsonl", transcript.Codex, "codex:edge-codex-0001", "Add a --json flag", "SU A WR A R A WR A E"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			path := filepath.Join("testdata", tc.file)
			lines := read(t, path)
			if got := transcript.Detect([]byte(lines[0])); got != tc.format {
				t.Fatalf("Detect %q, want %q", got, tc.format)
			}
			p := transcript.New(tc.format, path)
			var groups []string
			var all []projection.NewEvent
			for _, l := range lines {
				var g strings.Builder
				evs := p.Line([]byte(l))
				all = append(all, evs...)
				for _, ev := range evs {
					g.WriteString(short[ev.Type])
				}
				if g.Len() > 0 {
					groups = append(groups, g.String())
				}
			}
			if got := strings.Join(groups, " "); got != tc.events {
				t.Errorf("events %q\nwant   %q", got, tc.events)
			}
			if p.Key() != tc.key || p.Title() != tc.title {
				t.Errorf("key %q title %q, want %q %q", p.Key(), p.Title(), tc.key, tc.title)
			}
			// A second read of the same lines gives the same events, byte
			// for byte: what import and watch count positions by.
			again := transcript.New(tc.format, path)
			var second []projection.NewEvent
			for _, l := range lines {
				second = append(second, again.Line([]byte(l))...)
			}
			if len(all) != len(second) {
				t.Fatalf("%d events, then %d", len(all), len(second))
			}
			for i := range all {
				if all[i].Type != second[i].Type || string(all[i].Data) != string(second[i].Data) {
					t.Errorf("event %d differs on a second read: %s %s / %s %s", i, all[i].Type, all[i].Data, second[i].Type, second[i].Data)
				}
			}
			if !reflect.DeepEqual(p.Skipped(), again.Skipped()) {
				t.Errorf("skipped %v, then %v", p.Skipped(), again.Skipped())
			}
		})
	}
}

func read(t *testing.T, path string) []string {
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
	return out
}
