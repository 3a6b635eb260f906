package engine

import (
	"errors"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// FuzzDecodeCursor: decoding any string either fails with store.ErrBadCursor or
// gives a position that encodes back to a cursor decoding to itself, within
// the bounds the database can compare.
func FuzzDecodeCursor(f *testing.F) {
	f.Fuzz(func(t *testing.T, c string) {
		cur, err := decodeCursor(c)
		if err != nil {
			if !errors.Is(err, store.ErrBadCursor) {
				t.Fatalf("decodeCursor(%q): %v, want store.ErrBadCursor", c, err)
			}
			return
		}
		if y := cur.UpdatedAt.Year(); y < 1 || y > 9999 || cur.ID == "" || !printable(cur.ID) {
			t.Fatalf("decodeCursor(%q) = %+v: out of bounds", c, cur)
		}
		again, err := decodeCursor(encodeCursor(store.Session{UpdatedAt: projection.NewTime(cur.UpdatedAt), ID: cur.ID}))
		if err != nil || !again.UpdatedAt.Equal(cur.UpdatedAt) || again.ID != cur.ID {
			t.Fatalf("decodeCursor(%q) = %+v, re-encoded decodes to %+v, %v", c, cur, again, err)
		}
	})
}
