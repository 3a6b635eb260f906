package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/storetest"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// start runs Tack on port 0 and returns its address and a stop function
// that waits for a clean shutdown.
func start(t *testing.T, getenv func(string) string, out *storetest.LogBuffer) (string, func() error) {
	t.Helper()
	return startWith(t, []string{"-addr", "127.0.0.1:0"}, getenv, out)
}

// startWith is start with the command line args.
func startWith(t *testing.T, args []string, getenv func(string) string, out *storetest.LogBuffer) (string, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	errc := make(chan error, 1)
	go func() { errc <- run(ctx, args, getenv, out, ready) }()
	select {
	case addr := <-ready:
		return addr, func() error { cancel(); return <-errc }
	case err := <-errc:
		cancel()
		t.Fatalf("run: %v\n%s", err, out)
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatalf("server did not start\n%s", out)
	}
	return "", nil
}

// TestTwoInstancesStartTogether starts two servers on one fresh schema at
// once: goose's session lock makes them take turns migrating, and both serve.
func TestTwoInstancesStartTogether(t *testing.T) {
	t.Parallel()
	getenv := env(map[string]string{"DATABASE_URL": storetest.SchemaURL(t)})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out storetest.LogBuffer
			addr, stop := start(t, getenv, &out)
			resp, err := http.Get("http://" + addr + "/readyz")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Errorf("readyz = %d, want 200", resp.StatusCode)
			}
			if err := stop(); err != nil {
				t.Errorf("shutdown: %v", err)
			}
			if !strings.Contains(out.String(), "tack started") {
				t.Errorf("no start line in log:\n%s", out.String())
			}
		}()
	}
	wg.Wait()
}

func TestConfigRejectsNonLoopbackAddress(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"0.0.0.0:8080", "192.0.2.1:80", ":8080", "nonsense"} {
		_, err := parseConfig([]string{"-addr", addr}, env(map[string]string{"DATABASE_URL": "postgres://x"}), &bytes.Buffer{})
		if err == nil {
			t.Errorf("addr %q accepted, want an error", addr)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:8080", "[::1]:8080"} {
		if _, err := parseConfig([]string{"-addr", addr}, env(map[string]string{"DATABASE_URL": "postgres://x"}), &bytes.Buffer{}); err != nil {
			t.Errorf("addr %q: %v", addr, err)
		}
	}
}

