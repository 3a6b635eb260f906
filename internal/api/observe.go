package api

import (
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5/middleware"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tack-dev/tack/internal/auth"
	"github.com/tack-dev/tack/internal/store"
)

// RequestIDHeader carries a request's id, in and out.
const RequestIDHeader = "X-Request-ID"

// requestIDKey is RequestIDHeader as net/http keeps it in a request's
// Header: looked up by it, the header is not canonicalized again.
var requestIDKey = http.CanonicalHeaderKey(RequestIDHeader)

// MaxRequestIDLength bounds an incoming X-Request-ID that is honoured.
const MaxRequestIDLength = 128

// metrics are the API's collectors, on the registry Options.Registerer.
type metrics struct {
	requests    *prometheus.HistogramVec
	observers   observers
	appends     *prometheus.CounterVec
	events      prometheus.Counter
	listWrites  prometheus.Counter
	storeErrors *prometheus.CounterVec
}

// requestBuckets span what a request costs here: from tens of
// microseconds (a read served from cache) to the request deadline.
var requestBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "tack_http_request_duration_seconds", Help: "HTTP requests by method, route pattern and status (live sockets, status 101, are counted by tack_live_*).",
			Buckets: requestBuckets,
		}, []string{"method", "route", "status"}),
		appends: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tack_appends_total", Help: "Appends to a session log: committed, or replayed for a repeated Idempotency-Key.",
		}, []string{"result"}),
		events:     prometheus.NewCounter(prometheus.CounterOpts{Name: "tack_events_appended_total", Help: "Events committed to session logs."}),
		listWrites: prometheus.NewCounter(prometheus.CounterOpts{Name: "tack_list_writes_total", Help: "Committed appends that changed a session's todo list."}),
		storeErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tack_store_errors_total", Help: "Requests answered with a store failure: unavailable (503, the database did not answer) or internal (500).",
		}, []string{"code"}),
	}
	m.appends.WithLabelValues("committed")
	m.appends.WithLabelValues("replayed")
	m.storeErrors.WithLabelValues("unavailable")
	m.storeErrors.WithLabelValues("internal")
	reg.MustRegister(m.requests, m.appends, m.events, m.listWrites, m.storeErrors)
	return m
}

// appended counts a committed or replayed append.
func (m *metrics) appended(res store.AppendResult) {
	if m == nil {
		return
	}
	if res.Replayed {
		m.appends.WithLabelValues("replayed").Inc()
		return
	}
	m.appends.WithLabelValues("committed").Inc()
	m.events.Add(float64(len(res.Events)))
	if res.TodosChanged {
		m.listWrites.Inc()
	}
}

// requestInfo is what the layers of one request tell observe and each
// other: the identity authenticate decided, the store failure writeError
// answered, and the body readBody read.
type requestInfo struct {
	id         string
	identity   auth.Identity
	identified bool
	storeError string
	body       []byte
}

// infoOf is r's requestInfo; nil outside the router.
func infoOf(r *http.Request) *requestInfo {
	if c := requestContextOf(r); c != nil {
		return &c.info
	}
	return nil
}

// RequestID is the id of the request r belongs to ("" outside the router).
func RequestID(r *http.Request) string {
	if ri := infoOf(r); ri != nil {
		return ri.id
	}
	return ""
}

// observe is the one middleware every request passes first: it gives the
// request its id (a sane incoming X-Request-ID, else a new one) and echoes
// it, and when the request is done writes its log line and its latency by
// route pattern (never the raw path, whose ids would grow without bound).
// chi's middleware.RequestID would take any incoming header as it comes
// and not echo it; the id here lands in logs and error bodies, so it is
// checked first.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		c := newRequestContext(r.Context())
		defer c.release()
		c.route.Routes = s.routes
		ri := &c.info
		if v := r.Header[requestIDKey]; len(v) > 0 {
			ri.id = v[0]
		}
		if !saneRequestID(ri.id) {
			ri.id = newRequestID()
		}
		w.Header()[RequestIDHeader] = []string{ri.id}
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		r = r.WithContext(c)
		next.ServeHTTP(ww, r)
		status := ww.Status()
		if status == 0 {
			status = http.StatusOK // a handler that wrote nothing
		}
		elapsed := time.Since(start)
		if m := s.metrics; m != nil {
			if ri.storeError != "" {
				m.storeErrors.WithLabelValues(ri.storeError).Inc()
			}
			if status != http.StatusSwitchingProtocols {
				route := c.route.RoutePattern()
				if route == "" {
					route = "unmatched"
				}
				m.observers.of(m.requests, methodLabel(r.Method), route, status).Observe(elapsed.Seconds())
			}
		}
		if !s.log.Enabled(r.Context(), slog.LevelInfo) {
			return
		}
		// The path, never the query or a header: no secret is ever in either
		// log field (one-time links carry their code after '#').
		attrs := []slog.Attr{
			slog.String("requestId", ri.id), slog.String("method", r.Method), slog.String("path", r.URL.Path),
			slog.Int("status", status), slog.Int64("ms", elapsed.Milliseconds()),
		}
		if ri.identified {
			attrs = append(attrs, slog.String("principal", ri.identity.Principal.ID),
				slog.String("name", ri.identity.Principal.Name), slog.String("via", ri.identity.Kind))
		}
		s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", attrs...)
	})
}

// observers keep the request histogram's series by their labels, so that a
// request finds its own in a map read without a lock rather than through
// the histogram's (which hashes and checks every label value each time).
// The labels are bounded (methodLabel, route patterns, statuses), so the
// map is copied on each series' first request and never after.
type observers struct {
	mu sync.Mutex
	m  atomic.Pointer[map[observerKey]prometheus.Observer]
}

type observerKey struct {
	method, route string
	status        int
}

func (o *observers) of(h *prometheus.HistogramVec, method, route string, status int) prometheus.Observer {
	k := observerKey{method, route, status}
	if m := o.m.Load(); m != nil {
		if obs, ok := (*m)[k]; ok {
			return obs
		}
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	old := o.m.Load()
	if old != nil {
		if obs, ok := (*old)[k]; ok {
			return obs
		}
	}
	obs := h.WithLabelValues(method, route, strconv.Itoa(status))
	m := map[observerKey]prometheus.Observer{k: obs}
	if old != nil {
		maps.Copy(m, *old)
	}
	o.m.Store(&m)
	return obs
}

// methodLabel is the request's method, or "other" for one no route
// serves: a client must not grow the label set at will.
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return m
	}
	return "other"
}

// saneRequestID reports whether an incoming id may be used as is: 1 to
// MaxRequestIDLength characters of letters, digits and - _ . : / + = @,
// nothing that could break a log line or a header.
func saneRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-' || c == '_' || c == '.' || c == ':' || c == '/' || c == '+' || c == '=' || c == '@':
		default:
			return false
		}
	}
	return true
}

// newRequestID is 16 hex digits, random: unique enough to find one
// request in the logs of every instance, and no secret.
func newRequestID() string {
	const hex = "0123456789abcdef"
	var b [16]byte
	v := rand.Uint64()
	for i := range b {
		b[i] = hex[v>>(60-4*i)&0xf]
	}
	return string(b[:])
}
