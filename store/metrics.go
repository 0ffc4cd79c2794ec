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

	// The disk budget (budget.go, GET /v1/index).
	IndexUsedBytes    prometheus.Gauge   // contextd_index_used_bytes
	IndexBudgetBytes  prometheus.Gauge   // contextd_index_budget_bytes
	IndexEvictions    prometheus.Counter // contextd_index_evictions_total
	IndexEvictedBytes prometheus.Counter // contextd_index_evicted_bytes_total
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
		IndexUsedBytes: f.NewGauge(prometheus.GaugeOpts{
			Name: "contextd_index_used_bytes",
			Help: "Derived bytes of the indexed sessions (index.db payload and item-text files), measured after syncs that added bytes; bounded by contextd_index_budget_bytes.",
		}),
		IndexBudgetBytes: f.NewGauge(prometheus.GaugeOpts{
			Name: "contextd_index_budget_bytes",
			Help: "The derived index's disk budget (--index-max-bytes; 0: none).",
		}),
		IndexEvictions: f.NewCounter(prometheus.CounterOpts{
			Name: "contextd_index_evictions_total",
			Help: "Sessions whose derived index was evicted to stay within the disk budget (re-indexed from the JSONL on their next use).",
		}),
		IndexEvictedBytes: f.NewCounter(prometheus.CounterOpts{
			Name: "contextd_index_evicted_bytes_total",
			Help: "Derived bytes freed by evictions.",
		}),
	}
}
