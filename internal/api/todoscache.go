package api

import (
	"bytes"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/sizedcache"
)

// The encoded-answer cache: a Server keeps, per session and format, the
// GET /todos body it last encoded and its ETag, beside the view they were
// encoded from. A read still reads the view from the store every time (so it
// sees every acknowledged write, on any instance); only the encode is
// spared, when the view read is the very view encoded last time — every
// field the body is made of compared, not only the pair the ETag names.

// todosCacheEntries and todosCacheBytes bound the cache (the bytes an
// estimate of the body and the items it keeps alive); past either, the
// least recently read answer is forgotten first. An answer larger than
// todosCacheBytes/64 is not kept.
const (
	todosCacheEntries = 16384
	todosCacheBytes   = 32 << 20
)

type todosKey struct {
	session string
	acp     bool
}

// encodedTodos is one answer, ready to write: its ETag and Content-Length
// already header values, so that a read served from here allocates none.
type encodedTodos struct {
	view   projection.Todos
	etag   []string
	length []string
	body   []byte
}

type todosCache struct {
	answers *sizedcache.Cache[todosKey, *encodedTodos]
	// encodes counts the answers encoded (tests read it).
	encodes atomic.Int64
}

func newTodosCache() *todosCache {
	return &todosCache{answers: sizedcache.New[todosKey, *encodedTodos](todosCacheEntries, todosCacheBytes)}
}

// todosETag is the ETag of t in its format: the ACP plan is another
// representation of the same state, with its own tag.
func todosETag(t projection.Todos, acp bool) string {
	etag := ETag(t)
	if acp {
		etag = strings.TrimSuffix(etag, `"`) + `-acp"`
	}
	return etag
}

// cached returns the answer kept for t in its format, if it was encoded
// from the same view.
func (c *todosCache) cached(t projection.Todos, acp bool) (*encodedTodos, bool) {
	k := todosKey{t.SessionID, acp}
	e, ok := c.answers.Get(k)
	if !ok {
		return nil, false
	}
	same, walked := sameView(e.view, t)
	if same && walked {
		// The same view in items decoded anew: readers that raced to the
		// store's first read each decoded their own, and the store kept
		// one, maybe not the one encoded. The answer is kept with these,
		// the ones a store that keeps its copy hands out from now on, so
		// that the next read is spared the walk. (A store that decodes
		// every read, -pg-fast=false, pays a keep beside its round trip.)
		e = &encodedTodos{view: t, etag: e.etag, length: e.length, body: e.body}
		c.answers.Add(k, e, 256+cap(e.body)+projection.ItemsSize(t.Todos))
	}
	return e, same
}

// encode encodes t's answer in its format, with the ETag etag, and keeps it.
func (c *todosCache) encode(t projection.Todos, etag string, acp bool) (*encodedTodos, error) {
	c.encodes.Add(1)
	var v any = t
	if acp {
		v = projection.ACP(t)
	}
	var buf bytes.Buffer
	if err := encodeJSON(&buf, v); err != nil {
		return nil, err
	}
	body := buf.Bytes()
	e := &encodedTodos{view: t, etag: []string{etag}, length: []string{strconv.Itoa(len(body))}, body: body}
	c.answers.Add(todosKey{t.SessionID, acp}, e, 256+buf.Cap()+projection.ItemsSize(t.Todos))
	return e, nil
}

// body is the encoded answer of GET /sessions/{id}/todos for t, kept or
// encoded now.
func (c *todosCache) body(t projection.Todos) ([]byte, error) {
	if cached, hit := c.cached(t, false); hit {
		return cached.body, nil
	}
	e, err := c.encode(t, todosETag(t, false), false)
	if err != nil {
		return nil, err
	}
	return e.body, nil
}

// sameView reports whether a and b encode to the same body: every field
// compared. Items in the same backing array are the same items — the
// store shares decoded items only for readers to read, and the entry
// holding a keeps its array from being reused — so the common case, an
// unchanged list the store did not decode again, costs no walk; walked
// says whether the items had to be walked.
func sameView(a, b projection.Todos) (same, walked bool) {
	if a.SessionID != b.SessionID || a.Version != b.Version || a.Standing != b.Standing ||
		a.Counts != b.Counts || len(a.Todos) != len(b.Todos) {
		return false, false
	}
	if (a.UpdatedAt == nil) != (b.UpdatedAt == nil) || a.UpdatedAt != nil && !a.UpdatedAt.Equal(b.UpdatedAt.Time) {
		return false, false
	}
	if len(a.Todos) == 0 {
		return (a.Todos == nil) == (b.Todos == nil), false // null or []
	}
	if &a.Todos[0] == &b.Todos[0] {
		return true, false
	}
	return reflect.DeepEqual(a.Todos, b.Todos), true
}
