// Command load is the HTTP side of bench/run.sh: it starts contextd on a
// sessions directory holding one generated session (bench/gen), measures
// cold indexing, catch-up, index size, history latencies and search against
// grep, optionally the peak RSS on a 1 GiB file and the rollover routes,
// and prints one table with the Pi figures (bench/pi-open.mjs) side by side.
//
// Usage: see bench/run.sh (every flag has a default that matches it).
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"contextd/bench/sessiongen"
)

type config struct {
	bin, sessions, state, manifest string
	piJSON, piTimeRSS              string
	pi16JSON, pi16TimeRSS          string
	label                          string
	quick, coldOnly                bool
	bigSessions, bigManifest       string
	query                          string
	n, nSearch, coldRuns           int
	out                            string
	many                           manyConfig
}

func main() {
	var c config
	flag.StringVar(&c.bin, "bin", "bench/out/contextd", "contextd binary")
	flag.StringVar(&c.sessions, "sessions", "bench/out/work/sessions", "sessions directory holding the generated file")
	flag.StringVar(&c.state, "state", "bench/out/work/state", "state directory (emptied first)")
	flag.StringVar(&c.manifest, "manifest", "bench/out/work/sessions/bench.jsonl.manifest.json", "manifest of the generated file (bench/gen)")
	flag.StringVar(&c.piJSON, "pi", "bench/out/work/pi.json", "output of bench/pi-open.mjs (empty: no Pi figures)")
	flag.StringVar(&c.piTimeRSS, "pi-time", "bench/out/work/pi.time", "/usr/bin/time -v output of the Pi run (optional; its max RSS wins over node's own)")
	flag.StringVar(&c.bigSessions, "big-sessions", "", "sessions directory holding the 1 GiB file (empty: skip)")
	flag.StringVar(&c.bigManifest, "big-manifest", "", "manifest of the 1 GiB file")
	flag.StringVar(&c.query, "query", "", "no-match search query (default: the manifest's)")
	flag.IntVar(&c.coldRuns, "cold-runs", 3, "cold index runs (median reported)")
	flag.IntVar(&c.n, "n", 500, "requests per latency figure")
	flag.IntVar(&c.nSearch, "n-search", 20, "runs of the search and grep figures")
	flag.StringVar(&c.pi16JSON, "pi16", "", "output of bench/pi-open.mjs FILE 1.6 (empty: no Pi 1.6 figures)")
	flag.StringVar(&c.pi16TimeRSS, "pi16-time", "", "/usr/bin/time -v output of the Pi 1.6 runs")
	flag.StringVar(&c.label, "label", "", "prefix of every metric (the session size, e.g. \"128 MiB\")")
	flag.BoolVar(&c.coldOnly, "cold-only", false, "the full-index and first-answer runs only")
	flag.BoolVar(&c.quick, "quick", false, "cold index, search and /branch?tail only (the figures taken at every size)")
	flag.StringVar(&c.out, "out", "", "also write the results as JSON here")
	flag.IntVar(&c.many.sessions, "many-sessions", 8, "many-clients step: sessions, each with its own writer and client (0: skip the step)")
	flag.IntVar(&c.many.mb, "many-mb", 8, "many-clients step: MiB of each generated session")
	flag.IntVar(&c.many.secs, "many-secs", 30, "many-clients step: seconds of appending")
	flag.IntVar(&c.many.bigEvery, "many-big-every", 30, "many-clients step: one tool result in this many is 1-5 MB")
	onlyMany := flag.Bool("only-many", false, "run the many-clients step alone (-bin, -state and the -many flags)")
	onlyRollover := flag.Bool("only-rollover", false, "run the rollover step alone (-bin, -sessions, -state): a server of its own on an empty state directory")
	merge := flag.Bool("merge", false, "print one table of the results JSON files given as arguments, and exit")
	flag.Parse()
	if *merge {
		for _, f := range flag.Args() {
			b, err := os.ReadFile(f)
			if err != nil {
				fmt.Fprintln(os.Stderr, "load:", err)
				os.Exit(1)
			}
			var rs []row
			if err := json.Unmarshal(b, &rs); err != nil {
				fmt.Fprintln(os.Stderr, "load:", f, err)
				os.Exit(1)
			}
			rows = append(rows, rs...)
		}
		printTable(os.Stdout)
		return
	}
	// A step run alone: its rows only.
	var alone func(config) error
	switch {
	case *onlyMany:
		alone = func(c config) error { return manyStep(c, c.many) }
	case *onlyRollover:
		alone = onlyRolloverStep
	}
	if alone != nil {
		label = c.label
		err := alone(c)
		if err == nil {
			err = finish(c)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		os.Exit(1)
	}
}

// onlyRolloverStep runs the rollover step (rolloverStep) on a server of
// its own, started on an empty state directory with -sessions (where the
// step writes its session).
func onlyRolloverStep(c config) error {
	if err := os.MkdirAll(c.sessions, 0o755); err != nil {
		return err
	}
	srv, err := startServer(c.bin, c.sessions, c.state)
	if err != nil {
		return err
	}
	defer srv.stop()
	rolloverStep(srv, c)
	return nil
}

// ---- results table --------------------------------------------------------------

type row struct {
	Metric   string  `json:"metric"`
	Contextd string  `json:"contextd"`
	Peer     string  `json:"peer"`
	Ratio    string  `json:"ratio"`
	Target   string  `json:"target"`
	Pass     string  `json:"pass"`
	Value    float64 `json:"value"`
	Note     string  `json:"note,omitempty"`
}

var rows []row

// label prefixes every metric (the session size at which it was taken).
var label string

func addRow(r row) {
	if label != "" {
		r.Metric = "[" + label + "] " + r.Metric
	}
	rows = append(rows, r)
}

// ratioRow: contextd vs peer, pass when c/p <= max.
func ratioRow(metric, unit string, c, p, max float64, goal, note string) {
	r := row{Metric: metric, Contextd: fmtv(c, unit), Value: c, Note: note}
	if p > 0 {
		r.Peer = fmtv(p, unit)
		ratio := c / p
		r.Ratio = fmt.Sprintf("%.2fx", ratio)
		r.Pass = passFail(ratio <= max)
	} else {
		r.Peer, r.Ratio, r.Pass = "-", "-", "n/a"
	}
	r.Target = fmt.Sprintf("<= %.1fx", max)
	if goal != "" {
		r.Target += " (goal " + goal + ")"
	}
	addRow(r)
}

// absRow: contextd alone, pass when v <= max.
func absRow(metric, unit string, v, max float64, note string) {
	addRow(row{Metric: metric, Contextd: fmtv(v, unit), Value: v, Peer: "-", Ratio: "-", Target: "<= " + fmtv(max, unit), Pass: passFail(v <= max), Note: note})
}

func naRow(metric, why string) {
	addRow(row{Metric: metric, Contextd: why, Peer: "-", Ratio: "-", Target: "-", Pass: "n/a"})
}

func passFail(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

func fmtv(v float64, unit string) string {
	switch unit {
	case "ms":
		if v < 10 {
			return fmt.Sprintf("%.2f ms", v)
		}
		return fmt.Sprintf("%.0f ms", v)
	case "s":
		return fmt.Sprintf("%.2f s", v)
	case "MB":
		return fmt.Sprintf("%.1f MiB", v)
	case "%":
		return fmt.Sprintf("%.1f%%", v)
	}
	return fmt.Sprintf("%g %s", v, unit)
}

func printTable(w io.Writer) {
	hdr := []string{"metric", "contextd", "peer", "ratio", "target", "pass"}
	width := make([]int, len(hdr))
	cells := func(r row) []string { return []string{r.Metric, r.Contextd, r.Peer, r.Ratio, r.Target, r.Pass} }
	for i, h := range hdr {
		width[i] = len(h)
	}
	for _, r := range rows {
		for i, c := range cells(r) {
			if n := len([]rune(c)); n > width[i] {
				width[i] = n
			}
		}
	}
	line := func(cs []string) {
		for i, c := range cs {
			fmt.Fprintf(w, "%-*s", width[i]+2, c)
		}
		fmt.Fprintln(w)
	}
	line(hdr)
	sep := make([]string, len(hdr))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep)
	for _, r := range rows {
		line(cells(r))
	}
	fmt.Fprintln(w)
	for _, r := range rows {
		if r.Note != "" {
			fmt.Fprintf(w, "  %s: %s\n", r.Metric, r.Note)
		}
	}
}

// ---- contextd process -------------------------------------------------------------

type server struct {
	cmd   *exec.Cmd
	base  string
	token string
	hc    *http.Client
	start time.Time
	up    time.Duration
	log   string // its stdout and stderr (GODEBUG=gctrace=1 lines included)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// startServer starts contextd on an empty state directory and waits for
// /healthz and the token file.
func startServer(bin, sessions, state string) (*server, error) {
	if err := os.RemoveAll(state); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(state, 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logf, err := os.Create(filepath.Join(filepath.Dir(state), "contextd-"+filepath.Base(state)+".log"))
	if err != nil {
		return nil, err
	}
	s := &server{base: "http://" + addr, hc: &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 4}}}
	s.cmd = exec.Command(bin, "serve", "--addr", addr, "--sessions-dir", sessions, "--state-dir", state, "--log-level", "warn")
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	s.log = logf.Name()
	// gctrace: one line per GC cycle with its CPU time (the GC share).
	godebug := "gctrace=1"
	if g := os.Getenv("GODEBUG"); g != "" {
		godebug = g + "," + godebug
	}
	s.cmd.Env = append(os.Environ(), "GODEBUG="+godebug)
	s.start = time.Now()
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := s.hc.Get(s.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			s.stop()
			return nil, fmt.Errorf("contextd did not answer /healthz within 30 s (log: %s)", logf.Name())
		}
		time.Sleep(2 * time.Millisecond)
	}
	s.up = time.Since(s.start)
	b, err := os.ReadFile(filepath.Join(state, "token"))
	if err != nil {
		s.stop()
		return nil, err
	}
	s.token = strings.TrimSpace(string(b))
	return s, nil
}

