package storetest

import (
	"context"
	"reflect"
	"slices"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// testSummaryCurrentItemAndEndReason: the summary carries the
// item in progress and how the last turn ended, the same in the append's
// answer, a read of the session and a page of the list.
func testSummaryCurrentItemAndEndReason(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		s := newSession(t, st)
		if s.CurrentItem != nil || s.Turn.EndReason != "" {
			t.Fatalf("new session %+v: want no current item and no end reason", s)
		}
		check := func(step string, res store.AppendResult, current string, reason projection.EndReason) {
			t.Helper()
			one, err := st.Session(ctx, s.ID)
			if err != nil {
				t.Fatal(err)
			}
			list, _, err := st.Sessions(ctx, 10, "")
			if err != nil || len(list) != 1 {
				t.Fatalf("%s: list %+v (%v)", step, list, err)
			}
			for name, got := range map[string]store.Session{"append": res.Session, "read": one, "list": list[0]} {
				gotItem := ""
				if got.CurrentItem != nil {
					gotItem = *got.CurrentItem
				}
				if gotItem != current || got.Turn.EndReason != reason {
					t.Errorf("%s, %s: current item %q, end reason %q; want %q, %q", step, name, gotItem, got.Turn.EndReason, current, reason)
				}
			}
			if !reflect.DeepEqual(one, list[0]) {
				t.Errorf("%s: read %+v, listed %+v", step, one, list[0])
			}
		}
		check("write", mustAppend(t, st, s.ID, evTurnStart, writeTodos("read the code", "in_progress", "fix it", "pending")), "read the code", "")
		check("interrupted", mustAppend(t, st, s.ID, ev(projection.TypeTurnEnd, `{"reason":"interrupted"}`)), "read the code", projection.EndInterrupted)
		check("next turn", mustAppend(t, st, s.ID, evTurnStart), "read the code", "")
		check("advance", mustAppend(t, st, s.ID, writeTodos("read the code", "completed", "fix it", "in_progress")), "fix it", "")
		check("error", mustAppend(t, st, s.ID, ev(projection.TypeTurnEnd, `{"reason":"error"}`)), "fix it", projection.EndError)
		check("done", mustAppend(t, st, s.ID, evTurnStart, writeTodos("read the code", "completed", "fix it", "completed"), evTurnEnd), "", projection.EndCompleted)
		checkAgainstReplay(t, st, s.ID)
	})
}

// titles makes sessions with these titles, oldest first, and returns them
// newest first, as the list shows them.
func titles(t *testing.T, st store.Store, names ...string) []store.Session {
	t.Helper()
	var made []store.Session
	for _, n := range names {
		s, _, err := st.CreateSession(context.Background(), store.NewSession{Title: n})
		if err != nil {
			t.Fatal(err)
		}
		made = append(made, s)
	}
	// Order as the list does: updatedAt, then id, descending.
	slices.SortFunc(made, func(a, b store.Session) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt.Time); c != 0 {
			return c
		}
		return -compareStrings(a.ID, b.ID)
	})
	return made
}

func idsOf(list []store.Session) []string {
	out := []string{}
	for _, s := range list {
		out = append(out, s.ID)
	}
	return out
}

