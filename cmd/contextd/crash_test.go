package main

// Crash safety of the derived index (docs/design.md §6 invariant 1, docs/index-and-search.md "How
// the index works": one transaction per ~16 MiB batch holds the entries and
// the resume state, so a crash loses at most the batch in progress and
// never duplicates entries), and recovery from an index.db that is corrupt
// or was written by a newer contextd.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"contextd/internal/testkit"
	"contextd/store"

	_ "github.com/mattn/go-sqlite3" // read index.db directly
)

// runMainEnv makes the test binary run contextd's main instead of the
// tests (TestMain): the crash test starts the real service as a separate
// process that it can SIGKILL, without building another binary.
const runMainEnv = "CONTEXTD_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// raceEnabled reports whether this binary was built with -race (then
// everything runs several times slower).
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

const (
	bigSessionID = "019fc000-0000-7000-8000-00000000c4a5"
	localBasicID = "019f3776-3d33-70c6-baa2-5155ff71613c" // testdata/pi-tree/local-basic.jsonl: 106 entries
	batchBytes   = 16 << 20                               // store.Options default: one transaction per 16 MiB
)

// bigSession is what genBigSession wrote.
type bigSession struct {
	Size    int64
	Entries int
	Windows []string // window ids in order
}

// genBigSession writes a valid Pi v3 session of at least target bytes:
// a model change, then rounds of user message, assistant message with a
// read tool call, a tool result of 4–12 KB, and an assistant answer, with
// a window boundary every 10 rounds and a note append every 6. Every 100th
// user message holds "needle-<round>". Texts mix ASCII, "é" and "漢字".
func genBigSession(t *testing.T, path string, target int64) bigSession {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rng := rand.New(rand.NewSource(42))
	words := []string{"store", "index", "batch", "commit", "offset", "window", "note", "Café", "漢字", "replay", "sync", "tail", "line", "crash", "resume", "entry", "tree", "leaf"}
	var out bigSession
	var written int64
	line := func(s string) {
		n, _ := w.WriteString(s)
		w.WriteByte('\n')
		written += int64(n) + 1
	}
	parent := ""
	ts := time.Date(2026, 8, 2, 8, 0, 0, 0, time.UTC)
	next := func() (id, par, stamp string, ms int64) {
		out.Entries++
		id = fmt.Sprintf("%08x", out.Entries)
		par, parent = parent, id
		ts = ts.Add(time.Second)
		return id, par, ts.Format("2006-01-02T15:04:05.000Z"), ts.UnixMilli()
	}
	pj := func(p string) string {
		if p == "" {
			return "null"
		}
		return `"` + p + `"`
	}
	line(`{"type":"session","version":3,"id":"` + bigSessionID + `","timestamp":"2026-08-02T08:00:00.000Z","cwd":"/home/dev/src/big"}`)
	id, par, stamp, _ := next()
	line(`{"type":"model_change","id":"` + id + `","parentId":` + pj(par) + `,"timestamp":"` + stamp + `","provider":"openai-codex","modelId":"gpt-5.5"}`)
	// A pool of texts (JSON-escaped already), cut to the wanted length at
	// a word boundary: generating is then mostly writing.
	var pool []string
	for i := 0; i < 64; i++ {
		var b strings.Builder
		for b.Len() < 12<<10 {
			b.WriteString(words[rng.Intn(len(words))])
			if rng.Intn(12) == 0 {
				b.WriteString(`\n`)
			} else {
				b.WriteByte(' ')
			}
		}
		pool = append(pool, b.String())
	}
	text := func(n int) string {
		p := pool[rng.Intn(len(pool))]
		if n >= len(p) {
			return p
		}
		if i := strings.LastIndexByte(p[:n], ' '); i > 0 {
			return p[:i]
		}
		return p[:n]
	}
	for round := 0; written < target; round++ {
		if round%10 == 0 {
			wid := fmt.Sprintf("00000000-0000-4000-8000-%012x", len(out.Windows)+1)
			first, prev := wid, ""
			if len(out.Windows) > 0 {
				first, prev = out.Windows[0], out.Windows[len(out.Windows)-1]
			}
			cm := `{"protocol":1,"kind":"window","firstWindowId":"` + first + `","currentWindowId":"` + wid + `",`
			if prev != "" {
				cm += `"previousWindowId":"` + prev + `",`
			}
			cm += `"windowNumber":` + strconv.Itoa(len(out.Windows)) + `}`
			id, par, stamp, _ := next()
			line(`{"type":"custom_message","customType":"codex-context-window","content":"<context_window>\nAgent name: /root\nCurrent context window id: ` + wid + `\n</context_window>","display":true,"details":{"protocol":1,"id":"` +
				fmt.Sprintf("10000000-0000-4000-8000-%012x", len(out.Windows)+1) + `","contextManagement":` + cm + `},"id":"` + id + `","parentId":` + pj(par) + `,"timestamp":"` + stamp + `"}`)
			out.Windows = append(out.Windows, wid)
		}
		if round%6 == 3 {
			id, par, stamp, ms := next()
			line(`{"type":"custom","customType":"codex-context-note","data":{"protocol":1,"action":"append","path":"/root/notes/progress.md","text":"- round ` + strconv.Itoa(round) + `\n","timestamp":` + strconv.FormatInt(ms, 10) + `},"id":"` + id + `","parentId":` + pj(par) + `,"timestamp":"` + stamp + `"}`)
		}
		needle := ""
		if round%100 == 0 {
			needle = fmt.Sprintf(" needle-%d", round)
		}
		id, par, stamp, ms := next()
		line(`{"type":"message","id":"` + id + `","parentId":` + pj(par) + `,"timestamp":"` + stamp + `","message":{"role":"user","content":[{"type":"text","text":"Round ` + strconv.Itoa(round) + needle + `: ` + text(80) + `"}],"timestamp":` + strconv.FormatInt(ms, 10) + `}}`)
		call := fmt.Sprintf("call_%d", round)
		id, par, stamp, ms = next()
		line(`{"type":"message","id":"` + id + `","parentId":` + pj(par) + `,"timestamp":"` + stamp + `","message":{"role":"assistant","content":[{"type":"text","text":"` + text(60) + `"},{"type":"toolCall","id":"` + call + `","name":"read","arguments":{"path":"src/f` + strconv.Itoa(round) + `.go"}}],"api":"openai-codex-responses","provider":"openai-codex","model":"gpt-5.5","usage":{"input":10,"output":5,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":` + strconv.FormatInt(ms, 10) + `}}`)
		id, par, stamp, ms = next()
		line(`{"type":"message","id":"` + id + `","parentId":` + pj(par) + `,"timestamp":"` + stamp + `","message":{"role":"toolResult","toolCallId":"` + call + `","toolName":"read","content":[{"type":"text","text":"` + text(4000+rng.Intn(8000)) + `"}],"isError":false,"timestamp":` + strconv.FormatInt(ms, 10) + `}}`)
		id, par, stamp, ms = next()
		line(`{"type":"message","id":"` + id + `","parentId":` + pj(par) + `,"timestamp":"` + stamp + `","message":{"role":"assistant","content":[{"type":"text","text":"` + text(200) + `"}],"api":"openai-codex-responses","provider":"openai-codex","model":"gpt-5.5","stopReason":"stop","timestamp":` + strconv.FormatInt(ms, 10) + `}}`)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	out.Size = written
	return out
}

// child is contextd serve running as a separate process (this test binary
// re-executed with runMainEnv).
type child struct {
	t       *testing.T
	cmd     *exec.Cmd
	url     string
	token   string
	logPath string
	exited  chan struct{} // closed when the process has exited
	waitErr error         // its exit status, valid once exited is closed
	client  *http.Client
}

func startChild(t *testing.T, sessions, state string, opts ...func(*exec.Cmd)) *child {
	t.Helper()
	c := &child{t: t, logPath: filepath.Join(t.TempDir(), "contextd.log"), exited: make(chan struct{}),
		client: &http.Client{Timeout: 3 * time.Minute}}
	logf, err := os.Create(c.logPath)
	if err != nil {
		t.Fatal(err)
	}
	c.cmd = exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0", "--sessions-dir", sessions, "--state-dir", state)
	c.cmd.Env = append(os.Environ(), runMainEnv+"=1")
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	for _, o := range opts {
		o(c.cmd)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.waitErr = c.cmd.Wait()
		logf.Close()
		close(c.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-c.exited:
		default:
			c.cmd.Process.Kill()
			<-c.exited
		}
	})
	c.url = testkit.WaitServing(t, state, c.cmd.Process.Pid, 60*time.Second, c.log)
	c.token = readToken(t, state)
	return c
}

