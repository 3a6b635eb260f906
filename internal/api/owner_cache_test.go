package api_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// ownerReads is a real store that counts the owner look-ups it answers.
type ownerReads struct {
	store.Store
	n atomic.Int64
}

func (o *ownerReads) SessionOwner(ctx context.Context, id string) (string, error) {
	o.n.Add(1)
	return o.Store.SessionOwner(ctx, id)
}

// TestSessionOwnerCached: a session's owner never changes, so each instance
// reads it from the store once; a session not found is read again every
// time (another instance may create it), and the cached owner still keeps
// another principal's session not found.
func TestSessionOwnerCached(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			st := f.Open(t, projection.Config{})
			ra, rb := &ownerReads{Store: st}, &ownerReads{Store: st}
			a, b := setup(t, ra, api.Options{}), setup(t, rb, api.Options{})

			// Made on b: a reads its owner once, then knows it.
			var sess store.Session
			b.want(b.do("POST", "/sessions", map[string]string{"title": "t"}), http.StatusCreated, &sess)
			for range 3 {
				a.want(a.do("GET", "/sessions/"+sess.ID+"/todos", nil), http.StatusOK, nil)
			}
			if n := ra.n.Load(); n != 1 {
				t.Errorf("three reads of a session made elsewhere: %d owner look-ups, want 1", n)
			}
			// Made on b, read on b: the instance that made it knows its owner.
			b.want(b.do("GET", "/sessions/"+sess.ID+"/todos", nil), http.StatusOK, nil)
			if n := rb.n.Load(); n != 0 {
				t.Errorf("a read of a session made here: %d owner look-ups, want 0", n)
			}
			// Not found is never remembered.
			before := ra.n.Load()
			for range 2 {
				a.wantError(a.do("GET", "/sessions/ses_absent/todos", nil), http.StatusNotFound, "not_found")
			}
			if n := ra.n.Load() - before; n != 2 {
				t.Errorf("two reads of a missing session: %d owner look-ups, want 2", n)
			}
		})
	}
}

// TestSessionOwnerCachedStaysPrivate: once alice's session's owner is
// cached, bob still finds it not found, on every session route.
func TestSessionOwnerCachedStaysPrivate(t *testing.T) {
	t.Parallel()
	reads := &ownerReads{Store: storetest.Postgres(t, projection.Config{})}
	a := setupAuth(t, reads, 0, 0)
	path := "/sessions/" + a.session + "/todos"
	a.want(a.do("GET", path, nil, "Authorization", "Bearer "+a.write), http.StatusOK, nil)
	a.want(a.do("GET", path, nil, "Authorization", "Bearer "+a.write), http.StatusOK, nil)
	if n := reads.n.Load(); n != 1 {
		t.Errorf("two reads by the owner: %d owner look-ups, want 1", n)
	}
	for _, c := range []struct{ method, path string }{
		{"GET", path}, {"GET", "/sessions/" + a.session}, {"POST", "/sessions/" + a.session + "/tools/todo_write"},
	} {
		var body any
		if c.method == "POST" {
			body = map[string]any{"todos": []any{}}
		}
		a.wantError(a.do(c.method, c.path, body, "Authorization", "Bearer "+a.other), http.StatusNotFound, "not_found")
	}
}
