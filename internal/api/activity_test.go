package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// A session as the agent lived it, over real HTTP on every store: what a
// session says of its agent, the agent's own times on events, the state
// and since when, children by parent.
func TestActivity(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{
		{name: "AgentFields", run: testAgentFields},
		{name: "AgentTimes", run: testAgentTimes},
		{name: "State", cfg: projection.Config{IdleAfter: time.Minute}, run: testState},
		{name: "Children", run: testChildren},
	})
}

func testAgentFields(t *testing.T, b *bundle) {
	var s store.Session
	b.want(b.do("POST", "/sessions", map[string]any{"title": "t", "agent": "claude-code", "cwd": "/src/tack", "planLifetime": "session"}), http.StatusCreated, &s)
	got := b.session(s.ID)
	if got.Agent == nil || *got.Agent != "claude-code" || got.Cwd == nil || *got.Cwd != "/src/tack" || got.PlanLifetime != "session" || got.ParentID != nil {
		t.Fatalf("session %+v", got)
	}
	// A session that says nothing of its agent: nulls, and turn.
	plain := b.session(b.newSession())
	if plain.Agent != nil || plain.Cwd != nil || plain.PlanLifetime != "turn" {
		t.Fatalf("plain session %+v", plain)
	}
	for _, bad := range []map[string]any{
		{"title": "t", "agent": ""},
		{"title": "t", "agent": "claude\ncode"},
		{"title": "t", "agent": strings.Repeat("a", 65)},
		{"title": "t", "cwd": "a\x00b"},
		{"title": "t", "planLifetime": "forever"},
		{"title": "t", "parentId": "ses_nosuchsession000000000"},
		{"title": "t", "parentId": "not an id"},
	} {
		msg := b.wantError(b.do("POST", "/sessions", bad), http.StatusUnprocessableEntity, "invalid")
		if msg == "" {
			t.Errorf("%v: no message", bad)
		}
	}
	// Nothing was made of the refused ones.
	var list struct{ Sessions []store.Session }
	b.want(b.do("GET", "/sessions", nil), http.StatusOK, &list)
	if len(list.Sessions) != 2 {
		t.Fatalf("%d sessions after refusals, want 2", len(list.Sessions))
	}
}

func testAgentTimes(t *testing.T, b *bundle) {
	id := b.newSession()
	jan := time.Date(2026, 1, 3, 10, 0, 0, 0, time.UTC)
	withAt := func(e map[string]any, at time.Time) map[string]any {
		e["at"] = at.Format(time.RFC3339Nano)
		return e
	}
	stored := b.appendOK(id, withAt(turnStart(), jan), withAt(userMsg("go"), jan.Add(2*time.Second)), userMsg("no time"))
	if !stored[0].At.Equal(jan) || stored[0].ReceivedAt == nil || !stored[0].ReceivedAt.After(jan) {
		t.Fatalf("event 0 %+v: want at %v and a later receivedAt", stored[0], jan)
	}
	if stored[2].ReceivedAt != nil || stored[2].At.Before(stored[0].ReceivedAt.Time) {
		t.Fatalf("event 2 %+v: no at given, so at is the receipt and receivedAt absent", stored[2])
	}
	// The history and the session's last activity read the agent's times.
	var page struct{ Events []projection.Event }
	b.want(b.do("GET", "/sessions/"+id+"/events", nil), http.StatusOK, &page)
	if len(page.Events) != 3 || !page.Events[1].At.Equal(jan.Add(2*time.Second)) || page.Events[1].ReceivedAt == nil {
		t.Fatalf("events %+v", page.Events)
	}
	s := b.session(id)
	if !s.UpdatedAt.Equal(stored[2].At.Time) {
		t.Fatalf("updatedAt %v, want the last event's at %v", s.UpdatedAt, stored[2].At)
	}
	// A time ahead of the server's, or not a time: 400 naming the event,
	// and nothing of the batch stored.
	for _, at := range []any{time.Now().Add(time.Hour).Format(time.RFC3339), "yesterday", 12} {
		r := b.do("POST", "/sessions/"+id+"/events", map[string]any{"events": []any{userMsg("a"), map[string]any{"type": "message/user", "data": map[string]any{"text": "b"}, "at": at}}})
		if msg := b.wantError(r, http.StatusBadRequest, "invalid"); !strings.Contains(msg, "events[1]") {
			t.Errorf("at %v: %q does not name events[1]", at, msg)
		}
	}
	if got := b.session(id).LastSeq; got != 3 {
		t.Fatalf("lastSeq %d after refused batches, want 3", got)
	}
}