func (c *child) log() string {
	b, _ := os.ReadFile(c.logPath)
	return string(b)
}

// do sends a request with the token; body nil: none.
func (c *child) do(method, path string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, c.url+path, rd)
	req.Header.Set("X-Contextd-Token", c.token)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (c *child) must(method, path string, body any) []byte {
	c.t.Helper()
	st, b, err := c.do(method, path, body)
	if err != nil || st < 200 || st > 299 {
		c.t.Fatalf("%s %s: %d %v %.1000s\nlog:\n%s", method, path, st, err, b, c.log())
	}
	return b
}

func (c *child) metric(sample string) float64 {
	c.t.Helper()
	return metricValue(string(c.must(http.MethodGet, "/metrics", nil)), sample)
}

// stop sends SIGTERM and requires a clean exit without a race report.
func (c *child) stop() {
	c.t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
		if c.waitErr != nil {
			c.t.Errorf("contextd exited with %v\n%s", c.waitErr, c.log())
		}
	case <-time.After(30 * time.Second):
		c.t.Fatalf("contextd did not stop within 30 s after SIGTERM")
	}
	c.checkLog()
}

// checkLog fails on a race report or a panic in the child's output.
func (c *child) checkLog() {
	c.t.Helper()
	if l := c.log(); strings.Contains(l, "WARNING: DATA RACE") || strings.Contains(l, "panic:") {
		c.t.Errorf("contextd reported a race or a panic:\n%s", l)
	}
}

