package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"contextd/bench/sessiongen"
)

// manyConfig is the many-clients step: sessions generated sessions of mb
// MiB, each appended to by its own writer at Pi's pace (an entry every
// 200-500 ms; one in bigEvery a tool result of 1-5 MB), each with a client
// that calls POST /context after every append (as Pi does before every
// model call) and search_contents every few calls, plus one client running
// 1-byte searches throughout; for secs seconds.
type manyConfig struct {
	sessions, mb, secs, bigEvery int
}

// manyStep runs the many-clients step on its own sessions directory and
// server and adds its rows (targets: /context p99 <= 2 ms; no request
// over 100 ms but the 1-byte searches).
func manyStep(c config, mc manyConfig) error {
	dir := filepath.Join(filepath.Dir(c.state), "many")
	sessDir := filepath.Join(dir, "sessions")
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := os.MkdirAll(sessDir, 0o700); err != nil {
		return err
	}
	var ms []*sessiongen.Manifest
	for k := 0; k < mc.sessions; k++ {
		p := filepath.Join(sessDir, fmt.Sprintf("s%d.jsonl", k))
		m, err := genFile(p, int64(mc.mb)<<20, uint64(101+k))
		if err != nil {
			return err
		}
		m.File = p
		ms = append(ms, m)
	}
	srv, err := startServer(c.bin, sessDir, filepath.Join(dir, "state"))
	if err != nil {
		return err
	}
	defer srv.stop()
	// Index every session first: the step measures the steady state, not
	// the cold index (rows above).
	for _, m := range ms {
		if _, _, err := srv.must("POST", "/v1/sessions/"+m.SessionID+"/context", map[string]any{}); err != nil {
			return err
		}
	}
	// The background work that follows the index (frame compression,
	// frame filters) is the cold index's too: wait until the server is
	// idle before the step begins.
	settled := srv.settle(30 * time.Second)
	// The big tool-result texts, made and JSON-encoded once (1-5 MB
	// each): a writer splices one into its line (appender.writeSpliced)
	// rather than encoding megabytes per append, whose garbage made this
	// process collect while its other clients timed their requests.
	r := rand.New(rand.NewPCG(17, 19))
	bigs := make([][]byte, 5)
	for i := range bigs {
		b, err := json.Marshal(logText(r, (i+1)<<20))
		if err != nil {
			return err
		}
		bigs[i] = b
	}

	type result struct {
		ctx, search []time.Duration
		// ctxAt is when each /context began (since the step's start);
		// ctxBig, whether it followed a 1-5 MB append of its own session.
		ctxAt  []time.Duration
		ctxBig []bool
		bigs   int
		err    error
	}
	results := make([]result, len(ms))
	begin := time.Now()
	deadline := begin.Add(time.Duration(mc.secs) * time.Second)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	// The 1-byte searcher.
	var short []time.Duration
	var shortErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		hc := &http.Client{Timeout: time.Minute}
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			m := ms[i%len(ms)]
			q := string(rune('a' + i%26))
			st, out, d, err := srv.doWith(hc, "POST", "/alpha/history/v2/search_contents", map[string]any{"query": q, "limit": 1 + i%20, "context": map[string]any{"session_id": m.SessionID}})
			if (err != nil || st != 200) && shortErr == nil {
				if err == nil {
					err = fmt.Errorf("status %d: %s", st, trunc(out, 200))
				}
				shortErr = fmt.Errorf("1-byte search_contents %q: %w", q, err)
			}
			short = append(short, d)
		}
	}()
	// The writers and their clients.
	var cw sync.WaitGroup
	for k, m := range ms {
		cw.Add(1)
		go func(k int, m *sessiongen.Manifest) {
			defer cw.Done()
			res := &results[k]
			rr := rand.New(rand.NewPCG(uint64(k), 23))
			app, err := newAppender(m.File, m.LeafID, m.LastTimeMs)
			if err != nil {
				res.err = err
				return
			}
			app.r = rand.New(rand.NewPCG(uint64(k)+31, 37))
			hc := &http.Client{Timeout: time.Minute}
			sid := map[string]any{"session_id": m.SessionID}
			ctxPath := "/v1/sessions/" + m.SessionID + "/context"
			for i := 0; time.Now().Before(deadline); i++ {
				time.Sleep(time.Duration(200+rr.IntN(300)) * time.Millisecond)
				text := fmt.Sprintf("load probe s%d-%d: %s", k, i, strings.Repeat("the quick brown fox ", 1+rr.IntN(50)))
				role := []string{"user", "assistant", "toolResult"}[i%3]
				var err error
				big := role == "toolResult" && rr.IntN(mc.bigEvery) == 0
				if big {
					// The probe's prefix, then the big text: the
					// placeholder's encoding is replaced by both.
					prefix, _ := json.Marshal(fmt.Sprintf("load probe s%d-%d: ", k, i))
					big := bigs[rr.IntN(len(bigs))]
					encoded := append(append(make([]byte, 0, len(prefix)+len(big)), prefix[:len(prefix)-1]...), big[1:]...)
					_, err = app.writeSpliced(probeEntry(role, bigPlaceholder, app.ms), bigPlaceholder, encoded)
					res.bigs++
				} else {
					_, err = app.write(probeEntry(role, text, app.ms))
				}
				if err != nil {
					res.err = err
					return
				}
				at := time.Since(begin)
				st, out, d, err := srv.doWith(hc, "POST", ctxPath, map[string]any{})
				if err == nil && st != 200 {
					err = fmt.Errorf("/context: %d %s", st, trunc(out, 200))
				}
				if err != nil {
					res.err = err
					return
				}
				res.ctx = append(res.ctx, d)
				res.ctxAt = append(res.ctxAt, at)
				res.ctxBig = append(res.ctxBig, big)
				if i%4 == 3 {
					// A probe appended a few calls ago: it matches.
					q := fmt.Sprintf("load probe s%d-%d:", k, i-2)
					st, out, d, err := srv.doWith(hc, "POST", "/alpha/history/v2/search_contents", map[string]any{"query": q, "context": sid})
					if err == nil && (st != 200 || !strings.Contains(string(out), fmt.Sprintf("s%d-%d", k, i-2))) {
						err = fmt.Errorf("search_contents %q: %d %s", q, st, trunc(out, 300))
					}
					if err != nil {
						res.err = err
						return
					}
					res.search = append(res.search, d)
				}
			}
		}(k, m)
	}
	cw.Wait()
	close(stop)
	wg.Wait()
	var ctxs, searches []time.Duration
	var timed []timedContext
	nbig := 0
	for k, res := range results {
		if res.err != nil {
			return res.err
		}
		for i, d := range res.ctx {
			timed = append(timed, timedContext{session: k, at: res.ctxAt[i], d: d, big: res.ctxBig[i]})
		}
		ctxs = append(ctxs, res.ctx...)
		searches = append(searches, res.search...)
		nbig += res.bigs
	}
	if shortErr != nil {
		return shortErr
	}
	all := append(append([]time.Duration(nil), ctxs...), searches...)
	what := fmt.Sprintf("%d sessions of %d MiB, indexed and the server idle (%.1f s after the index) before the step, each appended to every 200-500 ms for %d s (%d tool results of 1-5 MB among the appends)", len(ms), mc.mb, settled.Seconds(), mc.secs, nbig)
	absRow(fmt.Sprintf("many clients: /context p99, %d writers + 1-byte searches", len(ms)), "ms", pct(ctxs, 0.99), 2,
		fmt.Sprintf("%s; %d /context requests, one after each append, p50 %.2f ms, max %.2f ms; %d CPUs; %s", what, len(ctxs), median(ctxs), pct(ctxs, 1), runtime.NumCPU(), slowestContexts(timed, 0.99)))
	absRow("many clients: slowest request but the 1-byte searches", "ms", pct(all, 1), 100,
		fmt.Sprintf("%s; over the %d /context and %d search_contents (a probe appended two calls before; p50 %.2f ms, p99 %.2f ms) requests; meanwhile one client ran %d 1-byte searches over the sessions in turn (p50 %.0f ms, max %.0f ms; not bound)",
			what, len(ctxs), len(searches), median(searches), pct(searches, 0.99), len(short), median(short), pct(short, 1)))
	return nil
}

