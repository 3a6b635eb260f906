package faulttest

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tack-dev/tack/internal/eventually"
)

// TestFailover loses the Postgres primary under load, as production meets
// it: a primary and a synchronous standby (clusters of the test's own,
// made with initdb and pg_basebackup), two Tack instances on a multi-host
// URL (target_session_attrs=read-write), writers and subscribers as in
// TestFaults. Mid-write the primary is killed (pg_ctl stop -m immediate)
// and the standby promoted. Writes in flight fail with a retryable 503 or
// commit; no acknowledged write is lost (the standby had every commit
// before it was acknowledged); subscribers resume without a gap and
// without the sweep; the recovery column is how long the writes in flight
// took to be acknowledged again.
func TestFailover(t *testing.T) {
	writeFor := faultTime(t)
	primary := StartCluster(t)
	standby := primary.Standby("standby")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// Synchronous from now on: a commit is acknowledged once the standby
	// has it. Set on the primary alone (after the base backup), so the
	// promoted standby, with no standby of its own, does not wait for one.
	for _, q := range []string{`ALTER SYSTEM SET synchronous_standby_names = 'standby'`, `SELECT pg_reload_conf()`} {
		if err := primary.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	waitSync(ctx, t, primary)

	bin := BuildServer(t)
	url := fmt.Sprintf("postgres://postgres@%s,%s/postgres?sslmode=disable&target_session_attrs=read-write", primary.Addr(), standby.Addr())
	env := []string{"DATABASE_URL=" + url, "TACK_LIVE_SWEEP=10m", "TACK_MAX_CONNS=8", "TACK_AUTH=local", "TACK_WRITE_RATE=0"}
	h := &harness{t: t, cluster: primary, client: &http.Client{Timeout: 5 * time.Second}, acked: map[string]ack{}}
	for range 2 {
		in := NewInstance(t, bin, env...)
		in.Start()
		h.insts = append(h.insts, &instance{Instance: in})
	}
	h.setUp()
	defer h.stopSubscribers()
	h.run([]fault{
		{name: "none (baseline)"},
		{name: "primary killed, synchronous standby promoted", inject: func(h *harness) {
			killed := time.Now()
			primary.Kill()
			standby.Promote()
			promoted := time.Since(killed)
			// Serving again: the first new write acknowledged, on either
			// instance, counted from the kill.
			for n := 0; ; n++ {
				if h.write(1, h.sessions[0], fmt.Sprintf("probe-%d", n), false, n) {
					break
				}
			}
			t.Logf("the standby was promoted %s after the primary was killed; Tack took writes again %s after the kill",
				promoted.Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
		}},
	}, writeFor, "2 instances, primary and synchronous standby")
	// The lists as each instance answers them (read leases included) are
	// the same, and hold the last list write acknowledged.
	for _, id := range h.sessions {
		var versions []int64
		for _, in := range h.insts {
			var got struct{ Version int64 }
			h.mustJSONAt("http://"+in.Addr, http.MethodGet, "/sessions/"+id+"/todos", "", http.StatusOK, &got)
			versions = append(versions, got.Version)
		}
		var want int64
		for key, a := range h.acked {
			if a.session == id && h.todoKeys[key] {
				want = max(want, a.seq)
			}
		}
		for i, v := range versions {
			if v != want {
				t.Errorf("%s: instance %d answers list version %d, want the last acknowledged, %d", id, i, v, want)
			}
		}
	}
}

// waitSync waits until the primary's standby streams synchronously.
func waitSync(ctx context.Context, t *testing.T, primary *Cluster) {
	t.Helper()
	conn, err := pgx.Connect(ctx, primary.URL(primary.Addr()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var state string
	eventually.True(t, 30*time.Second, "synchronous streaming of the standby", func() bool {
		err = conn.QueryRow(ctx, `SELECT sync_state FROM pg_stat_replication WHERE application_name = 'standby'`).Scan(&state)
		return err == nil && state == "sync"
	}, func() string { return fmt.Sprintf("last: %q, %v", state, err) })
}
