package api

// Benchmarks of whole HTTP requests (router, token check, body checks,
// huma, the coordinator, the JSON answer) over loopback, on a generated
// Pi session (bench/sessiongen, as bench/run.sh) of CONTEXTD_BENCH_MB MiB
// (default 32). With BenchmarkServiceContextAfterAppend (coordinator) they
// tell the HTTP layer's share of the bench's catch-up row.
//
//	go test -tags sqlite_fts5 -run '^$' -bench . -benchmem ./api

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"contextd/bench/sessiongen"
	"contextd/internal/testkit"
	"contextd/remote"
)

// benchHTTP generates a session, serves it and indexes it once; it
// returns the base URL, the manifest and the session file's path.
func benchHTTP(b *testing.B) (string, *sessiongen.Manifest, string) {
	b.Helper()
	mb := 32.0
	if v, err := strconv.ParseFloat(os.Getenv("CONTEXTD_BENCH_MB"), 64); err == nil && v > 0 {
		mb = v
	}
	root := b.TempDir()
	dir := filepath.Join(root, "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, "bench.jsonl")
	m, err := sessiongen.WriteFile(path, sessiongen.Options{Bytes: int64(mb * (1 << 20)), Seed: 1, WindowEvery: 400})
	if err != nil {
		b.Fatal(err)
	}
	be := testkit.OpenBackend(b, dir, filepath.Join(root, "state"), testkit.Options{})
	srv := httptest.NewServer(New(Config{Token: testToken, Registry: prometheus.NewRegistry()}, be.Svc, remote.New("", nil, nil)).Handler())
	b.Cleanup(srv.Close)
	postContext(b, srv.URL, m.SessionID)
	return srv.URL, m, path
}

// postContext is POST /v1/sessions/{id}/context with an empty body.
func postContext(b *testing.B, base, sid string) {
	req, err := http.NewRequest("POST", base+"/v1/sessions/"+sid+"/context", strings.NewReader("{}"))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("X-Contextd-Token", testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("/context: %d %s", resp.StatusCode, body)
	}
}

// BenchmarkHTTPContext is POST …/context (default leaf), nothing appended.
func BenchmarkHTTPContext(b *testing.B) {
	base, m, _ := benchHTTP(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		postContext(b, base, m.SessionID)
	}
}

// BenchmarkHTTPContextAfterAppend appends one entry (a user message)
// before each POST …/context: the bench's catch-up row in one process.
func BenchmarkHTTPContextAfterAppend(b *testing.B) {
	base, m, path := benchHTTP(b)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	leaf := m.LeafID
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("%08x", 0xf0000000+i)
		fmt.Fprintf(f, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-07-07T00:00:00.000Z","message":{"role":"user","content":[{"type":"text","text":"probe %d"}],"timestamp":1783382400000}}`+"\n", id, leaf, i)
		leaf = id
		postContext(b, base, m.SessionID)
	}
}
