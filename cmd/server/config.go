package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store/location"
	"github.com/tack-dev/tack/internal/store/postgres"
)

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
	NoTranscriptReads  bool
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
	{"no-transcript-reads", "TACK_NO_TRANSCRIPT_READS", "true or false"},
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
	fs.BoolVar(&c.NoTranscriptReads, "no-transcript-reads", false,
		"never read an agent's transcript for its hook: every hook sends its own (by default a hook of this machine's user asks the server to)")
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
