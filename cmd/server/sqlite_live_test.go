package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestSQLiteLive: with no DATABASE_URL the live sockets run on the in-process
// hub alone, and a subscriber sees every event in order and the todos view
// change, as on Postgres.
func TestSQLiteLive(t *testing.T) {
	t.Parallel()
	var out storetest.LogBuffer
	addr, stop := start(t, env(map[string]string{"TACK_DATA_DIR": filepath.Join(t.TempDir(), "tack")}), &out)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	post := func(path, body string) {
		t.Helper()
		resp, err := http.Post("http://"+addr+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	resp, err := http.Post("http://"+addr+"/sessions", "application/json", strings.NewReader(`{"title":"live"}`))
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&s)
	resp.Body.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/sessions/"+s.ID+"/live?after=0", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	type message struct {
		Type  string            `json:"type"`
		Event projection.Event  `json:"event"`
		Todos *projection.Todos `json:"todos"`
	}
	read := func() message {
		t.Helper()
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var m message
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := read(); m.Type != "todos" || m.Todos.Version != 0 {
		t.Fatalf("first message %+v, want the empty todos view", m)
	}

	post("/sessions/"+s.ID+"/events", `{"events":[{"type":"turn/start","data":{}}]}`)
	post("/sessions/"+s.ID+"/tools/todo_write", `{"todos":[{"content":"read","status":"in_progress"}]}`)
	var got []string
	for len(got) < 3 {
		switch m := read(); m.Type {
		case "event":
			got = append(got, fmt.Sprintf("event %d %s", m.Event.Seq, m.Event.Type))
		case "todos":
			got = append(got, fmt.Sprintf("todos v%d standing=%v", m.Todos.Version, m.Todos.Standing))
		}
	}
	if want := "[event 1 turn/start event 2 todo/write todos v2 standing=true]"; fmt.Sprint(got) != want {
		t.Fatalf("got %v, want %s", got, want)
	}
	if !strings.Contains(out.String(), "store=sqlite") {
		t.Errorf("start line does not name the SQLite store:\n%s", out.String())
	}
}
