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
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stderr, nil); err != nil {
		fmt.Fprintln(os.Stderr, "tack:", err)
		os.Exit(1)
	}
}

// config is everything Tack is configured with, from flags over environment.
type config struct {
	Addr               string
	DatabaseURL        string
	DataDir            string
	MaxConns           int
	ParallelInProgress bool
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
	maxConns, _ := strconv.Atoi(envOr("TACK_MAX_CONNS", "16"))
	fs.IntVar(&c.MaxConns, "max-conns", maxConns, "Postgres pool size (env TACK_MAX_CONNS)")
	parallel, _ := strconv.ParseBool(envOr("TACK_PARALLEL_IN_PROGRESS", "false"))
	fs.BoolVar(&c.ParallelInProgress, "parallel-in-progress", parallel, "allow several in_progress todos (env TACK_PARALLEL_IN_PROGRESS)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.DatabaseURL == "" && c.DataDir == "" {
		return c, errors.New("no DATABASE_URL and no data directory: set -data-dir / TACK_DATA_DIR (or HOME)")
	}
	if c.MaxConns < 1 {
		return c, errors.New("-max-conns must be at least 1")
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
// SQLite database in the data directory otherwise. It returns the store and
// the attributes of the start-up line that say which store and where.
func openStore(ctx context.Context, cfg config) (store.Store, []any, error) {
	pcfg := projection.Config{AllowParallel: cfg.ParallelInProgress}
	if cfg.DatabaseURL != "" {
		pc, err := store.PoolConfig(cfg.DatabaseURL, int32(cfg.MaxConns))
		if err != nil {
			return nil, nil, err
		}
		st, err := store.OpenPostgres(ctx, pc, pcfg)
		if err != nil {
			return nil, nil, fmt.Errorf("open store: %w", err)
		}
		return st, []any{"store", "postgres", "database", redact(cfg.DatabaseURL), "maxConns", cfg.MaxConns}, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("data directory: %w", err)
	}
	path := filepath.Join(cfg.DataDir, "tack.db")
	st, err := store.OpenSQLite(ctx, path, pcfg)
	if err != nil {
		return nil, nil, fmt.Errorf("open store: %w", err)
	}
	return st, []any{"store", "sqlite", "database", path}, nil
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

	st, where, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()

	srv := api.New(st, api.Options{Logger: log})
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	attrs := append([]any{"addr", "http://" + ln.Addr().String()}, where...)
	log.Info("tack started", append(attrs, "parallelInProgress", cfg.ParallelInProgress)...)
	if ready != nil {
		ready <- ln.Addr().String()
	}

	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := httpSrv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}
