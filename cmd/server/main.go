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
	"net/http/pprof"
	"net/netip"
	"net/url"
	"os"
	"os/signal"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/demo"
	"github.com/tack-dev/tack/internal/live"
	"github.com/tack-dev/tack/internal/notify"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/location"
	"github.com/tack-dev/tack/internal/store/postgres"
	"github.com/tack-dev/tack/internal/store/postgres/fast"
	"github.com/tack-dev/tack/internal/store/sqlite"
	"github.com/tack-dev/tack/web"
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

// maxPoolConns bounds -max-conns: far more than any Postgres serves
// (max_connections defaults to 100), far less than pgx's int32.
const maxPoolConns = 10000

// config is everything Tack is configured with, from flags over environment.
type config struct {
	Addr               string
	MetricsAddr        string
	Pprof              bool // Go's profiles at /debug/pprof/ on MetricsAddr
	DatabaseURL        string
	DataDir            string
	MaxConns           int
	MinConns           int  // Postgres connections opened and warmed before serving (postgres.WarmPool)
	PGFast             bool // the fast path (fast.Store) on the Postgres store
	ParallelInProgress bool
	ReminderAfter      int
	Demo               bool
	AllowedOrigins     []string
	LiveSweep          time.Duration
	IdleAfter          time.Duration
	// Auth is "local" or "token"; PublicURL the URL browsers use.
	Auth         string
	PublicURL    string
	AllowedHosts []string
	WriteRate    float64
	WriteBurst   int
	// Webhooks are told of the moments worth a message (internal/notify),
	// each body signed with WebhookSecret.
	Webhooks      []string
	WebhookSecret string
	// TrustedProxies are the peers whose X-Forwarded-For names the client
	// address of the sign-in and failed-credential limits.
	TrustedProxies []netip.Prefix
	// MaxSocketsPerPrincipal caps each principal's open sockets.
	MaxSocketsPerPrincipal int
	// LogLevel is the lowest level logged; at warn and above the one line
	// per request, and the start-up, shutdown and sign-in lines, are left
	// out.
	LogLevel slog.Level
}

// Documented defaults of the per-principal write limit, the per-address
// limits of signing in and of failed credentials, and the socket cap
// (docs/security.md).
const (
	defaultWriteRate  = 100
	defaultWriteBurst = 500
	// A sign-in every 6 s per client address, 10 at once.
	defaultLoginRate  = 1.0 / 6
	defaultLoginBurst = 10
	// A failed credential a second per client address, 20 at once.
	defaultGuessRate  = 1
	defaultGuessBurst = 20

	defaultMaxSocketsPerPrincipal = 1000
)

// envFlags names each flag's environment variable (its usage says so) and,
// for a value the flag refuses, what the flag wants. A variable set (not empty) is the
// flag's value unless the command line gives the flag.
var envFlags = []struct{ flag, env, want string }{
	{"addr", "TACK_ADDR", ""},
	{"metrics-addr", "TACK_METRICS_ADDR", ""},
	{"pprof", "TACK_PPROF", "true or false"},
	{"database-url", "DATABASE_URL", ""},
	{"data-dir", "TACK_DATA_DIR", ""},
	{"max-conns", "TACK_MAX_CONNS", fmt.Sprintf("a whole number from 1 to %d", maxPoolConns)},
	{"min-conns", "TACK_MIN_CONNS", fmt.Sprintf("a whole number from 0 to %d", maxPoolConns)},
	{"pg-fast", "TACK_PG_FAST", "true or false"},
	{"parallel-in-progress", "TACK_PARALLEL_IN_PROGRESS", "true or false"},
	{"reminder-after", "TACK_REMINDER_AFTER", "a whole number from 0 to 1000"},
	{"idle-after", "TACK_IDLE_AFTER", "a duration such as 5m"},
	{"demo", "TACK_DEMO", "true or false"},
	{"live-sweep", "TACK_LIVE_SWEEP", "a duration such as 30s"},
	{"allowed-origins", "TACK_ALLOWED_ORIGINS", ""},
	{"auth", "TACK_AUTH", ""},
	{"write-rate", "TACK_WRITE_RATE", "a number of writes per second"},
	{"write-burst", "TACK_WRITE_BURST", "a whole number"},
	{"max-sockets-per-principal", "TACK_MAX_SOCKETS_PER_PRINCIPAL", "a whole number"},
	{"public-url", "TACK_PUBLIC_URL", ""},
	{"allowed-hosts", "TACK_ALLOWED_HOSTS", ""},
	{"log-level", "TACK_LOG_LEVEL", "debug, info, warn or error"},
	{"webhook", "TACK_WEBHOOK", "http or https URLs, comma-separated"},
	{"webhook-secret", "TACK_WEBHOOK_SECRET", ""},
	{"trusted-proxy", "TACK_TRUSTED_PROXY", "IP addresses or CIDR ranges, comma-separated"},
}

