package api_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestSessions covers the session routes (sessions.go): create, find by
// external key, read, list and search, each session's policy, and the
// session id every route under /sessions/{id} is checked by.
func TestSessions(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "CreateAndGetSession", run: testCreateAndGetSession},
		{name: "SessionsList", run: testSessionsList},
		{name: "UnknownSession", run: testUnknownSession},
		{name: "PolicyServerDefaultOff", run: testPolicy(false)},
		{name: "PolicyServerDefaultOn", cfg: projection.Config{AllowParallel: true}, run: testPolicy(true)},
		{name: "ExternalKey", run: testExternalKey},
		{name: "SessionsSearch", run: testSessionsSearch},
		{name: "SessionSummary", run: testSessionSummary},
	})
}

func testCreateAndGetSession(t *testing.T, b *bundle) {
	var s store.Session
	r := b.do("POST", "/sessions", map[string]any{"title": "  Fix the build  "})
	b.want(r, http.StatusCreated, &s)
	if s.Title != "Fix the build" || s.LastSeq != 0 || s.Turn != (projection.Turn{}) {
		t.Fatalf("created %+v", s)
	}
	if got, want := r.Header.Get("Location"), "/sessions/"+s.ID; got != want {
		t.Errorf("Location %q, want %q", got, want)
	}
	if got := b.session(s.ID); !reflect.DeepEqual(got, s) {
		t.Errorf("GET %+v, want %+v", got, s)
	}
	var u store.Session
	b.want(b.do("POST", "/sessions", nil), http.StatusCreated, &u)
	if !u.Untitled || u.Title != "Session · "+u.CreatedAt.UTC().Format("15:04")+" UTC" {
		t.Errorf("default title %q (untitled %v)", u.Title, u.Untitled)
	}
	b.want(b.do("POST", "/sessions", `{"title":null}`), http.StatusCreated, &u)
	// A title that shows nothing (blank, or only invisible characters) is
	// no title.
	for _, blank := range []string{`""`, `"   "`, `"\t\n"`, `"\u200b\u2060 "`} {
		var v store.Session
		b.want(b.do("POST", "/sessions", `{"title":`+blank+`}`), http.StatusCreated, &v)
		if !v.Untitled || !strings.HasPrefix(v.Title, "Session · ") {
			t.Errorf("title %s stored as %q, want the default", blank, v.Title)
		}
	}
	msg := b.wantError(b.do("POST", "/sessions", map[string]any{"title": strings.Repeat("é", 201)}), http.StatusUnprocessableEntity, "invalid")
	if want := "`title` must be at most 200 characters, got 201"; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
	b.want(b.do("POST", "/sessions", map[string]any{"title": strings.Repeat("é", 200)}), http.StatusCreated, nil)

	// The session follows its log: lastSeq, turn and the todo counts.
	b.appendOK(s.ID, turnStart())
	b.writeOK(s.ID, todo("a", "pending"), todo("b", "in_progress"))
	got := b.session(s.ID)
	if got.LastSeq != 2 || got.Turn != (projection.Turn{Number: 1, Open: true}) ||
		got.TodoCounts != (projection.Counts{Pending: 1, InProgress: 1}) || got.UpdatedAt.Before(s.UpdatedAt.Time) {
		t.Errorf("after writes: %+v", got)
	}
}

func testSessionsList(t *testing.T, b *bundle) {
	var ids []string
	for range 7 {
		ids = append(ids, b.newSession())
	}
	// Activity moves a session to the front.
	b.appendOK(ids[2], userMsg("bump"))
	list := func(q string) (out struct {
		Sessions   []store.Session
		NextCursor *string
	}) {
		b.want(b.do("GET", "/sessions"+q, nil), http.StatusOK, &out)
		return out
	}
	all := list("")
	if len(all.Sessions) != 7 || all.NextCursor != nil {
		t.Fatalf("list %+v", all)
	}
	// The bumped session comes first, unless another shares its millisecond.
	for _, s := range all.Sessions {
		if s.ID == ids[2] {
			break
		}
		if !s.UpdatedAt.Equal(b.session(ids[2]).UpdatedAt.Time) {
			t.Errorf("session %s listed before the most active %s", s.ID, ids[2])
		}
	}
	for i := 1; i < len(all.Sessions); i++ {
		p, c := all.Sessions[i-1], all.Sessions[i]
		if p.UpdatedAt.Before(c.UpdatedAt.Time) || (p.UpdatedAt.Equal(c.UpdatedAt.Time) && p.ID < c.ID) {
			t.Errorf("not newest activity first: %s %v before %s %v", p.ID, p.UpdatedAt, c.ID, c.UpdatedAt)
		}
	}
	var walked []store.Session
	q := "?limit=3"
	pages := 0
	for {
		p := list(q)
		pages++
		walked = append(walked, p.Sessions...)
		if p.NextCursor == nil {
			break
		}
		q = "?limit=3&cursor=" + *p.NextCursor
	}
	if pages != 3 || !reflect.DeepEqual(walked, all.Sessions) {
		t.Errorf("paged in %d pages: %v", pages, walked)
	}
	if p := list("?limit=7"); p.NextCursor != nil {
		t.Error("an exact last page has a nextCursor")
	}
	for _, bad := range []string{"!!!", base64.RawURLEncoding.EncodeToString([]byte("abc")), base64.RawURLEncoding.EncodeToString([]byte("12:")),
		base64.RawURLEncoding.EncodeToString([]byte("9223372036854775807:x")), base64.RawURLEncoding.EncodeToString([]byte("-9223372036854775808:x")),
		base64.RawURLEncoding.EncodeToString([]byte("1:\x00")), base64.RawURLEncoding.EncodeToString([]byte("1:\xff"))} {
		msg := b.wantError(b.do("GET", "/sessions?cursor="+bad, nil), 400, "invalid")
		if msg != "`cursor` is not a cursor this server issued" {
			t.Errorf("cursor %q: %q", bad, msg)
		}
	}
	for _, q := range []string{"?limit=0", "?limit=201", "?limit=x", "?limit=1.5", "?limit=-1"} {
		msg := b.wantError(b.do("GET", "/sessions"+q, nil), 400, "invalid")
		if msg != "`limit` must be an integer from 1 to 200" {
			t.Errorf("%s: %q", q, msg)
		}
	}
}

