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
	"github.com/tack-dev/tack/internal/auth"
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

// config is everything Tack is configured with, from flags over environment.
type config struct {
	Addr               string
	DatabaseURL        string
	DataDir            string
	MaxConns           int
	ParallelInProgress bool
	Demo               bool
	AllowedOrigins     []string
	// Auth is "local" or "token"; PublicURL the URL browsers use.
	Auth       string
	PublicURL  string
	WriteRate  float64
	WriteBurst int
}

// Documented defaults of the per-principal write limit (docs/security.md).
const (
	defaultWriteRate  = 100
	defaultWriteBurst = 500
)

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
	demo, _ := strconv.ParseBool(envOr("TACK_DEMO", "false"))
	fs.BoolVar(&c.Demo, "demo", demo, "play a scripted agent session into this server once it is up (env TACK_DEMO)")
	origins := fs.String("allowed-origins", getenv("TACK_ALLOWED_ORIGINS"),
		"comma-separated browser origins (host patterns such as app.example.com or *.example.com) that may open websockets besides the server's own host (env TACK_ALLOWED_ORIGINS)")
	fs.StringVar(&c.Auth, "auth", envOr("TACK_AUTH", "local"),
		"who may use Tack: local (one built-in principal, loopback only) or token (tokens and signed-in browsers; may listen anywhere) (env TACK_AUTH)")
	fs.StringVar(&c.PublicURL, "public-url", getenv("TACK_PUBLIC_URL"),
		"the URL browsers reach Tack at, e.g. https://tack.example.com behind a TLS proxy (env TACK_PUBLIC_URL)")
	writeRate, _ := strconv.ParseFloat(envOr("TACK_WRITE_RATE", strconv.Itoa(defaultWriteRate)), 64)
	fs.Float64Var(&c.WriteRate, "write-rate", writeRate, "writes per second each principal may make, sustained; 0 for no limit (env TACK_WRITE_RATE)")
	writeBurst, _ := strconv.Atoi(envOr("TACK_WRITE_BURST", strconv.Itoa(defaultWriteBurst)))
	fs.IntVar(&c.WriteBurst, "write-burst", writeBurst, "writes each principal may make at once (env TACK_WRITE_BURST)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.Auth != "local" && c.Auth != "token" {
		return c, fmt.Errorf("-auth %q: want local or token", c.Auth)
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return c, fmt.Errorf("-public-url %q: want http://host[:port] or https://host[:port]", c.PublicURL)
		}
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
	if c.MaxConns < 1 {
		return c, errors.New("-max-conns must be at least 1")
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return c, fmt.Errorf("-addr %q: %w", c.Addr, err)
	}
	// -auth local asks for nothing, so it serves only on loopback.
	if ip := net.ParseIP(host); c.Auth == "local" && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return c, fmt.Errorf("-addr %q: -auth local serves without credentials and only on a loopback address; to listen beyond loopback use -auth token", c.Addr)
	}
	return c, nil
}

// socketRecheck is how often the sockets' credentials are checked against
// the store, which bounds how long a socket outlives a token revoked by
// another process (`tack token revoke`).
const socketRecheck = 5 * time.Second

// defaultDataDir is where the SQLite database lives unless told otherwise:
// $XDG_DATA_HOME/tack, else ~/.local/share/tack.
func defaultDataDir(getenv func(string) string) string { return store.DefaultDataDir(getenv) }

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

	authOpts := api.AuthOptions{WriteRate: cfg.WriteRate, WriteBurst: cfg.WriteBurst, OnSignOut: hub.CloseCredential}
	var authSvc *auth.Service
	if cfg.Auth == "token" {
		authSvc = &auth.Service{Store: st}
		authOpts.Service = authSvc
		if u, err := url.Parse(cfg.PublicURL); err == nil && u.Host != "" {
			authOpts.PublicOrigin = u.Scheme + "://" + u.Host
			authOpts.SecureCookie = u.Scheme == "https"
		}
		go authSvc.WatchSockets(hubCtx, hub, socketRecheck)
	}
	ui := web.Handler()
	srv := api.New(st, api.Options{Logger: log, OnAppend: hub.OnAppend, Auth: authOpts,
		Public: func(r api.Router) {
			r.Get("/login", ui.ServeHTTP)
			r.Get("/static/*", ui.ServeHTTP)
		},
		Extra: func(r api.Router) {
			hub.Mount(r)
			r.Get("/", ui.ServeHTTP)
			r.Get("/s/{id}", ui.ServeHTTP)
		}})
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	httpSrv := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	base := "http://" + ln.Addr().String()
	if cfg.PublicURL != "" {
		base = strings.TrimRight(cfg.PublicURL, "/")
	}
	attrs := append([]any{"addr", "http://" + ln.Addr().String(), "auth", cfg.Auth}, where...)
	log.Info("tack started", append(attrs, "parallelInProgress", cfg.ParallelInProgress,
		"allowedOrigins", strings.Join(cfg.AllowedOrigins, ","), "writeRate", cfg.WriteRate, "writeBurst", cfg.WriteBurst, "demo", cfg.Demo)...)
	if authSvc != nil {
		code, expires, ok, err := authSvc.Bootstrap(ctx)
		if err != nil {
			return fmt.Errorf("first sign-in link: %w", err)
		}
		if ok {
			fmt.Fprintf(out, "tack: no principal yet: sign in once at %s/login#code=%s (as %q, until %s); then `tack token create -name NAME` makes tokens for agents\n",
				base, code, auth.FirstName, expires.Format(time.RFC3339))
		}
	}
	demoToken := ""
	if cfg.Demo && authSvc != nil {
		// The demo plays as its own principal; a link lets a person watch.
		if demoToken, _, err = authSvc.CreateToken(ctx, "demo", auth.Write); err != nil {
			return fmt.Errorf("demo token: %w", err)
		}
		code, _, err := authSvc.NewLink(ctx, "demo", auth.Read)
		if err != nil {
			return fmt.Errorf("demo sign-in link: %w", err)
		}
		fmt.Fprintf(out, "demo: the demo plays as principal \"demo\"; watch it after signing in at %s/login#code=%s\n", base, code)
	}
	if ready != nil {
		ready <- ln.Addr().String()
	}

	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	if cfg.Demo {
		go func() {
			_, err := demo.Run(ctx, "http://"+ln.Addr().String(), demo.Options{Pace: 800 * time.Millisecond, Out: out, Token: demoToken})
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