func parseConfig(args []string, getenv func(string) string, out io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("tack", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "listen address, loopback only")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "",
		"serve GET /metrics on this loopback address alone, without credentials, instead of on -addr like the API")
	fs.BoolVar(&c.Pprof, "pprof", false,
		"also serve Go's runtime profiles (net/http/pprof) at /debug/pprof/ on -metrics-addr")
	fs.StringVar(&c.DatabaseURL, "database-url", "", "Postgres URL; without one, Tack uses SQLite in -data-dir")
	fs.StringVar(&c.DataDir, "data-dir", location.DefaultDataDir(getenv), "directory of the SQLite database tack.db, used when there is no DATABASE_URL")
	fs.IntVar(&c.MaxConns, "max-conns", 16, "Postgres pool size")
	fs.IntVar(&c.MinConns, "min-conns", postgres.DefaultWarmConns,
		"Postgres connections opened and warmed before serving and kept open (at most -max-conns); 0 opens each on demand, cold")
	fs.BoolVar(&c.PGFast, "pg-fast", true,
		"serve Postgres through the append cache, group commit and batched reads; false serves from the plain locking store alone")
	fs.BoolVar(&c.ParallelInProgress, "parallel-in-progress", false, "allow several in_progress todos")
	fs.IntVar(&c.ReminderAfter, "reminder-after", 3,
		"assistant steps since the latest list write after which a list with open items is due a reminder; 0 turns that reason off")
	fs.DurationVar(&c.IdleAfter, "idle-after", projection.DefaultIdleAfter,
		"how long an open turn may go without an event before its session shows as idle rather than working")
	fs.BoolVar(&c.Demo, "demo", false, "play a scripted agent session into this server once it is up")
	fs.DurationVar(&c.LiveSweep, "live-sweep", 30*time.Second, "how often live subscribers re-read every session from Postgres whatever the notices said, the net under a lost notice")
	origins := fs.String("allowed-origins", "",
		"comma-separated browser origins (host patterns such as app.example.com or *.example.com) that may open websockets besides the server's own host")
	fs.StringVar(&c.Auth, "auth", "local",
		"who may use Tack: local (one built-in principal, loopback only) or token (tokens and signed-in browsers; may listen anywhere)")
	fs.Float64Var(&c.WriteRate, "write-rate", -1, "writes per second each principal may make, sustained; 0 for no limit (default 100 under -auth token, none under -auth local)")
	fs.IntVar(&c.WriteBurst, "write-burst", defaultWriteBurst, "writes each principal may make at once")
	fs.IntVar(&c.MaxSocketsPerPrincipal, "max-sockets-per-principal", defaultMaxSocketsPerPrincipal,
		"live sockets each principal may hold open; past it the upgrade is 429; 0 for no cap")
	fs.StringVar(&c.PublicURL, "public-url", "",
		"the URL browsers reach Tack at when a proxy serves it under another name, such as https://tack.example.com: its host is served and its origin may write")
	fs.TextVar(&c.LogLevel, "log-level", slog.LevelInfo,
		"the lowest level logged: debug, info (a line per request), warn or error")
	fs.Func("webhook", "an http or https URL told, by a signed POST, when a session needs its person, a turn ends or fails, or a plan completes; repeatable, or comma-separated",
		func(v string) error {
			for _, w := range strings.Split(v, ",") {
				if w = strings.TrimSpace(w); w == "" {
					continue
				}
				if u, err := url.Parse(w); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return fmt.Errorf("%q is not an http or https URL", w)
				}
				c.Webhooks = append(c.Webhooks, w)
			}
			return nil
		})
	fs.Func("trusted-proxy", "an IP address or CIDR range of a proxy in front of Tack whose X-Forwarded-For names the client, for the per-address limits of sign-ins and failed credentials; repeatable, or comma-separated; none by default",
		func(v string) error {
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p == "" {
					continue
				}
				prefix, err := netip.ParsePrefix(p)
				if err != nil {
					addr, aerr := netip.ParseAddr(p)
					if aerr != nil {
						return fmt.Errorf("%q is not an IP address or CIDR range", p)
					}
					prefix = netip.PrefixFrom(addr, addr.BitLen())
				}
				c.TrustedProxies = append(c.TrustedProxies, prefix.Masked())
			}
			return nil
		})
	fs.StringVar(&c.WebhookSecret, "webhook-secret", "", "the key every webhook body is signed with (HMAC-SHA256, X-Tack-Signature); required with -webhook")
	hosts := fs.String("allowed-hosts", "",
		"comma-separated Host header values served besides loopback on the listen port, each a name (any port) or name:port")
	for _, e := range envFlags {
		fs.Lookup(e.flag).Usage += " (env " + e.env + ")" // every entry names a flag: TestEveryFlagHasItsVariable
		if v := getenv(e.env); v != "" {
			if err := fs.Set(e.flag, v); err != nil {
				return c, fmt.Errorf("-%s / %s: %q is not %s", e.flag, e.env, v, e.want)
			}
		}
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.Auth != "local" && c.Auth != "token" {
		return c, fmt.Errorf("-auth %q: want local or token", c.Auth)
	}
	// Under -auth local the one principal is the machine's own user, whose
	// agents and benchmarks have nobody to be fair to: no limit unless asked.
	if c.WriteRate < 0 {
		c.WriteRate = 0
		if c.Auth == "token" {
			c.WriteRate = defaultWriteRate
		}
	}
	if c.PublicURL != "" {
		u, err := url.Parse(c.PublicURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
			(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
			return c, fmt.Errorf("-public-url %q: want an http or https URL of a host and nothing more, such as https://tack.example.com", c.PublicURL)
		}
		c.PublicURL = u.Scheme + "://" + u.Host
	}
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			if strings.ContainsAny(h, "/ @*") {
				return c, fmt.Errorf("-allowed-hosts %q: want a host name or name:port", h)
			}
			c.AllowedHosts = append(c.AllowedHosts, h)
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
	if len(c.Webhooks) > 0 && c.WebhookSecret == "" {
		return c, errors.New("-webhook needs -webhook-secret (TACK_WEBHOOK_SECRET): the key its bodies are signed with")
	}
	if c.IdleAfter <= 0 {
		return c, errors.New("-idle-after must be a positive duration such as 5m")
	}
	if c.LiveSweep <= 0 {
		return c, errors.New("-live-sweep must be a positive duration such as 30s")
	}
	// The pool size is an int32 in pgx: check the range here rather than
	// let a large value wrap around to a small or negative pool.
	if c.MaxConns < 1 || c.MaxConns > maxPoolConns {
		return c, fmt.Errorf("-max-conns / TACK_MAX_CONNS: %d is not a whole number from 1 to %d", c.MaxConns, maxPoolConns)
	}
	if c.MinConns < 0 || c.MinConns > maxPoolConns {
		return c, fmt.Errorf("-min-conns / TACK_MIN_CONNS: %d is not a whole number from 0 to %d", c.MinConns, maxPoolConns)
	}
	if c.MaxSocketsPerPrincipal < 0 {
		return c, fmt.Errorf("-max-sockets-per-principal / TACK_MAX_SOCKETS_PER_PRINCIPAL: %d is not a whole number", c.MaxSocketsPerPrincipal)
	}
	if c.ReminderAfter < 0 || c.ReminderAfter > 1000 {
		return c, fmt.Errorf("-reminder-after / TACK_REMINDER_AFTER: %d is not a whole number from 0 to 1000", c.ReminderAfter)
	}
	host, _, err := net.SplitHostPort(c.Addr)
	if err != nil {
		return c, fmt.Errorf("-addr %q: %w", c.Addr, err)
	}
	// -auth local asks for nothing, so it serves only on loopback.
	if c.Auth == "local" && !loopback(host) {
		return c, fmt.Errorf("-addr %q: -auth local serves without credentials and only on a loopback address; to listen beyond loopback use -auth token", c.Addr)
	}
	if c.Pprof && c.MetricsAddr == "" {
		return c, errors.New("-pprof serves on -metrics-addr, a loopback address of its own: give one")
	}
	if c.MetricsAddr != "" {
		mhost, _, err := net.SplitHostPort(c.MetricsAddr)
		if err != nil {
			return c, fmt.Errorf("-metrics-addr %q: %w", c.MetricsAddr, err)
		}
		// It asks for no credential, whatever -auth says: loopback only.
		if !loopback(mhost) {
			return c, fmt.Errorf("-metrics-addr %q: the metrics address asks for no credential and serves only on a loopback address; to scrape from elsewhere, leave it unset and scrape GET /metrics on -addr with a token", c.MetricsAddr)
		}
	}
	return c, nil
}

func loopback(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
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

// openStore opens Postgres when there is a DATABASE_URL and the embedded
// SQLite database in the data directory otherwise. It returns the store, the
// carrier of live changes between instances (Postgres LISTEN/NOTIFY; none for
// SQLite, which serves one process), and the attributes of the start-up line
// that say which store and where.
func openStore(ctx context.Context, cfg config, log *slog.Logger) (store.Store, live.Carrier, []any, error) {
	pcfg := projection.Config{AllowParallel: cfg.ParallelInProgress, IdleAfter: cfg.IdleAfter}
	if cfg.DatabaseURL != "" {
		pc, err := postgres.PoolConfig(cfg.DatabaseURL, int32(cfg.MaxConns))
		if err != nil {
			return nil, nil, nil, err
		}
		if cfg.MinConns > 0 {
			postgres.WarmPool(pc, int32(cfg.MinConns))
		}
		pg, err := postgres.Open(ctx, pc, pcfg)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("open store: %w", err)
		}
		var st store.Store = pg
		if cfg.PGFast {
			st = fast.New(pg)
		}
		carrier := live.NewPGNotify(pc.ConnConfig, live.PGNotifyOptions{Logger: log, Sweep: cfg.LiveSweep})
		return st, carrier, []any{"store", "postgres", "database", redact(cfg.DatabaseURL), "maxConns", cfg.MaxConns, "minConns", min(cfg.MinConns, cfg.MaxConns), "pgFast", cfg.PGFast}, nil
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, nil, nil, fmt.Errorf("data directory: %w", err)
	}
	path := filepath.Join(cfg.DataDir, "tack.db")
	st, err := sqlite.Open(ctx, path, pcfg)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open store: %w", err)
	}
	return st, nil, []any{"store", "sqlite", "database", path}, nil
}