func testUnknownSession(t *testing.T, b *bundle) {
	for _, id := range []string{"ses_nope", strings.Repeat("x", 65), "%00", "%FF", "a%20b", "ses_%E2%80%8B"} {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "", ""},
			{"POST", "/events", `{"events":[{"type":"turn/start"}]}`},
			{"GET", "/events", ""},
			{"GET", "/history", ""},
			{"GET", "/history?before=5", ""},
			{"GET", "/messages", ""},
			{"GET", "/todos", ""},
			{"POST", "/tools/todo_write", `{"todos":[]}`},
			{"POST", "/tools/todo_read", `{}`},
		} {
			var body any
			if c.body != "" {
				body = c.body
			}
			if msg := b.wantError(b.do(c.method, "/sessions/"+id+c.path, body), 404, "not_found"); msg != "session not found" {
				t.Errorf("%s %s: %q", c.method, c.path, msg)
			}
		}
	}
}

// testPolicy checks that a session's own parallelInProgress decides check 5
// and is shown wherever the session is, and that without one the server's
// default applies.
func testPolicy(serverDefault bool) func(*testing.T, *bundle) {
	return func(t *testing.T, b *bundle) {
		two := `{"todos":[{"content":"a","status":"in_progress"},{"content":"b","status":"in_progress"}]}`
		for _, own := range []*bool{nil, new(true), new(false)} {
			body := map[string]any{"title": "policy"}
			want := serverDefault
			if own != nil {
				body["parallelInProgress"] = *own
				want = *own
			}
			var s struct {
				ID                 string
				ParallelInProgress *bool
			}
			b.want(b.do("POST", "/sessions", body), http.StatusCreated, &s)
			if s.ParallelInProgress == nil || *s.ParallelInProgress != want {
				t.Fatalf("own %v: created with parallelInProgress %v, want %v", own, s.ParallelInProgress, want)
			}
			if got := b.session(s.ID).ParallelInProgress; got != want {
				t.Errorf("own %v: GET shows %v, want %v", own, got, want)
			}
			var list struct {
				Sessions []struct {
					ID                 string
					ParallelInProgress bool
				}
			}
			b.want(b.do("GET", "/sessions?limit=200", nil), http.StatusOK, &list)
			for _, l := range list.Sessions {
				if l.ID == s.ID && l.ParallelInProgress != want {
					t.Errorf("own %v: the list shows %v, want %v", own, l.ParallelInProgress, want)
				}
			}
			b.appendOK(s.ID, turnStart())
			r := b.do("POST", "/sessions/"+s.ID+"/tools/todo_write", two)
			if wantStatus := map[bool]int{true: 200, false: 422}[want]; r.Status != wantStatus {
				t.Errorf("own %v: two in progress answered %d, want %d: %s", own, r.Status, wantStatus, r.Body)
			}
		}
		msg := b.wantError(b.do("POST", "/sessions", `{"parallelInProgress":"yes"}`), http.StatusBadRequest, "invalid")
		if msg != "`parallelInProgress` must be a boolean" {
			t.Errorf("message %q", msg)
		}
	}
}

func testExternalKey(t *testing.T, b *bundle) {
	var first, again, other struct {
		ID, Title, ExternalKey string
	}
	b.want(b.do("POST", "/sessions", map[string]any{"title": "imported", "externalKey": "claude-code:abc"}), http.StatusCreated, &first)
	if first.ExternalKey != "claude-code:abc" {
		t.Errorf("externalKey %q", first.ExternalKey)
	}
	b.appendOK(first.ID, turnStart())
	r := b.do("POST", "/sessions", map[string]any{"title": "another title", "externalKey": "claude-code:abc"})
	b.want(r, http.StatusOK, &again)
	if again.ID != first.ID || again.Title != "imported" || r.Header.Get("Location") != "/sessions/"+first.ID {
		t.Errorf("again %+v, want the first session %+v unchanged", again, first)
	}
	if got := b.session(first.ID).LastSeq; got != 1 {
		t.Errorf("the found session's lastSeq %d, want 1", got)
	}
	b.want(b.do("POST", "/sessions", map[string]any{"externalKey": "codex:abc"}), http.StatusCreated, &other)
	if other.ID == first.ID {
		t.Error("another key found the same session")
	}
	for _, bad := range []string{`{"externalKey":""}`, `{"externalKey":"` + strings.Repeat("k", 257) + `"}`, `{"externalKey":"a\u0000b"}`} {
		b.wantError(b.do("POST", "/sessions", bad), http.StatusUnprocessableEntity, "invalid")
	}
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