func (s *server) stop() {
	if s.cmd.Process == nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
}

// cpu is the server's user + system CPU time so far (/proc/PID/stat).
func (s *server) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)        // field 14 of the whole line
	st, _ := strconv.ParseInt(f[12], 10, 64)        // field 15
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// settle waits until the server has used under 10 ms of CPU in 500 ms
// (its background work done), at most max; it returns how long it waited.
func (s *server) settle(max time.Duration) time.Duration {
	start := time.Now()
	last := s.cpu()
	for time.Since(start) < max {
		time.Sleep(500 * time.Millisecond)
		now := s.cpu()
		if now-last < 10*time.Millisecond {
			break
		}
		last = now
	}
	return time.Since(start)
}

// gc sums the CPU time of the GC cycles logged so far (gctrace: "a+b/c/d+e
// ms cpu": the two stop-the-world phases, assist, background and idle
// marking), the idle marking alone (run on a processor that had nothing
// else to do, e.g. while SQLite waits for the disk), and counts the cycles.
func (s *server) gc() (cpu, idle time.Duration, cycles int) {
	b, err := os.ReadFile(s.log)
	if err != nil {
		return 0, 0, 0
	}
	var ms, idleMs float64
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "gc ") {
			continue
		}
		f := strings.Fields(l)
		for i := 1; i+2 < len(f); i++ {
			if f[i+1] == "ms" && strings.TrimSuffix(f[i+2], ",") == "cpu" {
				for j, part := range strings.FieldsFunc(f[i], func(r rune) bool { return r == '+' || r == '/' }) {
					v, _ := strconv.ParseFloat(part, 64)
					ms += v
					if j == 3 {
						idleMs += v
					}
				}
				cycles++
				break
			}
		}
	}
	return time.Duration(ms * float64(time.Millisecond)), time.Duration(idleMs * float64(time.Millisecond)), cycles
}

// status reads VmHWM and VmRSS (KiB) of the server process.
func (s *server) status() (hwm, rss int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmHWM:":
			hwm = v
		case "VmRSS:":
			rss = v
		}
	}
	return hwm, rss
}

// do sends one request and returns the status, the body and the wall time
// until the whole body was read.
func (s *server) do(method, path string, body any) (int, []byte, time.Duration, error) {
	return s.doWith(s.hc, method, path, body)
}

// doWith is do with another HTTP client (hitStep: one connection per
// client).
func (s *server) doWith(hc *http.Client, method, path string, body any) (int, []byte, time.Duration, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, 0, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		return 0, nil, 0, err
	}
	req.Header.Set("X-Contextd-Token", s.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	t := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, time.Since(t), err
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, out, time.Since(t), err
}

// must is do that treats a non-2xx answer as an error.
func (s *server) must(method, path string, body any) ([]byte, time.Duration, error) {
	st, out, d, err := s.do(method, path, body)
	if err != nil {
		return nil, d, err
	}
	if st/100 != 2 {
		return out, d, fmt.Errorf("%s %s: %d %s", method, path, st, trunc(out, 300))
	}
	return out, d, nil
}

func trunc(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// ---- statistics ------------------------------------------------------------------------

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func pct(ds []time.Duration, p float64) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(p*float64(len(s))+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return ms(s[i])
}

func median(ds []time.Duration) float64 { return pct(ds, 0.5) }

func medianF(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[(len(s)-1)/2]
}

func durList(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, fmt.Sprintf("%.2f", d.Seconds()))
	}
	return "(" + strings.Join(s, ", ") + " s)"
}

// ---- the run --------------------------------------------------------------------------------

func readManifest(path string) (*sessiongen.Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m sessiongen.Manifest
	return &m, json.Unmarshal(b, &m)
}

// searchAndTail runs the search rows (no match vs grep and ripgrep; with a
// hit, 32 clients, cached and distinct queries) and the /branch tail row.
func searchAndTail(srv *server, c config, m *sessiongen.Manifest, jsonlBytes int64, branchPath string) error {
	if err := searchStep(srv, c, m, jsonlBytes); err != nil {
		return err
	}
	if err := shortSearchStep(srv, c, m); err != nil {
		return err
	}
	if err := hitStep(srv, c, m, false, 16); err != nil {
		return err
	}
	if err := hitStep(srv, c, m, true, 16); err != nil {
		return err
	}
	if err := hitStep(srv, c, m, true, shortQuery); err != nil {
		return err
	}
	return tailStep(srv, branchPath, 50)
}