// metricValue finds a sample ("name{labels}") in Prometheus text, -1 when
// absent.
func metricValue(text, sample string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			if v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64); err == nil {
				return v
			}
		}
	}
	return -1
}

// codex is a Codex mirror body for sessionID.
func codex(sessionID string, args map[string]any) map[string]any {
	b := map[string]any{"context": map[string]any{"session_id": sessionID}}
	for k, v := range args {
		b[k] = v
	}
	return b
}

// indexRow is the big session's row of index.db.
type indexRow struct {
	FileID, BytesIndexed, TextBytes int64
	TailBytes                       int64 // text_tail: the raw end of the item text
	Entries, DistinctIDs            int
	MinSeq, MaxSeq                  int
}

// readIndexRow reads dir/index.db (copied with its WAL to a scratch
// directory first, so that recovery happens on the copy and the crashed
// state is left as it is for the next start).
func readIndexRow(t *testing.T, dir, name string) indexRow {
	t.Helper()
	scratch := t.TempDir()
	for _, f := range []string{"index.db", "index.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if errors.Is(err, os.ErrNotExist) && f != "index.db" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(scratch, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(scratch, "index.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var r indexRow
	err = db.QueryRow(`SELECT file_id, bytes_indexed, text_bytes, length(text_tail) FROM sessions WHERE path LIKE ?`, "%/"+name).Scan(&r.FileID, &r.BytesIndexed, &r.TextBytes, &r.TailBytes)
	if err != nil {
		t.Fatalf("read the sessions row of %s: %v", name, err)
	}
	// Entries are stored packed, one entry_blocks row per batch
	// (store/entryblock.go): read every record's seq and id.
	rows, err := db.Query(`SELECT first_seq, n, data FROM entry_blocks WHERE file_id = ? ORDER BY first_seq`, r.FileID)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	r.MinSeq, r.MaxSeq = -1, -1
	ids := map[string]bool{}
	for rows.Next() {
		var first, n int
		var data []byte
		if err := rows.Scan(&first, &n, &data); err != nil {
			t.Fatal(err)
		}
		recs, err := blockIDs(data, n)
		if err != nil {
			t.Fatalf("entry block at seq %d: %v", first, err)
		}
		for i, id := range recs {
			seq := first + i
			if r.MinSeq < 0 || seq < r.MinSeq {
				r.MinSeq = seq
			}
			r.MaxSeq = max(r.MaxSeq, seq)
			ids[id] = true
			r.Entries++
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	r.DistinctIDs = len(ids)
	return r
}

// blockIDs returns the ids of the n records of an entry_blocks row (record
// format in store/entryblock.go: uvarint line, offset, length; strings id,
// parentId, type, timestamp, customType, meta; flags, edit; with flag 1
// strings role, toolName, toolNamespace and uvarint chars; uvarint textOff,
// textLen; a string is a uvarint length and its bytes).
func blockIDs(b []byte, n int) ([]string, error) {
	bad := errors.New("damaged record")
	uv := func() (uint64, error) {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, bad
		}
		b = b[k:]
		return v, nil
	}
	str := func() (string, error) {
		l, err := uv()
		if err != nil || l > uint64(len(b)) {
			return "", bad
		}
		s := string(b[:l])
		b = b[l:]
		return s, nil
	}
	var ids []string
	for range n {
		for range 3 {
			if _, err := uv(); err != nil {
				return nil, err
			}
		}
		id, err := str()
		if err != nil {
			return nil, err
		}
		ids = append(ids, id)
		for range 5 {
			if _, err := str(); err != nil {
				return nil, err
			}
		}
		if len(b) < 2 {
			return nil, bad
		}
		flags := b[0]
		b = b[2:]
		if flags&1 != 0 {
			for range 3 {
				if _, err := str(); err != nil {
					return nil, err
				}
			}
			if _, err := uv(); err != nil {
				return nil, err
			}
		}
		for range 2 {
			if _, err := uv(); err != nil {
				return nil, err
			}
		}
	}
	if len(b) != 0 {
		return nil, bad
	}
	return ids, nil
}

// TestCrashMidIndexing SIGKILLs contextd while it indexes a large session
// (80 MiB, 24 MiB under -race; batches of 16 MiB), after at least one
// batch committed and before the last. The item-text file then also gets
// the bytes of a batch whose transaction never committed (as when the kill
// lands between the text write and the commit). The next start resumes
// from the committed offset: it ingests exactly the bytes that were not
// committed (nothing indexed twice, no re-index), the entry count equals
// the generator's and a cold index's, entry ids are unique and seqs
// contiguous, and the answers of the session, history and notes routes
// equal those of a cold index built by another contextd in a fresh state
// directory.
func TestCrashMidIndexing(t *testing.T) {
	// Several batches without the race detector; under -race, where
	// indexing is about 8 times slower, one and a half (the test must stay
	// under a minute).
	target := int64(80 << 20)
	if raceEnabled() {
		target = 24 << 20
	}
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	if err := os.MkdirAll(sessions, 0o700); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	big := genBigSession(t, filepath.Join(sessions, "big.jsonl"), target)
	local, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pi-tree", "local-basic.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// Indexed after big.jsonl (files are synced in path order).
	if err := os.WriteFile(filepath.Join(sessions, "local-basic.jsonl"), local, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("generated %d MiB, %d entries, %d windows in %v", big.Size>>20, big.Entries, len(big.Windows), time.Since(t0).Round(time.Millisecond))

	// 1. Start, trigger indexing, SIGKILL once a batch committed.
	phase := time.Now()
	state := filepath.Join(dir, "state")
	a := startChild(t, sessions, state)
	go a.do(http.MethodGet, "/v1/sessions/"+bigSessionID, nil) // blocks until indexed; fails when killed
	var seen float64
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, b, err := a.do(http.MethodGet, "/metrics", nil)
		if err != nil {
			t.Fatalf("metrics: %v", err)
		}
		seen = metricValue(string(b), "contextd_index_bytes_ingested_total")
		if seen > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no batch committed within 90 s\n%s", a.log())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.exited
	a.checkLog()
	if seen >= float64(big.Size) {
		t.Fatalf("indexing had finished (%.0f bytes) before the kill: nothing was tested", seen)
	}
	crashed := readIndexRow(t, filepath.Join(state, "index"), "big.jsonl")
	t.Logf("killed %v after start, after %.0f bytes ingested; committed: %d of %d bytes, %d of %d entries", time.Since(phase).Round(time.Millisecond), seen, crashed.BytesIndexed, big.Size, crashed.Entries, big.Entries)
	if crashed.BytesIndexed <= 0 || crashed.BytesIndexed >= big.Size {
		t.Fatalf("committed %d bytes: the kill was not mid-way through %d bytes", crashed.BytesIndexed, big.Size)
	}
	if crashed.Entries != crashed.MaxSeq+1 || crashed.DistinctIDs != crashed.Entries {
		t.Errorf("crashed index: %d entries, %d distinct ids, seq %d..%d", crashed.Entries, crashed.DistinctIDs, crashed.MinSeq, crashed.MaxSeq)
	}
	// The item text: frames of store.TextFrameSize bytes, the rest raw in
	// the sessions row. An ingest this large writes its frames raw, into
	// texts/N.raw0 (frame f at f×TextFrameSize; store/rawframes.go), and
	// the kill lands before any is compressed: the compression runs after
	// the sync, and the sync had not ended.
	texts := filepath.Join(state, "index", "texts")
	frames := (crashed.TextBytes - crashed.TailBytes) / store.TextFrameSize
	if (crashed.TextBytes-crashed.TailBytes)%store.TextFrameSize != 0 || crashed.TailBytes >= store.TextFrameSize {
		t.Errorf("committed text of %d bytes with a tail of %d: not whole frames", crashed.TextBytes, crashed.TailBytes)
	}
	rawPath := filepath.Join(texts, fmt.Sprintf("%d.raw0", crashed.FileID))
	if fi, err := os.Stat(rawPath); err != nil || fi.Size() < store.TextFrameSize*frames {
		t.Errorf("raw item text frames: %v, below the %d committed frames", err, frames)
	} else {
		t.Logf("item text frames: %d written raw, %d committed (frames beyond come from the batch in progress)", fi.Size()/store.TextFrameSize, frames)
	}
	if fi, err := os.Stat(filepath.Join(texts, fmt.Sprintf("%d.s2x", crashed.FileID))); err == nil {
		t.Errorf("a frame index of %d bytes before the sync ended: frames were compressed during the ingest", fi.Size())
	}

	// Frames of a batch that never committed: the restart must ignore them
	// (load truncates the frame files to the committed frames).
	for _, p := range []string{rawPath, filepath.Join(texts, fmt.Sprintf("%d.s2", crashed.FileID))} {
		tf, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		tf.Write(bytes.Repeat([]byte("uncommitted batch text "), 4096))
		tf.Close()
	}

	// 2. Restart on the crashed state, and a cold contextd on a fresh state
	// directory, at the same time.
	phase = time.Now()
	b := startChild(t, sessions, state)
	c := startChild(t, sessions, filepath.Join(dir, "cold"))
	var wg sync.WaitGroup
	lists := make([][]byte, 2)
	for i, ch := range []*child{b, c} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Both sessions used, then listed (a listing indexes nothing).
			ch.do(http.MethodGet, "/v1/sessions/"+bigSessionID, nil)
			ch.do(http.MethodGet, "/v1/sessions/"+localBasicID, nil)
			_, lists[i], _ = ch.do(http.MethodGet, "/v1/sessions", nil)
		}()
	}
	wg.Wait()
	if !bytes.Equal(lists[0], lists[1]) {
		t.Errorf("GET /v1/sessions after resume != cold:\nresumed: %.1500s\ncold:    %.1500s", lists[0], lists[1])
	}
	var sl struct {
		Sessions []struct {
			SessionID string `json:"session_id"`
			Entries   int    `json:"entries"`
			Bytes     int64  `json:"bytes"`
			State     string `json:"state"`
		} `json:"sessions"`
	}
	if err := json.Unmarshal(lists[0], &sl); err != nil || len(sl.Sessions) != 2 {
		t.Fatalf("sessions: %v %.500s", err, lists[0])
	}
	if s := sl.Sessions[0]; s.SessionID != bigSessionID || s.Entries != big.Entries || s.Bytes != big.Size || s.State != "ok" {
		t.Errorf("big session after resume: %+v, want %d entries, %d bytes, ok", s, big.Entries, big.Size)
	}
	// Resumed at the committed offset: only the rest was ingested.
	if got, want := b.metric("contextd_index_bytes_ingested_total"), float64(big.Size-crashed.BytesIndexed+int64(len(local))); got != want {
		t.Errorf("resumed process ingested %v bytes, want %v (the uncommitted rest of big.jsonl plus local-basic.jsonl)", got, want)
	}
	if got, want := b.metric("contextd_index_entries_ingested_total"), float64(big.Entries-crashed.Entries+106); got != want {
		t.Errorf("resumed process ingested %v entries, want %v", got, want)
	}
	if strings.Contains(b.log(), "re-indexing") {
		t.Errorf("the resumed process re-indexed instead of resuming:\n%s", b.log())
	}

	t.Logf("resume and cold index took %v", time.Since(phase).Round(time.Millisecond))

	// 3. Same answers as the cold index.
	phase = time.Now()
	mid := big.Windows[len(big.Windows)/2]
	last := big.Windows[len(big.Windows)-1]
	reqs := []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/sessions/" + bigSessionID, nil},
		{"GET", "/v1/sessions/" + bigSessionID + "/branch", nil},
		{"POST", "/v1/sessions/" + bigSessionID + "/context", map[string]any{}},
		{"POST", "/alpha/history/v2/list_windows", codex(bigSessionID, map[string]any{"limit": 100})},
		{"POST", "/alpha/history/v2/list_items", codex(bigSessionID, map[string]any{"window_id": big.Windows[0], "limit": 25})},
		{"POST", "/alpha/history/v2/list_items", codex(bigSessionID, map[string]any{"window_id": mid, "limit": 25})},
		{"POST", "/alpha/history/v2/list_items", codex(bigSessionID, map[string]any{"window_id": last, "limit": 25, "recent_first": true})},
		{"POST", "/alpha/history/v2/search_contents", codex(bigSessionID, map[string]any{"query": "needle-", "limit": 25})},
		{"POST", "/alpha/history/v2/search_contents", codex(bigSessionID, map[string]any{"query": "zz-no-such-text"})},
		{"POST", "/alpha/notes/v2/list_files_by_prefix", codex(bigSessionID, nil)},
		{"POST", "/alpha/notes/v2/read_file", codex(bigSessionID, map[string]any{"path": "progress.md", "start_line": -3})},
		{"POST", "/alpha/notes/v2/thread_hint", codex(bigSessionID, nil)},
		{"GET", "/v1/sessions/" + localBasicID, nil},
		{"POST", "/alpha/history/v2/list_windows", codex(localBasicID, nil)},
	}
	var items struct {
		Items []struct {
			WindowID string `json:"window_id"`
			ItemID   string `json:"item_id"`
		} `json:"items"`
	}
	if err := json.Unmarshal(c.must("POST", "/alpha/history/v2/list_items", codex(bigSessionID, map[string]any{"window_id": mid, "limit": 25})), &items); err != nil || len(items.Items) == 0 {
		t.Fatalf("list_items of window %s: %v", mid, err)
	}
	for _, it := range []int{0, len(items.Items) - 1} {
		reqs = append(reqs, struct {
			method, path string
			body         any
		}{"POST", "/alpha/history/v2/read_item", codex(bigSessionID, map[string]any{"window_id": mid, "item_id": items.Items[it].ItemID})})
	}
	for _, r := range reqs {
		want := c.must(r.method, r.path, r.body)
		got := b.must(r.method, r.path, r.body)
		if !bytes.Equal(got, want) {
			t.Errorf("%s %s %v: resumed answer != cold answer\nresumed: %.600s\ncold:    %.600s", r.method, r.path, r.body, got, want)
		}
	}
	var lw struct {
		Windows []struct {
			WindowID  string `json:"window_id"`
			ItemCount int    `json:"item_count"`
		} `json:"windows"`
	}
	json.Unmarshal(b.must("POST", "/alpha/history/v2/list_windows", codex(bigSessionID, map[string]any{"limit": 100})), &lw)
	if len(lw.Windows) != min(len(big.Windows), 100) || lw.Windows[0].WindowID != big.Windows[0] {
		t.Errorf("list_windows: %d windows starting %+v, want %d starting %s", len(lw.Windows), lw.Windows[:min(1, len(lw.Windows))], min(len(big.Windows), 100), big.Windows[0])
	}
	t.Logf("%d answers compared in %v", len(reqs), time.Since(phase).Round(time.Millisecond))
	b.stop()
	c.stop()

	// 4. The resumed index holds each entry once.
	final := readIndexRow(t, filepath.Join(state, "index"), "big.jsonl")
	if final.Entries != big.Entries || final.DistinctIDs != big.Entries || final.MinSeq != 0 || final.MaxSeq != big.Entries-1 || final.BytesIndexed != big.Size {
		t.Errorf("resumed index: %+v; want %d entries with distinct ids, seq 0..%d, %d bytes", final, big.Entries, big.Entries-1, big.Size)
	}
}

