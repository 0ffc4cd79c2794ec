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

	// Rollover quality (docs/rollover-quality.md), observed when a rollover's next
	// boundary is planned (Local: POST /windows after window 0; Tree: the
	// first commit) and when a cut is computed.
	WindowNoteWrites   *prometheus.HistogramVec // contextd_window_note_writes{mode}
	ResetsWithoutNotes *prometheus.CounterVec   // contextd_resets_without_notes_total{mode}
	HintBytes          prometheus.Histogram     // contextd_thread_hint_bytes
	HintCapHits        prometheus.Counter       // contextd_thread_hint_cap_hits_total
	CutDropped         prometheus.Histogram     // contextd_cut_dropped_identifiers
	Recoverability     prometheus.Histogram     // contextd_cut_recoverability_ratio

	RolloverLoops *prometheus.CounterVec // contextd_rollover_loops_total{mode}
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
		WindowNoteWrites: f.NewHistogramVec(prometheus.HistogramOpts{
			Name: "contextd_window_note_writes", Help: "Note writes and appends (codex-context-note entries) of each window a rollover closed, by mode.",
			Buckets: []float64{0, 1, 2, 3, 5, 10, 20, 50},
		}, []string{"mode"}),
		ResetsWithoutNotes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "contextd_resets_without_notes_total", Help: "Rollovers of a window that wrote no note, by mode (the notes guard's warn or off let them run).",
		}, []string{"mode"}),
		HintBytes: f.NewHistogram(prometheus.HistogramOpts{
			Name: "contextd_thread_hint_bytes", Help: "UTF-8 bytes of the thread hint planned into each rollover's next boundary (cap 4000).",
			Buckets: []float64{0, 250, 500, 1000, 2000, 3000, 3500, 3900, 4000},
		}),
		HintCapHits: f.NewCounter(prometheus.CounterOpts{
			Name: "contextd_thread_hint_cap_hits_total", Help: "Thread hints that left recent notes out at the 4000-byte cap (the hint names them).",
		}),
		CutDropped: f.NewHistogram(prometheus.HistogramOpts{
			Name: "contextd_cut_dropped_identifiers", Help: "Dropped identifiers per cut, observed for each window whose cut or recoverability is computed.",
			Buckets: []float64{0, 1, 5, 10, 25, 50, 100, 250, 500, 1000},
		}),
		Recoverability: f.NewHistogram(prometheus.HistogramOpts{
			Name: "contextd_cut_recoverability_ratio", Help: "Share of a window's dropped identifiers that search_contents and read_item give back, per window whose recoverability is computed and whose cut dropped any.",
			Buckets: []float64{0, .5, .8, .9, .95, .99, 1},
		}),
		RolloverLoops: f.NewCounterVec(prometheus.CounterOpts{
			Name: "contextd_rollover_loops_total",
			Help: "Rollovers (Tree) and next boundaries (Local) requested that close the 3rd or a later window in a row with no user message and no successful tool result (a rollover loop), by mode.",
		}, []string{"mode"}),
	}
}

// observeRollover records the quality of one rollover: the closing
// window's note writes and the next boundary's thread hint.
func (m *Metrics) observeRollover(mode string, writes int, hintBytes int, capHit bool) {
	if m == nil || m.WindowNoteWrites == nil {
		return
	}
	m.WindowNoteWrites.WithLabelValues(mode).Observe(float64(writes))
	if writes == 0 {
		m.ResetsWithoutNotes.WithLabelValues(mode).Inc()
	}
	m.HintBytes.Observe(float64(hintBytes))
	if capHit {
		m.HintCapHits.Inc()
	}
}