func run(c config) error {
	m, err := readManifest(c.manifest)
	if err != nil {
		return err
	}
	if c.query == "" {
		c.query = m.NoMatch
	}
	label = c.label
	fi, err := os.Stat(m.File)
	if err != nil {
		return err
	}
	jsonlBytes := fi.Size()
	fmt.Printf("machine: %d CPUs, load average %s at start\n", runtime.NumCPU(), loadavg())
	defer func() { fmt.Printf("load average %s at end\n", loadavg()) }()
	fmt.Printf("session %s: %.1f MiB, %d entries, %d items, %d windows, %d huge tool results (%s)\n",
		m.SessionID, float64(jsonlBytes)/(1<<20), m.Entries, m.Items, len(m.Windows), len(m.Big), bigSizes(m))

	pi := readPi(c.piJSON, c.piTimeRSS)
	if pi != nil {
		fmt.Printf("pi 0.85 (median of runs %s): open %.0f ms + buildSessionContext %.0f ms, CPU %.0f ms, %d entries, %d context messages, max RSS %.1f MiB\n",
			pi.Runs, pi.OpenMs, pi.ContextMs, pi.CPUMs, pi.Entries, pi.Messages, float64(pi.RSSKB)/1024)
	}
	pi16 := readPi(c.pi16JSON, c.pi16TimeRSS)
	if pi16 != nil {
		fmt.Printf("pi 1.6 (median of runs %s): open %.0f ms + buildSessionContext %.0f ms, CPU %.0f ms, %d entries, %d context messages, max RSS %.1f MiB\n",
			pi16.Runs, pi16.OpenMs, pi16.ContextMs, pi16.CPUMs, pi16.Entries, pi16.Messages, float64(pi16.RSSKB)/1024)
	}

	// 1. Cold index, c.coldRuns times each of two kinds of run, in turn,
	// each on a fresh state directory: the full index (start -> the first
	// POST /context, which waits for item text and rows, then the first
	// history answer) and the first answer (start -> the first /branch,
	// answered from a tree preview of a file from 4 MiB up). Medians are
	// reported; the last full-index server stays up for the rest.
	branchPath := "/v1/sessions/" + m.SessionID + "/branch"
	ctxPath := "/v1/sessions/" + m.SessionID + "/context"
	var srv *server
	var colds, cpus, gcs, idles []time.Duration
	var hwms []float64
	var fulls, hists, fullCPUs, fullGCs []time.Duration
	var fullHWMs []float64
	for i := 0; i < c.coldRuns; i++ {
		// The first answer (tree preview).
		if srv, err = startServer(c.bin, c.sessions, c.state); err != nil {
			return err
		}
		if _, _, err = srv.must("GET", branchPath, nil); err != nil {
			srv.stop()
			return err
		}
		cold := time.Since(srv.start)
		hwm, rss := srv.status()
		cpu := srv.cpu()
		gcCPU, gcIdle, cycles := srv.gc()
		srv.stop()
		fmt.Printf("contextd first answer (tree preview) run %d: %.2f s (process up %.0f ms), CPU %.2f s, %d GC cycles using %.2f CPU-s (%.2f of it idle marking), VmHWM %.1f MiB, VmRSS after %.1f MiB\n",
			i+1, cold.Seconds(), ms(srv.up), cpu.Seconds(), cycles, gcCPU.Seconds(), gcIdle.Seconds(), float64(hwm)/1024, float64(rss)/1024)
		idles = append(idles, gcIdle)
		colds = append(colds, cold)
		cpus = append(cpus, cpu)
		gcs = append(gcs, gcCPU)
		hwms = append(hwms, float64(hwm)/1024)

		// The full index: the first /context, then the first history
		// answer (list_windows), which needs item text and rows too.
		if srv, err = startServer(c.bin, c.sessions, c.state); err != nil {
			return err
		}
		if _, _, err := srv.must("POST", ctxPath, map[string]any{}); err != nil {
			srv.stop()
			return err
		}
		full := time.Since(srv.start)
		fhwm, _ := srv.status()
		fcpu := srv.cpu()
		fgc, _, fcycles := srv.gc()
		if _, _, err := srv.must("POST", "/alpha/history/v2/list_windows", map[string]any{"context": map[string]any{"session_id": m.SessionID}}); err != nil {
			srv.stop()
			return err
		}
		hist := time.Since(srv.start)
		fmt.Printf("contextd full index run %d: first /context %.2f s, first history answer %.2f s, CPU %.2f s, %d GC cycles using %.2f CPU-s, VmHWM %.1f MiB\n",
			i+1, full.Seconds(), hist.Seconds(), fcpu.Seconds(), fcycles, fgc.Seconds(), float64(fhwm)/1024)
		fulls = append(fulls, full)
		hists = append(hists, hist)
		fullCPUs = append(fullCPUs, fcpu)
		fullGCs = append(fullGCs, fgc)
		fullHWMs = append(fullHWMs, float64(fhwm)/1024)
		if i < c.coldRuns-1 {
			srv.stop()
		}
	}
	defer srv.stop()
	body, _, err := srv.must("GET", branchPath, nil)
	if err != nil {
		return err
	}
	var ba struct {
		LeafID   string   `json:"leaf_id"`
		EntryIDs []string `json:"entry_ids"`
		Context  []any    `json:"context"`
	}
	if err := json.Unmarshal(body, &ba); err != nil {
		return err
	}
	if ba.LeafID != m.LeafID || len(ba.EntryIDs) != m.Entries {
		fmt.Printf("warning: contextd leaf %s with %d branch entries, manifest leaf %s with %d entries\n", ba.LeafID, len(ba.EntryIDs), m.LeafID, m.Entries)
	}
	gib := float64(jsonlBytes) / (1 << 30)
	peers := []struct {
		name string
		r    *piResult
	}{{"Pi 0.85.1", pi}, {"Pi 1.6.0", pi16}}
	// Targets (docs/benchmarks.md): the full index and the first answer
	// <= 0.3x Pi's open from 128 MiB up, <= 0.5x below 64 MiB where
	// process start dominates; full-index CPU <= 1.5 s per GiB from 128
	// MiB up; peak RSS <= 150 MiB at 1 GiB; GC under 15% of the CPU.
	coldMax := 0.3
	if jsonlBytes < 64<<20 {
		coldMax = 0.5
	}

	// The headline: the whole index, until the first /context.
	fullCPU := medianF(durSeconds(fullCPUs))
	for _, p := range peers {
		piMs := 0.0
		if p.r != nil {
			piMs = p.r.TotalMs
		}
		ratioRow("full index (first /context) vs "+p.name+": start -> first /context", "ms", median(fulls), piMs, coldMax, "", fmt.Sprintf("median of %d runs %s, process start on an empty state directory included; POST /context waits until item text and rows are indexed; peer = Pi SessionManager.open + buildSessionContext timed in node (module load not counted), median of its runs", len(fulls), durList(fulls)))
		ratioRow("full index vs "+p.name+": start -> first history answer", "ms", median(hists), piMs, coldMax, "", fmt.Sprintf("median of %d runs %s: list_windows right after that first /context", len(hists), durList(hists)))
	}
	if jsonlBytes >= 64<<20 {
		absRow("full index: CPU per GiB", "s", fullCPU/gib, 1.5, fmt.Sprintf("user+system CPU of the server until the first /context, %.2f CPU-s for %.0f MiB (process start included)", fullCPU, float64(jsonlBytes)/(1<<20)))
	} else {
		addRow(row{Metric: "full index: CPU per GiB", Contextd: fmtv(fullCPU/gib, "s"), Peer: "-", Ratio: "-", Target: "<= 1.50 s from 128 MiB", Pass: "n/a", Value: fullCPU / gib,
			Note: fmt.Sprintf("%.2f CPU-s until the first /context; below 64 MiB process start dominates", fullCPU)})
	}
	if jsonlBytes >= 768<<20 {
		absRow("full index: peak RSS (1 GiB target)", "MB", medianF(fullHWMs), 150, "VmHWM at the first /context (the whole file indexed), default settings")
	}
	fullGC := 0.0
	if fullCPU > 0 {
		fullGC = 100 * medianF(durSeconds(fullGCs)) / fullCPU
	}
	absRow("full index: GC share of CPU", "%", fullGC, 15, fmt.Sprintf("GC CPU (gctrace) / process CPU until the first /context; median GC %.2f CPU-s", medianF(durSeconds(fullGCs))))

	// The first answer: GET /branch from a tree preview.
	coldNote := fmt.Sprintf("median of %d runs %s, process start included; GET /branch of a file from 4 MiB up is answered from a tree preview before item text and rows exist; peer = Pi SessionManager.open + buildSessionContext, median of its runs", len(colds), durList(colds))
	cpuMed := medianF(durSeconds(cpus))
	for _, p := range peers {
		piMs, piRSS, piCPU := 0.0, 0.0, 0.0
		if p.r != nil {
			piMs, piRSS, piCPU = p.r.TotalMs, float64(p.r.RSSKB)/1024, p.r.CPUMs/1000
		}
		ratioRow("first answer (tree preview) vs "+p.name+": start -> first /branch", "ms", median(colds), piMs, coldMax, "", coldNote)
		ratioRow("first answer (tree preview) vs "+p.name+": CPU", "s", cpuMed, piCPU, coldMax, "", fmt.Sprintf("contextd user+system CPU until the answer, %.2f CPU-s per GiB; peer = node's CPU during open + buildSessionContext", cpuMed/gib))
		ratioRow("first answer (tree preview) vs "+p.name+": peak RSS", "MB", medianF(hwms), piRSS, 1.0, "", "contextd VmHWM after the first /branch; peer = node max RSS (/usr/bin/time -v)")
	}
	if jsonlBytes >= 768<<20 {
		absRow("first answer (tree preview): peak RSS (1 GiB target)", "MB", medianF(hwms), 150, "VmHWM after the first /branch, default settings (--memory-limit included)")
	}
	gcShare := 0.0
	if cpuMed > 0 {
		gcShare = 100 * medianF(durSeconds(gcs)) / cpuMed
	}
	busyShare := 0.0
	if cpuMed > 0 {
		busyShare = 100 * (medianF(durSeconds(gcs)) - medianF(durSeconds(idles))) / cpuMed
	}
	absRow("first answer (tree preview): GC share of CPU", "%", gcShare, 15, fmt.Sprintf("GC CPU (gctrace: stop-the-world, assist, background and idle marking) / process CPU; median GC %.2f CPU-s, of which idle marking %.2f; without idle marking %.1f%%",
		medianF(durSeconds(gcs)), medianF(durSeconds(idles)), busyShare))

	if c.coldOnly {
		srv.stop()
		return finish(c)
	}
	if c.quick {
		if err := searchAndTail(srv, c, m, jsonlBytes, branchPath); err != nil {
			return err
		}
		srv.stop()
		return finish(c)
	}

	// 2. Warm requests (nothing appended) as the baseline for catch-up.
	var warmBranch, warmCtx []time.Duration
	for i := 0; i < 10; i++ {
		_, d, err := srv.must("GET", branchPath, nil)
		if err != nil {
			return err
		}
		warmBranch = append(warmBranch, d)
		_, d, err = srv.must("POST", ctxPath, map[string]any{})
		if err != nil {
			return err
		}
		warmCtx = append(warmCtx, d)
	}

	// 3. Catch-up: append one entry, time the next request.
	app, err := newAppender(m.File, ba.LeafID, m.LastTimeMs)
	if err != nil {
		return err
	}
	var cuBranch, cuCtx []time.Duration
	for i := 0; i < 20; i++ {
		if err := app.add(i); err != nil {
			return err
		}
		_, d, err := srv.must("GET", branchPath+"?tail=100", nil)
		if err != nil {
			return err
		}
		cuBranch = append(cuBranch, d)
	}
	for i := 0; i < 20; i++ {
		if err := app.add(100 + i); err != nil {
			return err
		}
		out, d, err := srv.must("POST", ctxPath, map[string]any{})
		if err != nil {
			return err
		}
		var ca struct {
			LeafID string `json:"leaf_id"`
		}
		json.Unmarshal(out, &ca)
		if ca.LeafID != app.leaf {
			return fmt.Errorf("catch-up: /context answered for leaf %s, appended %s", ca.LeafID, app.leaf)
		}
		cuCtx = append(cuCtx, d)
	}
	absRow("catch-up: append 1 entry -> /context", "ms", median(cuCtx), 1, fmt.Sprintf("median of 20; max %.2f ms; warm /context without append %.2f ms", pct(cuCtx, 1), median(warmCtx)))
	absRow("catch-up: append 1 entry -> /branch?tail=100", "ms", median(cuBranch), 5, fmt.Sprintf("median of 20; max %.2f ms; warm full /branch without append %.2f ms (its answer lists all %d branch ids)", pct(cuBranch, 1), median(warmBranch), len(ba.EntryIDs)))

	// 4. Index size (docs/benchmarks.md target: <= 0.75x the JSONL), the search
	// filters included (built beside the index, done by now), once the
	// raw frames of the full index are compressed (store/rawframes.go):
	// what stays on disk.
	rawWait, err := waitNoRawFrames(filepath.Join(c.state, "index", "texts"), time.Minute)
	if err != nil {
		return err
	}
	idx, parts, err := dirSize(filepath.Join(c.state, "index"))
	if err != nil {
		return err
	}
	ratioRow("index size on disk", "MB", float64(idx)/(1<<20), float64(jsonlBytes)/(1<<20), 0.75, "", fmt.Sprintf("peer = JSONL size; measured once no raw frame file is left (waited %.1f s); %s", rawWait.Seconds(), parts))

	// 5. Search with no match vs grep and ripgrep; the /branch tail form.
	if err := searchAndTail(srv, c, m, jsonlBytes, branchPath); err != nil {
		return err
	}
	sid := map[string]any{"session_id": m.SessionID}

	// 6. list_items, read_item, /context latency.
	r := rand.New(rand.NewPCG(7, 11))
	var list, read, ctxs []time.Duration
	nulls := 0
	for i := 0; i < c.n; i++ {
		args := map[string]any{"context": sid, "limit": 10 + r.IntN(16)}
		if r.IntN(4) != 0 {
			args["window_id"] = m.Windows[r.IntN(len(m.Windows))]
		}
		if r.IntN(2) == 0 {
			args["recent_first"] = true
		}
		if r.IntN(5) == 0 {
			args["role"] = "user"
		}
		_, d, err := srv.must("POST", "/alpha/history/v2/list_items", args)
		if err != nil {
			return err
		}
		list = append(list, d)
	}
	for i := 0; i < c.n; i++ {
		it := m.Sample[r.IntN(len(m.Sample))]
		args := map[string]any{"context": sid, "item_id": it.ItemID, "window_id": it.WindowID}
		if it.Bytes > 8000 && r.IntN(2) == 0 {
			args["offset_chars"] = r.IntN(it.Bytes / 2)
		}
		out, d, err := srv.must("POST", "/alpha/history/v2/read_item", args)
		if err != nil {
			return err
		}
		if bytes.Contains(out, []byte(`"item":null`)) {
			nulls++
		}
		read = append(read, d)
	}
	if nulls > 0 {
		fmt.Printf("warning: read_item answered item null for %d of %d sampled items\n", nulls, c.n)
	}
	for i := 0; i < c.n; i++ {
		_, d, err := srv.must("POST", ctxPath, map[string]any{})
		if err != nil {
			return err
		}
		ctxs = append(ctxs, d)
	}
	absRow("list_items p99", "ms", pct(list, 0.99), 5, fmt.Sprintf("%d requests, p50 %.2f ms; random window (or all), limit 10-25", len(list), median(list)))
	absRow("read_item p99", "ms", pct(read, 0.99), 5, fmt.Sprintf("%d requests over %d sampled items, p50 %.2f ms", len(read), len(m.Sample), median(read)))
	absRow("/context p99", "ms", pct(ctxs, 0.99), 5, fmt.Sprintf("%d requests, p50 %.2f ms", len(ctxs), median(ctxs)))
	if len(m.Big) > 0 {
		var big []time.Duration
		var biggest sessiongen.SampleItem
		for _, b := range m.Big {
			if b.Bytes > biggest.Bytes {
				biggest = b
			}
		}
		for i := 0; i < 50; i++ {
			args := map[string]any{"context": sid, "item_id": biggest.ItemID, "window_id": biggest.WindowID, "offset_chars": r.IntN(biggest.Bytes)}
			_, d, err := srv.must("POST", "/alpha/history/v2/read_item", args)
			if err != nil {
				return err
			}
			big = append(big, d)
		}
		absRow(fmt.Sprintf("read_item p99, %.0f MiB item", float64(biggest.Bytes)/(1<<20)), "ms", pct(big, 0.99), 5, fmt.Sprintf("50 requests at random offsets, p50 %.2f ms", median(big)))
	}
	if err := contextUnderSearchStep(srv, c, m, app, ctxPath); err != nil {
		return err
	}
	hwm2, _ := srv.status()
	fmt.Printf("contextd VmHWM after all requests: %.1f MiB\n", float64(hwm2)/1024)

	// 7. Rollover routes and Tree mode.
	rolloverStep(srv, c)
	srv.stop()

	// 8. 1 GiB file.
	if c.bigSessions != "" {
		if err := bigStep(c); err != nil {
			naRow("1 GiB file: peak RSS while indexing", "error: "+err.Error())
		}
	}

	// 9. Many sessions appended to at once, each with its client.
	if c.many.sessions > 0 {
		if err := manyStep(c, c.many); err != nil {
			naRow("many clients", "error: "+err.Error())
		}
	}

	return finish(c)
}

