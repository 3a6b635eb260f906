package api

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

// TestAppendToolOK holds the hand-written tool answer to what writeJSON
// makes of the same toolResult, over strings that need every kind of escape.
func TestAppendToolOK(t *testing.T) {
	at := projection.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 678e6, time.UTC))
	contents := []string{
		"plain", "café ✓ 🚀", `quote " and \ backslash`, "<b>&amp;</b>", "tab\tnew\nline\r\x01",
		"line\u2028sep\u2029", "bad \xff utf-8", "",
	}
	lists := [][]projection.Item{nil, {}}
	var all []projection.Item
	for _, c := range contents {
		all = append(all, projection.Item{ID: projection.ItemID(c), Content: c, Status: projection.StatusPending, UpdatedAt: at})
	}
	lists = append(lists, all)
	for _, items := range lists {
		for _, text := range []string{"Updated todo list: 1 pending, 0 in progress, 0 completed.", "Todo list:\n[>] \"x\" <y>"} {
			todos := projection.Todos{SessionID: "s", Version: 42, Todos: items, Counts: projection.Count(items)}
			v := todos.Version
			want := httptest.NewRecorder()
			writeJSON(want, 200, toolResult{Content: text, Result: &toolOutput{Todos: todos.Todos, Counts: todos.Counts}, Version: &v})
			got := httptest.NewRecorder()
			toolOK(got, text, todos)
			if got.Body.String() != want.Body.String() {
				t.Errorf("items %d, text %q:\n got %s\nwant %s", len(items), text, got.Body, want.Body)
			}
			if got.Code != want.Code || got.Header().Get("Content-Type") != want.Header().Get("Content-Type") {
				t.Errorf("status %d %q, want %d %q", got.Code, got.Header().Get("Content-Type"), want.Code, want.Header().Get("Content-Type"))
			}
		}
	}
}
