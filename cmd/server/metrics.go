package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/store"
)

// newRegistry is the registry of every collector: the Go runtime's and the
// process's, the hub's and its carrier's, the Postgres store's (its pool's,
// and its append cache's under -pg-fast). The API adds its own (newHandler).
func newRegistry(st store.Store, hub *live.Hub) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if err := hub.Register(reg); err != nil {
		return nil, err
	}
	if pg, ok := st.(registerer); ok {
		if err := pg.Register(reg); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// registerer is a store with collectors of its own.
type registerer interface {
	Register(prometheus.Registerer) error
}

func metricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// serveMetrics serves GET /metrics, and under -pprof Go's profiles, on
// -metrics-addr. It returns the address bound and a func that stops serving.
func serveMetrics(cfg config, reg *prometheus.Registry) (string, func() error, error) {
	mln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return "", nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsHandler(reg))
	if cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	msrv := &http.Server{Handler: mux, ReadHeaderTimeout: readHeaderTimeout, IdleTimeout: idleTimeout}
	go func() { _ = msrv.Serve(mln) }()
	return mln.Addr().String(), msrv.Close, nil
}