func TestConfigFromEnvironment(t *testing.T) {
	t.Parallel()
	c, err := parseConfig(nil, env(map[string]string{
		"DATABASE_URL": "postgres://x", "TACK_ADDR": "127.0.0.1:9999", "TACK_MAX_CONNS": "7", "TACK_PARALLEL_IN_PROGRESS": "true",
		"TACK_ALLOWED_ORIGINS": "app.example.com, *.example.org", "TACK_DEMO": "true", "TACK_LIVE_SWEEP": "10m", "TACK_REMINDER_AFTER": "5",
		"TACK_AUTH": "token", "TACK_PUBLIC_URL": "https://tack.example.com", "TACK_WRITE_RATE": "2.5", "TACK_WRITE_BURST": "9",
		"TACK_LOG_LEVEL": "warn", "TACK_PG_FAST": "false", "TACK_IDLE_AFTER": "90s", "TACK_MAX_SOCKETS_PER_PRINCIPAL": "20",
		"TACK_MIN_CONNS": "3",
	}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	want := config{Addr: "127.0.0.1:9999", DatabaseURL: "postgres://x", MaxConns: 7, MinConns: 3, ParallelInProgress: true,
		AllowedOrigins: []string{"app.example.com", "*.example.org"}, Demo: true, LiveSweep: 10 * time.Minute, ReminderAfter: 5,
		IdleAfter: 90 * time.Second, Auth: "token", PublicURL: "https://tack.example.com", WriteRate: 2.5, WriteBurst: 9, MaxSocketsPerPrincipal: 20, LogLevel: slog.LevelWarn}
	if !reflect.DeepEqual(c, want) {
		t.Fatalf("got %+v, want %+v", c, want)
	}
	// -reminder-after defaults to 3 and takes 0 (off) to 1000.
	base := env(map[string]string{"DATABASE_URL": "postgres://x"})
	if c, err := parseConfig(nil, base, &bytes.Buffer{}); err != nil || c.ReminderAfter != 3 {
		t.Errorf("default reminder-after %d, %v", c.ReminderAfter, err)
	}
	for _, v := range []string{"-1", "1001", "x"} {
		if _, err := parseConfig(nil, env(map[string]string{"DATABASE_URL": "postgres://x", "TACK_REMINDER_AFTER": v}), &bytes.Buffer{}); err == nil {
			t.Errorf("TACK_REMINDER_AFTER=%s accepted", v)
		}
	}
}

// TestSQLiteWithoutDatabaseURL starts Tack with no DATABASE_URL: it creates
// the data directory and an SQLite database in it, says so on start, keeps
// what it stored across a restart, and refuses a second process meanwhile.
func TestSQLiteWithoutDatabaseURL(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data", "tack")
	getenv := env(map[string]string{"TACK_DATA_DIR": dir})
	var out storetest.LogBuffer
	addr, stop := start(t, getenv, &out)
	if want := "store=sqlite database=" + filepath.Join(dir, "tack.db"); !strings.Contains(out.String(), want) {
		t.Errorf("start line does not say %q:\n%s", want, out.String())
	}
	resp, err := http.Post("http://"+addr+"/sessions", "application/json", strings.NewReader(`{"title":"kept"}`))
	if err != nil {
		t.Fatal(err)
	}
	var sess struct{ ID string }
	err = json.NewDecoder(resp.Body).Decode(&sess)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create session: %d %v", resp.StatusCode, err)
	}

	err = run(context.Background(), []string{"-addr", "127.0.0.1:0"}, getenv, &bytes.Buffer{}, nil)
	if err == nil || !strings.Contains(err.Error(), "held by another Tack process") {
		t.Fatalf("second process on the same data directory: got %v, want a refusal", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}

	addr, stop = start(t, getenv, &storetest.LogBuffer{})
	defer stop()
	resp, err = http.Get("http://" + addr + "/sessions/" + sess.ID)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("session after restart: %d, want 200", resp.StatusCode)
	}
}

func TestDefaultDataDir(t *testing.T) {
	t.Parallel()
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"XDG_DATA_HOME": "/x/data", "HOME": "/home/u"}, "/x/data/tack"},
		{map[string]string{"XDG_DATA_HOME": "relative", "HOME": "/home/u"}, "/home/u/.local/share/tack"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.local/share/tack"},
		{map[string]string{"HOME": "/home/u", "TACK_DATA_DIR": "/srv/tack"}, "/srv/tack"},
	}
	for _, c := range cases {
		cfg, err := parseConfig(nil, env(c.env), &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if cfg.DataDir != c.want || cfg.DatabaseURL != "" {
			t.Errorf("env %v: data dir %q, want %q", c.env, cfg.DataDir, c.want)
		}
	}
	if cfg, _ := parseConfig([]string{"-data-dir", "/flag"}, env(map[string]string{"TACK_DATA_DIR": "/env"}), &bytes.Buffer{}); cfg.DataDir != "/flag" {
		t.Errorf("flag did not win over the environment: %q", cfg.DataDir)
	}
}

