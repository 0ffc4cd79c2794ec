package api

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// ConnMetrics count the connections each LimitListener holds, by phase,
// and those it closed to make room at its cap (docs/operations.md#metrics,
// docs/security.md):
//
//   - contextd_http_connections{listener, phase}: open connections;
//     phase is "header" (accepted, its first request's headers not yet
//     read: a slow or silent client while this stays high), "idle"
//     (kept alive between requests) or "active" (serving a request);
//   - contextd_http_connections_shed_total{listener, reason}: connections
//     closed at the cap; reason is "slow_header" (stuck in its first
//     request's headers past PartialHeaderGrace or SilentGrace) or "idle".
//
// listener is the name the caller gives (serve uses "tcp" and "unix"), so
// every label comes from a closed set.
type ConnMetrics struct {
	conns *prometheus.GaugeVec
	shed  *prometheus.CounterVec
}

// NewConnMetrics registers the connection metrics on reg.
func NewConnMetrics(reg prometheus.Registerer) *ConnMetrics {
	f := promauto.With(reg)
	return &ConnMetrics{
		conns: f.NewGaugeVec(prometheus.GaugeOpts{
			Name: "contextd_http_connections",
			Help: "Open HTTP connections by listener and phase (header: waiting for the first request's headers; idle: kept alive between requests; active: serving a request).",
		}, []string{"listener", "phase"}),
		shed: f.NewCounterVec(prometheus.CounterOpts{
			Name: "contextd_http_connections_shed_total",
			Help: "HTTP connections closed at the connection cap to make room, by listener and reason (slow_header: stuck in the first request's headers; idle: kept alive between requests).",
		}, []string{"listener", "reason"}),
	}
}

// Listener returns the series of one listener, for LimitListener. Every
// series is created at once, so /metrics shows zeros before the first
// connection.
func (m *ConnMetrics) Listener(name string) *ListenerMetrics {
	lm := &ListenerMetrics{}
	for p, label := range phaseLabels {
		lm.phases[p] = m.conns.WithLabelValues(name, label)
	}
	for r, label := range shedLabels {
		lm.sheds[r] = m.shed.WithLabelValues(name, label)
	}
	return lm
}

// ListenerMetrics are one listener's series; a nil *ListenerMetrics
// counts nothing.
type ListenerMetrics struct {
	phases [phaseClosed]prometheus.Gauge
	sheds  [2]prometheus.Counter
}

// phaseLabels are the phase label values, indexed by connPhase (closed
// connections are not counted).
var phaseLabels = [phaseClosed]string{phaseHeader: "header", phaseIdle: "idle", phaseActive: "active"}

// shedReason is why LimitListener closed a connection to make room.
type shedReason uint8

const (
	shedSlowHeader shedReason = iota
	shedIdle
)

var shedLabels = [2]string{shedSlowHeader: "slow_header", shedIdle: "idle"}

func (m *ListenerMetrics) add(p connPhase, d float64) {
	if m != nil && p < phaseClosed {
		m.phases[p].Add(d)
	}
}

func (m *ListenerMetrics) shed(r shedReason) {
	if m != nil {
		m.sheds[r].Inc()
	}
}
