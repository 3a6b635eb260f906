package main

import (
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/web"
)

// Connection time-outs of the server (docs/api.md): the request line and
// headers must arrive within readHeaderTimeout, and a keep-alive
// connection with no request for idleTimeout is closed.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 30 * time.Second
)

// newHandler is every route Tack serves on the bound address addr: the API,
// the live sockets and the UI, all behind the API's guard. The hosts served
// are the loopback names on addr's port, the public URL's host and the
// allowed hosts.
// The metrics are on reg; they are served on GET /metrics there unless
// -metrics-addr gives them an address of their own.
func newHandler(cfg config, addr string, st store.Store, hub *live.Hub, onAppend func(string, store.AppendResult), log *slog.Logger, authOpts api.AuthOptions, reg *prometheus.Registry) http.Handler {
	host, port, _ := net.SplitHostPort(addr)
	hosts := []string{net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("localhost", port), net.JoinHostPort("::1", port)}
	// The address listened on is served too (127.0.0.2, a LAN address); a
	// wildcard one (0.0.0.0, ::) names no host: -public-url or
	// -allowed-hosts say which names a proxy or a client uses.
	if ip := net.ParseIP(host); ip != nil && !ip.IsUnspecified() {
		hosts = append(hosts, net.JoinHostPort(host, port))
	}
	var trusted []string
	if cfg.PublicURL != "" {
		u, _ := url.Parse(cfg.PublicURL)
		hosts = append(hosts, u.Host)
		trusted = append(trusted, cfg.PublicURL)
	}
	hosts = append(hosts, cfg.AllowedHosts...)
	var metrics http.Handler
	if cfg.MetricsAddr == "" {
		metrics = metricsHandler(reg)
	}
	return api.New(st, api.Options{
		Logger: log, OnAppend: onAppend, Hosts: hosts, TrustedOrigins: trusted, Auth: authOpts,
		ReminderAfter: reminderAfter(cfg.ReminderAfter), UI: web.Handler(), Live: hub,
		Registerer: reg, Metrics: metrics, NoTranscriptReads: cfg.NoTranscriptReads,
	}).Handler()
}

// reminderAfter is -reminder-after as api.Options takes it: there 0 is the
// default and a negative value turns the stale reason off.
func reminderAfter(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
