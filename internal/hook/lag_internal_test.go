package hook

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
)

// TestLagFileLosesNothing: hooks record calls in a lag file while others
// take it (each a file of its own, as parallel hook processes and a
// server's requests have it); every call recorded is taken once, none
// lost to a take that renamed the file as it was written to.
func TestLagFileLosesNothing(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no flock: lag_other.go says what it may miss")
	}
	t.Parallel()
	file := filepath.Join(t.TempDir(), "s.lag")
	const writers, each = 8, 200
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		taken = map[string]int{}
		done  = make(chan struct{})
	)
	take := func() {
		for _, c := range takeLagged(file) {
			mu.Lock()
			taken[c]++
			mu.Unlock()
		}
	}
	var takers sync.WaitGroup
	for range 2 {
		takers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
					take()
				}
			}
		})
	}
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				appendLag(file, fmt.Sprintf("toolu_%d_%d\n", w, i))
			}
		})
	}
	wg.Wait()
	close(done)
	takers.Wait()
	take()
	if len(taken) != writers*each {
		t.Errorf("%d calls taken, want %d", len(taken), writers*each)
	}
	for c, n := range taken {
		if n != 1 {
			t.Errorf("%s taken %d times", c, n)
		}
	}
}
