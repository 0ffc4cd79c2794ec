package api

// Security tests of docs/security.md ("what a local attacker tried against
// contextd"). Each test reproduces one fault of the adversarial pass;
// docs/security.md names the promise each one proves.

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"contextd"
)

// metricSeries returns the contextd_http_requests_total series lines of
// the registry's exposition.
func (s *hxStack) metricSeries(name string) []string {
	s.tb.Helper()
	r := s.do(s.newReq(http.MethodGet, "/metrics", nil, nil))
	if r.Status != http.StatusOK {
		s.tb.Fatalf("/metrics: %d", r.Status)
	}
	var out []string
	for _, l := range strings.Split(string(r.Body), "\n") {
		if strings.HasPrefix(l, name+"{") {
			out = append(out, l)
		}
	}
	return out
}

// randToken is a random HTTP token (method) of n letters.
func randToken(r *rand.Rand, n int) string {
	const alpha = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'"
	b := make([]byte, n)
	for i := range b {
		b[i] = alpha[r.IntN(len(alpha))]
	}
	return string(b)
}

// TestSecurityMetricLabelsClosed: every label value of the HTTP metrics
// comes from a closed set, so made-up methods and paths, with or without
// the token, add no series (docs/security.md: 50,000 requests with invented
// 4 KB methods grew /metrics to 50,002 series).
func TestSecurityMetricLabelsClosed(t *testing.T) {
	s := newHXStack(t, hxOptions{Serve: true})
	rnd := rand.New(rand.NewPCG(12, 1))
	for i := range 400 {
		method := randToken(rnd, 1+rnd.IntN(300))
		path := "/" + randToken(rnd, rnd.IntN(60))
		if i%3 == 0 {
			path = "/v1/sessions/" + randToken(rnd, 20) // a real pattern, any id
		}
		hdr := map[string]string{}
		if i%2 == 0 {
			hdr[TokenHeader] = "" // refused before routing
		}
		s.do(s.newReq(method, path, nil, hdr))
	}
	series := s.metricSeries("contextd_http_requests_total")
	allowed := map[string]bool{}
	for _, m := range metricMethods {
		allowed[`method="`+m+`"`] = true
	}
	for _, l := range series {
		ok := false
		for m := range allowed {
			ok = ok || strings.Contains(l, m)
		}
		if !ok {
			t.Errorf("series with a method outside the closed set: %.200s", l)
		}
		if strings.Contains(l, `operation="/v1/sessions/`) && !strings.Contains(l, `operation="/v1/sessions/{session_id}"`) {
			t.Errorf("series with a raw path: %.200s", l)
		}
	}
	// Bound: (operations hit: unmatched, /v1/sessions/{session_id}, /metrics)
	// × (methods: other, GET) × (codes: 401, 404, 405, 200) is far below 40.
	if len(series) > 40 {
		t.Errorf("%d series after 400 random requests, want at most 40", len(series))
	}
	if len(series) == 0 {
		t.Fatal("no contextd_http_requests_total series at all")
	}
}

