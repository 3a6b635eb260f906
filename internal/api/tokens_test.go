package api_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestTokensThroughServer: a principal makes, lists and revokes its own
// tokens through a running server, and nobody else's.
func TestTokensThroughServer(t *testing.T) {
	t.Parallel()
	for _, f := range storetest.Factories {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			a := setupAuth(t, f.Open(t, projection.Config{}), 0, 0)
			alice := []string{"Authorization", "Bearer " + a.write}
			r := a.do("POST", "/tokens", map[string]string{"scope": "read"}, alice...)
			if r.Status != http.StatusCreated {
				t.Fatalf("POST /tokens: %d %s", r.Status, r.Body)
			}
			var made struct {
				ID, Token, Principal, Scope string
			}
			if err := json.Unmarshal(r.Body, &made); err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(made.Token, "tack_") || made.Principal != "alice" || made.Scope != "read" {
				t.Fatalf("made %+v", made)
			}
			fresh := []string{"Authorization", "Bearer " + made.Token}
			if r := a.do("GET", "/sessions/"+a.session, nil, fresh...); r.Status != http.StatusOK {
				t.Fatalf("the new token reads alice's session: %d", r.Status)
			}
			if r := a.do("POST", "/tokens", nil, fresh...); r.Status != http.StatusForbidden {
				t.Fatalf("a read token makes tokens: %d, want 403", r.Status)
			}
			// A name says what the token is for; the token is alice's whatever
			// it is named, and the sessions its agent makes are hers.
			var named struct{ Token, Principal, Name string }
			a.want(a.do("POST", "/tokens", map[string]string{"name": "bob"}, alice...), http.StatusCreated, &named)
			if named.Principal != "alice" || named.Name != "bob" {
				t.Errorf("a token named bob: %+v, want alice's", named)
			}
			var agents store.Session
			a.want(a.do("POST", "/sessions", map[string]string{"title": "the agent's"}, "Authorization", "Bearer "+named.Token), http.StatusCreated, &agents)
			var mine struct{ Sessions []store.Session }
			a.want(a.do("GET", "/sessions", nil, "Cookie", api.CookieName+"="+a.cookie), http.StatusOK, &mine)
			if !slices.ContainsFunc(mine.Sessions, func(s store.Session) bool { return s.ID == agents.ID }) {
				t.Errorf("alice's browser does not list the session her agent's token made")
			}
			a.wantError(a.do("POST", "/tokens", map[string]string{"name": "a\nb"}, alice...), http.StatusUnprocessableEntity, "invalid")
			a.wantError(a.do("POST", "/tokens", map[string]string{"scope": "admin"}, alice...), http.StatusUnprocessableEntity, "invalid")

			r = a.do("GET", "/tokens", nil, alice...)
			var list struct{ Tokens []store.Token }
			if err := json.Unmarshal(r.Body, &list); err != nil || r.Status != http.StatusOK {
				t.Fatalf("GET /tokens: %d %s", r.Status, r.Body)
			}
			for _, tok := range list.Tokens {
				if tok.PrincipalName != "alice" {
					t.Errorf("alice's list holds %s's token %s", tok.PrincipalName, tok.ID)
				}
			}
			if !slices.ContainsFunc(list.Tokens, func(tok store.Token) bool { return tok.ID == made.ID }) {
				t.Errorf("alice's list lacks the token just made")
			}

			a.wantError(a.do("DELETE", "/tokens/"+made.ID, nil, "Authorization", "Bearer "+a.other), http.StatusNotFound, "not_found")
			if r := a.do("DELETE", "/tokens/"+made.ID, nil, alice...); r.Status != http.StatusOK {
				t.Fatalf("DELETE /tokens/{id}: %d %s", r.Status, r.Body)
			}
			a.wantError(a.do("GET", "/sessions/"+a.session, nil, fresh...), http.StatusUnauthorized, "unauthenticated")
		})
	}
	t.Run("local", func(t *testing.T) {
		t.Parallel()
		b := setup(t, storetest.Factories[0].Open(t, projection.Config{}), api.Options{})
		b.wantError(b.do("POST", "/tokens", nil), http.StatusNotFound, "not_found")
		b.wantError(b.do("GET", "/tokens", nil), http.StatusNotFound, "not_found")
	})
}