// finish prints the table and writes the JSON results.
func finish(c config) error {
	fmt.Println()
	printTable(os.Stdout)
	if c.out != "" {
		b, _ := json.MarshalIndent(rows, "", " ")
		return os.WriteFile(c.out, b, 0o644)
	}
	return nil
}

func durSeconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}

// timeCmd runs name args n+1 times (the first not counted) and returns the
// wall times; exit status 1 (no match) is not an error.
func timeCmd(n int, check func(out string), name string, args ...string) ([]time.Duration, error) {
	var ds []time.Duration
	for i := 0; i < n+1; i++ {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		t := time.Now()
		out, err := cmd.Output()
		d := time.Since(t)
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if i == 0 {
			check(strings.TrimSpace(string(out)))
		} else {
			ds = append(ds, d)
		}
	}
	return ds, nil
}

// searchStep: search_contents with no match over all windows against
// grep -F -c and rg -F -c on the JSONL (targets: <= 1.0x grep, goal 0.2x;
// <= 0.5x ripgrep).
func searchStep(srv *server, c config, m *sessiongen.Manifest, jsonlBytes int64) error {
	sid := map[string]any{"session_id": m.SessionID}
	var search []time.Duration
	for i := 0; i < c.nSearch+2; i++ {
		// Each request its own query (the no-match query and a number:
		// still no match), so that contextd's answer cache does not
		// serve it and each request scans the texts.
		out, d, err := srv.must("POST", "/alpha/history/v2/search_contents", map[string]any{"query": c.query + strconv.Itoa(i), "context": sid})
		if err != nil {
			return err
		}
		if i == 0 && !bytes.Contains(out, []byte(`"items":[]`)) {
			fmt.Printf("warning: the no-match query matched: %s\n", trunc(out, 200))
		}
		if i >= 2 {
			search = append(search, d)
		}
	}
	check := func(tool string) func(string) {
		return func(out string) {
			if out != "0" && out != "" {
				fmt.Printf("warning: %s counts %s matching lines\n", tool, out)
			}
		}
	}
	grep, err := timeCmd(c.nSearch, check("grep"), "grep", "-F", "-c", "--", c.query, m.File)
	if err != nil {
		return err
	}
	note := fmt.Sprintf("median of %d, each a distinct query; p99 %.1f ms; %.0f MiB/s; peer = LC_ALL=C grep -F -c on the JSONL (process wall time, median of %d)", len(search), pct(search, 0.99), float64(jsonlBytes)/(1<<20)/(median(search)/1000), len(grep))
	ratioRow("search_contents, no match vs grep", "ms", median(search), median(grep), 1.0, "0.2x", note)
	if _, err := exec.LookPath("rg"); err != nil {
		naRow("search_contents, no match vs ripgrep", "rg not installed (apt-get install ripgrep)")
		return nil
	}
	rg, err := timeCmd(c.nSearch, check("rg"), "rg", "-F", "-c", "--", c.query, m.File)
	if err != nil {
		return err
	}
	ratioRow("search_contents, no match vs ripgrep", "ms", median(search), median(rg), 0.5, "", fmt.Sprintf("peer = rg -F -c on the JSONL (process wall time, median of %d)", len(rg)))
	return nil
}

