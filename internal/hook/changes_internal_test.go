package hook

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// TestWaitForText: the text is found when it is in the file already, when
// a line brings it while the hook waits (on every system: a watch of the
// file or ticks), and not when it never comes or the file is missing.
func TestWaitForText(t *testing.T) {
	t.Parallel()
	for name, watch := range map[string]func(string) changes{"fileChanges": fileChanges, "ticks": newTicks} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "t.jsonl")
			if err := os.WriteFile(path, []byte(`{"id":"toolu_old"}`+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			if !waitWatching(ctx, path, "toolu_old", time.Second, watch) {
				t.Error("a line already written was not found")
			}
			done := make(chan bool)
			go func() { done <- waitWatching(ctx, path, "toolu_new", 10*time.Second, watch) }()
			appendLine(t, path, `{"id":"toolu_new"}`)
			if !<-done {
				t.Error("a line written while the hook waited was not found")
			}
			if waitWatching(ctx, path, "toolu_never", 50*time.Millisecond, watch) {
				t.Error("a line never written was found")
			}
			if waitWatching(ctx, filepath.Join(t.TempDir(), "missing.jsonl"), "toolu_old", 50*time.Millisecond, watch) {
				t.Error("a missing file held the line")
			}
		})
	}
}

func appendLine(t testing.TB, path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkWaitWake is how long after the agent writes the call's line a
// waiting hook sees it, watching the file (fileChanges) and ticking every
// changeCheck as before: the line is written a little after the wait
// begins, as Claude Code writes it after it starts a PreToolUse hook.
// It reports the p50 and p99 of the delay.
func BenchmarkWaitWake(b *testing.B) {
	for name, watch := range map[string]func(string) changes{"fileChanges": fileChanges, "ticks": newTicks} {
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "t.jsonl")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				b.Fatal(err)
			}
			var delays []time.Duration
			for i := 0; b.Loop(); i++ {
				id := "toolu_" + time.Now().Format("150405.000000000")
				waiting := make(chan struct{})
				found := make(chan time.Time)
				go func() {
					close(waiting)
					if waitWatching(context.Background(), path, id, 5*time.Second, watch) {
						found <- time.Now()
					} else {
						found <- time.Time{}
					}
				}()
				<-waiting
				// The line comes 1-7 ms into the wait (a few of the
				// ticker's period, none aligned with it).
				time.Sleep(time.Duration(1+i%7) * time.Millisecond) // the agent's delay, which the bench plays; no clock serves a real file's write
				wrote := time.Now()
				appendLine(b, path, `{"id":"`+id+`"}`)
				at := <-found
				if at.IsZero() {
					b.Fatal("the line was not found")
				}
				delays = append(delays, at.Sub(wrote))
			}
			slices.Sort(delays)
			b.ReportMetric(float64(delays[len(delays)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(delays[len(delays)*95/100].Microseconds()), "p95-µs")
		})
	}
}
