package api

import (
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestRemoteChangesReadOnce: a burst of other instances' change notices
// naming subscribed sessions starts one reader, not a goroutine per
// notice, and reads each session once however many notices named it.
func TestRemoteChangesReadOnce(t *testing.T) {
	s := New(storetest.SQLite(t, projection.Config{}), Options{})
	m := s.mcp
	var ids []string
	for i := range 50 {
		id := "ses_burst" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		ids = append(ids, id)
		m.subscribed.Add(id, 0, 64+len(id))
	}
	for range 1000 {
		m.remoteChanged(ids)
	}
	if n := m.readersMost.Load(); n > 1 {
		t.Errorf("1,000 notices ran %d readers at once, want one", n)
	}
	m.subscribedMu.Lock()
	pending := len(m.rereads)
	m.subscribedMu.Unlock()
	if pending > len(ids) {
		t.Errorf("%d sessions to read again, want at most %d", pending, len(ids))
	}
}
