package bench

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
)

// instanceOptions are what tell the measurements' Tack instances apart.
type instanceOptions struct {
	// live wires the live hub and its NOTIFY carrier in, as cmd/server
	// does: the hub hangs on every append, so a figure without it would
	// flatter the server. Without it the REST API serves alone.
	live bool
	// metrics registers the API's collectors, as cmd/server does: every
	// request is timed.
	metrics bool
	// logger is the API's and the hub's; nil logs nothing.
	logger *slog.Logger
	// onCommit, when set, is called after each committed append, before
	// the hub.
	onCommit func(store.AppendResult)
}

// instance is a Tack instance over Postgres, wired as cmd/server wires it,
// on a loopback port.
type instance struct {
	addr string // host:port
	url  string // http://addr
	stop func()
}

func startInstance(ctx context.Context, pc *pgxpool.Config, o instanceOptions) (*instance, error) {
	pg, err := postgres.Open(ctx, pc, projection.Config{})
	if err != nil {
		return nil, err
	}
	st := fast.New(pg) // as the server runs it by default
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		st.Close()
		return nil, err
	}
	opts := api.Options{Logger: o.logger}
	if o.metrics {
		opts.Registerer = prometheus.NewRegistry()
	}
	var hub *live.Hub
	hubCtx, stopHub := context.WithCancel(context.Background())
	hubDone := make(chan struct{})
	if o.live {
		carrier := live.NewPGNotify(pc.ConnConfig, live.PGNotifyOptions{Logger: o.logger})
		hub = live.New(st, live.Options{Logger: o.logger, Carrier: carrier})
		go func() { defer close(hubDone); _ = hub.Run(hubCtx) }()
		opts.Live = hub
		opts.OnAppend = hub.OnAppend
		if o.onCommit != nil {
			opts.OnAppend = func(id string, res store.AppendResult) {
				o.onCommit(res)
				hub.OnAppend(id, res)
			}
		}
	} else {
		close(hubDone)
	}
	srv := &http.Server{Handler: api.New(st, opts).Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	in := &instance{addr: ln.Addr().String()}
	in.url = "http://" + in.addr
	in.stop = func() {
		c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if hub != nil {
			hub.Close(c)
		}
		_ = srv.Shutdown(c)
		_ = srv.Close()
		stopHub()
		<-hubDone
		st.Close()
	}
	return in, nil
}
