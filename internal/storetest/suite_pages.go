package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// bigText is n bytes of text, different for each tag.
func bigText(tag string, n int) string {
	return (tag + " " + strings.Repeat("x", n))[:n]
}

func assistantMsg(text string, callIDs ...string) projection.NewEvent {
	calls := []map[string]any{}
	for _, id := range callIDs {
		calls = append(calls, map[string]any{"id": id, "name": "run", "args": map[string]any{}})
	}
	b, _ := json.Marshal(map[string]any{"text": text, "toolCalls": calls})
	return ev(projection.TypeMessageAssistant, string(b))
}

func toolResult(callID, content string) projection.NewEvent {
	b, _ := json.Marshal(map[string]any{"callId": callID, "name": "run", "isError": false, "content": content})
	return ev(projection.TypeToolResult, string(b))
}

// seedLarge makes a session of many large events, several MiB in all:
// rounds of a user message, an assistant message calling two tools, a
// todo/write and the two results, each about 100 KiB, then one call group
// (an assistant message and twelve results) larger than a whole page.
func seedLarge(t *testing.T, st store.Store) (string, []projection.Event) {
	t.Helper()
	s := newSession(t, st)
	const size = 100 << 10
	mustAppend(t, st, s.ID, evTurnStart)
	for r := 0; r < 12; r++ {
		a, b := fmt.Sprintf("r%d.a", r), fmt.Sprintf("r%d.b", r)
		mustAppend(t, st, s.ID,
			userMsg(bigText("user "+a, size)),
			assistantMsg(bigText("assistant "+a, size), a, b),
			toolResult(a, bigText("result "+a, size)),
			writeTodos("step "+a, "in_progress"),
			toolResult(b, bigText("result "+b, size)),
		)
	}
	group := []projection.NewEvent{assistantMsg("calling twelve tools", seqIDs("g", 12)...)}
	for _, id := range seqIDs("g", 12) {
		group = append(group, toolResult(id, bigText("result "+id, size)))
	}
	mustAppend(t, st, s.ID, group...)
	mustAppend(t, st, s.ID, userMsg("thanks"), evTurnEnd)
	return s.ID, allEvents(t, st, s.ID)
}

func seqIDs(prefix string, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return ids
}

// wantBounded fails unless the events' data, all but the last event's,
// stays under the page budget: a page stops once it passes the budget.
func wantBounded(t *testing.T, what string, events []projection.Event) {
	t.Helper()
	if len(events) == 0 {
		t.Fatalf("%s: an empty page", what)
	}
	n := 0
	for _, e := range events[:len(events)-1] {
		n += len(e.Data)
	}
	if n >= store.MaxPageBytes {
		t.Errorf("%s: %d events holding %d bytes before the last: over the page budget of %d bytes",
			what, len(events), n, store.MaxPageBytes)
	}
}

// testPagesBoundedByBytes reads a log of several MiB page by page:
// every page of Events (the REST reads and a socket's catch-up) and of
// History stops once its data passes the budget, and the pages together are
// the whole log.
func testPagesBoundedByBytes(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		id, all := seedLarge(t, st)

		var forwards []projection.Event
		for after, pages := int64(0), 0; ; pages++ {
			events, more, err := st.Events(ctx, id, after, 1000)
			if err != nil {
				t.Fatal(err)
			}
			wantBounded(t, fmt.Sprintf("events after %d", after), events)
			forwards = append(forwards, events...)
			if !more {
				if pages < 3 {
					t.Errorf("the log of %d events read forwards in %d pages", len(all), pages+1)
				}
				break
			}
			after = events[len(events)-1].Seq
		}
		if !reflect.DeepEqual(forwards, all) {
			t.Errorf("pages forwards %v, the log %v", seqs(forwards), seqs(all))
		}

		var backwards []projection.Event
		for before := int64(0); ; {
			h, err := st.History(ctx, id, before, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if (h.Snapshot != nil) != (before == 0) {
				t.Errorf("before %d: snapshot %v", before, h.Snapshot)
			}
			// History stops at the oldest event that passes the budget.
			rev := slices.Clone(h.Events)
			slices.Reverse(rev)
			wantBounded(t, fmt.Sprintf("history before %d", before), rev)
			backwards = append(slices.Clone(h.Events), backwards...)
			if !h.HasMore {
				break
			}
			before = h.Events[0].Seq
		}
		if !reflect.DeepEqual(backwards, all) {
			t.Errorf("pages backwards %v, the log %v", seqs(backwards), seqs(all))
		}

		// The count limit still holds where bytes do not cut first.
		events, more, err := st.Events(ctx, id, 0, 2)
		if err != nil || !slices.Equal(seqs(events), []int64{1, 2}) || !more {
			t.Errorf("limit 2: %v %v %v", seqs(events), more, err)
		}
	})
}

// surfaceOf is the surface events of a log, in order.
func surfaceOf(events []projection.Event) []projection.Event {
	var out []projection.Event
	for _, e := range events {
		if projection.Surface(e.Type) {
			out = append(out, e)
		}
	}
	return out
}

