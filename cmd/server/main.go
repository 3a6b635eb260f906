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
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/gctune"
	"github.com/tack-dev/tack/internal/live"
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
	MaxConns           int
	ParallelInProgress bool
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
	fs.StringVar(&c.DatabaseURL, "database-url", getenv("DATABASE_URL"), "Postgres URL (env DATABASE_URL)")
	maxConns, _ := strconv.Atoi(envOr("TACK_MAX_CONNS", "16"))
	fs.IntVar(&c.MaxConns, "max-conns", maxConns, "Postgres pool size (env TACK_MAX_CONNS)")
	parallel, _ := strconv.ParseBool(envOr("TACK_PARALLEL_IN_PROGRESS", "false"))
	fs.BoolVar(&c.ParallelInProgress, "parallel-in-progress", parallel, "allow several in_progress todos (env TACK_PARALLEL_IN_PROGRESS)")
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
	if c.DatabaseURL == "" {
		return c, errors.New("DATABASE_URL (or -database-url) is required")
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
	gc := gctune.Apply(getenv)

	pc, err := store.PoolConfig(cfg.DatabaseURL, int32(cfg.MaxConns))
	if err != nil {
		return err
	}
	st, err := store.OpenPostgres(ctx, pc, projection.Config{AllowParallel: cfg.ParallelInProgress})
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	defer st.Close()

	carrier := live.NewPGNotify(pc.ConnConfig, live.PGNotifyOptions{Logger: log})
	hub := live.New(st, live.Options{Logger: log, AllowedOrigins: cfg.AllowedOrigins, Carrier: carrier})
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = hub.Run(hubCtx) }()
	defer func() { stopHub(); <-hubDone }()

	srv := api.New(st, api.Options{Logger: log, OnAppend: hub.OnAppend, Extra: hub.Mount})
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	log.Info("tack started", "addr", "http://"+ln.Addr().String(), "store", "postgres", "database", redact(cfg.DatabaseURL),
		"maxConns", cfg.MaxConns, "parallelInProgress", cfg.ParallelInProgress, "allowedOrigins", strings.Join(cfg.AllowedOrigins, ","), "gogc", gc)
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
