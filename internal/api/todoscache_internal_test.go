package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
)

// TestTodosCacheBounded: the encoded answers stay under both bounds, and an
// answer over the per-answer bound is served but not kept.
func TestTodosCacheBounded(t *testing.T) {
	t.Parallel()
	c := newTodosCache()
	view := func(id string, content string) projection.Todos {
		items := []projection.Item{{ID: "1", Content: content, Status: "pending"}}
		return projection.Todos{SessionID: id, Version: 1, Todos: items, Counts: projection.Count(items)}
	}
	for i := range todosCacheEntries + 100 {
		v := view(fmt.Sprintf("ses_%d", i), "x")
		if _, err := c.encode(v, todosETag(v, false), false); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.answers.Len(); n != todosCacheEntries {
		t.Errorf("%d answers kept, want the bound %d", n, todosCacheEntries)
	}
	big := strings.Repeat("y", 64<<10)
	for i := range 2 * todosCacheBytes / (64 << 10) {
		v := view(fmt.Sprintf("big_%d", i), big)
		if _, err := c.encode(v, todosETag(v, true), true); err != nil {
			t.Fatal(err)
		}
		if n := c.answers.Bytes(); n > todosCacheBytes {
			t.Fatalf("after %d large answers: %d bytes kept, over %d", i+1, n, todosCacheBytes)
		}
	}
	huge := view("huge", strings.Repeat("z", todosCacheBytes/64))
	answer, err := c.encode(huge, todosETag(huge, false), false)
	if err != nil || len(answer.body) < todosCacheBytes/64 {
		t.Fatalf("huge answer: %v", err)
	}
	if _, ok := c.cached(huge, false); ok {
		t.Error("an answer over the per-answer bound was kept")
	}
	if _, ok := c.cached(view("big_0", big), true); ok {
		t.Error("the oldest large answer was not forgotten")
	}
	last := view(fmt.Sprintf("big_%d", 2*todosCacheBytes/(64<<10)-1), big)
	if _, ok := c.cached(last, true); !ok {
		t.Error("the newest large answer was forgotten")
	}
}

// TestTodosCacheTakesTheStoresItems: an answer encoded from one decode of a
// list is served for another decode of the same list, and is then kept
// with the other's items, so that the reads after it compare no items.
func TestTodosCacheTakesTheStoresItems(t *testing.T) {
	t.Parallel()
	c := newTodosCache()
	view := func() projection.Todos {
		items := []projection.Item{{ID: "1", Content: "read the code", Status: "pending"}, {ID: "2", Content: "fix it", Status: "pending"}}
		return projection.Todos{SessionID: "ses_1", Version: 3, Todos: items, Counts: projection.Count(items)}
	}
	first, second := view(), view()
	encoded, err := c.encode(first, todosETag(first, false), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, walked := sameView(first, second); !walked {
		t.Fatal("two decodes of a list compared as the same items")
	}
	e, hit := c.cached(second, false)
	if !hit || string(e.body) != string(encoded.body) || e.etag[0] != encoded.etag[0] {
		t.Fatalf("the same list decoded again: hit %v, %s", hit, e.body)
	}
	if kept, _ := c.answers.Get(todosKey{"ses_1", false}); &kept.view.Todos[0] != &second.Todos[0] {
		t.Fatal("the answer is still kept with the first decode's items")
	}
	if same, walked := sameView(e.view, second); !same || walked {
		t.Fatalf("the next read: same %v, walked %v; want the same, unwalked", same, walked)
	}
	changed := view()
	changed.Todos[1].Status = "in_progress"
	if _, hit := c.cached(changed, false); hit {
		t.Fatal("a changed list was served the kept answer")
	}
}
