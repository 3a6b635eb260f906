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
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/demo"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/notify"
	"github.com/tack-dev/tack/internal/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runMain(ctx, os.Args[1:], os.Getenv, os.Stderr)
	stop()
	os.Exit(code)
}

// runMain runs Tack and returns its exit status: 0 after -h, which has
// printed the usage and is no error.
func runMain(ctx context.Context, args []string, getenv func(string) string, out io.Writer) int {
	err := run(ctx, args, getenv, out, nil)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintln(out, "tack:", err)
		return 1
	}
	return 0
}

// run starts Tack and serves until ctx ends. ready, when set, receives the
// bound address once the listener is up (tests serve on port 0).
func run(ctx context.Context, args []string, getenv func(string) string, out io.Writer, ready chan<- string) error {
	cfg, err := parseConfig(args, getenv, out)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: cfg.LogLevel}))

	st, carrier, where, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()

	// Sockets hold descriptors for as long as they are open: the server
	// keeps some in reserve, so that requests, health checks and the
	// database are served however many sockets are open.
	descriptors := raiseDescriptorLimit()
	hub := live.New(st, live.Options{Logger: log, AllowedOrigins: cfg.AllowedOrigins, Carrier: carrier,
		MaxSocketsPerPrincipal: cfg.MaxSocketsPerPrincipal, MaxSockets: socketsFor(descriptors)})
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	go func() { defer close(hubDone); _ = hub.Run(hubCtx) }()
	defer func() { stopHub(); <-hubDone }()

	authOpts, authSvc := authOptions(hubCtx, cfg, st, hub)
	reg, err := newRegistry(st, hub)
	if err != nil {
		return err
	}
	onAppend, closeWebhooks := appendListeners(cfg, hub, log)
	defer closeWebhooks()
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	if cfg.MetricsAddr != "" {
		metricsAddr, closeMetrics, err := serveMetrics(cfg, reg)
		if err != nil {
			ln.Close()
			return err
		}
		defer closeMetrics()
		where = append(where, "metricsAddr", "http://"+metricsAddr)
	}
	// No ReadTimeout or WriteTimeout here: they would cut the live sockets.
	// The API bounds each request's body and response itself (api.Options
	// BodyTimeout and WriteTimeout); the sockets keep their own deadlines.
	httpSrv := &http.Server{
		Handler:           newHandler(cfg, addr, st, hub, onAppend, log, authOpts, reg),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
	}
	logStart(log, cfg, addr, descriptors, where)
	demoToken, err := firstSignIns(ctx, cfg, authSvc, addr, out)
	if err != nil {
		return err
	}
	if ready != nil {
		ready <- addr
	}

	errc := make(chan error, 1)
	go func() { errc <- httpSrv.Serve(ln) }()
	if cfg.Demo {
		go playDemo(ctx, "http://"+addr, demoToken, out, log)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	return shutdown(httpSrv, hub)
}

// authOptions is how the API admits requests under cfg. Under -auth token
// it also returns the credential service, whose upkeep runs until ctx ends.
func authOptions(ctx context.Context, cfg config, st store.Store, hub *live.Hub) (api.AuthOptions, *auth.Service) {
	authOpts := api.AuthOptions{WriteRate: cfg.WriteRate, WriteBurst: cfg.WriteBurst, OnSignOut: hub.CloseCredential,
		LoginRate: defaultLoginRate, LoginBurst: defaultLoginBurst, GuessRate: defaultGuessRate, GuessBurst: defaultGuessBurst,
		TrustedProxies: cfg.TrustedProxies}
	if cfg.Auth != "token" {
		return authOpts, nil
	}
	authSvc := &auth.Service{Store: st}
	authOpts.Service = authSvc
	// parseConfig has cut -public-url to scheme://host: it is the origin.
	authOpts.PublicOrigin = cfg.PublicURL
	authOpts.SecureCookie = strings.HasPrefix(cfg.PublicURL, "https://")
	go authSvc.WatchSockets(ctx, hub, socketRecheck)
	go authSvc.PruneEvery(ctx, signInPrune)
	return authOpts, authSvc
}