func testState(t *testing.T, b *bundle) {
	id := b.newSession()
	if s := b.session(id); s.State != projection.StateIdle || !s.StateSince.Equal(s.CreatedAt.Time) {
		t.Fatalf("new session %s since %v, want idle since its creation %v", s.State, s.StateSince, s.CreatedAt)
	}
	b.appendOK(id, turnStart())
	started := b.session(id)
	if started.State != projection.StateWorking {
		t.Fatalf("open turn: %s", started.State)
	}
	b.appendOK(id, userMsg("more"))
	if s := b.session(id); s.State != projection.StateWorking || !s.StateSince.Equal(started.StateSince.Time) {
		t.Fatalf("working %+v: since the turn began, %v", s, started.StateSince)
	}
	b.appendOK(id, turnEnd())
	if s := b.session(id); s.State != projection.StateIdle {
		t.Fatalf("turn ended: %s", s.State)
	}
	// An open turn whose last event is older than -idle-after is idle
	// since that event.
	quiet := b.newSession()
	old := time.Now().Add(-3 * time.Minute).UTC().Truncate(time.Millisecond) // Tack keeps milliseconds
	b.appendOK(quiet, map[string]any{"type": "turn/start", "data": map[string]any{}, "at": old.Format(time.RFC3339Nano)})
	if s := b.session(quiet); s.State != projection.StateIdle || !s.StateSince.Equal(old) || !s.Turn.Open {
		t.Fatalf("quiet session %+v, want idle since %v with its turn open", s, old)
	}
	// session/end ends it for good, whatever comes after.
	b.appendOK(id, ev("session/end", map[string]any{"reason": "exit"}))
	ended := b.session(id)
	if ended.State != projection.StateEnded {
		t.Fatalf("after session/end: %s", ended.State)
	}
	var list struct{ Sessions []store.Session }
	b.want(b.do("GET", "/sessions", nil), http.StatusOK, &list)
	for _, s := range list.Sessions {
		if s.ID == id && s.State != projection.StateEnded || s.ID == quiet && s.State != projection.StateIdle {
			t.Errorf("listed %s as %s", s.ID, s.State)
		}
	}
}

func testChildren(t *testing.T, b *bundle) {
	parent := b.newSession()
	var kids []string
	for range 3 {
		var s store.Session
		b.want(b.do("POST", "/sessions", map[string]any{"title": "sub", "parentId": parent, "agent": "claude-code"}), http.StatusCreated, &s)
		if s.ParentID == nil || *s.ParentID != parent {
			t.Fatalf("child %+v", s)
		}
		kids = append(kids, s.ID)
	}
	var list struct {
		Sessions   []store.Session
		NextCursor *string
	}
	b.want(b.do("GET", "/sessions?parent="+parent+"&limit=2", nil), http.StatusOK, &list)
	got := []string{}
	for _, s := range list.Sessions {
		got = append(got, s.ID)
	}
	if list.NextCursor == nil {
		t.Fatalf("first page %v has no cursor", got)
	}
	b.want(b.do("GET", "/sessions?parent="+parent+"&cursor="+*list.NextCursor, nil), http.StatusOK, &list)
	for _, s := range list.Sessions {
		got = append(got, s.ID)
	}
	if len(got) != 3 {
		t.Fatalf("children %v, want %v", got, kids)
	}
	for _, none := range []string{b.newSession(), "not-an-id", "ses_nosuchsession000000000"} {
		b.want(b.do("GET", "/sessions?parent="+none, nil), http.StatusOK, &list)
		if len(list.Sessions) != 0 {
			t.Errorf("parent %s has children %+v", none, list.Sessions)
		}
	}
}
