package api_test

import (
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

func TestPages(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "BoundedByBytes", run: testPagesBoundedByBytes},
		{name: "MessagesPaging", run: testMessagesPaging},
		{name: "MessagesBadParams", run: testMessagesBadParams},
	})
}

type messagesPage struct {
	Messages  []projection.Message
	HasMore   bool
	NextAfter *int64
}

// dataBefore is the data of all the events but the last: under the budget
// in every page, which stops once it passes the budget.
func dataBefore(events []projection.Event) int {
	n := 0
	for _, e := range events[:max(len(events)-1, 0)] {
		n += len(e.Data)
	}
	return n
}

// testPagesBoundedByBytes reads a session of several MiB through /events,
// /history and /messages: every page stays within the byte budget plus one
// event, and the pages together are the whole log and the whole surface.
func testPagesBoundedByBytes(t *testing.T, b *bundle) {
	id := b.openSession()
	const size = 120 << 10
	for r := 0; r < 8; r++ {
		call := fmt.Sprintf("c%d", r)
		b.appendOK(id,
			userMsg(strings.Repeat("u", size)),
			ev("message/assistant", map[string]any{"text": strings.Repeat("a", size),
				"toolCalls": []any{map[string]any{"id": call, "name": "run", "args": map[string]any{}}}}),
			ev("tool/result", map[string]any{"callId": call, "name": "run", "isError": false, "content": strings.Repeat("r", size)}),
		)
	}
	all := b.events(id)

	var forwards []projection.Event
	pages := 0
	for after := int64(0); ; pages++ {
		var p page
		b.want(b.do("GET", fmt.Sprintf("/sessions/%s/events?after=%d&limit=1000", id, after), nil), http.StatusOK, &p)
		if len(p.Events) == 0 || dataBefore(p.Events) >= store.MaxPageBytes {
			t.Fatalf("events after %d: %d events, %d bytes before the last", after, len(p.Events), dataBefore(p.Events))
		}
		forwards = append(forwards, p.Events...)
		if !p.HasMore {
			break
		}
		after = p.Events[len(p.Events)-1].Seq
	}
	if pages < 2 || !reflect.DeepEqual(forwards, all) {
		t.Errorf("%d pages forwards: %v, the log %v", pages+1, seqs(forwards), seqs(all))
	}

	var backwards []projection.Event
	for q := "?limit=1000"; ; {
		var p page
		b.want(b.do("GET", "/sessions/"+id+"/history"+q, nil), http.StatusOK, &p)
		n := 0
		for _, e := range p.Events[1:] {
			n += len(e.Data)
		}
		if n >= store.MaxPageBytes {
			t.Fatalf("history%s: %d events, %d bytes after the oldest", q, len(p.Events), n)
		}
		backwards = append(append([]projection.Event{}, p.Events...), backwards...)
		if !p.HasMore {
			break
		}
		q = fmt.Sprintf("?limit=1000&before=%d", p.Events[0].Seq)
	}
	if !reflect.DeepEqual(backwards, all) {
		t.Errorf("pages backwards %v, the log %v", seqs(backwards), seqs(all))
	}

	var surface []projection.Event
	for _, e := range all {
		if projection.Surface(e.Type) {
			surface = append(surface, e)
		}
	}
	var msgs []projection.Message
	at := 0
	for after := int64(0); ; {
		var p messagesPage
		q := fmt.Sprintf("?after=%d", after)
		if after == 0 {
			q = "" // the default first page
		}
		b.want(b.do("GET", "/sessions/"+id+"/messages"+q, nil), http.StatusOK, &p)
		if len(p.Messages) == 0 || at+len(p.Messages) > len(surface) || p.NextAfter == nil {
			t.Fatalf("messages after %d: %d messages (nextAfter %v)", after, len(p.Messages), p.NextAfter)
		}
		events := surface[at : at+len(p.Messages)]
		at += len(p.Messages)
		if dataBefore(events) >= store.MaxPageBytes || *p.NextAfter != events[len(events)-1].Seq {
			t.Errorf("messages after %d: %d messages of %d bytes before the last, nextAfter %d", after, len(events), dataBefore(events), *p.NextAfter)
		}
		msgs = append(msgs, p.Messages...)
		if !p.HasMore {
			break
		}
		after = *p.NextAfter
	}
	if want := projection.DeriveMessages(all); !reflect.DeepEqual(msgs, want) {
		t.Errorf("pages of messages: %d messages, the surface %d", len(msgs), len(want))
	}
}

// testMessagesPaging pins the shape of small pages: after, limit, hasMore
// and nextAfter, and a call kept with its result.
func testMessagesPaging(t *testing.T, b *bundle) {
	id := b.newSession()
	b.appendOK(id,
		userMsg("go"), // 1
		turnStart(),   // 2
		ev("message/assistant", map[string]any{"text": "calling", "toolCalls": []any{map[string]any{"id": "c1", "name": "run", "args": map[string]any{}}}}), // 3
		ev("tool/result", map[string]any{"callId": "c1", "name": "run", "isError": false, "content": "ok"}),                                                 // 4
		ev("message/assistant", map[string]any{"text": "done"}),                                                                                             // 5
		turnEnd(), // 6
	)
	get := func(q string) string {
		r := b.do("GET", "/sessions/"+id+"/messages"+q, nil)
		b.want(r, http.StatusOK, nil)
		return strings.TrimSpace(string(r.Body))
	}
	const (
		user   = `{"role":"user","text":"go"}`
		call   = `{"role":"assistant","text":"calling","toolCalls":[{"id":"c1","name":"run","args":{}}]}`
		result = `{"role":"tool","text":"ok","toolCallId":"c1","name":"run","isError":false}`
		done   = `{"role":"assistant","text":"done"}`
	)
	cases := map[string]string{
		"":                 `{"hasMore":false,"messages":[` + user + `,` + call + `,` + result + `,` + done + `],"nextAfter":5}`,
		"?limit=1":         `{"hasMore":true,"messages":[` + user + `],"nextAfter":1}`,
		"?limit=2":         `{"hasMore":true,"messages":[` + user + `],"nextAfter":1}`,
		"?after=1&limit=1": `{"hasMore":true,"messages":[` + call + `,` + result + `],"nextAfter":4}`,
		"?after=4&limit=1": `{"hasMore":false,"messages":[` + done + `],"nextAfter":5}`,
		"?after=5":         `{"hasMore":false,"messages":[],"nextAfter":5}`,
		"?after=99":        `{"hasMore":false,"messages":[],"nextAfter":99}`,
	}
	for q, want := range cases {
		if got := get(q); got != want {
			t.Errorf("messages%s\n%s\nwant\n%s", q, got, want)
		}
	}
}

func testMessagesBadParams(t *testing.T, b *bundle) {
	path := "/sessions/" + b.newSession() + "/messages"
	cases := map[string]string{
		"?after=-1":   "`after` must be an integer from 0 to 9223372036854775807",
		"?after=x":    "`after` must be an integer from 0 to 9223372036854775807",
		"?limit=0":    "`limit` must be an integer from 1 to 1000",
		"?limit=1001": "`limit` must be an integer from 1 to 1000",
		"?limit=1.5":  "`limit` must be an integer from 1 to 1000",
	}
	for q, want := range cases {
		if msg := b.wantError(b.do("GET", path+q, nil), http.StatusBadRequest, "invalid"); msg != want {
			t.Errorf("messages%s: %q, want %q", q, msg, want)
		}
	}
	b.wantError(b.do("GET", "/sessions/ses_nosuch/messages?after=3&limit=5", nil), http.StatusNotFound, "not_found")
}
