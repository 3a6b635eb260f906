package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/store/postgres/fast"
)

// WriteConfig is a run of Write.
type WriteConfig struct {
	DatabaseURL string        // a fresh schema is made in it
	Clients     int           // concurrent clients, for Tack and for pgbench alike
	Sessions    int           // sessions written to, split evenly between the clients
	Duration    time.Duration // measured time of each phase, whole seconds (pgbench's -T)
	Warmup      time.Duration // unmeasured load before each Tack phase
	Rounds      int           // rounds of (Tack, pgbench) phases
	MaxConns    int           // the server's Postgres pool size
	Pgbench     string        // the pgbench binary
	Threads     int           // pgbench worker threads (-j)
	SyncCommit  string        // synchronous_commit for both phases; "" keeps the server's
	CPUProfile  string        // the server's CPU profile, and its allocations in CPUProfile.allocs
	WaitProfile string        // the server's blocking profile, and its mutex contention in WaitProfile.mutex
	ServerProcs int           // the server's GOMAXPROCS, which sizes its group commit; 0 keeps the runtime's
	Live        bool          // wire the live hub into the server as cmd/server does
}

// Write measures Tack's todo_write calls/s end to end over HTTP, the server
// in a child process, against pgbench running the store's append
// transaction with as many clients, in alternating phases, and prints each
// round, the CPU per call of each side and the median ratios to out.
func Write(ctx context.Context, cfg WriteConfig, out io.Writer) error {
	if cfg.Clients < 1 || cfg.Sessions < cfg.Clients || cfg.Rounds < 1 || cfg.MaxConns < 1 || cfg.Duration%time.Second != 0 || cfg.Duration < time.Second {
		return errors.New("need clients ≥ 1, sessions ≥ clients, rounds ≥ 1, max-conns ≥ 1, and a duration of whole seconds (pgbench's -T)")
	}
	cfg.Sessions -= cfg.Sessions % cfg.Clients
	db, err := newDatabase(ctx, cfg.DatabaseURL, cfg.SyncCommit)
	if err != nil {
		return err
	}
	defer db.drop()

	var extra []string
	if cfg.WaitProfile != "" {
		extra = append(extra, "-waitprofile", cfg.WaitProfile)
	}
	if cfg.ServerProcs > 0 {
		extra = append(extra, "-procs", fmt.Sprint(cfg.ServerProcs))
	}
	srv, err := startServer(ctx, db.schemaURL(), cfg.MaxConns, cfg.CPUProfile, cfg.Live, extra...)
	if err != nil {
		return err
	}
	defer srv.stop()

	procs := runtime.GOMAXPROCS(0)
	if cfg.ServerProcs > 0 {
		procs = cfg.ServerProcs
	}
	fmt.Fprintf(out, "tackbench: %d clients, %d sessions (%d per client), %s per phase after %s warmup, server MaxConns %d, GOMAXPROCS %d (%d groups in flight at most), live hub %t, GOGC=%q\n",
		cfg.Clients, cfg.Sessions, cfg.Sessions/cfg.Clients, cfg.Duration, cfg.Warmup, cfg.MaxConns, procs, fast.GroupFlights(procs, int32(cfg.MaxConns)), cfg.Live, os.Getenv("GOGC"))
	fmt.Fprintf(out, "postgres: %s\n", db.settings(ctx))
	fmt.Fprintf(out, "load average before: %s\n", loadAverage())

	load, err := newLoad(ctx, srv.addr, cfg.Clients, cfg.Sessions)
	if err != nil {
		return err
	}
	bench, err := newPgbench(ctx, db, cfg)
	if err != nil {
		return err
	}
	defer bench.close()

	var ratios, cpuRatios []float64
	for round := 1; round <= cfg.Rounds; round++ {
		tack, err := load.run(ctx, cfg.Warmup, cfg.Duration, db, srv.pid)
		if err != nil {
			return err
		}
		pg, err := bench.run(ctx)
		if err != nil {
			return err
		}
		ratio := tack.perSecond / pg.perSecond
		ratios = append(ratios, ratio)
		fmt.Fprintf(out, "round %d: tack %.0f todo_write/s (p50 %s, p99 %s) | pgbench %.0f tps | ratio %.2f\n",
			round, tack.perSecond, tack.p50, tack.p99, pg.perSecond, ratio)
		tackOp, tackTotal := tack.cpu.perOp(tack.perSecond)
		pgOp, pgTotal := pg.cpu.perOp(pg.perSecond)
		cpuRatios = append(cpuRatios, pgTotal/tackTotal)
		if round == 1 {
			fmt.Fprintf(out, "  tls to postgres: tack %s, pgbench %s\n", tack.tls, pg.tls)
		}
		fmt.Fprintf(out, "  cores busy, tack:    %s\n", tack.cpu)
		fmt.Fprintf(out, "  cores busy, pgbench: %s\n", pg.cpu)
		fmt.Fprintf(out, "  postgres backends, tack:    %s\n", tack.backends)
		fmt.Fprintf(out, "  postgres backends, pgbench: %s\n", pg.backends)
		fmt.Fprintf(out, "  cpu per call, tack:  %s\n", tackOp)
		fmt.Fprintf(out, "  cpu per txn, pgbench: %s (ratio of cpu per op pgbench/tack %.2f)\n", pgOp, pgTotal/tackTotal)
	}
	slices.Sort(ratios)
	slices.Sort(cpuRatios)
	fmt.Fprintf(out, "median ratio tack/pgbench: %.2f (rounds: %s)\n", ratios[len(ratios)/2], formatRatios(ratios))
	// On a machine of its own, with every core busy, throughput is the
	// inverse of CPU per operation: this ratio is what the first would be
	// without the other load on a shared machine.
	fmt.Fprintf(out, "median ratio of cpu per op, pgbench/tack: %.2f (rounds: %s)\n", cpuRatios[len(cpuRatios)/2], formatRatios(cpuRatios))
	fmt.Fprintf(out, "load average after: %s\n", loadAverage())
	return nil
}

func formatRatios(rs []float64) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("%.2f", r)
	}
	return strings.Join(parts, " ")
}