// findAll pages a query to its end and returns every session found and
// the number of pages.
func findAll(t *testing.T, st store.Store, q store.SessionQuery) ([]store.Session, int) {
	t.Helper()
	var all []store.Session
	pages := 0
	for {
		page, next, err := st.FindSessions(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		if len(page) > q.Limit {
			t.Fatalf("page of %d over limit %d", len(page), q.Limit)
		}
		all = append(all, page...)
		pages++
		if next == "" {
			return all, pages
		}
		if pages > 1000 {
			t.Fatal("no end of pages")
		}
		q.Cursor = next
	}
}

// testSearchTitles: q finds the sessions whose title holds it,
// whatever the case (Unicode too), in the list's order, with keyset paging.
func testSearchTitles(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		all := titles(t, st, "Fix the login bug", "Refactor storage", "LOGIN page polish", "Ünïcode Straße", "100% done_ok", "unrelated")
		match := func(want ...string) []string {
			var out []string
			for _, s := range all {
				if slices.Contains(want, s.Title) {
					out = append(out, s.ID)
				}
			}
			return out
		}
		for _, tc := range []struct {
			q    string
			want []string
		}{
			{"login", match("Fix the login bug", "LOGIN page polish")},
			{"LoGiN", match("Fix the login bug", "LOGIN page polish")},
			{"üNÏ", match("Ünïcode Straße")},
			{"STRASSE", nil}, // case folding, not a full fold of ß
			{"%", match("100% done_ok")},
			{"_", match("100% done_ok")},
			{"e_o", match("100% done_ok")},
			{"nothing like it", nil},
			{"", idsOf(all)},
		} {
			for _, limit := range []int{1, 2, 10} {
				got, pages := findAll(t, st, store.SessionQuery{Title: tc.q, Limit: limit})
				if !slices.Equal(idsOf(got), append([]string{}, tc.want...)) && !(len(got) == 0 && len(tc.want) == 0) {
					t.Errorf("q %q limit %d: got %v, want %v", tc.q, limit, idsOf(got), tc.want)
				}
				if want := max(1, (len(tc.want)+limit-1)/limit); pages != want {
					t.Errorf("q %q limit %d: %d pages, want %d", tc.q, limit, pages, want)
				}
			}
		}
		// The summaries found are those the list shows.
		got, _ := findAll(t, st, store.SessionQuery{Title: "refactor", Limit: 5})
		if len(got) != 1 || !reflect.DeepEqual(got[0], all[slices.IndexFunc(all, func(s store.Session) bool { return s.Title == "Refactor storage" })]) {
			t.Fatalf("found %+v", got)
		}
	})
}

// testSearchScanBound: a search examines at most Scan sessions
// per request. When they hold fewer matches than the page, it answers
// those with a cursor past the sessions it examined, so a client walks the
// whole list in bounded steps and finds every match once.
func testSearchScanBound(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		names := make([]string, 23)
		for i := range names {
			names[i] = "other"
			if i%7 == 3 {
				names[i] = "needle"
			}
		}
		all := titles(t, st, names...)
		var want []string
		for _, s := range all {
			if s.Title == "needle" {
				want = append(want, s.ID)
			}
		}
		page, next, err := st.FindSessions(ctx, store.SessionQuery{Title: "needle", Limit: 10, Scan: 5})
		if err != nil {
			t.Fatal(err)
		}
		// The first request examines the newest five, whatever they hold.
		var first []string
		for _, s := range all[:5] {
			if s.Title == "needle" {
				first = append(first, s.ID)
			}
		}
		if !slices.Equal(idsOf(page), append([]string{}, first...)) || next == "" {
			t.Fatalf("first bounded page %v, next %q: want %v and a cursor", idsOf(page), next, first)
		}
		got, pages := findAll(t, st, store.SessionQuery{Title: "needle", Limit: 10, Scan: 5})
		if !slices.Equal(idsOf(got), want) {
			t.Fatalf("bounded search found %v, want %v", idsOf(got), want)
		}
		if pages < (len(all)+4)/5 {
			t.Fatalf("%d pages for %d sessions at 5 a request", pages, len(all))
		}
		// A full page ends at its last match, like any page.
		got, _ = findAll(t, st, store.SessionQuery{Title: "needle", Limit: 1, Scan: 100})
		if !slices.Equal(idsOf(got), want) {
			t.Fatalf("limit 1: found %v, want %v", idsOf(got), want)
		}
		// The scan bound is the list's too: no q, same pages as ever.
		got, _ = findAll(t, st, store.SessionQuery{Limit: 4, Scan: 2})
		if !slices.Equal(idsOf(got), idsOf(all)) {
			t.Fatalf("no q: found %d, want all %d", len(got), len(all))
		}
	})
}
