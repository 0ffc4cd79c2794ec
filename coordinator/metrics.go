package coordinator

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the coordinator's Prometheus collectors.
type Metrics struct {
	Rollovers       *prometheus.CounterVec   // contextd_rollovers_total{mode,outcome}
	RolloverSeconds prometheus.Histogram     // contextd_rollover_duration_seconds (tool phase to complete)
	PhaseSeconds    *prometheus.HistogramVec // contextd_rollover_phase_duration_seconds{phase}
	Pending         prometheus.Gauge         // contextd_rollovers_pending
	InvalidArchives *prometheus.CounterVec   // contextd_invalid_archives_total{reason}
	RolloverLoops   *prometheus.CounterVec   // contextd_rollover_loops_total{mode}
}

// NewMetrics creates the coordinator metrics on reg (nil: unregistered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	buckets := []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	return &Metrics{
		Rollovers: f.NewCounterVec(prometheus.CounterOpts{
			Name: "contextd_rollovers_total",
			Help: "Rollovers finished, by mode (local, tree) and outcome (completed, aborted).",
		}, []string{"mode", "outcome"}),
		RolloverSeconds: f.NewHistogram(prometheus.HistogramOpts{
			Name: "contextd_rollover_duration_seconds", Help: "Rollover time from the tool phase to completion.", Buckets: buckets,
		}),
		PhaseSeconds: f.NewHistogramVec(prometheus.HistogramOpts{
			Name: "contextd_rollover_phase_duration_seconds", Help: "Time between rollover phases (settle: request to settle; commit: settle to commit; complete: commit to complete).", Buckets: buckets,
		}, []string{"phase"}),
		Pending: f.NewGauge(prometheus.GaugeOpts{
			Name: "contextd_rollovers_pending", Help: "Rollovers started and not yet completed or aborted.",
		}),
		InvalidArchives: f.NewCounterVec(prometheus.CounterOpts{
			Name: "contextd_invalid_archives_total", Help: "Tree archive manifests found invalid while indexing, by reason.",
		}, []string{"reason"}),
		RolloverLoops: f.NewCounterVec(prometheus.CounterOpts{
			Name: "contextd_rollover_loops_total",
			Help: "Rollovers (Tree) and next boundaries (Local) requested that close the 3rd or a later window in a row with no user message and no successful tool result (a rollover loop), by mode.",
		}, []string{"mode"}),
	}
}
