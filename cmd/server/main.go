// Command server runs Tack: the HTTP API, the live sockets and the browser UI.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/demo"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/web"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "tack:", err)
		os.Exit(1)
	}
}

// maxPoolConns bounds -max-conns: far more than any Postgres serves
// (max_connections defaults to 100), far less than pgx's int32.
const maxPoolConns = 10000

// config is everything Tack is configured with, from flags over environment.
type config struct {
	Addr               string
	DatabaseURL        string
	DataDir            string
	MaxConns           int
	ParallelInProgress bool
	ReminderAfter      int
	Demo               bool
	AllowedOrigins     []string
}

func parseConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	envOr := func(key, def string) string {
		if v := getenv(key); v != "" {
			return v
		}
		return def
	}
	var c config
	fs := flag.NewFlagSet("tack", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.Addr, "addr", envOr("TACK_ADDR", "127.0.0.1:8080"), "listen address, loopback only (env TACK_ADDR)")
	fs.StringVar(&c.DatabaseURL, "database-url", getenv("DATABASE_URL"), "Postgres URL (env DATABASE_URL); without one, Tack uses SQLite in -data-dir")
	fs.StringVar(&c.DataDir, "data-dir", envOr("TACK_DATA_DIR", defaultDataDir(getenv)), "directory of the SQLite database tack.db, used when there is no DATABASE_URL (env TACK_DATA_DIR)")
	maxConnsEnv := envOr("TACK_MAX_CONNS", "16")
	maxConns, maxConnsErr := strconv.Atoi(maxConnsEnv)
	fs.IntVar(&c.MaxConns, "max-conns", maxConns, "Postgres pool size (env TACK_MAX_CONNS)")
	parallel, _ := strconv.ParseBool(envOr("TACK_PARALLEL_IN_PROGRESS", "false"))
	fs.BoolVar(&c.ParallelInProgress, "parallel-in-progress", parallel, "allow several in_progress todos (env TACK_PARALLEL_IN_PROGRESS)")
	reminderEnv := envOr("TACK_REMINDER_AFTER", "3")
	reminderAfter, reminderErr := strconv.Atoi(reminderEnv)
	fs.IntVar(&c.ReminderAfter, "reminder-after", reminderAfter,
		"assistant steps since the latest list write after which a list with open items is due a reminder; 0 turns that reason off (env TACK_REMINDER_AFTER)")
	demo, _ := strconv.ParseBool(envOr("TACK_DEMO", "false"))
	fs.BoolVar(&c.Demo, "demo", demo, "play a scripted agent session into this server once it is up (env TACK_DEMO)")
	origins := fs.String("allowed-origins", getenv("TACK_ALLOWED_ORIGINS"),
		"comma-separated browser origins (host patterns such as app.example.com or *.example.com) that may open websockets besides the server's own host (env TACK_ALLOWED_ORIGINS)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for _, o := range strings.Split(*origins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			if _, err := path.Match(o, ""); err != nil {
				return c, fmt.Errorf("-allowed-origins %q: %w", o, err)
			}
			c.AllowedOrigins = append(c.AllowedOrigins, o)
		}
	}
	if c.DatabaseURL == "" && c.DataDir == "" {
		return c, errors.New("no DATABASE_URL and no data directory: set -data-dir / TACK_DATA_DIR (or HOME)")
	}
	// The pool size is an int32 in pgx: check the range here rather than
	// let a large value wrap around to a small or negative pool.
	if maxConnsErr != nil {
		return c, fmt.Errorf("-max-conns / TACK_MAX_CONNS: %q is not a whole number from 1 to %d", maxConnsEnv, maxPoolConns)
	}
	if c.MaxConns < 1 || c.MaxConns > maxPoolConns {
		return c, fmt.Errorf("-max-conns / TACK_MAX_CONNS: %d is not a whole number from 1 to %d", c.MaxConns, maxPoolConns)
	}
	if reminderErr != nil || c.ReminderAfter < 0 || c.ReminderAfter > 1000 {
		return c, fmt.Errorf("-reminder-after / TACK_REMINDER_AFTER: %q is not a whole number from 0 to 1000", reminderEnv)
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return c, fmt.Errorf("-addr %q: %w", c.Addr, err)
	}
	// Tack has no authentication yet, so it serves only on loopback.
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return c, fmt.Errorf("-addr %q: Tack serves without authentication and only on a loopback address", c.Addr)
	}
	return c, nil
}