// shortQuery is the length of the short queries' rows (shorter than the
// 12 bytes of the long search filter: identifiers, error codes).
const shortQuery = 8

// shortSearchStep: search_contents with no match over all windows for
// 8-byte queries (pieces of the no-match query, each request its own
// piece) against rg -F -c on the JSONL for one of them (target <= 0.5x,
// as the long query's row).
func shortSearchStep(srv *server, c config, m *sessiongen.Manifest) error {
	name := fmt.Sprintf("search_contents, no match, %d-byte query vs ripgrep", shortQuery)
	if len(c.query) < shortQuery {
		naRow(name, "the no-match query is shorter than 8 bytes")
		return nil
	}
	if _, err := exec.LookPath("rg"); err != nil {
		naRow(name, "rg not installed (apt-get install ripgrep)")
		return nil
	}
	// The pieces that match nothing in the JSONL (a piece of a word of
	// the no-match query, such as "edWidget", may match a generated name).
	var all []string
	for p := 0; p+shortQuery <= len(c.query); p++ {
		q := c.query[p : p+shortQuery]
		if err := exec.Command("rg", "-F", "-q", "--", q, m.File).Run(); err != nil {
			all = append(all, q) // exit status 1: no match
		}
	}
	if len(all) == 0 {
		naRow(name, "every 8-byte piece of the no-match query matches")
		return nil
	}
	pieces := len(all)
	piece := func(i int) string { return all[i%pieces] }
	sid := map[string]any{"session_id": m.SessionID}
	var search []time.Duration
	for i := 0; i < c.nSearch+2; i++ {
		q := piece(i)
		out, d, err := srv.must("POST", "/alpha/history/v2/search_contents", map[string]any{"query": q, "context": sid})
		if err != nil {
			return err
		}
		if !bytes.Contains(out, []byte(`"items":[]`)) {
			fmt.Printf("warning: the no-match piece %q matched: %s\n", q, trunc(out, 200))
		}
		if i >= 2 {
			search = append(search, d)
		}
	}
	q := piece(pieces / 2)
	rg, err := timeCmd(c.nSearch, func(out string) {
		if out != "0" && out != "" {
			fmt.Printf("warning: rg counts %s lines matching %q\n", out, q)
		}
	}, "rg", "-F", "-c", "--", q, m.File)
	if err != nil {
		return err
	}
	ratioRow(name, "ms", median(search), median(rg), 0.5, "", fmt.Sprintf("median of %d, each request an 8-byte piece of the no-match query (%d distinct pieces that rg finds nowhere, none cached twice in a row); p99 %.1f ms; peer = rg -F -c %q on the JSONL (process wall time, median of %d)", len(search), pieces, pct(search, 0.99), q, len(rg)))
	return nil
}

