package demo_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/demo"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// The script plays through the real API without a step the server refuses
// (other than the rejection it stages), and ends on its second plan, done.
func TestRunPlaysTheScript(t *testing.T) {
	t.Parallel()
	st := storetest.Postgres(t, projection.Config{})
	srv := httptest.NewServer(api.New(st, api.Options{}).Handler())
	t.Cleanup(srv.Close)

	id, err := demo.Run(context.Background(), srv.URL, demo.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.Get(srv.URL + "/sessions/" + id + "/todos")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var todos projection.Todos
	if err := json.NewDecoder(res.Body).Decode(&todos); err != nil {
		t.Fatal(err)
	}
	if !todos.Standing || len(todos.Todos) != 3 || todos.Counts.Completed != 3 {
		t.Errorf("final todos = %+v, want a standing plan of 3, all completed", todos)
	}
	msgs, err := st.Messages(context.Background(), id, 0, 1000)
	if err != nil || msgs.HasMore {
		t.Fatal(err, msgs.HasMore)
	}
	rejected := 0
	for _, m := range msgs.Messages {
		if m.Role == "tool" && m.IsError != nil && *m.IsError {
			rejected++
		}
	}
	if rejected != 1 {
		t.Errorf("rejected tool results = %d, want 1 (the two-in-progress todo_write)", rejected)
	}
}
