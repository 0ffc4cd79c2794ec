package reliability

// Shared helpers: a real contextd stack wired as cmd/contextd wires it
// (testkit.OpenBackend: store index and state, coordinator; then the api)
// behind an httptest server on 127.0.0.1, plus fixture copying and request
// helpers.

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"contextd"
	"contextd/api"
	"contextd/coordinator"
	"contextd/internal/testkit"
	"contextd/remote"
	"contextd/store"
)

// testToken is the service token of every test stack.
const testToken = "reliability-token-0123456789abcdef0123456789abcdef"

// Fixture directories, relative to this package.
var (
	piSessionsDir = filepath.Join("..", "testdata", "pi-sessions")
	piTreeDir     = filepath.Join("..", "testdata", "pi-tree")
)

// Ids of testdata/pi-tree fixtures (their *.expected.json).
const (
	localBasicID = "019f3776-3d33-70c6-baa2-5155ff71613c"
	treeMultiID  = "019f429d-87f0-7841-b1ab-51687b222864"
	treeBasicID  = "019f3d67-b1fd-7c0a-87d5-9b46277407ba"
	piMonoV1ID   = "5fd1e58c-9635-410e-a644-133a96057c90" // testdata/pi-sessions/pi-mono-session.jsonl, a v1 file
)

// stack is one running contextd: the same wiring as cmd/contextd run()
// minus flags, over Sessions (the sessions directory) and StateDir (index/
// and state.db), served by httptest on a loopback port.
type stack struct {
	t        testing.TB
	Sessions string
	StateDir string
	Index    *store.Index
	State    *store.State
	Svc      *coordinator.Service
	HTTP     *httptest.Server
	Log      *testkit.LockedBuffer
	client   *http.Client
	backend  *testkit.Backend
	stopped  bool
}

// stackOptions tune startStack; the zero value is Local default mode and
// the store's default batch size.
type stackOptions struct {
	DefaultMode contextd.Mode
	BatchBytes  int64
}

// startStack opens the index and state under stateDir and serves them.
// The stack is stopped by t.Cleanup unless stopped before.
func startStack(t testing.TB, sessions, stateDir string, opts stackOptions) *stack {
	t.Helper()
	s := &stack{t: t, Sessions: sessions, StateDir: stateDir, Log: &testkit.LockedBuffer{}}
	reg := prometheus.NewRegistry()
	be := testkit.OpenBackend(t, sessions, stateDir, testkit.Options{DefaultMode: opts.DefaultMode, BatchBytes: opts.BatchBytes,
		Registry: reg, Log: s.Log, LogLevel: slog.LevelInfo})
	s.backend = be
	s.Index, s.State, s.Svc = be.Index, be.State, be.Svc
	log := be.Logger
	srv := api.New(api.Config{Token: testToken, Logger: log, Registry: reg}, s.Svc, remote.New("http://127.0.0.1:1", reg, log))
	s.HTTP = httptest.NewServer(srv.Handler())
	s.client = s.HTTP.Client()
	s.client.Transport.(*http.Transport).MaxIdleConnsPerHost = 64
	t.Cleanup(s.stop)
	return s
}

// stop closes the server and both databases (idempotent).
func (s *stack) stop() {
	if s.stopped {
		return
	}
	s.stopped = true
	s.HTTP.Close()
	s.backend.Close()
}

// answer is one finished HTTP exchange.
type answer struct {
	Status int
	Body   []byte
}

// do sends method path with body (nil: none; anything else is JSON
// encoded) and the token. It never fails the test on a status: callers
// decide. It is safe for concurrent use (it only reports transport errors
// through the returned error).
func (s *stack) do(method, path string, body any) (answer, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.HTTP.URL+path, rd)
	if err != nil {
		return answer{}, err
	}
	req.Header.Set(api.TokenHeader, testToken)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return answer{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return answer{}, err
	}
	return answer{Status: resp.StatusCode, Body: b}, nil
}

// must sends a request and fails the test on a transport error or a
// status other than want.
func (s *stack) must(want int, method, path string, body any) []byte {
	s.t.Helper()
	a, err := s.do(method, path, body)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	if a.Status != want {
		s.t.Fatalf("%s %s: status %d, want %d\nbody: %.2000s", method, path, a.Status, want, a.Body)
	}
	return a.Body
}

// register registers sessionID (PUT /v1/sessions/{id}) and returns the
// stored registration.
func (s *stack) register(sessionID, file string, mode contextd.Mode, agent string) contextd.Registration {
	s.t.Helper()
	body := map[string]any{"session_file": file, "mode": string(mode)}
	if agent != "" {
		body["agent_name"] = agent
	}
	a, err := s.do(http.MethodPut, "/v1/sessions/"+sessionID, body)
	if err != nil {
		s.t.Fatal(err)
	}
	if a.Status != http.StatusCreated && a.Status != http.StatusOK {
		s.t.Fatalf("register %s: %d %s", sessionID, a.Status, a.Body)
	}
	var r contextd.Registration
	decode(s.t, a.Body, &r)
	return r
}

// sessionsList answers GET /v1/sessions, decoded.
func (s *stack) sessionsList() []coordinator.SessionSummary {
	s.t.Helper()
	var out struct {
		Sessions []coordinator.SessionSummary `json:"sessions"`
	}
	decode(s.t, s.must(http.StatusOK, http.MethodGet, "/v1/sessions", nil), &out)
	return out.Sessions
}

// metric returns the value of one sample line of /metrics ("name{labels}"
// exactly as exposed), or -1 when absent.
func (s *stack) metric(sample string) float64 {
	s.t.Helper()
	return metricValue(string(s.must(http.StatusOK, http.MethodGet, "/metrics", nil)), sample)
}

// metricValue finds sample in a Prometheus text exposition.
func metricValue(text, sample string) float64 {
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, sample+" "); ok {
			var v float64
			if err := json.Unmarshal([]byte(strings.TrimSpace(rest)), &v); err == nil {
				return v
			}
		}
	}
	return -1
}

// decode unmarshals b into v or fails the test.
func decode(t testing.TB, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("decode: %v\nbody: %.2000s", err, b)
	}
}

// codexBody is a Codex mirror body: args plus context{session_id, leaf_id}.
func codexBody(sessionID, leafID string, args map[string]any) map[string]any {
	b := map[string]any{}
	for k, v := range args {
		b[k] = v
	}
	c := map[string]any{"session_id": sessionID}
	if leafID != "" {
		c["leaf_id"] = leafID
	}
	b["context"] = c
	return b
}

// codexPath maps "history/list_items" to "/alpha/history/v2/list_items".
func codexPath(op string) string {
	ns, name, _ := strings.Cut(op, "/")
	return "/alpha/" + ns + "/v2/" + name
}

// copyFile copies src to dst (creating dst's directory), mode 0600.
func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dst, b)
}

// writeFile writes data to path (creating its directory), mode 0600.
func writeFile(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fixtureFiles lists every testdata session file (pi-sessions and pi-tree).
func fixtureFiles(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, dir := range []string{piSessionsDir, piTreeDir} {
		m, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m...)
	}
	if len(out) != 11 {
		t.Fatalf("found %d fixture files, want 11 (6 pi-sessions + 5 pi-tree)", len(out))
	}
	return out
}

func ptr[T any](v T) *T { return &v }
