package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestAgentStatus: PUT /sessions/{id}/agent-status decides working or idle
// while no event is newer: busy past idle-after is working, idle with a
// turn open is idle; bad bodies are refused and change nothing.
func TestAgentStatus(t *testing.T) {
	t.Parallel()
	runSuite(t, []suite{{name: "Status", run: testAgentStatus}})
}

func testAgentStatus(t *testing.T, b *bundle) {
	id := b.newSession()
	started := time.Now().Add(-10 * time.Minute).UTC().Truncate(time.Millisecond)
	turn := turnStart()
	turn["at"] = started.Format(time.RFC3339Nano)
	b.appendOK(id, turn)
	if s := b.session(id); s.State != projection.StateIdle {
		t.Fatalf("a turn quiet for 10 minutes reads %s, want idle", s.State)
	}
	put := func(body any) store.Session {
		t.Helper()
		var s store.Session
		b.want(b.do("PUT", "/sessions/"+id+"/agent-status", body), http.StatusOK, &s)
		return s
	}
	if s := put(map[string]any{"status": "busy"}); s.State != projection.StateWorking || !s.StateSince.Equal(started) {
		t.Fatalf("busy answered %s since %s, want working since the turn's start %s", s.State, s.StateSince, started)
	}
	if s := b.session(id); s.State != projection.StateWorking || !s.AgentBusy {
		t.Fatalf("busy reads %s (agentBusy %v), want working and agentBusy", s.State, s.AgentBusy)
	}
	idle := time.Now().UTC().Truncate(time.Millisecond)
	if s := put(map[string]any{"status": "idle", "at": idle.Format(time.RFC3339Nano)}); s.State != projection.StateIdle || !s.StateSince.Equal(idle) || s.AgentBusy {
		t.Fatalf("idle answered %s since %s, want idle since %s", s.State, s.StateSince, idle)
	}
	// An older status is kept out.
	if s := put(map[string]any{"status": "busy", "at": idle.Add(-time.Second).Format(time.RFC3339Nano)}); s.State != projection.StateIdle {
		t.Fatalf("an older busy answered %s", s.State)
	}
	path := "/sessions/" + id + "/agent-status"
	for _, bad := range []string{`{}`, `{"status":"waiting"}`, `{"status":null}`, `{"status":""}`} {
		b.wantError(b.do("PUT", path, bad), http.StatusUnprocessableEntity, "invalid")
	}
	for _, bad := range []string{`{"status":"busy","extra":1}`, `{"Status":"busy"}`, `not json`, `{"status":"busy","at":"yesterday"}`,
		`{"status":"busy","at":"` + time.Now().Add(time.Hour).UTC().Format(time.RFC3339) + `"}`, `{"status":"busy"} {}`, `{"status":1}`} {
		b.wantError(b.do("PUT", path, bad), http.StatusBadRequest, "invalid")
	}
	b.wantError(b.do("PUT", "/sessions/ses_nosuchsession/agent-status", map[string]any{"status": "busy"}), http.StatusNotFound, "not_found")
	if s := b.session(id); s.State != projection.StateIdle || !s.StateSince.Equal(idle) {
		t.Fatalf("refused statuses left it %s since %s", s.State, s.StateSince)
	}
	// A newer event decides from the log again.
	b.appendOK(id, userMsg("one more thing"))
	if s := b.session(id); s.State != projection.StateWorking {
		t.Fatalf("an event after the status reads %s, want working", s.State)
	}
}

// TestAgentStatusReachesTheFeed: a status reaches the owner's feed (GET
// /live) as a session message in its new state; it is the owner's alone
// to set: another principal's is not found, a read token's and an admin's
// forbidden.
func TestAgentStatusReachesTheFeed(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			a := setupAuth(t, f.Open(t, projection.Config{}), 0, 0)
			alice := []string{"Authorization", "Bearer " + a.write}
			await := ownersFeed(t, a)
			next := func(state string) {
				t.Helper()
				await(state, func(s store.Session) bool { return s.State == state })
			}
			path := "/sessions/" + a.session + "/agent-status"
			a.want(a.do("PUT", path, map[string]string{"status": "idle"}, alice...), http.StatusOK, nil)
			next(projection.StateIdle)
			a.want(a.do("PUT", path, map[string]string{"status": "busy"}, alice...), http.StatusOK, nil)
			next(projection.StateWorking)
			a.wantError(a.do("PUT", path, map[string]string{"status": "idle"}, "Authorization", "Bearer "+a.other), http.StatusNotFound, "not_found")
			a.wantError(a.do("PUT", path, map[string]string{"status": "idle"}, "Authorization", "Bearer "+a.read), http.StatusForbidden, "forbidden")
			a.wantError(a.do("PUT", path, map[string]string{"status": "idle"}, "Authorization", "Bearer "+a.admin), http.StatusForbidden, "forbidden")
			var s store.Session
			a.want(a.do("GET", "/sessions/"+a.session, nil, alice...), http.StatusOK, &s)
			if s.State != projection.StateWorking {
				t.Fatalf("refused statuses left it %s, want working", s.State)
			}
		})
	}
}

// ownersFeed opens the feed (GET /live) of a.session's owner, alice, and
// returns what reads it until a session message about a.session satisfies
// ok, failing t after 5 s with what it waited for.
func ownersFeed(t *testing.T, a *authBundle) func(what string, ok func(store.Session) bool) {
	t.Helper()
	feed, _, err := a.dial("/live", []string{"Authorization", "Bearer " + a.write})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { feed.CloseNow() })
	waitSockets(t, a, 1)
	return func(what string, ok func(store.Session) bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for {
			_, msg, err := feed.Read(ctx)
			if err != nil {
				t.Fatalf("waiting for %s on the feed: %v", what, err)
			}
			var m struct {
				Type    string
				Session store.Session
			}
			_ = json.Unmarshal(msg, &m)
			if m.Type == "session" && m.Session.ID == a.session && ok(m.Session) {
				return
			}
		}
	}
}
