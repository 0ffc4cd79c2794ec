package api

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// httpMetrics count requests and their latency by operation: the chi route
// pattern (e.g. /alpha/history/v2/list_items, /v1/sessions/{session_id}),
// never a raw path or session id.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	f := promauto.With(reg)
	return &httpMetrics{
		requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "contextd_http_requests_total",
			Help: "HTTP requests by operation (route pattern), method and status code.",
		}, []string{"operation", "method", "code"}),
		latency: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "contextd_http_request_duration_seconds",
			Help:    "HTTP request latency by operation (route pattern).",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 35},
		}, []string{"operation"}),
	}
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (m *httpMetrics) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		op := "unmatched"
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" {
			op = rc.RoutePattern()
		}
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		m.requests.WithLabelValues(op, r.Method, strconv.Itoa(sw.code)).Inc()
		m.latency.WithLabelValues(op).Observe(time.Since(start).Seconds())
	})
}