// redact hides every secret of a DATABASE_URL for printing, in each form
// Postgres takes one: the password of a URL's userinfo, any query
// parameter or key=value setting whose name holds "password" (password,
// sslpassword). What it cannot parse it does not print at all.
func redact(dsn string) string {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "(unparsable URL)"
		}
		if u.RawQuery != "" {
			q, err := url.ParseQuery(u.RawQuery)
			if err != nil {
				u.RawQuery = "(unparsable query)"
			} else {
				for k := range q {
					if secretKey(k) {
						q[k] = []string{"xxxxx"}
					}
				}
				u.RawQuery = q.Encode()
			}
		}
		return u.Redacted()
	}
	pairs, ok := keyValues(dsn)
	if !ok {
		return "(unparsable connection string)"
	}
	var b strings.Builder
	for i, kv := range pairs {
		if i > 0 {
			b.WriteByte(' ')
		}
		v := kv[1]
		if secretKey(kv[0]) {
			v = "xxxxx"
		}
		b.WriteString(kv[0] + "=" + v)
	}
	return b.String()
}

func secretKey(k string) bool { return strings.Contains(strings.ToLower(k), "password") }

// keyValues splits a key=value connection string the way libpq reads one:
// settings separated by spaces, "key = value" with optional spaces, values
// bare or in single quotes, with backslash escapes in either.
func keyValues(s string) ([][2]string, bool) {
	var out [][2]string
	i := 0
	skip := func() {
		for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
			i++
		}
	}
	for {
		skip()
		if i == len(s) {
			return out, len(out) > 0
		}
		start := i
		for i < len(s) && s[i] != '=' && s[i] != ' ' && s[i] != '\t' {
			i++
		}
		key := s[start:i]
		skip()
		if key == "" || i == len(s) || s[i] != '=' {
			return nil, false
		}
		i++
		skip()
		var v strings.Builder
		quoted := i < len(s) && s[i] == '\''
		if quoted {
			i++
		}
		for {
			if i == len(s) {
				if quoted {
					return nil, false // unterminated quote
				}
				break
			}
			c := s[i]
			if quoted && c == '\'' {
				i++
				break
			}
			if !quoted && (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
				break
			}
			if c == '\\' && i+1 < len(s) {
				i++
				c = s[i]
			}
			v.WriteByte(c)
			i++
		}
		out = append(out, [2]string{key, v.String()})
	}
}

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
		Registerer: reg, Metrics: metrics,
	}).Handler()
}

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

