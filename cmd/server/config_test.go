package main

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
