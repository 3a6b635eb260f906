// Command tackbench is Tack's one benchmark tool: it parses each
// subcommand's flags and runs its measurement in internal/bench.
// docs/performance.md gives each figure with its command.
//
//	tackbench write [flags]            todo_write/s over HTTP against pgbench's ceiling of the same transaction
//	tackbench live latency [flags]     commit → receive latency with many subscribers on one session
//	tackbench live throughput [flags]  append throughput, live fanout on vs off
//	tackbench live idle [flags]        the server's resident memory per idle socket
//	tackbench restart [flags]          the first pages a freshly started server reads, beside CPU hogs, against warm ones
//	tackbench hooks [flags]            the real `tack hook` per tool call, on both stores, against the least a command hook costs
//	tackbench static [flags]           the same bytes from memory over net/http, for scripts/bench-wrk
//	tackbench fleet [flags]            a fleet of agents through tack-hook-local and tack watch, the board open: server CPU per agent-minute, the board's first paint and its main thread
//
// Every subcommand works in a fresh schema of the database it is given
// (-database-url or DATABASE_URL for write, DATABASE_URL for live), which it
// drops when done. TACKBENCH_CPUPROFILE writes a live mode's CPU profile.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tack-dev/tack/internal/bench"
)

// defaultURL is the local test database of this machine kind.
const defaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

const usage = "usage: tackbench write [flags] | tackbench live latency|throughput|idle [flags] | tackbench restart [flags] | tackbench hooks [flags] | tackbench static [flags] | tackbench fleet [flags] (-h after any for its flags)"

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
		err = write(ctx, args, os.Stdout)
	case "live":
		err = runLive(ctx, args, os.Stdout)
	case "restart":
		err = restart(ctx, args, os.Stdout)
	case "fleet":
		err = fleet(ctx, args, os.Stdout)
	case "hooks":
		err = hooks(ctx, args, os.Stdout)
	case "static":
		var c bench.StaticConfig
		fs := flag.NewFlagSet("tackbench static", flag.ContinueOnError)
		fs.StringVar(&c.Addr, "addr", "127.0.0.1:0", "listen address")
		fs.StringVar(&c.Body, "body", "", "file whose bytes every GET is answered with")
		fs.StringVar(&c.ContentType, "content-type", "application/json", "the answer's Content-Type")
		fs.StringVar(&c.ETag, "etag", "", "the answer's ETag, if any")
		if err = fs.Parse(args); err == nil {
			err = bench.Static(ctx, c, os.Stdout)
		}
	case bench.ServeCommand: // the child of write
		err = bench.Serve(ctx, args, os.Stdin, os.Stdout)
	case bench.ClientsCommand: // the child of live latency -clients-process
		err = bench.Clients(args, os.Stdin, os.Stdout)
	case bench.HogCommand: // the children of restart
		stop() // a hog spins without looking at ctx: let SIGTERM end it
		bench.Hog(os.Stdin)
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

// databaseURL is DATABASE_URL, or the local test database.
func databaseURL() string {
	if url := os.Getenv("DATABASE_URL"); url != "" {
		return url
	}
	return defaultURL
}

