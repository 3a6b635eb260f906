package fast

import (
	"fmt"
	"strings"
	"testing"
)

// TestDecodedCacheBounded: lists of many sessions, more than the cache may
// hold in bytes, leave it within its bound; the last one read is kept, and
// a changed list is decoded afresh.
func TestDecodedCacheBounded(t *testing.T) {
	t.Parallel()
	c := newDecodedCache()
	content := strings.Repeat("x", 1000)
	raw := []byte(`[`)
	for i := range 100 {
		if i > 0 {
			raw = append(raw, ',')
		}
		raw = fmt.Appendf(raw, `{"id":"t_%d","content":"%s%d","status":"pending"}`, i, content, i)
	}
	raw = append(raw, ']')
	for i := range 2000 {
		if _, err := c.decode(fmt.Sprint("ses_", i), raw); err != nil {
			t.Fatal(err)
		}
		if n := c.lists.Bytes(); n > decodedCacheBytes {
			t.Fatalf("after %d lists: %d bytes, bound %d", i+1, n, decodedCacheBytes)
		}
	}
	if _, ok := c.lists.Get("ses_1999"); !ok {
		t.Error("the last list read is not kept")
	}
	items, err := c.decode("ses_1999", []byte(`[{"id":"t_1","content":"new","status":"completed"}]`))
	if err != nil || len(items) != 1 || items[0].Content != "new" {
		t.Errorf("a changed list: %+v, %v", items, err)
	}
}
