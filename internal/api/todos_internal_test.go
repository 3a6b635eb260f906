package api

import (
	"bytes"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

// TestToolOKEncoding: the hand-written answer of a call the tool took is
// byte for byte the toolResult encoding/json writes, for a list with
// HTML's specials, a quote, a line separator, text beyond ASCII and times
// set and unset, and for an empty one.
func TestToolOKEncoding(t *testing.T) {
	t.Parallel()
	at := projection.NewTime(time.Date(2026, 12, 1, 9, 5, 7, 8_000_000, time.UTC))
	items := []projection.Item{
		{ID: "a1", Content: `fix <b> & "quote"`, Status: "completed", UpdatedAt: at, CreatedAt: at, StartedAt: &at, CompletedAt: &at},
		{ID: "b2", Content: "naïve\u2028日本", Status: "pending", UpdatedAt: at, CreatedAt: at},
	}
	for _, todos := range []projection.Todos{
		{Version: 7, Todos: items, Counts: projection.Count(items)},
		{Version: 0, Todos: []projection.Item{}},
	} {
		text := projection.WriteText(todos.Counts) + " <&>"
		v := todos.Version
		var want bytes.Buffer
		if err := encodeJSON(&want, toolResult{Content: text, Result: &toolOutput{Todos: todos.Todos, Counts: todos.Counts}, Version: &v}); err != nil {
			t.Fatal(err)
		}
		if got := appendToolOK(nil, text, todos); string(got) != want.String() {
			t.Fatalf("got  %s\nwant %s", got, want.String())
		}
	}
}
