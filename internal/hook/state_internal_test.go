package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// TestStateWrittenWhole: hooks of one transcript read and write its state
// at once, states of every length; no reader ever sees one half written
// or two mixed, and the file holds the last one written, as JSON reads it.
func TestStateWrittenWhole(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "state.json")
	state := func(w, i int) []byte {
		// Lengths vary a lot between writers, so that a longer state is
		// overwritten by shorter ones and the other way round.
		raw, _ := json.Marshal(map[string]any{"writer": w, "i": i, "pad": strings.Repeat("x", (w*97+i*31)%700)})
		return raw
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	// A lock not had within stateLockWait is how a loaded machine says
	// "not now": the state is not saved, or read as none, as the hooks
	// take it. It must not be every time.
	var written atomic.Int64
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				err := writeState(path, state(w, i))
				if errors.Is(err, syscall.EWOULDBLOCK) {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("write: %w", err)
					return
				}
				written.Add(1)
			}
		})
	}
	for range 4 {
		wg.Go(func() {
			for range 400 {
				raw, err := readState(path)
				if os.IsNotExist(err) || errors.Is(err, syscall.EWOULDBLOCK) {
					continue
				}
				if err != nil {
					errs <- fmt.Errorf("read: %w", err)
					return
				}
				var got struct {
					Writer, I int
					Pad       string
				}
				if err := json.Unmarshal(raw, &got); err != nil {
					errs <- fmt.Errorf("read a state half written: %q: %w", raw, err)
					return
				}
				if want := state(got.Writer, got.I); !bytes.Equal(bytes.TrimRight(raw, " "), want) {
					errs <- fmt.Errorf("read %q, which no writer wrote", raw)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if written.Load() == 0 {
		t.Error("no write had the lock")
	}
	if err := writeState(path, []byte(`{"last":true}`)); err != nil {
		t.Fatal(err)
	}
	raw, err := readState(path)
	if err != nil {
		t.Fatal(err)
	}
	var last struct{ Last bool }
	if err := json.Unmarshal(raw, &last); err != nil || !last.Last {
		t.Errorf("after the last write the state reads %q (%v)", raw, err)
	}
	if info, err := os.Stat(path); err != nil || info.Size() > 2*int64(len(`{"last":true}`)) {
		t.Errorf("a short state left the file at %d bytes (%v): it is cut once past twice the state", info.Size(), err)
	}
}