// hitStep: search_contents with a hit over all windows, hitClients clients
// at once, each on its own connection (docs/benchmarks.md target: p99 <= 25 ms on
// this machine's cores). The queries are qlen-byte pieces (16, or
// shortQuery for the short queries' row) of one line of sampled items'
// texts (read with read_item), so each has at least one match; the
// clients cycle through them.
//
// With distinct, every request has its own query (hitClients × (per+1)
// of them), so contextd's answer cache serves none: the row then
// measures the scan itself.
func hitStep(srv *server, c config, m *sessiongen.Manifest, distinct bool, qlen int) error {
	const hitClients = 32
	sid := map[string]any{"session_id": m.SessionID}
	r := rand.New(rand.NewPCG(13, 17))
	if distinct {
		r = rand.New(rand.NewPCG(13, 19)) // not the queries of the other row
	}
	per := max(c.n/hitClients, 10)
	want := hitClients
	name := fmt.Sprintf("search_contents with a hit, %d clients p99", hitClients)
	if distinct {
		want = hitClients * (per + 1)
		name = fmt.Sprintf("search_contents with a hit, %d clients, distinct queries p99", hitClients)
	}
	if qlen != 16 {
		name = fmt.Sprintf("search_contents with a hit, %d-byte queries, %d clients, distinct queries p99", qlen, hitClients)
		r = rand.New(rand.NewPCG(13, 23))
	}
	var queries []string
	for tries := 0; len(queries) < want && tries < 30*want && len(m.Sample) > 0; tries++ {
		it := m.Sample[r.IntN(len(m.Sample))]
		out, _, err := srv.must("POST", "/alpha/history/v2/read_item", map[string]any{"context": sid, "item_id": it.ItemID, "window_id": it.WindowID, "limit_chars": 2000})
		if err != nil {
			return err
		}
		var rr struct {
			Item *struct {
				Content string `json:"content"`
			} `json:"item"`
		}
		if json.Unmarshal(out, &rr) != nil || rr.Item == nil || len(rr.Item.Content) < 64 {
			continue
		}
		t := rr.Item.Content
		i := r.IntN(len(t) - 32)
		q := t[i : i+qlen]
		ok := true
		for j := 0; j < len(q); j++ {
			if q[j] < 0x20 || q[j] >= 0x7f {
				ok = false
			}
		}
		if ok && strings.TrimSpace(q) == q && !slices.Contains(queries, q) {
			queries = append(queries, q)
		}
	}
	if len(queries) == 0 {
		naRow(name, "no query could be taken from the sampled items")
		return nil
	}
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: hitClients, MaxConnsPerHost: hitClients}}
	var mu sync.Mutex
	var ds []time.Duration
	var hits, misses int
	var firstErr error
	var wg sync.WaitGroup
	for k := 0; k < hitClients; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			for i := 0; i < per+1; i++ {
				q := queries[(k+i)%len(queries)]
				if distinct {
					q = queries[(k*(per+1)+i)%len(queries)]
				}
				st, out, d, err := srv.doWith(hc, "POST", "/alpha/history/v2/search_contents", map[string]any{"query": q, "context": sid})
				mu.Lock()
				switch {
				case err != nil || st != 200:
					if firstErr == nil {
						firstErr = fmt.Errorf("search_contents %q: %d %w %s", q, st, err, trunc(out, 200))
					}
				case i == 0: // each client's first request warms its connection
				default:
					ds = append(ds, d)
					if bytes.Contains(out, []byte(`"items":[]`)) {
						misses++
					} else {
						hits++
					}
				}
				mu.Unlock()
			}
		}(k)
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	if misses > 0 {
		fmt.Printf("warning: %d of %d searches with a hit found nothing\n", misses, hits+misses)
	}
	absRow(name, "ms", pct(ds, 0.99), 25,
		fmt.Sprintf("%d requests (%d per client, %d clients at once on %d CPUs), %d distinct %d-byte queries from sampled items, p50 %.2f ms, max %.2f ms; %d answered with items",
			len(ds), per, hitClients, runtime.NumCPU(), len(queries), qlen, median(ds), pct(ds, 1), hits))
	return nil
}

// contextUnderSearchStep: /context on one session while 4 clients search
// it for 1-byte queries (each reads every frame of the item text: about a
// second at 1 GiB) (docs/benchmarks.md target: p99 <= 5 ms). Before each /context
// one entry is appended, as Pi does before each model call, so that every
// /context syncs a new line while searches scan; the searches vary their
// byte and limit, and the session changes under them, so the answer
// cache serves few of them.
func contextUnderSearchStep(srv *server, c config, m *sessiongen.Manifest, app *appender, ctxPath string) error {
	const clients = 4
	name := fmt.Sprintf("/context p99 under %d clients of 1-byte searches", clients)
	sid := map[string]any{"session_id": m.SessionID}
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: clients}}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var searches int
	var searchErr error
	for k := 0; k < clients; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				q := string(rune('a' + (k*7+i)%26))
				st, out, _, err := srv.doWith(hc, "POST", "/alpha/history/v2/search_contents", map[string]any{"query": q, "limit": 1 + (k+i)%20, "context": sid})
				mu.Lock()
				if (err != nil || st != 200) && searchErr == nil {
					searchErr = fmt.Errorf("search_contents %q: %d %w %s", q, st, err, trunc(out, 200))
				}
				searches++
				mu.Unlock()
			}
		}(k)
	}
	n := min(c.n, 200)
	var ds []time.Duration
	var err error
	for i := 0; i < n && err == nil; i++ {
		if err = app.add(1000 + i); err != nil {
			break
		}
		var d time.Duration
		_, d, err = srv.must("POST", ctxPath, map[string]any{})
		ds = append(ds, d)
	}
	close(stop)
	wg.Wait()
	if err != nil {
		return err
	}
	if searchErr != nil {
		return searchErr
	}
	absRow(name, "ms", pct(ds, 0.99), 5, fmt.Sprintf("%d /context requests, each after appending 1 entry, while %d clients ran %d search_contents of 1 byte (a-z, limit 1-20); p50 %.2f ms, max %.2f ms; %d CPUs",
		len(ds), clients, searches, median(ds), pct(ds, 1), runtime.NumCPU()))
	return nil
}