// serveInProcess runs run("serve") in this process, its log captured,
// until stop is called (stop is idempotent and also runs at cleanup).
func serveInProcess(t *testing.T, sessions, state string) (c *child, logs *testkit.LockedBuffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	logs = &testkit.LockedBuffer{}
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--sessions-dir", sessions, "--state-dir", state}, env(nil), io.Discard, logs)
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("run: %v\n%s", err, logs.String())
			}
		})
	}
	t.Cleanup(stop)
	c = &child{t: t, client: &http.Client{Timeout: time.Minute}}
	c.url = testkit.WaitServing(t, state, os.Getpid(), 30*time.Second, logs.String)
	c.token = readToken(t, state)
	return c, logs, stop
}

// readToken returns the service token contextd wrote to state/token.
func readToken(t *testing.T, state string) string {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join(state, "token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(tok))
}

// TestUnusableIndexRebuilt: an index.db overwritten with garbage, and one
// whose schema is newer than the binary (PRAGMA user_version = 999), are
// detected when contextd starts, logged at warn level, deleted and rebuilt
// from the session files; every answer equals the one before, and the
// registrations in state.db survive.
func TestUnusableIndexRebuilt(t *testing.T) {
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	state := filepath.Join(dir, "state")
	os.MkdirAll(sessions, 0o700)
	for _, n := range []string{"local-basic.jsonl", "tree-basic.jsonl"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "pi-tree", n))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(sessions, n), b, 0o600)
	}
	const treeBasicID = "019f3d67-b1fd-7c0a-87d5-9b46277407ba"
	reqs := []struct {
		method, path string
		body         any
	}{
		{"GET", "/v1/sessions/" + localBasicID, nil},
		{"GET", "/v1/sessions/" + treeBasicID, nil},
		{"GET", "/v1/sessions/" + treeBasicID + "/branch", nil},
		{"POST", "/v1/sessions/" + localBasicID + "/context", map[string]any{}},
		{"POST", "/alpha/history/v2/list_windows", codex(localBasicID, nil)},
		{"POST", "/alpha/history/v2/list_items", codex(localBasicID, map[string]any{"window_id": "058f6ded-97f5-4969-ade0-fa96ccce6093", "limit": 25})},
		{"POST", "/alpha/history/v2/search_contents", codex(localBasicID, map[string]any{"query": "useWidgetFilters"})},
		{"POST", "/alpha/history/v2/read_item", codex(localBasicID, map[string]any{"window_id": "e636b0b7-d739-4a87-ad1c-80eb5320dfff", "item_id": "2623e50c"})},
		{"POST", "/alpha/notes/v2/list_files_by_prefix", codex(localBasicID, nil)},
		{"POST", "/alpha/notes/v2/thread_hint", codex(treeBasicID, nil)},
		{"GET", "/v1/sessions", nil}, // last: the routes above used (indexed) the sessions it lists whole
	}
	record := func(c *child) [][]byte {
		out := make([][]byte, len(reqs))
		for i, r := range reqs {
			out[i] = c.must(r.method, r.path, r.body)
		}
		return out
	}
	c, _, stop := serveInProcess(t, sessions, state)
	// Registrations live in state.db, which no index rebuild touches.
	c.must("PUT", "/v1/sessions/"+localBasicID, map[string]any{"session_file": "local-basic.jsonl", "mode": "local", "agent_name": "/root"})
	c.must("PUT", "/v1/sessions/"+treeBasicID, map[string]any{"session_file": "tree-basic.jsonl", "mode": "tree"})
	want := record(c)
	if !bytes.Contains(want[1], []byte(`"registered":true`)) || !bytes.Contains(want[1], []byte(`"mode":"tree"`)) {
		t.Fatalf("registration not shown: %.500s", want[1])
	}
	stop()
	dbPath := filepath.Join(state, "index", "index.db")

	for _, tc := range []struct {
		name    string
		damage  func()
		logHint string
	}{
		{"corrupt", func() {
			garbage := bytes.Repeat([]byte("this is not an SQLite database\n"), 1000)
			if err := os.WriteFile(dbPath, garbage, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "database file is corrupt"},
		{"newer schema", func() {
			db, err := sql.Open("sqlite3", "file:"+dbPath)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := db.Exec("PRAGMA user_version = 999"); err != nil {
				t.Fatal(err)
			}
			db.Close()
		}, "database schema is newer than this binary: file has version 999"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.damage()
			c, logs, stop := serveInProcess(t, sessions, state)
			got := record(c)
			stop()
			log := logs.String()
			if !strings.Contains(log, `level=WARN msg="index database unusable, deleting and rebuilding it from the session files"`) || !strings.Contains(log, tc.logHint) {
				t.Errorf("log lacks the warning with %q:\n%s", tc.logHint, log)
			}
			for i, r := range reqs {
				if !bytes.Equal(got[i], want[i]) {
					t.Errorf("%s %s: answer after the rebuild differs\nbefore: %.600s\nafter:  %.600s", r.method, r.path, want[i], got[i])
				}
			}
			db, err := sql.Open("sqlite3", "file:"+dbPath)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var v, n int
			db.QueryRow("PRAGMA user_version").Scan(&v)
			db.QueryRow("SELECT coalesce(sum(n), 0) FROM entry_blocks").Scan(&n)
			if v < 1 || v >= 999 || n != 106+62 {
				t.Errorf("rebuilt index.db: user_version %d, %d entries; want the binary's version and 168 entries", v, n)
			}
		})
	}
}
