package bench

import (
	"context"
	"os"
	"runtime/pprof"

	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
)

// LiveConfig is what every measurement of the live sockets takes. Latency
// and Throughput run their instances in this process on real sockets; Idle
// starts the server binary as a child, so that its RSS is the server's
// alone. Each raises the process's descriptor limit to the hard limit
// (ulimit -Hn): Idle opens its sockets from this process, so that limit must
// be above their count + 100.
type LiveConfig struct {
	DatabaseURL string // a fresh schema is made in it
	CPUProfile  string // this process's CPU profile, if set
}

// inFreshSchema runs measure in a fresh schema of the database, under the
// CPU profile if one is asked for.
func (c LiveConfig) inFreshSchema(ctx context.Context, measure func(schema string) error) error {
	raiseFileLimit()
	if c.CPUProfile != "" {
		f, err := os.Create(c.CPUProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	db, err := newDatabase(ctx, c.DatabaseURL, "")
	if err != nil {
		return err
	}
	defer db.drop()
	return measure(db.schema)
}

// startLiveInstance starts an instance in this process on schema, without
// the metrics, as the live measurements have always run it; withLive false
// serves the REST API alone.
func (c LiveConfig) startLiveInstance(ctx context.Context, schema string, withLive bool, onCommit func(store.AppendResult)) (*instance, error) {
	pc, err := postgres.PoolConfig(c.DatabaseURL, 16)
	if err != nil {
		return nil, err
	}
	pc.ConnConfig.RuntimeParams["search_path"] = schema
	return startInstance(ctx, pc, instanceOptions{live: withLive, onCommit: onCommit})
}