// tailStep times GET …/branch?tail=100 (the form that does not list every
// id; target 5 ms).
func tailStep(srv *server, branchPath string, n int) error {
	var ds []time.Duration
	for i := 0; i < n+2; i++ {
		_, d, err := srv.must("GET", branchPath+"?tail=100", nil)
		if err != nil {
			return err
		}
		if i >= 2 {
			ds = append(ds, d)
		}
	}
	absRow("/branch?tail=100 p50", "ms", median(ds), 5, fmt.Sprintf("%d requests, nothing appended, p99 %.2f ms", len(ds), pct(ds, 0.99)))
	return nil
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func bigSizes(m *sessiongen.Manifest) string {
	if len(m.Big) == 0 {
		return "none"
	}
	var s []string
	for _, b := range m.Big {
		s = append(s, fmt.Sprintf("%.0f", float64(b.Bytes)/(1<<20)))
	}
	return strings.Join(s, ", ") + " MiB"
}

// ---- Pi figures ----------------------------------------------------------------------------

type piResult struct {
	OpenMs    float64 `json:"open_ms"`
	ContextMs float64 `json:"context_ms"`
	TotalMs   float64 `json:"total_ms"`
	Entries   int     `json:"entries"`
	Messages  int     `json:"messages"`
	RSSKB     int64   `json:"max_rss_kb"`
	CPUMs     float64 `json:"cpu_ms"`
	Runs      string  `json:"-"`
}

// readPi reads the JSON lines of bench/pi-open.mjs (one per run) and the
// max RSS lines of /usr/bin/time -v (appended per run, they win over node's
// own figure) and returns the medians.
func readPi(path, timePath string) *piResult {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Printf("warning: no Pi figures: %v\n", err)
		return nil
	}
	var runs []piResult
	for _, l := range bytes.Split(b, []byte("\n")) {
		var p piResult
		if len(bytes.TrimSpace(l)) > 0 && json.Unmarshal(l, &p) == nil && p.TotalMs > 0 {
			runs = append(runs, p)
		}
	}
	if len(runs) == 0 {
		fmt.Printf("warning: no Pi figures in %s\n", path)
		return nil
	}
	if t, err := os.ReadFile(timePath); err == nil {
		i := 0
		for _, l := range strings.Split(string(t), "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(l), "Maximum resident set size (kbytes):"); ok && k == "" && i < len(runs) {
				if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && n > 0 {
					runs[i].RSSKB = n
				}
				i++
			}
		}
	}
	med := func(f func(p piResult) float64) float64 {
		var v []float64
		for _, p := range runs {
			v = append(v, f(p))
		}
		return medianF(v)
	}
	var totals []string
	for _, p := range runs {
		totals = append(totals, fmt.Sprintf("%.2f", p.TotalMs/1000))
	}
	return &piResult{OpenMs: med(func(p piResult) float64 { return p.OpenMs }), ContextMs: med(func(p piResult) float64 { return p.ContextMs }),
		TotalMs: med(func(p piResult) float64 { return p.TotalMs }), CPUMs: med(func(p piResult) float64 { return p.CPUMs }), Entries: runs[0].Entries, Messages: runs[0].Messages,
		RSSKB: int64(med(func(p piResult) float64 { return float64(p.RSSKB) })), Runs: "(" + strings.Join(totals, ", ") + " s)"}
}

// ---- appending entries ----------------------------------------------------------------------

type appender struct {
	path string
	leaf string
	ms   int64
	r    *rand.Rand
}

func newAppender(path, leaf string, lastMs int64) (*appender, error) {
	return &appender{path: path, leaf: leaf, ms: lastMs, r: rand.New(rand.NewPCG(3, 5))}, nil
}

func (a *appender) id() string { return fmt.Sprintf("%08x", a.r.Uint32()|0x80000000) }

// write appends raw entries (each gets id, parentId and timestamp) as
// children in order, in one write, and returns their ids.
func (a *appender) write(entries ...map[string]any) ([]string, error) {
	var buf bytes.Buffer
	var ids []string
	for _, e := range entries {
		a.ms += 1000
		id := a.id()
		e["id"], e["parentId"], e["timestamp"] = id, a.leaf, time.UnixMilli(a.ms).UTC().Format("2006-01-02T15:04:05.000Z")
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		buf.Write(b)
		buf.WriteByte('\n')
		a.leaf = id
		ids = append(ids, id)
	}
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	_, err = f.Write(buf.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return ids, err
}

func (a *appender) add(i int) error {
	_, err := a.write(map[string]any{"type": "message", "message": map[string]any{"role": "user",
		"content": []map[string]any{{"type": "text", "text": fmt.Sprintf("catch-up probe %d: does the index see this entry?", i)}}, "timestamp": a.ms}})
	return err
}

// ---- index size ----------------------------------------------------------------------------

// waitNoRawFrames waits until dir holds no raw item-text frame file
// (N.rawF or N.G.rawF, store/rawframes.go), checking every 50 ms, and
// returns how long it waited; an error after limit.
func waitNoRawFrames(dir string, limit time.Duration) (time.Duration, error) {
	start := time.Now()
	for {
		des, err := os.ReadDir(dir)
		if err != nil && !os.IsNotExist(err) {
			return 0, err
		}
		raw := ""
		for _, de := range des {
			if strings.HasPrefix(filepath.Ext(de.Name()), ".raw") {
				raw = de.Name()
			}
		}
		if raw == "" {
			return time.Since(start), nil
		}
		if time.Since(start) > limit {
			return 0, fmt.Errorf("raw frame file %s still in %s after %s", raw, dir, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func dirSize(dir string) (int64, string, error) {
	var total, db, wal, shm, texts int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n := fi.Size()
		total += n
		switch name := d.Name(); {
		case name == "index.db":
			db += n
		case strings.HasSuffix(name, "-wal"):
			wal += n
		case strings.HasSuffix(name, "-shm"):
			shm += n
		default:
			texts += n
		}
		return nil
	})
	mb := func(n int64) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) }
	return total, fmt.Sprintf("index.db %s + wal %s + shm %s + texts %s MiB", mb(db), mb(wal), mb(shm), mb(texts)), err
}

// ---- 1 GiB --------------------------------------------------------------------------------

func bigStep(c config) error {
	m, err := readManifest(c.bigManifest)
	if err != nil {
		return err
	}
	state := c.state + "-big"
	srv, err := startServer(c.bin, c.bigSessions, state)
	if err != nil {
		return err
	}
	defer func() {
		srv.stop()
		os.RemoveAll(state)
	}()
	// Sample VmRSS too, to show the shape over time.
	done := make(chan struct{})
	var maxRSS int64
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				if _, r := srv.status(); r > maxRSS {
					maxRSS = r
				}
			}
		}
	}()
	// The first request may outlive the server's WriteTimeout (the client
	// then sees EOF); batches already committed are kept, so retry until
	// the branch answers, as a client would.
	var fails []string
	deadline := time.Now().Add(30 * time.Minute)
	for {
		// GET /v1/sessions/{id} syncs (indexes) the session and answers a
		// small state document, so VmHWM below is the indexing peak; a
		// /branch answer of a 1 GiB session lists ~256k ids and adds its own
		// response buffers (reported separately below).
		_, _, err = srv.must("GET", "/v1/sessions/"+m.SessionID, nil)
		if err == nil {
			break
		}
		fails = append(fails, fmt.Sprintf("%.0f s: %v", time.Since(srv.start).Seconds(), err))
		if time.Now().After(deadline) || srv.cmd.ProcessState != nil {
			close(done)
			return fmt.Errorf("%s", strings.Join(fails, "; "))
		}
		time.Sleep(time.Second)
	}
	close(done)
	cold := time.Since(srv.start)
	hwm, _ := srv.status()
	if _, _, err := srv.must("GET", "/v1/sessions/"+m.SessionID+"/branch", nil); err == nil {
		if hwmBranch, _ := srv.status(); hwmBranch > hwm {
			defer fmt.Printf("  %.0f MiB file: VmHWM after a /branch answer listing every entry: %.1f MiB\n", float64(m.Bytes)/(1<<20), float64(hwmBranch)/1024)
		}
	}
	note := fmt.Sprintf("VmHWM; cold index %.1f s (%.1f MiB/s); %d entries", cold.Seconds(), float64(m.Bytes)/(1<<20)/cold.Seconds(), m.Entries)
	if len(fails) > 0 {
		note += fmt.Sprintf("; %d failed attempt(s) before the answer: %s", len(fails), strings.Join(fails, "; "))
	}
	absRow(fmt.Sprintf("%.0f MiB file: peak RSS while indexing", float64(m.Bytes)/(1<<20)), "MB", float64(hwm)/1024, 200, note)
	return nil
}

// ---- rollovers and Tree mode (docs/design.md §5.3) -------------------------------------------------

