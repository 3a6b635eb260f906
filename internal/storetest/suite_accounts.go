package storetest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/store"
)

// testAccounts holds both stores to the same principals, tokens, sign-ins
// and session ownership.
func testAccounts(t *testing.T, f Factory) {
	forEachStore(t, f, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		if n, err := st.PrincipalCount(ctx); err != nil || n != 0 {
			t.Fatalf("PrincipalCount of a fresh store = %d, %v; want 0", n, err)
		}
		alice, created, err := st.EnsurePrincipal(ctx, "alice")
		if err != nil || !created || alice.Name != "alice" {
			t.Fatalf("EnsurePrincipal(alice) = %+v, %v, %v", alice, created, err)
		}
		again, created, err := st.EnsurePrincipal(ctx, "alice")
		if err != nil || created || again.ID != alice.ID {
			t.Fatalf("EnsurePrincipal(alice) again = %+v, %v, %v; want %s, not created", again, created, err, alice.ID)
		}
		tok, err := st.CreateToken(ctx, alice.ID, "", "write", []byte("hash-1"))
		if err != nil || tok.PrincipalName != "alice" || tok.Scope != "write" {
			t.Fatalf("CreateToken = %+v, %v", tok, err)
		}
		c, err := st.Credential(ctx, store.KindToken, []byte("hash-1"))
		if err != nil || c.ID != tok.ID || c.Principal.ID != alice.ID || c.Scope != "write" {
			t.Fatalf("Credential = %+v, %v", c, err)
		}
		if _, err := st.Credential(ctx, store.KindToken, []byte("hash-2")); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Credential of an unknown hash: %v, want ErrNotFound", err)
		}

		// Sign-ins: a cookie is a credential until it expires; a link is
		// redeemed once.
		future := time.Now().Add(time.Hour)
		if err := st.CreateSignIn(ctx, store.SignIn{ID: "sgn_1", PrincipalID: alice.ID, Kind: store.KindCookie, Scope: "read", Hash: []byte("c1"), ExpiresAt: future}); err != nil {
			t.Fatal(err)
		}
		if err := st.CreateSignIn(ctx, store.SignIn{ID: "sgn_2", PrincipalID: alice.ID, Kind: store.KindCookie, Scope: "read", Hash: []byte("c2"), ExpiresAt: time.Now().Add(-time.Second)}); err != nil {
			t.Fatal(err)
		}
		if c, err := st.Credential(ctx, store.KindCookie, []byte("c1")); err != nil || c.ID != "sgn_1" {
			t.Fatalf("cookie credential = %+v, %v", c, err)
		}
		if _, err := st.Credential(ctx, store.KindCookie, []byte("c2")); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("expired cookie: %v, want ErrNotFound", err)
		}
		if err := st.CreateSignIn(ctx, store.SignIn{ID: "sgn_3", PrincipalID: alice.ID, Kind: store.KindLink, Scope: "write", Hash: []byte("l1"), ExpiresAt: future}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Credential(ctx, store.KindCookie, []byte("l1")); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a link is not a cookie: %v", err)
		}
		if si, err := st.RedeemSignInLink(ctx, []byte("l1")); err != nil || si.PrincipalID != alice.ID || si.Scope != "write" {
			t.Fatalf("RedeemSignInLink = %+v, %v", si, err)
		}
		if _, err := st.RedeemSignInLink(ctx, []byte("l1")); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("second redeem: %v, want ErrNotFound", err)
		}

		live, err := st.LiveCredentials(ctx, []string{tok.ID, "sgn_1", "sgn_2", "tok_nope"})
		slices.Sort(live)
		if err != nil || !slices.Equal(live, []string{"sgn_1", tok.ID}) {
			t.Fatalf("LiveCredentials = %v, %v", live, err)
		}
		revoked, err := st.RevokeToken(ctx, tok.ID)
		if err != nil || revoked.RevokedAt == nil {
			t.Fatalf("RevokeToken = %+v, %v", revoked, err)
		}
		if _, err := st.Credential(ctx, store.KindToken, []byte("hash-1")); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("revoked token: %v, want ErrNotFound", err)
		}
		if _, err := st.RevokeToken(ctx, "tok_nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("RevokeToken(unknown): %v, want ErrNotFound", err)
		}
		if err := st.DeleteSignIn(ctx, "sgn_1"); err != nil {
			t.Fatal(err)
		}
		if live, _ := st.LiveCredentials(ctx, []string{tok.ID, "sgn_1"}); len(live) != 0 {
			t.Fatalf("LiveCredentials after revoke and sign-out = %v, want none", live)
		}
		list, err := st.Tokens(ctx)
		if err != nil || len(list) != 1 || list[0].ID != tok.ID || list[0].RevokedAt == nil {
			t.Fatalf("Tokens = %+v, %v", list, err)
		}

		// Ownership.
		mine, _, err := st.CreateSession(ctx, store.NewSession{Title: "mine", Owner: alice.ID})
		if err != nil {
			t.Fatal(err)
		}
		local, _, err := st.CreateSession(ctx, store.NewSession{Title: "local"})
		if err != nil {
			t.Fatal(err)
		}
		if o, err := st.SessionOwner(ctx, mine.ID); err != nil || o != alice.ID {
			t.Fatalf("SessionOwner = %q, %v", o, err)
		}
		if o, _ := st.SessionOwner(ctx, local.ID); o != store.LocalPrincipal {
			t.Fatalf("CreateSession's owner = %q, want %s", o, store.LocalPrincipal)
		}
		if _, err := st.SessionOwner(ctx, "ses_nope"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("SessionOwner(unknown): %v", err)
		}
		got, _, err := st.FindSessions(ctx, store.SessionQuery{Owner: alice.ID, Limit: 10})
		if err != nil || len(got) != 1 || got[0].ID != mine.ID || got[0].Owner != alice.ID {
			t.Fatalf("FindSessions(owner alice) = %+v, %v", got, err)
		}
		all, _, _ := st.Sessions(ctx, 10, "")
		if len(all) != 2 {
			t.Fatalf("Sessions = %d sessions, want 2", len(all))
		}
		if n, _ := st.PrincipalCount(ctx); n != 1 {
			t.Fatalf("PrincipalCount = %d, want 1", n)
		}
	})
}
