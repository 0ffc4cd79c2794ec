package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// recorder is the Registerer serve's collectors register on in these
// tests: it registers them on the real registry and remembers them, so
// that their descriptions list every metric, also vectors nothing has
// observed yet (which /metrics leaves out).
type recorder struct {
	prometheus.Registerer
	mu         sync.Mutex
	collectors []prometheus.Collector
}

func (r *recorder) Register(c prometheus.Collector) error {
	r.mu.Lock()
	r.collectors = append(r.collectors, c)
	r.mu.Unlock()
	return r.Registerer.Register(c)
}

func (r *recorder) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// exportedMetric is one metric family serve exports.
type exportedMetric struct {
	histogram bool
	labels    map[string]bool
}

var (
	descName   = regexp.MustCompile(`fqName: "([^"]+)"`)
	descLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}`)
)

// servedMetrics runs serve on copies of fixtures, makes one authenticated
// request and returns the /metrics text and every metric family serve
// exports: the described collectors of store, coordinator, remote and the
// index gauges (recorded), plus the families on /metrics (HTTP, Go and
// process collectors).
func servedMetrics(t *testing.T) ([]byte, map[string]exportedMetric) {
	t.Helper()
	rec := &recorder{}
	wrapRegisterer = func(r prometheus.Registerer) prometheus.Registerer { rec.Registerer = r; return rec }
	defer func() { wrapRegisterer = nil }()
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	os.MkdirAll(sessions, 0o755)
	for _, f := range []string{"pi-tree/tree-bad-manifests-small.jsonl", "pi-sessions/compact.jsonl"} {
		b, _ := os.ReadFile(filepath.Join("..", "..", "testdata", f))
		os.WriteFile(filepath.Join(sessions, filepath.Base(f)), b, 0o600)
	}
	state := filepath.Join(dir, "state")
	_, addr, stop := startServe(t, nil, "--sessions-dir", sessions, "--state-dir", state)
	defer stop()
	tok, _ := os.ReadFile(filepath.Join(state, "token"))
	get := func(path string) []byte {
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		req.Header.Set("X-Contextd-Token", strings.TrimSpace(string(tok)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return b
	}
	get("/v1/sessions")
	body := get("/metrics")

	out := map[string]exportedMetric{}
	for _, c := range rec.collectors {
		hist := false
		switch c.(type) {
		case prometheus.Histogram, *prometheus.HistogramVec:
			hist = true
		}
		ch := make(chan *prometheus.Desc, 16)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			s := d.String()
			m := exportedMetric{histogram: hist, labels: map[string]bool{}}
			if l := descLabels.FindStringSubmatch(s); l != nil && l[1] != "" {
				for _, n := range strings.Split(l[1], ",") {
					m.labels[n] = true
				}
			}
			out[descName.FindStringSubmatch(s)[1]] = m
		}
	}
	fams, err := textParser().TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	for name, f := range fams {
		m, ok := out[name]
		if !ok {
			m = exportedMetric{histogram: f.GetType() == dto.MetricType_HISTOGRAM, labels: map[string]bool{}}
		}
		for _, mm := range f.GetMetric() {
			for _, lp := range mm.GetLabel() {
				m.labels[lp.GetName()] = true
			}
		}
		out[name] = m
	}
	return body, out
}

// TestMetricsPromlint: /metrics passes client_golang's promlint (metric
// and label naming, units, counter suffixes, help texts).
func TestMetricsPromlint(t *testing.T) {
	body, exported := servedMetrics(t)
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	// The families docs/operations.md's Metrics table documents are all exported.
	for _, name := range []string{"contextd_http_requests_total", "contextd_http_request_duration_seconds", "contextd_http_connections", "contextd_http_connections_shed_total", "contextd_sessions", "contextd_entries",
		"contextd_index_bytes_ingested_total", "contextd_index_entries_ingested_total", "contextd_index_skipped_lines_total",
		"contextd_index_sync_duration_seconds", "contextd_index_reindex_total",
		"contextd_index_used_bytes", "contextd_index_budget_bytes", "contextd_index_evictions_total", "contextd_index_evicted_bytes_total", "contextd_rollovers_total", "contextd_rollover_duration_seconds",
		"contextd_rollover_phase_duration_seconds", "contextd_rollovers_pending", "contextd_invalid_archives_total",
		"contextd_remote_requests_total", "contextd_remote_request_duration_seconds"} {
		if _, ok := exported[name]; !ok {
			t.Errorf("%s is not exported", name)
		}
	}
}

var (
	// metricRef is an identifier used as a metric: a known prefix, or any
	// identifier followed by a selector brace.
	metricRef = regexp.MustCompile(`\b((?:contextd|go|process)_[a-zA-Z0-9_]+)\b|\b([a-zA-Z_:][a-zA-Z0-9_:]*)\{`)
	selector  = regexp.MustCompile(`\b([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}`)
	matcher   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	grouping  = regexp.MustCompile(`\b(?:by|without|on|ignoring)\s*\(([^)]*)\)`)
)

// targetLabels are added by Prometheus to every scraped series.
var targetLabels = map[string]bool{"instance": true, "job": true}

// checkExpr reports exprProblems as test errors.
func checkExpr(t *testing.T, where, expr string, exported map[string]exportedMetric) {
	t.Helper()
	for _, p := range exprProblems(expr, exported) {
		t.Errorf("%s: %q: %s", where, expr, p)
	}
}

// exprProblems lists the metrics an expression names that contextd does
// not export (histogram series by their _bucket/_sum/_count names), and
// labels it selects or groups by that those metrics do not carry.
func exprProblems(expr string, exported map[string]exportedMetric) []string {
	var probs []string
	resolve := func(name string) (exportedMetric, bool) {
		if m, ok := exported[name]; ok {
			return m, true
		}
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suf); ok {
				if m, ok := exported[base]; ok && m.histogram {
					if suf == "_bucket" {
						l := map[string]bool{"le": true}
						for k := range m.labels {
							l[k] = true
						}
						m.labels = l
					}
					return m, true
				}
			}
		}
		return exportedMetric{}, false
	}
	all := map[string]bool{"le": true}
	for k := range targetLabels {
		all[k] = true
	}
	named := 0
	for _, m := range metricRef.FindAllStringSubmatch(expr, -1) {
		name := m[1] + m[2]
		em, ok := resolve(name)
		if !ok {
			probs = append(probs, "names "+name+", which contextd does not export")
			continue
		}
		named++
		for k := range em.labels {
			all[k] = true
		}
	}
	if named == 0 {
		probs = append(probs, "names no contextd metric")
	}
	for _, s := range selector.FindAllStringSubmatch(expr, -1) {
		em, ok := resolve(s[1])
		if !ok {
			continue
		}
		for _, l := range matcher.FindAllStringSubmatch(s[2], -1) {
			if !em.labels[l[1]] && !targetLabels[l[1]] {
				probs = append(probs, "selects label "+l[1]+", which "+s[1]+" does not carry")
			}
		}
	}
	for _, g := range grouping.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !all[l] {
				probs = append(probs, "groups by "+l+", which none of its metrics carries")
			}
		}
	}
	return probs
}

// TestDashboardAndAlertsUseExportedMetrics: every expression of the
// Grafana dashboard (deploy/grafana/contextd.json: panel targets and the
// instance variable) and of the Prometheus rules
// (deploy/prometheus/contextd-rules.yml) names metrics contextd exports,
// with labels they carry; the dashboard covers rollovers (rate by mode and
// outcome, phase durations, pending, invalid archives), index work and
// request latency; the rules alert on stuck rollovers and rollover loops.
func TestDashboardAndAlertsUseExportedMetrics(t *testing.T) {
	_, exported := servedMetrics(t)

	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "grafana", "contextd.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title      string `json:"title"`
		UID        string `json:"uid"`
		Templating struct {
			List []struct {
				Name       string `json:"name"`
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Type    string `json:"type"`
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("contextd.json: %v", err)
	}
	if dash.Title != "contextd" || dash.UID != "contextd" {
		t.Errorf("title %q uid %q", dash.Title, dash.UID)
	}
	used := map[string]bool{}
	for _, p := range dash.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			checkExpr(t, "panel "+p.Title, tg.Expr, exported)
			for _, m := range metricRef.FindAllStringSubmatch(tg.Expr, -1) {
				used[strings.TrimSuffix(m[1]+m[2], "_bucket")] = true
			}
		}
	}
	for _, v := range dash.Templating.List {
		if v.Definition != "" {
			checkExpr(t, "variable "+v.Name, v.Definition, exported)
		}
	}
	for _, want := range []string{"contextd_rollovers_total", "contextd_rollover_phase_duration_seconds", "contextd_rollovers_pending",
		"contextd_invalid_archives_total", "contextd_index_bytes_ingested_total", "contextd_index_sync_duration_seconds",
		"contextd_http_request_duration_seconds"} {
		if !used[want] {
			t.Errorf("the dashboard has no panel on %s", want)
		}
	}

	b, err = os.ReadFile(filepath.Join("..", "..", "deploy", "prometheus", "contextd-rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatalf("contextd-rules.yml: %v", err)
	}
	var alerts []string
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			checkExpr(t, "alert "+r.Alert, r.Expr, exported)
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %s lacks a severity, summary or description", r.Alert)
			}
		}
	}
	sort.Strings(alerts)
	for _, want := range []string{"ContextdRolloverStuck", "ContextdRolloverLoop"} {
		if i := sort.SearchStrings(alerts, want); i == len(alerts) || alerts[i] != want {
			t.Errorf("no alert %s among %v", want, alerts)
		}
	}
}

// TestCheckExprRefuses: the expression check does fail on a metric
// contextd does not export, a misspelt label and a histogram suffix on a
// counter.
func TestCheckExprRefuses(t *testing.T) {
	exported := map[string]exportedMetric{
		"contextd_rollovers_total":                 {labels: map[string]bool{"mode": true, "outcome": true}},
		"contextd_rollover_phase_duration_seconds": {histogram: true, labels: map[string]bool{"phase": true}},
	}
	for _, expr := range []string{
		`rate(contextd_rollover_total[5m])`,
		`rate(contextd_rollovers_total{outcom="completed"}[5m])`,
		`rate(contextd_rollovers_total_bucket[5m])`,
		`sum by (stage) (rate(contextd_rollover_phase_duration_seconds_bucket[5m]))`,
		`up{job="contextd"} == 0`,
	} {
		if len(exprProblems(expr, exported)) == 0 {
			t.Errorf("%q passed the check", expr)
		}
	}
	good := `histogram_quantile(0.95, sum by (le, phase, instance) (rate(contextd_rollover_phase_duration_seconds_bucket{phase="settle"}[5m])))`
	if p := exprProblems(good, exported); len(p) != 0 {
		t.Errorf("a correct expression failed the check: %v", p)
	}
}

func textParser() *expfmt.TextParser {
	p := expfmt.NewTextParser(model.UTF8Validation)
	return &p
}