// TestDemoPlaysIntoTheServer starts Tack with TACK_DEMO: it prints the URL of
// the session it plays, which the UI serves and the API knows.
func TestDemoPlaysIntoTheServer(t *testing.T) {
	t.Parallel()
	var out storetest.LogBuffer
	addr, stop := start(t, env(map[string]string{"DATABASE_URL": storetest.SchemaURL(t), "TACK_DEMO": "1"}), &out)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	prefix := "demo: watch the agent at http://" + addr + "/s/"
	var id string
	for deadline := time.Now().Add(10 * time.Second); id == "" && time.Now().Before(deadline); {
		if _, rest, ok := strings.Cut(out.String(), prefix); ok {
			id, _, _ = strings.Cut(rest, "\n")
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	if id == "" {
		t.Fatalf("no demo URL printed:\n%s", out.String())
	}
	for _, path := range []string{"/s/" + id, "/sessions/" + id} {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s = %d, want 200", path, resp.StatusCode)
		}
	}
}

// TestConfigMaxConnsRange: the pool size is an int32 in pgx; a value beyond
// the documented range is refused, not wrapped around (4294967297 would be a
// pool of 1), and a value that is not a number is named.
func TestConfigMaxConnsRange(t *testing.T) {
	t.Parallel()
	pg := map[string]string{"DATABASE_URL": "postgres://x"}
	withEnv := func(v string) map[string]string {
		return map[string]string{"DATABASE_URL": "postgres://x", "TACK_MAX_CONNS": v}
	}
	bad := []struct {
		args []string
		env  map[string]string
	}{
		{nil, withEnv("4294967297")},
		{nil, withEnv("2147483648")},
		{nil, withEnv("10001")},
		{nil, withEnv("0")},
		{nil, withEnv("-3")},
		{nil, withEnv("sixteen")},
		{[]string{"-max-conns", "4294967296"}, pg},
		{[]string{"-max-conns", "0"}, pg},
	}
	for _, c := range bad {
		_, err := parseConfig(c.args, env(c.env), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "max-conns") || !strings.Contains(err.Error(), "TACK_MAX_CONNS") {
			t.Errorf("args %q env %q: err %v, want an error naming -max-conns / TACK_MAX_CONNS", c.args, c.env["TACK_MAX_CONNS"], err)
		}
	}
	for _, v := range []string{"1", "10000"} {
		c, err := parseConfig(nil, env(withEnv(v)), &bytes.Buffer{})
		if err != nil || strconv.Itoa(c.MaxConns) != v {
			t.Errorf("TACK_MAX_CONNS=%s: %+v, %v", v, c, err)
		}
	}
}

// TestConfigRefusesBadEnvironment: every variable is read by its flag's own
// parser, so a value the flag would refuse is refused from the environment
// too, naming both, rather than taken as the default; and a range error
// names the value that was given, from either source.
func TestConfigRefusesBadEnvironment(t *testing.T) {
	t.Parallel()
	for key, v := range map[string]string{
		"TACK_DEMO": "yes please", "TACK_PARALLEL_IN_PROGRESS": "sometimes", "TACK_LIVE_SWEEP": "often",
		"TACK_WRITE_RATE": "fast", "TACK_WRITE_BURST": "many", "TACK_REMINDER_AFTER": "x", "TACK_LOG_LEVEL": "loud",
	} {
		_, err := parseConfig(nil, env(map[string]string{"DATABASE_URL": "postgres://x", key: v}), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), strconv.Quote(v)) {
			t.Errorf("%s=%s: err %v, want an error naming the variable and its value", key, v, err)
		}
	}
	_, err := parseConfig([]string{"-reminder-after", "1001"}, env(map[string]string{"DATABASE_URL": "postgres://x"}), &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "1001") {
		t.Errorf("-reminder-after 1001: err %v, want an error naming 1001", err)
	}
}

// TestLogLevel: at the default level every request has its log line; at
// -log-level warn none has.
func TestLogLevel(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args     []string
		requests bool
	}{
		{nil, true},
		{[]string{"-log-level", "warn"}, false},
	} {
		var out storetest.LogBuffer
		addr, stop := startWith(t, append([]string{"-addr", "127.0.0.1:0"}, c.args...),
			env(map[string]string{"DATABASE_URL": storetest.SchemaURL(t)}), &out)
		resp, err := http.Get("http://" + addr + "/sessions")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "msg=request"); got != c.requests {
			t.Errorf("%v: request lines logged %v, want %v:\n%s", c.args, got, c.requests, out.String())
		}
	}
}

// TestEveryFlagHasItsVariable: every flag -h lists names its environment
// variable, and every flag whose value can be refused (any but a string)
// says in envFlags what it wants, so that a bad variable is named with it.
func TestEveryFlagHasItsVariable(t *testing.T) {
	t.Parallel()
	want := map[string]string{}
	for _, e := range envFlags {
		want[e.flag] = e.want
	}
	flags, out := helpFlags(t)
	if len(flags) != len(envFlags) {
		t.Errorf("-h lists %d flags, envFlags %d:\n%s", len(flags), len(envFlags), out)
	}
	for _, f := range flags {
		name, typ, usage := f[1], f[2], f[3]
		w, ok := want[name]
		switch {
		case !ok:
			t.Errorf("-%s has no environment variable in envFlags", name)
		case !strings.Contains(usage, "(env "):
			t.Errorf("-%s's usage does not name its variable: %q", name, usage)
		case typ != "string" && w == "":
			t.Errorf("-%s (%s) can refuse a value, but envFlags says not what it wants", name, typ)
		}
	}
}

// helpFlags is every flag -h lists, each as its match of name, type and
// usage, and the whole of what -h printed.
func helpFlags(t *testing.T) ([][]string, string) {
	t.Helper()
	var out bytes.Buffer
	if _, err := parseConfig([]string{"-h"}, env(nil), &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v", err)
	}
	return regexp.MustCompile(`(?m)^  -([a-z-]+)(?: (\w+))?\n((?:    \t.*\n)+)`).FindAllStringSubmatch(out.String(), -1), out.String()
}