// readMessages pages through the model surface with limit, checking each
// page's cursor, and returns the pages as slices of the surface events.
func readMessages(t *testing.T, st store.Store, id string, limit int, surface []projection.Event) [][]projection.Event {
	t.Helper()
	var pages [][]projection.Event
	var got []projection.Message
	at := 0
	for after := int64(0); ; {
		p, err := st.Messages(context.Background(), id, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Messages) == 0 {
			t.Fatalf("after %d: an empty page (hasMore %v)", after, p.HasMore)
		}
		if at+len(p.Messages) > len(surface) {
			t.Fatalf("after %d: pages hold more messages than the surface's %d", after, len(surface))
		}
		page := surface[at : at+len(p.Messages)]
		at += len(p.Messages)
		if last := page[len(page)-1].Seq; p.NextAfter != last {
			t.Errorf("after %d: nextAfter %d, want the seq %d of the page's last message", after, p.NextAfter, last)
		}
		pages = append(pages, page)
		got = append(got, p.Messages...)
		if !p.HasMore {
			break
		}
		after = p.NextAfter
	}
	if want := projection.DeriveMessages(surface); !reflect.DeepEqual(got, want) {
		t.Fatalf("limit %d: the pages together are %d messages, not the surface's %d", limit, len(got), len(want))
	}
	return pages
}

// wantWholeGroups fails when a page ends between an assistant message's
// tool calls and a result answering one of them that starts the next page.
func wantWholeGroups(t *testing.T, pages [][]projection.Event) {
	t.Helper()
	for i := 0; i+1 < len(pages); i++ {
		open := map[string]bool{}
		for _, e := range pages[i] {
			m, _ := projection.MessageOf(e)
			switch m.Role {
			case "assistant":
				open = map[string]bool{}
				for _, c := range m.ToolCalls {
					open[c.ID] = true
				}
			case "tool":
				delete(open, m.ToolCallID)
			}
		}
		if m, _ := projection.MessageOf(pages[i+1][0]); m.Role == "tool" && open[m.ToolCallID] {
			t.Errorf("page %d ends between the call %s and its result", i, m.ToolCallID)
		}
	}
}

// testMessagesPaged reads the model surface of a log of several
// MiB page by page: each page stops once its data passes the budget (or
// holds one whole call group), a page never separates a tool call from its
// result, and the pages together are the whole surface.
func testMessagesPaged(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		id, all := seedLarge(t, st)
		surface := surfaceOf(all)
		for _, limit := range []int{1000, 7, 1} {
			pages := readMessages(t, st, id, limit, surface)
			wantWholeGroups(t, pages)
			if limit == 1000 && len(pages) < 3 {
				t.Errorf("the surface of %d messages read in %d pages", len(surface), len(pages))
			}
			for i, page := range pages {
				what := fmt.Sprintf("limit %d page %d", limit, i)
				first, _ := projection.MessageOf(page[0])
				if n := len(first.ToolCalls); n > 0 && len(page) == 1+n {
					continue // one whole call group, kept together whatever its size
				}
				wantBounded(t, what, page)
				if len(page) > limit {
					t.Errorf("%s: %d messages, over the limit", what, len(page))
				}
			}
		}
	})
}

// testMessagesPairing pins where small pages of the surface end:
// after the results of a call group, or before the group's assistant
// message; a page that starts with a group holds the group whole.
func testMessagesPairing(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s := newSession(t, st)
		res := mustAppend(t, st, s.ID,
			userMsg("go"),                               // 1
			evTurnStart,                                 // 2
			assistantMsg("two calls", "c1", "c2"),       // 3
			toolResult("c1", "one"),                     // 4
			writeTodos("a", "pending"),                  // 5
			toolResult("c2", "two"),                     // 6
			assistantMsg("no calls"),                    // 7
			assistantMsg("a call never answered", "c3"), // 8
			userMsg("still there?"),                     // 9
			evTurnEnd,                                   // 10
		)
		cases := []struct {
			after     int64
			limit     int
			nextAfter int64
			n         int
			more      bool
		}{
			{0, 1, 1, 1, true},
			{0, 2, 1, 1, true}, // backs off before the group
			{0, 3, 1, 1, true},
			{0, 4, 6, 4, true},
			{1, 1, 6, 3, true}, // the group starts the page: kept whole
			{1, 2, 6, 3, true},
			{3, 1, 4, 1, true}, // a page that starts inside the group reads on as usual
			{6, 1, 7, 1, true},
			{7, 1, 8, 1, true}, // a call never answered does not hold the page
			{7, 2, 9, 2, false},
			{9, 5, 9, 0, false},
			{100, 5, 100, 0, false},
		}
		surface := surfaceOf(res.Events)
		for _, c := range cases {
			p, err := st.Messages(ctx, s.ID, c.after, c.limit)
			if err != nil {
				t.Fatal(err)
			}
			var want []projection.Message
			for _, e := range surface {
				if e.Seq > c.after && e.Seq <= c.nextAfter {
					want = append(want, projection.DeriveMessages([]projection.Event{e})...)
				}
			}
			if want == nil {
				want = []projection.Message{}
			}
			if p.NextAfter != c.nextAfter || len(p.Messages) != c.n || p.HasMore != c.more || !reflect.DeepEqual(p.Messages, want) {
				t.Errorf("after %d limit %d: %d messages, nextAfter %d, hasMore %v; want %d, %d, %v",
					c.after, c.limit, len(p.Messages), p.NextAfter, p.HasMore, c.n, c.nextAfter, c.more)
			}
		}
	})
}
