package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

// testIdempotencyRetention: an Idempotency-Key answers retries for
// store.IdempotencyRetention and is then forgotten — a retry appends anew,
// another request may use the key — and expired keys are pruned by later
// keyed appends, so the table does not keep a copy of every result forever.
func testIdempotencyRetention(t *testing.T, f Factory) {
	t.Parallel()
	{ // the one kind of store f opens
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st := f.Open(t, projection.Config{})
			sess, _, err := st.CreateSession(ctx, store.NewSession{Title: "retention"})
			if err != nil {
				t.Fatal(err)
			}
			keyed := func(key, hash string) store.AppendResult {
				t.Helper()
				res, err := st.Append(ctx, sess.ID, store.AppendRequest{
					Events:         []projection.NewEvent{{Type: projection.TypeMessageUser, Data: []byte(`{"text":"` + hash + `"}`)}},
					IdempotencyKey: key, RequestHash: hash,
				})
				if err != nil {
					t.Fatalf("append %s/%s: %v", key, hash, err)
				}
				return res
			}
			first := keyed("k", "h1")
			if again := keyed("k", "h1"); !again.Replayed || again.Events[0].Seq != first.Events[0].Seq {
				t.Fatalf("retry within the retention: %+v, want the replay of seq %d", again, first.Events[0].Seq)
			}
			keyed("other", "h2")
			for i := range 3 {
				keyed(fmt.Sprint("old", i), "h3")
			}
			if err := AgeIdempotencyKeys(ctx, st, store.IdempotencyRetention+1e9); err != nil {
				t.Fatal(err)
			}
			// Expired: the retry is a new request, appended again.
			if late := keyed("k", "h1"); late.Replayed || late.Events[0].Seq <= first.Events[0].Seq {
				t.Fatalf("retry after the retention: %+v, want a new append", late)
			}
			// Expired: another request may take the key.
			if _, err := st.Append(ctx, sess.ID, store.AppendRequest{
				Events:         []projection.NewEvent{{Type: projection.TypeMessageUser, Data: []byte(`{"text":"x"}`)}},
				IdempotencyKey: "other", RequestHash: "different",
			}); errors.Is(err, store.ErrIdempotencyMismatch) || err != nil {
				t.Fatalf("reuse of an expired key: %v", err)
			}
			// The keyed appends since the ageing pruned every expired key:
			// what is left is the two keys they stored.
			if n, err := IdempotencyKeyCount(ctx, st); err != nil || n != 2 {
				t.Fatalf("keys kept: %d (%v), want 2", n, err)
			}
		})
	}
}