// reminderAfter is -reminder-after as api.Options takes it: there 0 is the
// default and a negative value turns the stale reason off.
func reminderAfter(n int) int {
	if n == 0 {
		return -1
	}
	return n
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

	authOpts := api.AuthOptions{WriteRate: cfg.WriteRate, WriteBurst: cfg.WriteBurst, OnSignOut: hub.CloseCredential,
		LoginRate: defaultLoginRate, LoginBurst: defaultLoginBurst, GuessRate: defaultGuessRate, GuessBurst: defaultGuessBurst,
		TrustedProxies: cfg.TrustedProxies}
	var authSvc *auth.Service
	if cfg.Auth == "token" {
		authSvc = &auth.Service{Store: st}
		authOpts.Service = authSvc
		// parseConfig has cut -public-url to scheme://host: it is the origin.
		authOpts.PublicOrigin = cfg.PublicURL
		authOpts.SecureCookie = strings.HasPrefix(cfg.PublicURL, "https://")
		go authSvc.WatchSockets(hubCtx, hub, socketRecheck)
		go authSvc.PruneEvery(hubCtx, signInPrune)
	}
	reg, err := newRegistry(st, hub)
	if err != nil {
		return err
	}
	onAppend := hub.OnAppend
	if len(cfg.Webhooks) > 0 {
		hooks := notify.NewWebhooks(cfg.Webhooks, notify.Options{Secret: []byte(cfg.WebhookSecret), PublicURL: cfg.PublicURL, Logger: log})
		defer hooks.Close()
		onAppend = func(id string, res store.AppendResult) {
			hub.OnAppend(id, res)
			hooks.OnAppend(id, res)
		}
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	if cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", cfg.MetricsAddr)
		if err != nil {
			ln.Close()
			return fmt.Errorf("-metrics-addr: %w", err)
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
		defer msrv.Close()
		where = append(where, "metricsAddr", "http://"+mln.Addr().String())
	}
	// No ReadTimeout or WriteTimeout here: they would cut the live sockets.
	// The API bounds each request's body and response itself (api.Options
	// BodyTimeout and WriteTimeout); the sockets keep their own deadlines.
	httpSrv := &http.Server{
		Handler:           newHandler(cfg, ln.Addr().String(), st, hub, onAppend, log, authOpts, reg),
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
	}
	base := "http://" + ln.Addr().String()
	if cfg.PublicURL != "" {
		base = cfg.PublicURL
	}
	attrs := append([]any{"addr", "http://" + ln.Addr().String(), "auth", cfg.Auth}, where...)
	log.Info("tack started", append(attrs, "parallelInProgress", cfg.ParallelInProgress, "reminderAfter", cfg.ReminderAfter,
		"allowedOrigins", strings.Join(cfg.AllowedOrigins, ","), "publicURL", cfg.PublicURL,
		"allowedHosts", strings.Join(cfg.AllowedHosts, ","), "writeRate", cfg.WriteRate, "writeBurst", cfg.WriteBurst,
		"maxSocketsPerPrincipal", cfg.MaxSocketsPerPrincipal, "descriptors", descriptors, "demo", cfg.Demo)...)
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