// defaultDataDir is where the SQLite database lives unless told otherwise:
// $XDG_DATA_HOME/tack, else ~/.local/share/tack.
func defaultDataDir(getenv func(string) string) string {
	if x := getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "tack")
	}
	if home := getenv("HOME"); home != "" {
		return filepath.Join(home, ".local", "share", "tack")
	}
	return ""
}

// openStore opens Postgres when there is a DATABASE_URL and the embedded
// SQLite database in the data directory otherwise. It returns the store, the
// carrier of live changes between instances (Postgres LISTEN/NOTIFY; none for
// SQLite, which serves one process), and the attributes of the start-up line
// that say which store and where.
func openStore(ctx context.Context, cfg config, log *slog.Logger) (store.Store, live.Carrier, []any, error) {
	pcfg := projection.Config{AllowParallel: cfg.ParallelInProgress}
	if cfg.DatabaseURL != "" {
		pc, err := store.PoolConfig(cfg.DatabaseURL, int32(cfg.MaxConns))
		if err != nil {
			return nil, nil, nil, err
		}
		st, err := store.OpenPostgres(ctx, pc, pcfg)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("open store: %w", err)
		}
		carrier := live.NewPGNotify(pc.ConnConfig, live.PGNotifyOptions{Logger: log})
		return st, carrier, []any{"store", "postgres", "database", redact(cfg.DatabaseURL), "maxConns", cfg.MaxConns}, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, nil, nil, fmt.Errorf("data directory: %w", err)
	}
	path := filepath.Join(cfg.DataDir, "tack.db")
	st, err := store.OpenSQLite(ctx, path, pcfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open store: %w", err)
	}
	return st, nil, []any{"store", "sqlite", "database", path}, nil
}

// redact hides the password of a database URL for printing.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// run starts Tack and serves until ctx ends. ready, when set, receives the
// bound address once the listener is up (tests serve on port 0).
func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer, ready chan<- string) error {
	cfg, err := parseConfig(args, getenv, out)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(out, nil))

	st, carrier, where, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()

	hub := live.New(st, live.Options{Logger: log, AllowedOrigins: cfg.AllowedOrigins, Carrier: carrier})
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = hub.Run(hubCtx) }()
	defer func() { stopHub(); <-hubDone }()

	ui := web.Handler()
	reminderAfter := cfg.ReminderAfter
	if reminderAfter == 0 {
		reminderAfter = -1 // 0 turns the stale reason off
	}
	srv := api.New(st, api.Options{Logger: log, OnAppend: hub.OnAppend, ReminderAfter: reminderAfter, Extra: func(r api.Router) {
		hub.Mount(r)
		r.Handle("/", ui)
		r.Handle("/s/{id}", ui)
		r.Handle("/static/*", ui)
	}})
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	attrs := append([]any{"addr", "http://" + ln.Addr().String()}, where...)
	log.Info("tack started", append(attrs, "parallelInProgress", cfg.ParallelInProgress, "reminderAfter", cfg.ReminderAfter,
		"allowedOrigins", strings.Join(cfg.AllowedOrigins, ","), "demo", cfg.Demo)...)
	if ready != nil {
		ready <- ln.Addr().String()
	}

	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	if cfg.Demo {
		go func() {
			_, err := demo.Run(ctx, "http://"+ln.Addr().String(), demo.Options{Pace: 800 * time.Millisecond, Out: out})
			if err != nil && ctx.Err() == nil {
				log.Error("demo stopped", "err", err)
			}
		}()
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Hijacked websockets are not the http.Server's to wait for: the hub
	// closes each with 1001 so that clients resume on another instance, and
	// gives up on the stragglers after 5 seconds.
	socketsClosed := make(chan struct{})
	httpSrv.RegisterOnShutdown(func() {
		defer close(socketsClosed)
		ctx, cancel := context.WithTimeout(shutdownCtx, 5*time.Second)
		defer cancel()
		hub.Close(ctx)
	})
	err = httpSrv.Shutdown(shutdownCtx)
	<-socketsClosed
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