// appendListeners is what hears of each append: the hub, and the webhooks
// of -webhook when there are any. The returned func stops the webhooks.
func appendListeners(cfg config, hub *live.Hub, log *slog.Logger) (func(string, store.AppendResult), func()) {
	if len(cfg.Webhooks) == 0 {
		return hub.OnAppend, func() {}
	}
	hooks := notify.NewWebhooks(cfg.Webhooks, notify.Options{Secret: []byte(cfg.WebhookSecret), PublicURL: cfg.PublicURL, Logger: log})
	return func(id string, res store.AppendResult) {
		hub.OnAppend(id, res)
		hooks.OnAppend(id, res)
	}, hooks.Close
}

// logStart writes the start-up line: where Tack listens, which store it
// serves from (where) and how it is configured.
func logStart(log *slog.Logger, cfg config, addr string, descriptors uint64, where []any) {
	attrs := append([]any{"addr", "http://" + addr, "auth", cfg.Auth}, where...)
	log.Info("tack started", append(attrs, "parallelInProgress", cfg.ParallelInProgress, "reminderAfter", cfg.ReminderAfter,
		"allowedOrigins", strings.Join(cfg.AllowedOrigins, ","), "publicURL", cfg.PublicURL,
		"allowedHosts", strings.Join(cfg.AllowedHosts, ","), "writeRate", cfg.WriteRate, "writeBurst", cfg.WriteBurst,
		"maxSocketsPerPrincipal", cfg.MaxSocketsPerPrincipal, "descriptors", descriptors, "demo", cfg.Demo)...)
}

// firstSignIns prints, under -auth token, the sign-in link of the first
// principal while there is none, and under -demo the link a person watches
// the demo by. It returns the token the demo plays with ("" under -auth
// local, which asks for none).
func firstSignIns(ctx context.Context, cfg config, authSvc *auth.Service, addr string, out io.Writer) (string, error) {
	if authSvc == nil {
		return "", nil
	}
	base := "http://" + addr
	if cfg.PublicURL != "" {
		base = cfg.PublicURL
	}
	code, expires, ok, err := authSvc.Bootstrap(ctx)
	if err != nil {
		return "", fmt.Errorf("first sign-in link: %w", err)
	}
	if ok {
		fmt.Fprintf(out, "tack: no principal yet: sign in once at %s/login#code=%s (as %q, until %s); then `tack token create -name NAME` makes tokens for agents\n",
			base, code, auth.FirstName, expires.Format(time.RFC3339))
	}
	if !cfg.Demo {
		return "", nil
	}
	// The demo plays as its own principal; a link lets a person watch.
	demoToken, _, err := authSvc.CreateToken(ctx, "demo", auth.Write)
	if err != nil {
		return "", fmt.Errorf("demo token: %w", err)
	}
	code, _, err = authSvc.NewLink(ctx, "demo", auth.Read)
	if err != nil {
		return "", fmt.Errorf("demo sign-in link: %w", err)
	}
	fmt.Fprintf(out, "demo: the demo plays as principal \"demo\"; watch it after signing in at %s/login#code=%s\n", base, code)
	return demoToken, nil
}

// playDemo plays the scripted session into the server at baseURL.
func playDemo(ctx context.Context, baseURL, token string, out io.Writer, log *slog.Logger) {
	_, err := demo.Run(ctx, baseURL, demo.Options{Pace: 800 * time.Millisecond, Out: out, Token: token})
	if err != nil && ctx.Err() == nil {
		log.Error("demo stopped", "err", err)
	}
}

// shutdown stops serving, giving requests 10 seconds to finish.
func shutdown(httpSrv *http.Server, hub *live.Hub) error {
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
	err := httpSrv.Shutdown(shutdownCtx)
	<-socketsClosed
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	return nil
}

// socketRecheck is how often the sockets' credentials are checked against
// the store, which bounds how long a socket outlives a token revoked by
// another process (`tack token revoke`).
const socketRecheck = 5 * time.Second

// signInPrune is how often ended sign-ins are deleted (each new sign-in
// deletes them too).
const signInPrune = time.Hour

// socketsFor is how many sockets a server of descriptors open files may
// hold: all but a reserve of a quarter, at most 1,024, for everything else.
// 0 (the limit is unknown) caps nothing.
func socketsFor(descriptors uint64) int {
	if descriptors == 0 {
		return 0
	}
	reserve := min(descriptors/4, 1024)
	return int(min(descriptors-reserve, 1<<30))
}
