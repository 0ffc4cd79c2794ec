package store

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics are the indexer's Prometheus collectors, registered on the
// registry given to NewMetrics (never the global one). Labels are
// low-cardinality: no session ids or paths.
type Metrics struct {
	BytesIngested   prometheus.Counter     // contextd_index_bytes_ingested_total
	EntriesIngested prometheus.Counter     // contextd_index_entries_ingested_total
	SkippedLines    *prometheus.CounterVec // contextd_index_skipped_lines_total{reason}
	SyncDuration    prometheus.Histogram   // contextd_index_sync_duration_seconds
	Reindexes       *prometheus.CounterVec // contextd_index_reindex_total{cause}
}

// NewMetrics creates the indexer metrics on reg. A nil reg gives working,
// unregistered collectors (for tests).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		BytesIngested: f.NewCounter(prometheus.CounterOpts{
			Name: "contextd_index_bytes_ingested_total",
			Help: "Bytes of session JSONL read and indexed.",
		}),
		EntriesIngested: f.NewCounter(prometheus.CounterOpts{
			Name: "contextd_index_entries_ingested_total",
			Help: "Session entries indexed.",
		}),
		SkippedLines: f.NewCounterVec(prometheus.CounterOpts{
			Name: "contextd_index_skipped_lines_total",
			Help: "Session lines skipped while indexing, by reason (blank, invalid_json, not_object, too_long, missing_id, extra_header, not_a_session).",
		}, []string{"reason"}),
		SyncDuration: f.NewHistogram(prometheus.HistogramOpts{
			Name:    "contextd_index_sync_duration_seconds",
			Help:    "Time to bring one session's index up to date with its file.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		Reindexes: f.NewCounterVec(prometheus.CounterOpts{
			Name: "contextd_index_reindex_total",
			Help: "Sessions re-indexed whole, by cause (shrunk, rewritten, replaced, changed_in_place, text_lost).",
		}, []string{"cause"}),
	}
}
