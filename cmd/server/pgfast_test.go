package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/storetest"
)

// TestPGFast: Postgres is served through the fast path by default, and from
// the plain store under -pg-fast=false or TACK_PG_FAST=false (the flag over
// the variable); either store serves, and the start-up line says which.
func TestPGFast(t *testing.T) {
	t.Parallel()
	url := storetest.SchemaURL(t)
	for _, c := range []struct {
		args []string
		env  string
		fast bool
	}{
		{nil, "", true},
		{[]string{"-pg-fast=false"}, "", false},
		{nil, "false", false},
		{[]string{"-pg-fast=true"}, "false", true},
	} {
		t.Run(fmt.Sprint(c.args, c.env), func(t *testing.T) {
			ctx := context.Background()
			cfg, err := parseConfig(c.args, env(map[string]string{"DATABASE_URL": url, "TACK_PG_FAST": c.env}), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			st, _, attrs, err := openStore(ctx, cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			_, isFast := st.(*fast.Store)
			_, plain := st.(*postgres.Store)
			if isFast != c.fast || plain == c.fast {
				t.Fatalf("store %T, want the fast path %v", st, c.fast)
			}
			if i := slices.Index(attrs, any("pgFast")); i < 0 || attrs[i+1] != c.fast {
				t.Errorf("start-up attributes %v, want pgFast %v", attrs, c.fast)
			}
			sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "pg-fast"})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := st.Append(ctx, sess.ID, store.AppendRequest{Events: []projection.NewEvent{
					{Type: projection.TypeMessageUser, Data: json.RawMessage(`{"text":"hi"}`)}}}); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := st.Session(ctx, sess.ID); err != nil || got.LastSeq != 2 {
				t.Fatalf("after two appends: %+v, %v", got, err)
			}
		})
	}
}