// TestSecurityFIFONeverBlocks: a FIFO named *.jsonl, found by discovery or
// swapped in for a registered file, is reported and never blocks a sync
// (docs/security.md: every sync hung at open).
func TestSecurityFIFONeverBlocks(t *testing.T) {
	s := newHXStack(t, hxOptions{Serve: true})
	s.register(contextd.ModeLocal)
	fifo := filepath.Join(s.Sessions, "trap.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second}
	get := func(path string) hxResp {
		t.Helper()
		req := s.newReq(http.MethodGet, path, nil, nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v (a FIFO blocked the request)", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return hxResp{Status: resp.StatusCode, Header: resp.Header, Body: b}
	}
	r := get("/v1/sessions")
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/sessions: %d %s", r.Status, r.Body)
	}
	var list struct {
		Sessions []struct {
			File     string `json:"file"`
			State    string `json:"state"`
			Problems []struct {
				Reason string `json:"reason"`
				Detail string `json:"detail"`
			} `json:"problems"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(r.Body, &list); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, x := range list.Sessions {
		if filepath.Base(x.File) == "trap.jsonl" {
			found = true
			if x.State != "unreadable" || len(x.Problems) == 0 || !strings.Contains(x.Problems[0].Detail, "not a regular file") {
				t.Errorf("FIFO listed as %+v, want state unreadable with a not-a-regular-file problem", x)
			}
		}
	}
	if !found {
		t.Errorf("the FIFO is not reported in GET /v1/sessions: %s", r.Body)
	}
	// The registered file replaced by a FIFO: a clear 4xx, no hang.
	if err := os.Remove(s.File); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(fifo, s.File); err != nil {
		t.Fatal(err)
	}
	done := make(chan hxResp, 1)
	go func() {
		req := s.newReq(http.MethodPost, "/alpha/history/v2/list_windows", []byte(`{"context":{"session_id":"`+hxSessionID+`"}}`), nil)
		resp, err := client.Do(req)
		if err != nil {
			done <- hxResp{Status: -1, Body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		done <- hxResp{Status: resp.StatusCode, Body: b}
	}()
	got := <-done
	if got.Status < 400 || got.Status >= 500 {
		t.Errorf("list_windows on a session whose file became a FIFO: %d %s, want a 4xx", got.Status, got.Body)
	}
	if r := get("/healthz"); r.Status != http.StatusOK {
		t.Errorf("/healthz: %d", r.Status)
	}
}

// TestSecurityRequestDeadline: every request is bounded by a deadline; a
// handler that would wait longer is answered 503 at the deadline.
func TestSecurityRequestDeadline(t *testing.T) {
	backend := newSlowBackend(t, 3*time.Second)
	s := newHXStack(t, hxOptions{RemoteBase: backend, Config: func(c *Config) { c.RequestTimeout = 300 * time.Millisecond }})
	s.register(contextd.ModeRemote)
	start := time.Now()
	r := s.post("/alpha/history/v2/list_windows", []byte(`{"context":{"session_id":"`+hxSessionID+`"}}`), map[string]string{"Authorization": "Bearer x"})
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("answered after %v; the deadline is 300 ms", el)
	}
	if r.Status != http.StatusServiceUnavailable {
		t.Errorf("status %d %s, want 503 at the request deadline", r.Status, r.Body)
	}
}

// newSlowBackend serves a Codex backend that answers {} after delay.
func newSlowBackend(t *testing.T, delay time.Duration) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// TestSecurityConfinementRace: a directory of the sessions dir swapped
// back and forth with a symlink to a directory outside it, while searches
// run over HTTP, never lets content of the outside file into an answer, and
// never gives a 500 (docs/security.md: 102–534 of 3,000 searches carried
// outside content, plus 500s). store.TestConfinementSwapRace drives the
// same race at the sync itself, where it reproduces reliably.
func TestSecurityConfinementRace(t *testing.T) {
	s := newHXStack(t, hxOptions{Serve: true})
	root := filepath.Dir(s.Sessions)
	b, err := os.ReadFile(hxFixture)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(s.File)
	inside := filepath.Join(s.Sessions, "d")
	outside := filepath.Join(root, "outside", "d")
	for _, d := range []string{inside, outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(inside, "s.jsonl"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	// The outside file: the same session, plus a user message holding the
	// secret (a copy of the first message line with its text replaced).
	secret := "OUTSIDE-SECRET-7f3a"
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	extra := ""
	for _, l := range lines {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["type"] == "message" {
			msg, _ := m["message"].(map[string]any)
			if msg != nil && msg["role"] == "user" {
				m["id"] = "5ec12e75"
				m["parentId"] = nil
				msg["content"] = []map[string]any{{"type": "text", "text": secret}}
				x, _ := json.Marshal(m)
				extra = string(x) + "\n"
				break
			}
		}
	}
	if extra == "" {
		t.Fatal("fixture has no user message")
	}
	if err := os.WriteFile(filepath.Join(outside, "s.jsonl"), append(append([]byte{}, b...), extra...), 0o600); err != nil {
		t.Fatal(err)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	// The attacker: atomically exchange d (the directory) and d.link (a
	// symlink to outside/d), as fast as possible.
	link := filepath.Join(s.Sessions, "d.link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	swapped := false
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				if swapped { // leave the directory in place
					unix.Renameat2(unix.AT_FDCWD, inside, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE)
				}
				return
			default:
			}
			if err := unix.Renameat2(unix.AT_FDCWD, inside, unix.AT_FDCWD, link, unix.RENAME_EXCHANGE); err != nil {
				t.Errorf("exchange: %v", err)
				return
			}
			swapped = !swapped
		}
	}()
	var leaks, fives, total atomic.Int64
	deadline := time.Now().Add(2 * time.Second)
	body := []byte(`{"query":"` + secret + `","context":{"session_id":"` + hxSessionID + `"}}`)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) && total.Load() < 3000 {
				total.Add(1)
				req := s.newReq(http.MethodPost, "/alpha/history/v2/search_contents", body, nil)
				resp, err := http.DefaultTransport.RoundTrip(req)
				if err != nil {
					continue
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode >= 500 {
					fives.Add(1)
				}
				if resp.StatusCode == http.StatusOK && strings.Contains(string(got), secret) && strings.Contains(string(got), `"items":[{`) {
					leaks.Add(1)
				}
			}
		}()
	}
	time.Sleep(time.Until(deadline))
	close(stop)
	wg.Wait()
	t.Logf("%d searches during the swap race: %d answers with outside content, %d 5xx", total.Load(), leaks.Load(), fives.Load())
	if leaks.Load() > 0 || fives.Load() > 0 {
		t.Errorf("%d answers carried content from outside the sessions dir and %d were 5xx; want none", leaks.Load(), fives.Load())
	}
	// Settled on the real directory, nothing from outside is left.
	r := s.post("/alpha/history/v2/search_contents", body, nil)
	if r.Status >= 500 || strings.Contains(string(r.Body), secret) {
		t.Errorf("after the race: search %d %s", r.Status, r.Body)
	}
}

// TestSecurityIdleConnsYieldAtCap: kept-alive idle connections hold no
// slot against a new client: at the cap, idle ones are closed first
// (docs/security.md: 512 idle sockets made /healthz time out).
func TestSecurityIdleConnsYieldAtCap(t *testing.T) {
	const capConns = 4
	s := newHXStack(t, hxOptions{Serve: true, MaxConns: capConns})
	addr := strings.TrimPrefix(s.URL, "http://")
	for range capConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close() // c is kept alive, now idle, until the test ends
	}
	if hs := HTTPServer(nil); hs.IdleTimeout > 30*time.Second {
		t.Errorf("IdleTimeout %v; want a short one (at most 30 s)", hs.IdleTimeout)
	}
	client := &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Get(s.URL + "/healthz")
	if err != nil {
		t.Fatalf("GET /healthz with %d idle keep-alive connections at the cap: %v", capConns, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz: %d", resp.StatusCode)
	}
}

// TestSecurityAliasesOneSession: a file registered through an alias
// (20 nested /proc/self/root prefixes) is one session, under its resolved
// path (docs/security.md: 21 sessions and 21 index copies of one file).
func TestSecurityAliasesOneSession(t *testing.T) {
	s := newHXStack(t, hxOptions{})
	alias := strings.Repeat("/proc/self/root", 20) + s.File
	r := s.do(s.newReq(http.MethodPut, "/v1/sessions/"+hxSessionID, []byte(`{"session_file":"`+alias+`","mode":"local"}`), nil))
	if r.Status != http.StatusCreated {
		t.Fatalf("register through the alias: %d %s", r.Status, r.Body)
	}
	var reg contextd.Registration
	json.Unmarshal(r.Body, &reg)
	real, _ := filepath.EvalSymlinks(s.File)
	if reg.SessionFile != real {
		t.Errorf("registered session_file %q, want the resolved path %q", reg.SessionFile, real)
	}
	r = s.do(s.newReq(http.MethodGet, "/v1/sessions", nil, nil))
	if n := strings.Count(string(r.Body), `"session_id":"`+hxSessionID+`"`); n != 1 {
		t.Errorf("GET /v1/sessions lists session %s %d times, want once", hxSessionID, n)
	}
	if n, _ := s.entries(); n != 1 {
		t.Errorf("the index holds %d session objects for one file, want 1", n)
	}
}

// TestSecurityClientGone: a client that goes away mid-request is a
// 499-style abort, counted as code 499 and not logged at ERROR (docs/security.md).
func TestSecurityClientGone(t *testing.T) {
	backend := newSlowBackend(t, 5*time.Second)
	s := newHXStack(t, hxOptions{Serve: true, RemoteBase: backend})
	s.register(contextd.ModeRemote)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	req := s.newReq(http.MethodPost, "/alpha/history/v2/list_windows", []byte(`{"context":{"session_id":"`+hxSessionID+`"}}`), map[string]string{"Authorization": "Bearer x"})
	if _, err := http.DefaultClient.Do(req.WithContext(ctx)); err == nil {
		t.Fatal("the request finished before the client went away")
	}
	var series []string
	for range 50 { // the server notices the abort asynchronously
		series = s.metricSeries("contextd_http_requests_total")
		if strings.Contains(strings.Join(series, "\n"), `code="499"`) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	all := strings.Join(series, "\n")
	if !strings.Contains(all, `operation="/alpha/history/v2/list_windows",code="499"`) && !strings.Contains(all, `code="499"`) {
		t.Errorf("no code=499 series after a client abort:\n%s", all)
	}
	if strings.Contains(all, `code="500"`) || strings.Contains(all, `code="502"`) {
		t.Errorf("a client abort was counted as a server or upstream error:\n%s", all)
	}
	if logs := s.Logs.String(); strings.Contains(logs, "level=ERROR") {
		t.Errorf("a client abort was logged at ERROR:\n%s", logs)
	}
}

// TestSecurityProblemMapping: errors that are the client's doing or the
// disk's say so: a canceled request context → 499 (no ERROR log), a full
// disk → 507 with a sentence saying the disk is full.
func TestSecurityProblemMapping(t *testing.T) {
	s := newHXStack(t, hxOptions{})
	cases := []struct {
		err    error
		status int
		says   string
	}{
		{fmt.Errorf("sync: %w", context.Canceled), 499, "client"},
		{fmt.Errorf("write item texts: %w", &os.PathError{Op: "write", Path: "/x", Err: syscall.ENOSPC}), http.StatusInsufficientStorage, "disk"},
	}
	for _, c := range cases {
		var se interface{ GetStatus() int }
		err := s.API.problem("op", c.err)
		if !errors.As(err, &se) || se.GetStatus() != c.status {
			t.Errorf("%v → %v, want status %d", c.err, err, c.status)
			continue
		}
		if !strings.Contains(err.Error(), c.says) {
			t.Errorf("%v → %q, want a sentence about the %s", c.err, err.Error(), c.says)
		}
	}
	if logs := s.Logs.String(); strings.Contains(logs, "level=ERROR") && strings.Contains(logs, "context canceled") {
		t.Errorf("a canceled request was logged at ERROR:\n%s", logs)
	}
}

// TestSecurityDiskFull: a state database that cannot grow (SQLite
// SQLITE_FULL, what a full disk gives) answers 507 on register with a
// sentence saying the disk is full, and leaves the state as it was.
func TestSecurityDiskFull(t *testing.T) {
	s := newHXStack(t, hxOptions{})
	free := fillStateDB(t, s.State.DB.Writer)
	r := s.do(s.newReq(http.MethodPut, "/v1/sessions/"+hxSessionID, []byte(`{"session_file":"`+hxFileName+`","mode":"tree"}`), nil))
	if r.Status != http.StatusInsufficientStorage {
		t.Fatalf("register on a full disk: %d %s, want 507", r.Status, r.Body)
	}
	if p := r.problem(t); !strings.Contains(p.Detail, "disk") || !strings.Contains(p.Detail, "full") {
		t.Errorf("507 detail %q does not say the disk is full", p.Detail)
	}
	if _, found, err := s.State.Registration(t.Context(), hxSessionID); err != nil || found {
		t.Errorf("after the failed register: found=%v err=%v, want no registration", found, err)
	}
	// Space again: the same request succeeds.
	free()
	r = s.do(s.newReq(http.MethodPut, "/v1/sessions/"+hxSessionID, []byte(`{"session_file":"`+hxFileName+`","mode":"tree"}`), nil))
	if r.Status != http.StatusCreated {
		t.Errorf("register after space came back: %d %s", r.Status, r.Body)
	}
}

// TestSecurityNoValueEchoed: a number that does not fit (1e309) is refused
// without echoing it.
func TestSecurityNoValueEchoed(t *testing.T) {
	s := newHXStack(t, hxOptions{})
	for _, v := range []string{"1e309", "-1e309", "123456789012345678901234567890e300"} {
		r := s.post("/alpha/history/v2/list_items", []byte(`{"window_id":"w","limit":`+v+`,"context":{"session_id":"`+hxSessionID+`"}}`), nil)
		if r.Status < 400 || r.Status >= 500 {
			t.Errorf("limit %s: %d, want 4xx", v, r.Status)
		}
		if strings.Contains(string(r.Body), strings.TrimPrefix(v, "-")) {
			t.Errorf("limit %s echoed in the answer: %s", v, r.Body)
		}
	}
}

// TestSecurityRemoteListNotIndexed: GET /v1/sessions lists a session
// registered as Remote without reading its file (docs/security.md).
func TestSecurityRemoteListNotIndexed(t *testing.T) {
	s := newHXStack(t, hxOptions{})
	s.register(contextd.ModeRemote)
	r := s.do(s.newReq(http.MethodGet, "/v1/sessions", nil, nil))
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/sessions: %d %s", r.Status, r.Body)
	}
	var list struct {
		Sessions []struct {
			SessionID string `json:"session_id"`
			Mode      string `json:"mode"`
			State     string `json:"state"`
			Entries   int    `json:"entries"`
		} `json:"sessions"`
	}
	json.Unmarshal(r.Body, &list)
	n := 0
	for _, x := range list.Sessions {
		if x.SessionID == hxSessionID {
			n++
			if x.Mode != "remote" || x.State != "remote" || x.Entries != 0 {
				t.Errorf("remote session listed as %+v, want mode remote, state remote, no entries", x)
			}
		}
	}
	if n != 1 {
		t.Errorf("remote session listed %d times, want once: %s", n, r.Body)
	}
	if _, entries := s.entries(); entries != 0 {
		t.Errorf("listing indexed %d entries of a Remote session's file, want 0", entries)
	}
}

// TestSecurityRunawayLineReported: an unterminated last line already over
// --max-line-bytes is listed as a too_long problem (docs/security.md: a
// 20 GiB runaway line showed state ok). store.TestRunawayLastLine checks
// that it is not read again.
func TestSecurityRunawayLineReported(t *testing.T) {
	s := newHXStack(t, hxOptions{})
	// The session is in use (indexed): the listing syncs it, and its
	// sync sees the runaway line (a session not indexed is listed from
	// its header only).
	if r := s.do(s.newReq(http.MethodGet, "/v1/sessions/"+hxSessionID, nil, nil)); r.Status != http.StatusOK {
		t.Fatalf("GET the session: %d %s", r.Status, r.Body)
	}
	f, err := os.OpenFile(s.File, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"message","x":"`)
	fi, _ := f.Stat()
	f.Close()
	if err := os.Truncate(s.File, fi.Size()+65<<20); err != nil { // sparse, over the 64 MiB default
		t.Fatal(err)
	}
	r := s.do(s.newReq(http.MethodGet, "/v1/sessions", nil, nil))
	if r.Status != http.StatusOK {
		t.Fatalf("GET /v1/sessions: %d %s", r.Status, r.Body)
	}
	if !strings.Contains(string(r.Body), `"reason":"too_long","detail":"the last line has no newline yet`) {
		t.Errorf("the runaway last line is not reported: %.2000s", r.Body)
	}
}

// fillStateDB makes the state database unable to grow (SQLite's
// SQLITE_FULL, what a full disk gives) and returns a func that gives the
// space back.
func fillStateDB(t *testing.T, w *sql.DB) func() {
	t.Helper()
	var pages int
	if err := w.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec(fmt.Sprintf("PRAGMA max_page_count=%d", pages)); err != nil {
		t.Fatal(err)
	}
	free := func() { w.Exec("PRAGMA max_page_count=1073741823") }
	t.Cleanup(free)
	// Fill every page of both tables and their indexes: rows with random
	// keys (so they land on every page) of shrinking sizes, each size until
	// 40 inserts in a row found no room.
	rnd := rand.New(rand.NewPCG(9, 9))
	full := 0
	for _, size := range []int{400, 100, 30, 8, 1} {
		for _, table := range []string{"registrations", "rollovers"} {
			for fails, n := 0, 0; fails < 40; n++ {
				if n > 100000 {
					t.Fatal("max_page_count did not stop the database from growing")
				}
				key := fmt.Sprintf("%016x", rnd.Uint64())
				pad := strings.Repeat("x", size)
				var err error
				if table == "registrations" {
					_, err = w.Exec(`INSERT INTO registrations(session_id, session_file, mode, agent_name, registered_at, updated_at) VALUES (?,?,'local','/root','t','t')`, key, pad)
				} else {
					_, err = w.Exec(`INSERT INTO rollovers(rollover_id, session_id, session_file, mode, state, boundary_entry_id, boundary_parent_id, window_identity, leaf_at_request, requested_at) VALUES (?,?,?,'tree','pending','b','p','{}','l','t')`, key, key, pad)
				}
				switch {
				case err == nil:
					fails = 0
				case strings.Contains(err.Error(), "full"):
					fails++
					full++
				default:
					t.Fatalf("filling the database: %v", err)
				}
			}
		}
	}
	if full == 0 {
		t.Fatal("the database never filled up")
	}
	return free
}

// TestSecurityDiskFullRollover: the rollover tool phase on a full disk
// answers 507 saying so, records no rollover, and succeeds once there is
// space again.
func TestSecurityDiskFullRollover(t *testing.T) {
	s, _ := rolloverServer(t, contextd.ModeTree)
	free := fillStateDB(t, s.State.DB.Writer)
	base := "/v1/sessions/" + rollTreeID + "/rollovers"
	r := s.post(base, map[string]any{"leaf_id": "42a59a75", "command_context_ready": true})
	if r.Status != http.StatusInsufficientStorage || !strings.Contains(r.problem(t).Detail, "disk") {
		t.Fatalf("rollover on a full disk: %d %s, want 507 saying the disk is full", r.Status, r.Body)
	}
	if st := s.get("/v1/sessions/" + rollTreeID); !strings.Contains(string(st.Body), `"rollover":null`) {
		t.Errorf("a rollover was recorded by the failed request: %s", st.Body)
	}
	free()
	if r := s.post(base, map[string]any{"leaf_id": "42a59a75", "command_context_ready": true}); r.Status != http.StatusCreated {
		t.Errorf("rollover after space came back: %d %s", r.Status, r.Body)
	}
}
