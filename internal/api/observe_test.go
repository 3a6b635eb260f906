package api_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tack-dev/tack/internal/api"
	"github.com/tack-dev/tack/internal/projection"
	"github.com/tack-dev/tack/internal/store"
	"github.com/tack-dev/tack/internal/store/sqlite"
	"github.com/tack-dev/tack/internal/storetest"
)

// setupMetrics serves the API with its collectors on a fresh registry,
// scraped on GET /metrics.
func setupMetrics(t *testing.T, st store.Store, logs *storetest.LogBuffer) *bundle {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts := api.Options{Registerer: reg, Metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{})}
	if logs != nil {
		opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	}
	return setup(t, st, opts)
}

// scrape reads GET /metrics through the contract's transport and parses it.
func (b *bundle) scrape() map[string]*dto.MetricFamily {
	b.t.Helper()
	r := b.do("GET", "/metrics", nil)
	if r.Status != http.StatusOK || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/plain") {
		b.t.Fatalf("GET /metrics: %d %s", r.Status, r.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.Body))
	if err != nil {
		b.t.Fatalf("parse /metrics: %v\n%s", err, r.Body)
	}
	return fams
}

// value is the value of the family's series with the labels (name=value
// pairs), a histogram's count; -1 when there is no such series.
func value(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// TestMetricsMoveWithRequests scrapes GET /metrics, checks the API's
// families are there, and that a todo_write and its replay move the
// counters and the latency of the route pattern, never a raw path.
func TestMetricsMoveWithRequests(t *testing.T) {
	t.Parallel()
	runEach(t, func(t *testing.T, st store.Store) {
		b := setupMetrics(t, st, nil)
		id := b.openSession()
		before := b.scrape()
		for _, name := range []string{"tack_http_request_duration_seconds", "tack_appends_total", "tack_events_appended_total",
			"tack_list_writes_total", "tack_store_errors_total"} {
			if before[name] == nil {
				t.Errorf("family %s missing", name)
			}
		}
		const route = "/sessions/{id}/tools/todo_write"
		body := map[string]any{"todos": []any{todo("a", "pending")}}
		b.want(b.do("POST", "/sessions/"+id+"/tools/todo_write", body, "Idempotency-Key", "k1"), http.StatusOK, nil)
		b.want(b.do("POST", "/sessions/"+id+"/tools/todo_write", body, "Idempotency-Key", "k1"), http.StatusOK, nil)
		after := b.scrape()
		delta := func(name string, labels ...string) float64 {
			return value(after, name, labels...) - max(0, value(before, name, labels...))
		}
		if got := delta("tack_appends_total", "result", "committed"); got != 1 {
			t.Errorf("committed appends moved by %v, want 1", got)
		}
		if got := delta("tack_appends_total", "result", "replayed"); got != 1 {
			t.Errorf("replayed appends moved by %v, want 1", got)
		}
		if got := delta("tack_list_writes_total"); got != 1 {
			t.Errorf("list writes moved by %v, want 1", got)
		}
		if got := delta("tack_events_appended_total"); got < 1 {
			t.Errorf("events appended moved by %v, want at least 1", got)
		}
		if got := delta("tack_http_request_duration_seconds", "method", "POST", "route", route, "status", "200"); got != 2 {
			t.Errorf("latency count of POST %s 200 moved by %v, want 2", route, got)
		}
		if raw := b.do("GET", "/metrics", nil); bytes.Contains(raw.Body, []byte(id)) {
			t.Errorf("a raw path (the session id) is a label value")
		}
	})
}

// runEach runs f once per store implementation, in parallel.
func runEach(t *testing.T, f func(t *testing.T, st store.Store)) {
	for _, fac := range storetest.Factories {
		t.Run(fac.Name, func(t *testing.T) {
			t.Parallel()
			f(t, fac.Open(t, projection.Config{}))
		})
	}
}

// TestStoreErrorsCounted: a store that fails answers 503 with the request's
// id in the body, and the failure is counted.
func TestStoreErrorsCounted(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "tack.db"), projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	b := setupMetrics(t, st, nil)
	id := b.newSession()
	st.Close() // every read from here fails inside the store
	r := rawGet(t, b.url+"/sessions/"+id+"/todos", "")
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", r.StatusCode)
	}
	var e struct {
		Error struct{ Code, RequestID string }
	}
	if err := json.NewDecoder(r.Body).Decode(&e); err != nil || e.Error.Code != "unavailable" || e.Error.RequestID != r.Header.Get(api.RequestIDHeader) || e.Error.RequestID == "" {
		t.Errorf("body %+v (%v), want unavailable with the request id %q", e, err, r.Header.Get(api.RequestIDHeader))
	}
	if got := value(b.scrape(), "tack_store_errors_total", "code", "unavailable"); got != 1 {
		t.Errorf("store errors (unavailable) = %v, want 1", got)
	}
}

func rawGet(t *testing.T, url, requestID string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if requestID != "" {
		req.Header.Set(api.RequestIDHeader, requestID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestRequestIDs: every request gets an id, a sane incoming one or a new
// one, echoed in the header, in an error body and in the request's log
// line, public routes and refusals included.
func TestRequestIDs(t *testing.T) {
	t.Parallel()
	st, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "tack.db"), projection.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logs := &storetest.LogBuffer{}
	b := setupMetrics(t, st, logs)
	generated := regexp.MustCompile(`^[0-9a-f]{16}$`)
	seen := map[string]bool{}
	for _, tc := range []struct {
		name, path, in string
		keep           bool
	}{
		{"none given", "/healthz", "", false},
		{"sane", "/healthz", "trace-42:abc/DEF.1", true},
		{"too long", "/healthz", strings.Repeat("a", api.MaxRequestIDLength+1), false},
		{"a space", "/healthz", "a b", false},
		{"a quote", "/healthz", `x"y`, false},
		{"error, generated", "/sessions/nosuchsession/todos", "", false},
		{"error, sane", "/sessions/nosuchsession/todos", "client-7", true},
		{"unrouted", "/nowhere", "", false},
	} {
		r := rawGet(t, b.url+tc.path, tc.in)
		got := r.Header.Get(api.RequestIDHeader)
		switch {
		case tc.keep && got != tc.in:
			t.Errorf("%s: id %q, want the incoming %q", tc.name, got, tc.in)
		case !tc.keep && !generated.MatchString(got):
			t.Errorf("%s: id %q, want a generated one", tc.name, got)
		case !tc.keep && seen[got]:
			t.Errorf("%s: id %q given twice", tc.name, got)
		}
		seen[got] = true
		if r.StatusCode >= 400 {
			var e struct{ Error struct{ RequestID string } }
			if err := json.NewDecoder(r.Body).Decode(&e); err != nil || e.Error.RequestID != got {
				t.Errorf("%s: error body's requestId %q (%v), want %q", tc.name, e.Error.RequestID, err, got)
			}
		}
		if !strings.Contains(logs.String(), "requestId="+got+" ") {
			t.Errorf("%s: no log line with requestId=%s:\n%s", tc.name, got, logs.String())
		}
	}
	if n := strings.Count(logs.String(), "msg=request "); n != 8 {
		t.Errorf("%d request log lines, want one per request (8):\n%s", n, logs.String())
	}
}