// genFile writes a generated session of about size bytes.
func genFile(path string, size int64, seed uint64) (*sessiongen.Manifest, error) {
	return sessiongen.WriteFile(path, sessiongen.Options{Bytes: size, Seed: seed, WindowEvery: 400})
}

// logText is n bytes of build-log-like lines.
func logText(r *rand.Rand, n int) string {
	var b strings.Builder
	b.Grow(n + 100)
	for b.Len() < n {
		fmt.Fprintf(&b, "ok  \tpkg/%x\t%d.%03ds\tcoverage: %d.%d%% of statements\n", r.Uint32(), r.IntN(9), r.IntN(1000), r.IntN(100), r.IntN(10))
	}
	return b.String()[:n]
}

// probeEntry is a Pi message entry (id, parentId and timestamp are added by
// the appender) of role user, assistant or toolResult with one text part.
// bigPlaceholder stands for a big text in an entry until writeSpliced
// replaces its JSON encoding.
const bigPlaceholder = "\x00big text\x00"

// writeSpliced is write for one entry in which the JSON string of
// placeholder is replaced by encoded (a JSON string), with one copy of it.
func (a *appender) writeSpliced(e map[string]any, placeholder string, encoded []byte) (string, error) {
	a.ms += 1000
	id := a.id()
	e["id"], e["parentId"], e["timestamp"] = id, a.leaf, time.UnixMilli(a.ms).UTC().Format("2006-01-02T15:04:05.000Z")
	b, err := json.Marshal(e)
	if err != nil {
		return "", err
	}
	ph, _ := json.Marshal(placeholder)
	i := bytes.Index(b, ph)
	if i < 0 {
		return "", fmt.Errorf("writeSpliced: no %s in the entry", ph)
	}
	line := make([]byte, 0, len(b)-len(ph)+len(encoded)+1)
	line = append(append(append(append(line, b[:i]...), encoded...), b[i+len(ph):]...), '\n')
	f, err := os.OpenFile(a.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return "", err
	}
	_, err = f.Write(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	a.leaf = id
	return id, err
}

func probeEntry(role, text string, ms int64) map[string]any {
	msg := map[string]any{"role": role, "content": []map[string]any{{"type": "text", "text": text}}, "timestamp": ms}
	switch role {
	case "assistant":
		msg["api"], msg["provider"], msg["model"], msg["stopReason"] = "openai-responses", "openai", "gpt-5", "stop"
		msg["usage"] = map[string]any{"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20, "cost": map[string]any{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
	case "toolResult":
		msg["toolCallId"], msg["toolName"], msg["isError"] = "call_probe", "bash", false
	}
	return map[string]any{"type": "message", "message": msg}
}

// timedContext is one /context of the many-clients step: its session,
// when it began (since the step's start), how long it took, and whether
// it followed a 1-5 MB append of its own session (so ingested it).
type timedContext struct {
	session int
	at, d   time.Duration
	big     bool
}

// slowestContexts says what the /context requests at and above the p-th
// percentile (the ones pct(…, p) reads, slowest first) were: how many
// followed a 1-5 MB append of their own session, how many of the others
// overlapped such a request of another session, and how many neither (a
// small append's /context that was slow on its own).
func slowestContexts(ts []timedContext, p float64) string {
	if len(ts) == 0 {
		return "no /context request"
	}
	s := slices.Clone(ts)
	slices.SortFunc(s, func(a, b timedContext) int { return cmp.Compare(b.d, a.d) })
	n := len(s) - (int(p*float64(len(s))+0.999999) - 1)
	var own, overlap, neither int
	var neitherMs []string
	for _, t := range s[:n] {
		switch {
		case t.big:
			own++
		case slices.ContainsFunc(ts, func(o timedContext) bool {
			return o.big && o.session != t.session && o.at < t.at+t.d && t.at < o.at+o.d
		}):
			overlap++
		default:
			neither++
			neitherMs = append(neitherMs, fmt.Sprintf("%.1f", float64(t.d.Microseconds())/1000))
		}
	}
	return fmt.Sprintf("the %d slowest (p99 and above): %d after a 1-5 MB append of their own, %d overlapping another session's, %d neither (%s ms)",
		n, own, overlap, neither, strings.Join(neitherMs, ", "))
}
