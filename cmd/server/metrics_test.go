package main

import (
	"bytes"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tack-dev/tack/internal/eventually"
	"github.com/tack-dev/tack/internal/storetest"
)

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsAsWired scrapes GET /metrics of the server as run wires it on
// Postgres: every family the docs list is there, the pool's state and the
// listener's included, and a write moves the counters.
func TestMetricsAsWired(t *testing.T) {
	t.Parallel()
	var out storetest.LogBuffer
	addr, stop := start(t, env(map[string]string{"DATABASE_URL": storetest.SchemaURL(t)}), &out)
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	base := "http://" + addr
	resp, err := http.Post(base+"/sessions", "application/json", strings.NewReader(`{"title":"m"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The listener connects in the background: wait for it, then hold the
	// last scrape to every family (a listener still down fails there).
	var body string
	eventually.Within(10*time.Second, func() bool {
		var status int
		status, body = get(t, base+"/metrics")
		if status != http.StatusOK {
			t.Fatalf("GET /metrics: %d %s", status, body)
		}
		return strings.Contains(body, "tack_live_listener_up 1")
	})
	for _, family := range []string{
		"tack_http_request_duration_seconds_bucket", "tack_appends_total", "tack_events_appended_total", "tack_list_writes_total",
		"tack_store_errors_total", "tack_live_sockets", "tack_live_deliveries_total", "tack_live_slow_closes_total",
		"tack_live_catchup_reads_total", "tack_live_catchup_errors_total", "tack_live_notify_batches_total",
		"tack_live_listener_reconnects_total", "tack_live_listener_up 1", `tack_db_pool_conns{state="idle"}`,
		"tack_db_pool_max_conns 16", "tack_db_pool_acquires_total", "go_goroutines", "process_resident_memory_bytes",
	} {
		if !strings.Contains(body, family) {
			t.Errorf("/metrics lacks %s", family)
		}
	}
	if !regexp.MustCompile(`tack_http_request_duration_seconds_count\{method="POST",route="/sessions",status="201"\} 1\b`).MatchString(body) {
		t.Errorf("the session's creation is not counted under its route:\n%s", grep(body, "tack_http_request_duration_seconds_count"))
	}
}

func grep(s, substr string) string {
	var b bytes.Buffer
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, substr) {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// TestMetricsAddr: with -metrics-addr the metrics are served there alone,
// without credentials, and no longer on the API's address; -pprof adds Go's
// profiles there, and only there.
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	var out storetest.LogBuffer
	addr, stop := start(t, env(map[string]string{"TACK_DATA_DIR": filepath.Join(t.TempDir(), "tack"), "TACK_METRICS_ADDR": "127.0.0.1:0", "TACK_PPROF": "true"}), &out)
	defer func() { _ = stop() }()
	m := regexp.MustCompile(`metricsAddr=(http://127\.0\.0\.1:\d+)`).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("the start line names no metrics address:\n%s", out.String())
	}
	if status, body := get(t, m[1]+"/metrics"); status != http.StatusOK || !strings.Contains(body, "tack_live_sockets") {
		t.Errorf("GET %s/metrics: %d %.200s", m[1], status, body)
	}
	if status, _ := get(t, "http://"+addr+"/metrics"); status != http.StatusNotFound {
		t.Errorf("GET /metrics on -addr: %d, want 404 when -metrics-addr is set", status)
	}
	if status, body := get(t, m[1]+"/debug/pprof/"); status != http.StatusOK || !strings.Contains(body, "goroutine") {
		t.Errorf("GET %s/debug/pprof/: %d %.200s", m[1], status, body)
	}
	if status, _ := get(t, "http://"+addr+"/debug/pprof/"); status != http.StatusNotFound {
		t.Errorf("GET /debug/pprof/ on -addr: %d, want 404", status)
	}
	if _, err := parseConfig([]string{"-pprof"}, env(map[string]string{"DATABASE_URL": "postgres://x"}), &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-metrics-addr") {
		t.Errorf("-pprof without -metrics-addr: %v, want a refusal naming -metrics-addr", err)
	}
}

// TestMetricsAddrLoopbackOnly: the metrics address asks for no credential,
// so it serves only on loopback, whatever -auth says.
func TestMetricsAddrLoopbackOnly(t *testing.T) {
	t.Parallel()
	for _, a := range []string{"0.0.0.0:9090", "192.0.2.1:9090", ":9090"} {
		_, err := parseConfig([]string{"-auth", "token", "-addr", "0.0.0.0:8080", "-metrics-addr", a}, env(map[string]string{"DATABASE_URL": "postgres://x"}), &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), "loopback") {
			t.Errorf("-metrics-addr %s: %v, want a refusal", a, err)
		}
	}
	if _, err := parseConfig([]string{"-metrics-addr", "127.0.0.1:9090"}, env(map[string]string{"DATABASE_URL": "postgres://x"}), &bytes.Buffer{}); err != nil {
		t.Errorf("-metrics-addr 127.0.0.1:9090: %v", err)
	}
}
