// Command tackbench is Tack's one benchmark tool; docs/performance.md gives
// each figure with its command.
//
//	tackbench write [flags]               todo_write/s over HTTP against pgbench's ceiling of the same transaction
//	tackbench live latency|throughput|idle [flags]   the live sockets (live.go)
//
// Every subcommand works in a fresh schema of the database it is given
// (-database-url or DATABASE_URL), which it drops when done. write runs the
// Tack server in a child process (tackbench serve), so that the CPU of the
// server, of the load clients and of Postgres can be told apart.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"
)

// defaultURL is the local test database of this machine kind.
const defaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch args := os.Args[2:]; os.Args[1] {
	case "write":
		err = run(ctx, args, os.Stdout)
	case "live":
		err = runLive(ctx, args)
	case "serve": // the child of write
		err = serve(ctx, args, os.Stdin, os.Stdout)
	case "live-clients": // the child of live latency -clients-process
		err = latencyClients(args)
	default:
		fmt.Fprintln(os.Stderr, usage)
		os.Exit(2)
	}
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tackbench:", err)
		os.Exit(1)
	}
}

const usage = "usage: tackbench write [flags] | tackbench live latency|throughput|idle [flags] (-h after any for its flags)"

type config struct {
	DatabaseURL string
	Clients     int
	Sessions    int
	Duration    time.Duration
	Warmup      time.Duration
	Rounds      int
	MaxConns    int
	Pgbench     string
	Threads     int
	SyncCommit  string
	CPUProfile  string
	Live        bool
}

func parseConfig(args []string, out io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("tackbench write", flag.ContinueOnError)
	fs.SetOutput(out)
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		url = defaultURL
	}
	fs.StringVar(&c.DatabaseURL, "database-url", url, "Postgres URL; a fresh schema is made in it (env DATABASE_URL)")
	fs.IntVar(&c.Clients, "clients", 32, "concurrent clients, for Tack and for pgbench alike")
	fs.IntVar(&c.Sessions, "sessions", 1024, "sessions written to, split evenly between the clients")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "measured time of each phase")
	fs.DurationVar(&c.Warmup, "warmup", 2*time.Second, "unmeasured load before each Tack phase")
	fs.IntVar(&c.Rounds, "rounds", 3, "rounds of (Tack, pgbench) phases")
	fs.IntVar(&c.MaxConns, "max-conns", 16, "the server's Postgres pool size")
	fs.StringVar(&c.Pgbench, "pgbench", "/usr/bin/pgbench", "pgbench binary")
	fs.IntVar(&c.Threads, "threads", 2, "pgbench worker threads (-j)")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write the Tack server's CPU profile to this file, and its allocations to this file.allocs")
	fs.BoolVar(&c.Live, "live", true, "wire the live hub into the server as cmd/server does; -live=false measures the API alone")
	fs.StringVar(&c.SyncCommit, "synchronous-commit", "", "synchronous_commit for both phases, e.g. off to see what fsync costs (default: the server's)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.Clients < 1 || c.Sessions < c.Clients || c.Rounds < 1 || c.MaxConns < 1 || c.Duration%time.Second != 0 || c.Duration < time.Second {
		return c, errors.New("need clients ≥ 1, sessions ≥ clients, rounds ≥ 1, max-conns ≥ 1, and a duration of whole seconds (pgbench's -T)")
	}
	c.Sessions -= c.Sessions % c.Clients
	return c, nil
}

func run(ctx context.Context, args []string, out io.Writer) error {
	cfg, err := parseConfig(args, out)
	if err != nil {
		return err
	}
	db, err := newDatabase(ctx, cfg.DatabaseURL, cfg.SyncCommit)
	if err != nil {
		return err
	}
	defer db.drop()

	srv, err := startServer(ctx, db.schemaURL(), cfg.MaxConns, cfg.CPUProfile, cfg.Live)
	if err != nil {
		return err
	}
	defer srv.stop()

	fmt.Fprintf(out, "tackbench: %d clients, %d sessions (%d per client), %s per phase after %s warmup, server MaxConns %d, live hub %t, GOGC=%q\n",
		cfg.Clients, cfg.Sessions, cfg.Sessions/cfg.Clients, cfg.Duration, cfg.Warmup, cfg.MaxConns, cfg.Live, os.Getenv("GOGC"))
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
		fmt.Fprintf(out, "  cores busy, tack:    %s\n", tack.cpu)
		fmt.Fprintf(out, "  cores busy, pgbench: %s\n", pg.cpu)
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
