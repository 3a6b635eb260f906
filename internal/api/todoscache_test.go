package api_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestTodosAnswerCached: a GET /todos of an unchanged view is answered with
// the body encoded last time, per format; after every kind of change — a
// todo_write here or on another instance, a person's edit, a turn/start
// that ends the standing plan, todo_read marking the list seen, a write
// that leaves the same items — the body and ETag served are what a server
// that never encoded them answers.
func TestTodosAnswerCached(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			st := f.Open(t, projection.Config{})
			b, other := setup(t, st, api.Options{}), setup(t, st, api.Options{})
			id := b.openSession()
			paths := []string{"/sessions/" + id + "/todos", "/sessions/" + id + "/todos?format=acp"}

			// fresh checks each format's answer against a server that has
			// encoded nothing yet.
			fresh := func(step string) {
				t.Helper()
				cold := setup(t, st, api.Options{})
				for _, p := range paths {
					got, want := b.do("GET", p, nil), cold.do("GET", p, nil)
					b.want(got, http.StatusOK, nil)
					if !bytes.Equal(got.Body, want.Body) || got.Header.Get("ETag") != want.Header.Get("ETag") {
						t.Errorf("after %s, GET %s: %s %s, a fresh encode %s %s", step, p,
							got.Header.Get("ETag"), got.Body, want.Header.Get("ETag"), want.Body)
					}
				}
			}

			fresh("the first turn/start")
			b.writeOK(id, todo("read the code", "in_progress"), todo("fix it", "pending"))
			fresh("a todo_write")

			// Unchanged: three reads of each format, no encode.
			n := b.server.TodosEncodes()
			for range 3 {
				for _, p := range paths {
					b.want(b.do("GET", p, nil), http.StatusOK, nil)
				}
			}
			if d := b.server.TodosEncodes() - n; d != 0 {
				t.Errorf("six reads of an unchanged view: %d encodes, want 0", d)
			}
			// A 304 encodes nothing either.
			r := b.do("GET", paths[0], nil)
			if r = b.do("GET", paths[0], nil, "If-None-Match", r.Header.Get("ETag")); r.Status != http.StatusNotModified {
				t.Errorf("If-None-Match of the current tag: %d", r.Status)
			}
			if d := b.server.TodosEncodes() - n; d != 0 {
				t.Errorf("reads and a 304 of an unchanged view: %d encodes, want 0", d)
			}

			td := b.todos(id)
			b.editOK(id, td.Version, todo("read the code", "completed"), todo("fix it", "in_progress"))
			fresh("a person's edit")
			b.read(id)
			fresh("todo_read")
			b.writeOK(id, todo("read the code", "completed"), todo("fix it", "in_progress"))
			fresh("a todo_write of the same items")
			other.writeOK(id, todo("fix it", "completed"))
			fresh("a todo_write on another instance")
			b.appendOK(id, turnEnd())
			fresh("turn/end")
			n = b.server.TodosEncodes()
			b.appendOK(id, turnStart())
			fresh("a turn/start that ends the standing plan")
			if d := b.server.TodosEncodes() - n; d != 2 {
				t.Errorf("the plan stopped standing: %d encodes, want 2 (one a format)", d)
			}
			b.appendOK(id, turnEnd(), turnStart())
			other.writeOK(id)
			fresh("an empty list written")
		})
	}
}