// TestFlagTable holds the table of flags in docs/operations.md to the flag
// set: one row for every flag and no other, each naming the flag's
// variable, and each default the one Tack starts with. A default is
// checked by what it does, not by how -h prints it: given explicitly, it
// must change nothing of the configuration. A cell may give more than one,
// "`0`; `100` with `-auth token`", the later ones each under the flag it
// names; "none" is the empty value.
func TestFlagTable(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(raw), "\n## Flags\n")
	section, _, _ = strings.Cut(section, "\n## ")
	rows := regexp.MustCompile("(?m)^\\| `-([a-z-]+)` \\| `([A-Z_]+)` \\| ([^|]+) \\|").FindAllStringSubmatch(section, -1)
	if len(rows) == 0 {
		t.Fatal("docs/operations.md has no table of flags under \"## Flags\"")
	}

	variables := map[string]string{}
	flags, _ := helpFlags(t)
	for _, f := range flags {
		m := regexp.MustCompile(`\(env ([A-Z_]+)\)`).FindStringSubmatch(f[3])
		if m == nil {
			t.Fatalf("-%s's usage names no variable", f[1])
		}
		variables[f[1]] = m[1]
	}
	// HOME is "~" so that the data directory's default reads as the table
	// writes it.
	getenv := env(map[string]string{"HOME": "~"})
	parse := func(args ...string) config {
		t.Helper()
		c, err := parseConfig(args, getenv, &bytes.Buffer{})
		if err != nil {
			t.Errorf("%v: %v", args, err)
		}
		return c
	}
	alternative := regexp.MustCompile("^(?:`([^`]*)`|none)(?: with `(-[a-z-]+) ([^`]+)`)?$")
	seen := map[string]bool{}
	for _, row := range rows {
		name, variable, defaults := row[1], row[2], row[3]
		want, ok := variables[name]
		switch {
		case seen[name]:
			t.Errorf("-%s has two rows", name)
		case !ok:
			t.Errorf("the table has -%s, which is no flag", name)
		case variable != want:
			t.Errorf("the table gives -%s the variable %s; it is %s", name, variable, want)
		}
		seen[name] = true
		if !ok {
			continue
		}
		for i, alt := range strings.Split(defaults, "; ") {
			m := alternative.FindStringSubmatch(alt)
			if m == nil || i == 0 && m[2] != "" || i > 0 && m[2] == "" {
				t.Errorf("-%s: the default %q is not `value`, none, or (after the first) `value` with `-flag value`", name, alt)
				continue
			}
			var under []string
			if m[2] != "" {
				under = []string{m[2] + "=" + m[3]}
			}
			if got, base := parse(append(under, "-"+name+"="+m[1])...), parse(under...); !reflect.DeepEqual(got, base) {
				t.Errorf("-%s: the table's default %q is not the flag's:\nwith it %+v\nwithout %+v", name, alt, got, base)
			}
		}
	}
	for name := range variables {
		if !seen[name] {
			t.Errorf("-%s is missing from the table in docs/operations.md", name)
		}
	}
}

// TestConfigWebhooks: -webhook is repeatable and comma-separated, from the
// command line and the environment, wants http(s) URLs and a secret.
func TestConfigWebhooks(t *testing.T) {
	t.Parallel()
	base := map[string]string{"DATABASE_URL": "postgres://x"}
	c, err := parseConfig([]string{"-webhook", "http://a.test/h, https://b.test/h", "-webhook", "https://c.test", "-webhook-secret", "k"}, env(base), &bytes.Buffer{})
	if err != nil || strings.Join(c.Webhooks, " ") != "http://a.test/h https://b.test/h https://c.test" || c.WebhookSecret != "k" {
		t.Fatalf("webhooks %v secret %q: %v", c.Webhooks, c.WebhookSecret, err)
	}
	fromEnv := map[string]string{"DATABASE_URL": "postgres://x", "TACK_WEBHOOK": "https://d.test", "TACK_WEBHOOK_SECRET": "k"}
	if c, err := parseConfig(nil, env(fromEnv), &bytes.Buffer{}); err != nil || len(c.Webhooks) != 1 {
		t.Fatalf("from the environment: %v %v", c.Webhooks, err)
	}
	for _, args := range [][]string{{"-webhook", "https://a.test"}, {"-webhook", "ftp://a.test", "-webhook-secret", "k"}, {"-webhook", "a.test", "-webhook-secret", "k"}} {
		if _, err := parseConfig(args, env(base), &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