func write(ctx context.Context, args []string, out io.Writer) error {
	var c bench.WriteConfig
	fs := flag.NewFlagSet("tackbench write", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.DatabaseURL, "database-url", databaseURL(), "Postgres URL; a fresh schema is made in it (env DATABASE_URL)")
	fs.IntVar(&c.Clients, "clients", 32, "concurrent clients, for Tack and for pgbench alike")
	fs.IntVar(&c.Sessions, "sessions", 1024, "sessions written to, split evenly between the clients")
	fs.DurationVar(&c.Duration, "duration", 10*time.Second, "measured time of each phase")
	fs.DurationVar(&c.Warmup, "warmup", 2*time.Second, "unmeasured load before each Tack phase")
	fs.IntVar(&c.Rounds, "rounds", 3, "rounds of (Tack, pgbench) phases")
	fs.IntVar(&c.MaxConns, "max-conns", 16, "the server's Postgres pool size")
	fs.StringVar(&c.Pgbench, "pgbench", "/usr/bin/pgbench", "pgbench binary")
	fs.IntVar(&c.Threads, "threads", 2, "pgbench worker threads (-j)")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write the Tack server's CPU profile to this file, and its allocations to this file.allocs")
	fs.StringVar(&c.WaitProfile, "waitprofile", "", "write the Tack server's blocking profile (where its goroutines waited) to this file, and its mutex contention to this file.mutex")
	fs.IntVar(&c.ServerProcs, "server-procs", 0, "the server's GOMAXPROCS, which sizes its group commit as on a machine of that many cores (default: this machine's)")
	fs.BoolVar(&c.Live, "live", true, "wire the live hub into the server as cmd/server does; -live=false measures the API alone")
	fs.StringVar(&c.SyncCommit, "synchronous-commit", "", "synchronous_commit for both phases, e.g. off to see what fsync costs (default: the server's)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return bench.Write(ctx, c, out)
}

func hooks(ctx context.Context, args []string, out io.Writer) error {
	var c bench.HooksConfig
	fs := flag.NewFlagSet("tackbench hooks", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.DatabaseURL, "database-url", databaseURL(), "Postgres URL of the postgres store; a fresh schema is made in it (env DATABASE_URL)")
	stores := fs.String("stores", "sqlite,postgres", "the stores measured, a server each")
	agents := fs.String("agents", "4,16", "agent counts to measure")
	fs.DurationVar(&c.Duration, "duration", 5*time.Second, "length of each phase (one command, one count)")
	fs.IntVar(&c.Rounds, "rounds", 3, "rounds of (floor, each hook command) phases")
	fs.StringVar(&c.TackBin, "tack", "", "the tack CLI (default: built from ./cmd/tack)")
	fs.StringVar(&c.HookBin, "tack-hook", "", "the hook's own binary, tack-hook-local beside it (default: built from ./cmd/tack-hook and ./cmd/tack-hook-local)")
	fs.StringVar(&c.ServerBin, "server-bin", "", "the server (default: built from ./cmd/server)")
	fs.Func("hook", "a hook command to measure, {tack} the tack CLI, {tack-hook} the hook's binary, {tack-hook-local} the local hook beside it and {server} the server's URL, or \"http\" for Claude Code's HTTP hook (no process); repeatable (default \""+strings.Join(bench.DefaultHooks, "\" and \"")+"\")", func(v string) error {
		c.Hooks = append(c.Hooks, v)
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	if c.Agents, err = parseCounts(*agents); err != nil {
		return err
	}
	for _, s := range strings.Split(*stores, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.Stores = append(c.Stores, s)
		}
	}
	return bench.Hooks(ctx, c, out)
}

func restart(ctx context.Context, args []string, out io.Writer) error {
	var c bench.RestartConfig
	fs := flag.NewFlagSet("tackbench restart", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.DatabaseURL, "database-url", databaseURL(), "Postgres URL; a fresh schema is made in it (env DATABASE_URL)")
	fs.IntVar(&c.Events, "events", 1008, "messages in the session read")
	fs.IntVar(&c.EventBytes, "event-bytes", 256<<10, "the text of each message, bytes")
	fs.IntVar(&c.Readers, "readers", 8, "concurrent readers of the first pages")
	fs.IntVar(&c.Limit, "limit", 1000, "the pages' limit")
	fs.StringVar(&c.Path, "path", "events", "the read: events or messages")
	fs.IntVar(&c.Rounds, "rounds", 3, "fresh server starts")
	fs.IntVar(&c.Warm, "warm", 3, "warm reads of each reader after each start's first")
	fs.IntVar(&c.Hogs, "hogs", 2, "busy processes beside the run")
	fs.IntVar(&c.MaxConns, "max-conns", 16, "the server's Postgres pool size")
	fs.IntVar(&c.WarmConns, "warm-conns", 8, "connections the server opens and warms before it serves, as cmd/server's -min-conns; 0 opens them cold, on demand")
	fs.StringVar(&c.CPUProfile, "cpuprofile", "", "write the server's CPU profile of the last start to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	return bench.Restart(ctx, c, out)
}

func fleet(ctx context.Context, args []string, out io.Writer) error {
	var c bench.FleetConfig
	fs := flag.NewFlagSet("tackbench fleet", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.Server, "server", "", "the built cmd/server (default: go build it)")
	fs.StringVar(&c.Tack, "tack", "", "the built cmd/tack (default: go build it)")
	fs.StringVar(&c.Hook, "hook", "", "the built hook `tack connect` installs for a server on this machine: cmd/tack-hook-local, cmd/tack-hook beside it (default: go build them)")
	store := fs.String("store", "sqlite", "sqlite, or postgres in a fresh schema of -database-url")
	dbURL := fs.String("database-url", databaseURL(), "Postgres URL for -store postgres (env DATABASE_URL)")
	fs.IntVar(&c.Agents, "agents", 64, "agents working at once")
	fs.IntVar(&c.Ended, "ended", 10000, "ended sessions in the store before the fleet starts")
	fs.DurationVar(&c.Every, "every", 5*time.Second, "mean time between an agent's tool calls")
	fs.DurationVar(&c.Warmup, "warmup", 15*time.Second, "agents working before the window opens")
	fs.DurationVar(&c.Window, "window", time.Minute, "the measured span, and the idle baseline's")
	fs.IntVar(&c.Browsers, "browsers", 2, "browsers holding the board open")
	fs.IntVar(&c.Paints, "paints", 5, "board loads timed, on the empty store and on the full one")
	fs.StringVar(&c.BoardScript, "board-script", "web/e2e/bench/board.js", "the browser's half (needs npm ci --prefix web/e2e)")
	fs.StringVar(&c.Node, "node", "node", "Node.js")
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch *store {
	case "sqlite":
	case "postgres":
		c.DatabaseURL = *dbURL
	default:
		return fmt.Errorf("-store must be sqlite or postgres")
	}
	if c.Server == "" || c.Tack == "" || c.Hook == "" {
		dir, err := os.MkdirTemp("", "tackbench-bin-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		type build struct {
			path *string
			pkg  string
		}
		builds := []build{{&c.Server, "./cmd/server"}, {&c.Tack, "./cmd/tack"}}
		if c.Hook == "" {
			// tack-hook-local hands what it does not cover to tack-hook
			// beside it.
			builds = append(builds, build{&c.Hook, "./cmd/tack-hook-local"}, build{new(string), "./cmd/tack-hook"})
		}
		for _, b := range builds {
			if *b.path != "" {
				continue
			}
			*b.path = filepath.Join(dir, filepath.Base(b.pkg))
			build := exec.CommandContext(ctx, "go", "build", "-o", *b.path, b.pkg)
			build.Stderr = os.Stderr
			if err := build.Run(); err != nil {
				return fmt.Errorf("go build %s (run tackbench fleet from the repository, or give -server, -tack and -hook): %w", b.pkg, err)
			}
		}
	}
	return bench.Fleet(ctx, c, out)
}

func runLive(ctx context.Context, args []string, out io.Writer) error {
	if len(args) < 1 {
		return errors.New("usage: tackbench live latency|throughput|idle [flags]")
	}
	lc := bench.LiveConfig{DatabaseURL: databaseURL(), CPUProfile: os.Getenv("TACKBENCH_CPUPROFILE")}
	fs := flag.NewFlagSet(args[0], flag.ExitOnError)
	switch args[0] {
	case "latency":
		c := bench.LatencyConfig{LiveConfig: lc}
		subscribers := fs.String("subscribers", "1,100,2000", "subscriber counts to measure")
		fs.IntVar(&c.Rate, "rate", 20, "appends per second")
		fs.DurationVar(&c.Duration, "duration", 15*time.Second, "how long to write for each count")
		fs.BoolVar(&c.Remote, "remote", false, "subscribe on a second instance (the NOTIFY path) instead of the writer's")
		fs.BoolVar(&c.ClientsProcess, "clients-process", false, "run the subscribers in a child process instead of beside the server")
		_ = fs.Parse(args[1:])
		var err error
		if c.Subscribers, err = parseCounts(*subscribers); err != nil {
			return err
		}
		return bench.Latency(ctx, c, out)
	case "throughput":
		c := bench.ThroughputConfig{LiveConfig: lc}
		fs.IntVar(&c.Writers, "writers", 8, "concurrent writers, one session each")
		fs.DurationVar(&c.Duration, "duration", 10*time.Second, "length of each run")
		fs.IntVar(&c.Rounds, "rounds", 3, "off/on pairs")
		_ = fs.Parse(args[1:])
		return bench.Throughput(ctx, c, out)
	case "idle":
		c := bench.IdleConfig{LiveConfig: lc}
		fs.StringVar(&c.ServerBin, "server-bin", "", "the server binary (go build -o tack ./cmd/server)")
		fs.IntVar(&c.Conns, "conns", 10000, "idle sockets to open")
		fs.DurationVar(&c.Settle, "settle", 5*time.Second, "wait before reading RSS")
		_ = fs.Parse(args[1:])
		return bench.Idle(ctx, c, out)
	}
	return fmt.Errorf("unknown live mode %q: want latency, throughput or idle", args[0])
}

// parseCounts reads a comma-separated list of counts, each at least 1.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}
