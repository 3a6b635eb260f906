package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestAdminReadsEverySession: an admin lists and follows every principal's
// sessions, each with its owner, lists the principals, and writes only its
// own sessions; the others see their own alone.
func TestAdminReadsEverySession(t *testing.T) {
	t.Parallel()
	a := setupAuth(t, storetest.Factories[0].Open(t, projection.Config{}), 0, 0)
	ctx := context.Background()
	root := []string{"Authorization", "Bearer " + a.admin}
	bob := []string{"Authorization", "Bearer " + a.other}
	alice, _, _ := a.store.EnsurePrincipal(ctx, "alice")

	feed, _, err := a.dial("/live", root)
	if err != nil {
		t.Fatal(err)
	}
	defer feed.CloseNow()
	waitSockets(t, a, 1)
	var bobs store.Session
	a.want(a.do("POST", "/sessions", map[string]string{"title": "bob's"}, bob...), http.StatusCreated, &bobs)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, msg, err := feed.Read(rctx)
	if err != nil {
		t.Fatal(err)
	}
	var m struct{ Session store.Session }
	_ = json.Unmarshal(msg, &m)
	if m.Session.ID != bobs.ID || m.Session.Owner != bobs.Owner || bobs.Owner == "" {
		t.Errorf("the admin's feed: %s, want bob's session with its owner", msg)
	}

	var list struct{ Sessions []store.Session }
	a.want(a.do("GET", "/sessions", nil, root...), http.StatusOK, &list)
	owners := map[string]string{}
	for _, s := range list.Sessions {
		owners[s.ID] = s.Owner
	}
	if owners[a.session] != alice.ID || owners[bobs.ID] != bobs.Owner {
		t.Errorf("the admin's list: %v, want alice's and bob's sessions with their owners", owners)
	}
	a.want(a.do("GET", "/sessions", nil, bob...), http.StatusOK, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].ID != bobs.ID {
		t.Errorf("bob's list: %+v, want his own alone", list.Sessions)
	}

	a.want(a.do("GET", "/sessions/"+a.session+"/todos", nil, root...), http.StatusOK, nil)
	a.wantError(a.do("POST", "/sessions/"+a.session+"/events", bodies["POST /sessions/{id}/events"], root...), http.StatusForbidden, "forbidden")

	var ps struct{ Principals []store.Principal }
	a.want(a.do("GET", "/principals", nil, root...), http.StatusOK, &ps)
	if !slices.ContainsFunc(ps.Principals, func(p store.Principal) bool { return p.ID == alice.ID && p.Name == "alice" && !p.Admin }) ||
		!slices.ContainsFunc(ps.Principals, func(p store.Principal) bool { return p.Name == "root" && p.Admin }) {
		t.Errorf("principals: %+v", ps.Principals)
	}
	a.wantError(a.do("GET", "/principals", nil, bob...), http.StatusForbidden, "forbidden")
}

// TestFirstPrincipalIsAdmin: the principal a fresh install's one-time link
// signs in as is an admin; later ones are not.
func TestFirstPrincipalIsAdmin(t *testing.T) {
	t.Parallel()
	st := storetest.Factories[0].Open(t, projection.Config{})
	svc := &auth.Service{Store: st}
	b := setup(t, st, api.Options{Auth: api.AuthOptions{Service: svc}})
	code, _, ok, err := svc.Bootstrap(context.Background())
	if err != nil || !ok {
		t.Fatalf("bootstrap: %v %v", ok, err)
	}
	r := b.do("POST", "/login", map[string]string{"code": code})
	var who struct{ Principal store.Principal }
	if err := json.Unmarshal(r.Body, &who); r.Status != http.StatusOK || err != nil || who.Principal.Name != auth.FirstName || !who.Principal.Admin {
		t.Fatalf("the first sign-in: %d %s, want the admin", r.Status, r.Body)
	}
	secret, _, _ := svc.CreateToken(context.Background(), "later", auth.Write)
	id, _ := svc.Token(context.Background(), secret)
	if id.Admin() {
		t.Errorf("a later principal is an admin")
	}
}
