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
			a.wantError(a.do("POST", "/tokens", map[string]string{"name": "bob"}, alice...), http.StatusForbidden, "forbidden")
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
