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
//
// Every label value comes from a closed set (docs/security.md): the method
// is one of metricMethods (anything else is "other"), the operation is a
// pattern the router registered or "unmatched", the code is a status
// contextd writes. A refused or made-up request adds no series, so it costs
// O(1) memory whatever its method, path or headers.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec

	patterns func() map[string]bool // the router's registered patterns
}

// metricMethods are the method label values: the RFC 9110 methods, plus
// "other" for any other token.
var metricMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "other"}

// methodLabel maps a request method to its label value.
func methodLabel(m string) string {
	switch m {
	case "GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE":
		return m
	}
	return "other"
}

// codeLabel is the status code label: 100–599 as written, anything else
// "other".
func codeLabel(code int) string {
	if code < 100 || code > 599 {
		return "other"
	}
	return strconv.Itoa(code)
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
		if rc := chi.RouteContext(r.Context()); rc != nil && rc.RoutePattern() != "" && m.patterns != nil && m.patterns()[rc.RoutePattern()] {
			op = rc.RoutePattern()
		}
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		m.requests.WithLabelValues(op, methodLabel(r.Method), codeLabel(sw.code)).Inc()
		m.latency.WithLabelValues(op).Observe(time.Since(start).Seconds())
	})
}