func rolloverStep(srv *server, c config) {
	const metric = "rollover settle+commit p99 (10 archives)"
	_, spec, _, err := srv.do("GET", "/openapi.json", nil)
	if err != nil {
		naRow(metric, "error: "+err.Error())
		return
	}
	var doc struct {
		Paths map[string]any `json:"paths"`
	}
	json.Unmarshal(spec, &doc)
	has := func(suffix string) bool {
		for p := range doc.Paths {
			if strings.HasSuffix(p, suffix) {
				return true
			}
		}
		return false
	}
	if !has("/rollovers") || !has("/settle") || !has("/commit") {
		naRow(metric, "n/a (rollover routes not present)")
		naRow("Tree list/search across 10 archives", "n/a (rollover routes not present)")
		return
	}
	if err := treeBench(srv, c); err != nil {
		naRow(metric, "error: "+err.Error())
	}
}

// treeBench registers the one-window session in Tree mode, runs twelve
// rollovers as the extension would (request, settle, Pi's branch_summary,
// commit, append the planned entries, complete) and times settle+commit;
// then list_items and search_contents across the archives.
func treeBench(srv *server, c config) error {
	// A one-window session, written now so that it does not count in the
	// cold index above.
	path, err := filepath.Abs(filepath.Join(c.sessions, "tree.jsonl"))
	if err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	m, err := sessiongen.Generate(w, sessiongen.Options{Bytes: 8 << 20, Seed: 42, WindowEvery: 0, Big: []int{}})
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	m.File = path
	if len(m.Boundaries) != 1 {
		return fmt.Errorf("tree session needs exactly one boundary, has %d", len(m.Boundaries))
	}
	sess := "/v1/sessions/" + m.SessionID
	if _, _, err := srv.must("PUT", sess, map[string]any{"session_file": m.File, "mode": "tree"}); err != nil {
		return err
	}
	parents := map[string]string{m.Boundaries[0].ID: m.Boundaries[0].ParentID}
	boundary := m.Boundaries[0].ID
	app, _ := newAppender(m.File, m.LeafID, m.LastTimeMs)
	var sc []time.Duration
	// The slowest rollover, for the row's note: which of the twelve and
	// how its time split.
	slow, slowSettle, slowCommit := -1, time.Duration(0), time.Duration(0)
	const rounds = 12
	for k := 0; k < rounds; k++ {
		// Some work in the window.
		prev := app.leaf
		for j := 0; j < 20; j++ {
			role := "user"
			if j%2 == 1 {
				role = "assistant"
			}
			ids, err := app.write(map[string]any{"type": "message", "message": map[string]any{"role": role,
				"content": []map[string]any{{"type": "text", "text": fmt.Sprintf("window %d step %d: %s", k, j, strings.Repeat("tree mode bench text ", 20))}}, "timestamp": app.ms}})
			if err != nil {
				return err
			}
			parents[ids[0]] = prev
			prev = ids[0]
		}
		out, _, err := srv.must("POST", sess+"/rollovers", map[string]any{"leaf_id": app.leaf, "command_context_ready": true})
		if err != nil {
			return err
		}
		var ro struct {
			RolloverID string `json:"rollover_id"`
			ID         string `json:"id"`
		}
		json.Unmarshal(out, &ro)
		if ro.RolloverID == "" {
			ro.RolloverID = ro.ID
		}
		if ro.RolloverID == "" {
			return fmt.Errorf("rollover answer without rollover_id: %s", trunc(out, 200))
		}
		rp := sess + "/rollovers/" + ro.RolloverID
		out, d1, err := srv.must("POST", rp+"/settle", map[string]any{"leaf_id": app.leaf})
		if err != nil {
			return err
		}
		var st struct {
			NavigateTo      string  `json:"navigate_to"`
			SummaryParentID *string `json:"summary_parent_id"`
			ArchivedLeafID  string  `json:"archived_leaf_id"`
		}
		json.Unmarshal(out, &st)
		if st.NavigateTo == "" {
			st.NavigateTo = boundary
		}
		// Pi's navigateTree(boundary, summarize): a branch_summary under the
		// boundary's parent, fromId = the old leaf.
		oldLeaf := app.leaf
		if st.ArchivedLeafID != "" {
			oldLeaf = st.ArchivedLeafID
		}
		app.leaf = parents[st.NavigateTo]
		if st.SummaryParentID != nil {
			app.leaf = *st.SummaryParentID
		}
		summaryParent := app.leaf
		ids, err := app.write(map[string]any{"type": "branch_summary", "fromId": oldLeaf,
			"summary": fmt.Sprintf("Window %d: worked on the tree mode bench; %s", k, strings.Repeat("summary text ", 30)), "fromHook": true})
		if err != nil {
			return err
		}
		parents[ids[0]] = summaryParent
		out, d2, err := srv.must("POST", rp+"/commit", map[string]any{"summary_entry_id": ids[0]})
		if err != nil {
			return err
		}
		sc = append(sc, d1+d2)
		if slow < 0 || d1+d2 > sc[slow] {
			slow, slowSettle, slowCommit = k, d1, d2
		}
		var cm struct {
			Append []map[string]any `json:"append"`
		}
		if err := json.Unmarshal(out, &cm); err != nil || len(cm.Append) == 0 {
			return fmt.Errorf("commit answer without append entries: %s", trunc(out, 200))
		}
		prev = app.leaf
		ids, err = app.write(cm.Append...)
		if err != nil {
			return err
		}
		for i, id := range ids {
			parents[id] = prev
			prev = id
			if cm.Append[i]["type"] == "custom_message" {
				boundary = id
			}
		}
		srv.do("POST", rp+"/complete", map[string]any{})
	}
	var st struct {
		Windows  int `json:"windows"`
		Archives int `json:"archives"`
		Problems []struct {
			Reason string `json:"reason"`
		} `json:"problems"`
	}
	out, _, err := srv.must("GET", sess, nil)
	if err != nil {
		return err
	}
	json.Unmarshal(out, &st)
	absRow("rollover settle+commit p99", "ms", pct(sc, 0.99), 20, fmt.Sprintf("%d rollovers in Tree mode (session now has %d archives, %d problems), p50 %.2f ms, slowest the %s (settle %.2f ms + commit %.2f ms); client wall time of settle + commit; target 20 ms (bench/README.md, rollover row)",
		rounds, st.Archives, len(st.Problems), median(sc), ordinal(slow+1), ms(slowSettle), ms(slowCommit)))
	sid := map[string]any{"session_id": m.SessionID}
	var list, search []time.Duration
	for i := 0; i < 100; i++ {
		_, d, err := srv.must("POST", "/alpha/history/v2/list_items", map[string]any{"context": sid, "limit": 25})
		if err != nil {
			return err
		}
		list = append(list, d)
		_, d, err = srv.must("POST", "/alpha/history/v2/search_contents", map[string]any{"context": sid, "query": m.NoMatch + strconv.Itoa(i)})
		if err != nil {
			return err
		}
		search = append(search, d)
	}
	absRow(fmt.Sprintf("Tree list_items p99 (%d archives)", st.Archives), "ms", pct(list, 0.99), 5, fmt.Sprintf("100 requests, limit 25, all windows, p50 %.2f ms; 8 MiB session", median(list)))
	absRow(fmt.Sprintf("Tree search_contents no match p99 (%d archives)", st.Archives), "ms", pct(search, 0.99), 5, fmt.Sprintf("100 requests, p50 %.2f ms; 8 MiB session", median(search)))
	return nil
}

// ordinal is n as an English ordinal: "1st", "2nd", "3rd", "4th", "11th",
// "12th", "21st".
func ordinal(n int) string {
	suffix := "th"
	if n%100 < 11 || n%100 > 13 {
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}
