package api_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/store"
)

func TestSessionsSearchAndSummary(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "SessionsSearch", run: testSessionsSearch},
		{name: "SessionSummary", run: testSessionSummary},
	})
}

type sessionsPage struct {
	Sessions   []store.Session
	NextCursor *string
}

func (b *bundle) sessionsPage(query url.Values) sessionsPage {
	b.t.Helper()
	var out sessionsPage
	b.want(b.do("GET", "/sessions?"+query.Encode(), nil), http.StatusOK, &out)
	return out
}

// testSessionsSearch: q finds titles case-insensitively, pages with the
// cursor, and bad q is a 400.
func testSessionsSearch(t *testing.T, b *bundle) {
	var want []string
	for i := range 7 {
		title := "chore"
		if i%2 == 0 {
			title = "Deploy the Ünicode fix"
		}
		var s store.Session
		b.want(b.do("POST", "/sessions", map[string]any{"title": title}), http.StatusCreated, &s)
		if i%2 == 0 {
			want = append(want, s.ID)
		}
	}
	all := b.sessionsPage(url.Values{"q": {"üNICODE"}})
	if len(all.Sessions) != len(want) || all.NextCursor != nil {
		t.Fatalf("q=üNICODE: %d sessions, next %v; want %d", len(all.Sessions), all.NextCursor, len(want))
	}
	for _, s := range all.Sessions {
		if !slices.Contains(want, s.ID) {
			t.Errorf("found %s %q", s.ID, s.Title)
		}
	}
	var walked []store.Session
	query := url.Values{"q": {"deploy"}, "limit": {"3"}}
	for pages := 0; ; pages++ {
		if pages > len(want) {
			t.Fatal("pages do not end")
		}
		p := b.sessionsPage(query)
		walked = append(walked, p.Sessions...)
		if p.NextCursor == nil {
			break
		}
		query.Set("cursor", *p.NextCursor)
	}
	if len(walked) != len(want) || !slices.EqualFunc(walked, all.Sessions, func(a, b store.Session) bool { return a.ID == b.ID }) {
		t.Errorf("paged search found %d, want the %d of one page in order", len(walked), len(all.Sessions))
	}
	if p := b.sessionsPage(url.Values{"q": {"no such title"}}); len(p.Sessions) != 0 || p.NextCursor != nil {
		t.Errorf("q with no match: %+v", p)
	}
	if p := b.sessionsPage(url.Values{"q": {""}}); len(p.Sessions) != 7 {
		t.Errorf("empty q lists %d, want all 7", len(p.Sessions))
	}
	for _, tc := range []struct{ q, msg string }{
		{strings.Repeat("é", 201), "`q` must be at most 200 characters"},
		{"a\x00b", "`q` must not contain NUL characters"},
		{"a\xffb", "`q` must be UTF-8"},
	} {
		if msg := b.wantError(b.do("GET", "/sessions?q="+url.QueryEscape(tc.q), nil), http.StatusBadRequest, "invalid"); msg != tc.msg {
			t.Errorf("q %q: %q, want %q", tc.q, msg, tc.msg)
		}
	}
	if p := b.sessionsPage(url.Values{"q": {strings.Repeat("é", 200)}}); len(p.Sessions) != 0 {
		t.Errorf("200-character q: %+v", p)
	}
}

// testSessionSummary: the summary of GET /sessions and GET /sessions/{id}
// has the item in progress and how the last turn ended.
func testSessionSummary(t *testing.T, b *bundle) {
	id := b.openSession()
	raw := func() string {
		r := b.do("GET", "/sessions/"+id, nil)
		b.want(r, http.StatusOK, nil)
		return string(r.Body)
	}
	if got := raw(); !strings.Contains(got, `"currentItem":null`) || !strings.Contains(got, `"endReason":null`) {
		t.Fatalf("open session without a list: %s", got)
	}
	b.writeOK(id, todo("write the tests", "completed"), todo("fix the list", "in_progress"))
	b.appendOK(id, ev("turn/end", map[string]any{"reason": "interrupted"}))
	if got := raw(); !strings.Contains(got, `"currentItem":"fix the list"`) || !strings.Contains(got, `"endReason":"interrupted"`) {
		t.Fatalf("after an interrupted turn: %s", got)
	}
	list := b.sessionsPage(url.Values{})
	if s := list.Sessions[0]; s.CurrentItem == nil || *s.CurrentItem != "fix the list" || s.Turn.EndReason != "interrupted" {
		t.Fatalf("listed %+v", s)
	}
	b.appendOK(id, turnStart())
	if got := raw(); !strings.Contains(got, `"endReason":null`) || !strings.Contains(got, `"open":true`) {
		t.Fatalf("after a new turn/start: %s", got)
	}
}
