package projection_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
)

// fuzzState is a log with an open turn and one list written (version 2),
// closed when closed is set, and the events that made it.
func fuzzState(t *testing.T, closed bool) (projection.State, []projection.Event) {
	var s projection.State
	var log []projection.Event
	add := func(typ, data string) {
		ev, err := s.Apply(projection.NewEvent{Type: typ, Data: json.RawMessage(data)}, projection.NewTime(time.Unix(1, 0)), projection.Config{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		log = append(log, ev)
	}
	add("turn/start", `{}`)
	add("todo/write", `{"todos":[{"content":"first","status":"pending"}]}`)
	if closed {
		add("turn/end", `{"reason":"completed"}`)
	}
	return s, log
}

// checkApplied holds for every Apply outcome: a rejection is a
// *projection.Error with a known code and a message and leaves the state as
// it was; an acceptance stores canonical data (valid JSON that is accepted
// again, as itself) and a state that Replay of the log reproduces.
func checkApplied(t *testing.T, before, after projection.State, log []projection.Event, ev projection.NewEvent, stored projection.Event, err error, cfg projection.Config, base *int64) {
	t.Helper()
	if err != nil {
		pe, ok := err.(*projection.Error)
		if !ok || (pe.Code != projection.CodeInvalid && pe.Code != projection.CodeConflict) || pe.Message == "" {
			t.Fatalf("Apply(%s %q) error %#v, want a *projection.Error with a code and a message", ev.Type, ev.Data, err)
		}
		if !reflect.DeepEqual(after, before) {
			t.Fatalf("a rejected %s %q changed the state", ev.Type, ev.Data)
		}
		return
	}
	if !json.Valid(stored.Data) || stored.Seq != before.LastSeq+1 || stored.Type != ev.Type {
		t.Fatalf("Apply(%s %q) stored %+v", ev.Type, ev.Data, stored)
	}
	if got := projection.Replay(append(log, stored)); !reflect.DeepEqual(got, after) {
		t.Fatalf("Apply(%s %q): state %+v, Replay gives %+v", ev.Type, ev.Data, after, got)
	}
	again := before
	ev2, err := again.Apply(projection.NewEvent{Type: stored.Type, Data: stored.Data}, stored.At, cfg, base)
	if err != nil || string(ev2.Data) != string(stored.Data) {
		t.Fatalf("stored data %s of %s does not round-trip: %s, %v", stored.Data, ev.Type, ev2.Data, err)
	}
	if ev.Type == projection.TypeTodoWrite {
		var d struct {
			Todos []struct{ Content, Status string }
		}
		_ = json.Unmarshal(stored.Data, &d)
		if len(d.Todos) != len(after.Items) {
			t.Fatalf("stored %s, current list %+v", stored.Data, after.Items)
		}
		for i, it := range after.Items {
			if it.Content != d.Todos[i].Content || it.Status != d.Todos[i].Status || strings.TrimSpace(it.Content) != it.Content {
				t.Fatalf("stored %s, current list %+v", stored.Data, after.Items)
			}
		}
	}
}

// FuzzApply validates fuzzed events of every type against a log with an
// open (or closed) turn and a written list.
func FuzzApply(f *testing.F) {
	f.Fuzz(func(t *testing.T, typ string, data []byte, closed bool) {
		before, log := fuzzState(t, closed)
		s := before
		ev := projection.NewEvent{Type: typ, Data: json.RawMessage(data)}
		stored, err := s.Apply(ev, projection.NewTime(time.Unix(2, 0)), projection.Config{}, nil)
		checkApplied(t, before, s, log, ev, stored, err, projection.Config{}, nil)
	})
}

// FuzzTodoWrite runs fuzzed todo_write arguments the way the tool endpoint
// does: ParseTodoWriteArgs, then Apply. A rejection at either step is the
// model-facing *projection.Error; an accepted list is stored canonically and
// becomes the current list.
func FuzzTodoWrite(f *testing.F) {
	f.Fuzz(func(t *testing.T, args []byte, parallel bool) {
		ev, base, err := projection.ParseTodoWriteArgs(json.RawMessage(args))
		if err != nil {
			if pe, ok := err.(*projection.Error); !ok || pe.Code != projection.CodeInvalid || pe.Message == "" {
				t.Fatalf("ParseTodoWriteArgs(%q) error %#v, want an invalid *projection.Error", args, err)
			}
			return
		}
		cfg := projection.Config{AllowParallel: parallel}
		before, log := fuzzState(t, false)
		s := before
		stored, err := s.Apply(ev, projection.NewTime(time.Unix(2, 0)), cfg, base)
		checkApplied(t, before, s, log, ev, stored, err, cfg, base)
		if err == nil && s.Version != stored.Seq {
			t.Fatalf("accepted %q: version %d, want %d", args, s.Version, stored.Seq)
		}
	})
}
