package api

// Remote mode through the real HTTP stack (docs/modes.md "Remote mode"): every Codex route of a
// session registered as remote is forwarded to the backend byte for byte,
// and a broken backend is an error, never local data (docs/design.md §6
// invariant 8). The hx* helpers here are shared with hostile_test.go and
// fuzz_test.go.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"contextd"
	"contextd/coordinator"
	"contextd/internal/testkit"
	"contextd/remote"
	"contextd/store"
)

// Fixture testdata/pi-tree/local-basic.jsonl: its session id and two
// strings only local data holds (the source marker of local answers and
// the first window id).
const (
	hxFixture     = "../testdata/pi-tree/local-basic.jsonl"
	hxFileName    = "local-basic.jsonl"
	hxSessionID   = "019f3776-3d33-70c6-baa2-5155ff71613c"
	hxToken       = "hx-token-0123456789abcdef0123456789abcdef"
	hxLocalMarker = `"source":"pi-session"`
)

// hxOp is one Codex route with a valid body for it: arguments with odd
// spacing and key order (so any re-encoding would show) and the context.
type hxOp struct {
	NS, Op    string
	Encrypted bool
	Args      string // JSON members without braces, "" for none
}

// Path is the route, e.g. /alpha/notes/v2/write_file.
func (o hxOp) Path() string { return "/alpha/" + o.NS + "/v2/" + o.Op }

// Body returns a valid request body for session id.
func (o hxOp) Body(id string) []byte {
	ctx := `"context" : {"current_agent_name":"/root",  "session_id":"` + id + `"}`
	if o.Args == "" {
		return []byte("{ " + ctx + " }\n")
	}
	return []byte("{\n\t" + o.Args + " ,\r\n " + ctx + "}")
}

// hxCipher stands for model-encrypted argument text: it must reach the
// backend and nothing else (no log, no error).
const hxCipher = "gAAAAABencrypted-ARGUMENT-ciphertext=="

var hxOps = []hxOp{
	{"history", "list_windows", false, `"recent_first" :true, "limit":5`},
	{"history", "list_items", false, `"window_id":null,"limit": 3, "max_chars_per_item":40`},
	{"history", "read_item", false, `"window_id":"w-1" , "item_id":"abc","offset_chars":0`},
	{"history", "search_contents", true, `"query":"` + hxCipher + `", "limit":2`},
	{"notes", "list_files_by_prefix", false, `"prefix":"", "max_results":7`},
	{"notes", "read_file", false, `"path":"plan.md","start_line":-2`},
	{"notes", "search_contents", true, `"query":"` + hxCipher + `"`},
	{"notes", "append_to_file", true, `"text":"` + hxCipher + `\n", "path":"plan.md"`},
	{"notes", "write_file", true, `"text":"` + hxCipher + `","path":"/root/notes/plan.md"`},
	{"notes", "thread_hint", false, ""},
}

// hxOptions configure newHXStack.
type hxOptions struct {
	DefaultMode contextd.Mode                   // "" = local
	RemoteBase  string                          // Codex backend base URL ("" = unset)
	NoAuth      bool                            // skip the token check
	Serve       bool                            // serve on a loopback listener (api.HTTPServer settings)
	MaxConns    int                             // LimitListener cap when serving (0 = none)
	Server      func(*http.Server)              // edits the served *http.Server before Serve
	Wrap        func(net.Listener) net.Listener // wraps the loopback listener inside LimitListener
	Config      func(c *Config)                 // edits the api.Config
}

// hxStack is contextd's whole stack over a temporary sessions directory
// holding a copy of local-basic.jsonl: index, state, coordinator, remote
// client, api; when served, an *http.Server with HTTPServer's settings.
type hxStack struct {
	tb       testing.TB
	Sessions string
	File     string // the copied session file
	Index    *store.Index
	State    *store.State
	Svc      *coordinator.Service
	Remote   *remote.Client
	API      *Server
	Registry *prometheus.Registry
	Logs     *testkit.LockedBuffer
	Token    string
	URL      string       // when served: http://127.0.0.1:port
	HTTP     *http.Server // when served
}

func newHXStack(tb testing.TB, o hxOptions) *hxStack {
	tb.Helper()
	root := tb.TempDir()
	s := &hxStack{tb: tb, Sessions: filepath.Join(root, "sessions"), Registry: prometheus.NewRegistry(), Logs: &testkit.LockedBuffer{}, Token: hxToken}
	if err := os.MkdirAll(s.Sessions, 0o700); err != nil {
		tb.Fatal(err)
	}
	b, err := os.ReadFile(hxFixture)
	if err != nil {
		tb.Fatal(err)
	}
	s.File = filepath.Join(s.Sessions, hxFileName)
	if err := os.WriteFile(s.File, b, 0o600); err != nil {
		tb.Fatal(err)
	}
	be := testkit.OpenBackend(tb, s.Sessions, root, testkit.Options{DefaultMode: o.DefaultMode, Log: s.Logs, LogLevel: slog.LevelDebug})
	s.Index, s.State, s.Svc = be.Index, be.State, be.Svc
	log := be.Logger
	s.Remote = remote.New(o.RemoteBase, s.Registry, log)
	cfg := Config{Token: s.Token, NoAuth: o.NoAuth, Logger: log, Registry: s.Registry}
	if o.Config != nil {
		o.Config(&cfg)
	}
	s.API = New(cfg, s.Svc, s.Remote)
	if o.Serve {
		ln := testkit.Listen(tb)
		s.HTTP = HTTPServer(s.API.Handler())
		s.HTTP.ErrorLog = slog.NewLogLogger(log.Handler(), slog.LevelWarn)
		if o.Server != nil {
			o.Server(s.HTTP)
		}
		if o.Wrap != nil {
			ln = o.Wrap(ln)
		}
		go s.HTTP.Serve(LimitListener(ln, o.MaxConns, NewConnMetrics(s.Registry).Listener("tcp")))
		tb.Cleanup(func() { s.HTTP.Close() })
		s.URL = "http://" + ln.Addr().String()
	}
	return s
}

// hxResp is a finished exchange.
type hxResp struct {
	Status int
	Header http.Header
	Body   []byte
}

// hxProblem is huma's problem document.
type hxProblem struct {
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Errors []struct {
		Message  string `json:"message"`
		Location string `json:"location"`
	} `json:"errors"`
}

// problem decodes r as application/problem+json, failing on anything else.
func (r hxResp) problem(tb testing.TB) hxProblem {
	tb.Helper()
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		tb.Fatalf("status %d with Content-Type %q, want application/problem+json; body %.500s", r.Status, ct, r.Body)
	}
	var p hxProblem
	if err := json.Unmarshal(r.Body, &p); err != nil {
		tb.Fatalf("problem body: %v: %.500s", err, r.Body)
	}
	if p.Status != r.Status || p.Detail == "" {
		tb.Fatalf("problem %+v for status %d", p, r.Status)
	}
	return p
}

// do runs req through the handler (not served) or the server (served).
func (s *hxStack) do(req *http.Request) hxResp {
	s.tb.Helper()
	if s.URL == "" {
		w := httptest.NewRecorder()
		specChecked(s.tb, s.API.Handler()).ServeHTTP(w, req)
		return hxResp{Status: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		s.tb.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.tb.Fatalf("%s %s: read: %v", req.Method, req.URL.Path, err)
	}
	return hxResp{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// newReq builds a request with the token and, for a body, Content-Type
// application/json. hdr overrides (an empty value deletes the header).
func (s *hxStack) newReq(method, path string, body []byte, hdr map[string]string) *http.Request {
	s.tb.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	base := s.URL
	if base == "" {
		base = "http://127.0.0.1:7467"
	}
	req, err := http.NewRequest(method, base+path, rd)
	if err != nil {
		s.tb.Fatal(err)
	}
	req.Header.Set(TokenHeader, s.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		switch {
		case k == "Host":
			req.Host = v
		case v == "":
			req.Header.Del(k)
		default:
			req.Header.Set(k, v)
		}
	}
	return req
}

func (s *hxStack) post(path string, body []byte, hdr map[string]string) hxResp {
	s.tb.Helper()
	return s.do(s.newReq(http.MethodPost, path, body, hdr))
}

// register registers hxSessionID with mode through PUT /v1/sessions/{id}.
func (s *hxStack) register(mode contextd.Mode) {
	s.tb.Helper()
	r := s.do(s.newReq(http.MethodPut, "/v1/sessions/"+hxSessionID, []byte(`{"session_file":"`+hxFileName+`","mode":"`+string(mode)+`"}`), nil))
	if r.Status != http.StatusCreated && r.Status != http.StatusOK {
		s.tb.Fatalf("register %s: %d %s", mode, r.Status, r.Body)
	}
}

// entries is the number of entries indexed over all sessions and the
// number of session objects the index knows.
func (s *hxStack) entries() (sessions, entries int) {
	for _, x := range s.Index.Sessions() {
		entries += x.Len()
	}
	return len(s.Index.Sessions()), entries
}

// sha returns the hex SHA-256 of the session file.
func (s *hxStack) sha() string {
	s.tb.Helper()
	b, err := os.ReadFile(s.File)
	if err != nil {
		s.tb.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// metricsText is the /metrics exposition.
func (s *hxStack) metricsText() string {
	s.tb.Helper()
	w := httptest.NewRecorder()
	s.API.Handler().ServeHTTP(w, s.newReq(http.MethodGet, "/metrics", nil, map[string]string{"Host": "127.0.0.1"}))
	return w.Body.String()
}

// Codex credentials the extension forwards; they must reach the backend
// only.
const (
	hxAuth    = "Bearer eyJ-SECRET-chatgpt-access-token"
	hxAccount = "acct-SECRET-77"
)

func hxCodexHeaders() map[string]string {
	return map[string]string{
		"Authorization": hxAuth, "ChatGPT-Account-ID": hxAccount, "User-Agent": "pi/0.85.1", "originator": "pi",
		"version": "0.154.0", "x-openai-tool-output-truncation-policy": `{"mode":"tokens","limit":10000}`,
	}
}

// hxBackend is a fake Codex backend whose behaviour can be switched.
type hxBackend struct {
	*httptest.Server
	mu      sync.Mutex
	mode    string // see serve
	reqs    []hxSeen
	release chan struct{}
}

type hxSeen struct {
	Path   string
	Header http.Header
	Body   []byte
}

const hxAnswer = " {\"encrypted_output\" :\"" + "gAAAAB-result-ciphertext" + "\",  \"n\":[1,2]}\n"

func newHXBackend(t *testing.T) *hxBackend {
	b := &hxBackend{mode: "ok", release: make(chan struct{})}
	b.Server = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(func() { close(b.release); b.Close() })
	return b
}

func (b *hxBackend) set(mode string) {
	b.mu.Lock()
	b.mode = mode
	b.mu.Unlock()
}

func (b *hxBackend) seen() []hxSeen {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]hxSeen(nil), b.reqs...)
}

func (b *hxBackend) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.reqs = append(b.reqs, hxSeen{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	mode := b.mode
	b.mu.Unlock()
	switch mode {
	case "ok":
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, hxAnswer)
	case "500":
		w.Header().Set("x-request-id", "req-hx-500")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"error":"UPSTREAM-SECRET-BODY"}`)
	case "403":
		w.Header().Set("cf-ray", "8f-hx-ray")
		w.WriteHeader(http.StatusForbidden)
	case "invalid":
		w.Header().Set("x-request-id", "req-hx-bad")
		io.WriteString(w, `{"encrypted_output":`)
	case "array":
		io.WriteString(w, `[{"window_id":"w"}]`)
	case "slow":
		select {
		case <-r.Context().Done():
		case <-b.release:
		}
	case "close":
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
	}
}

// TestRemoteForwardsEveryRoute: a session registered as remote forwards
// each of the ten routes: exact path, the caller's body bytes, the Codex
// headers (the encrypted header on exactly four routes), and the answer's
// bytes come back unchanged.
func TestRemoteForwardsEveryRoute(t *testing.T) {
	be := newHXBackend(t)
	s := newHXStack(t, hxOptions{RemoteBase: be.URL + "/backend-api/codex", Serve: true})
	s.register(contextd.ModeRemote)
	sum := s.sha()
	for _, o := range hxOps {
		hdr := hxCodexHeaders()
		hdr["Cookie"] = "c=1"
		r := s.post(o.Path(), o.Body(hxSessionID), hdr)
		if r.Status != http.StatusOK || string(r.Body) != hxAnswer || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%s: %d %q %q, want 200 application/json with the backend's bytes %q", o.Path(), r.Status, r.Header.Get("Content-Type"), r.Body, hxAnswer)
		}
	}
	seen := be.seen()
	if len(seen) != len(hxOps) {
		t.Fatalf("backend saw %d requests, want %d", len(seen), len(hxOps))
	}
	for i, o := range hxOps {
		g := seen[i]
		if want := "/backend-api/codex" + o.Path(); g.Path != want {
			t.Errorf("backend path %q, want %q", g.Path, want)
		}
		if !bytes.Equal(g.Body, o.Body(hxSessionID)) {
			t.Errorf("%s: backend body %q, want the caller's bytes %q", o.Path(), g.Body, o.Body(hxSessionID))
		}
		want := map[string]string{"Authorization": hxAuth, "Chatgpt-Account-Id": hxAccount, "User-Agent": "pi/0.85.1", "Originator": "pi", "Version": "0.154.0",
			"X-Openai-Tool-Output-Truncation-Policy": `{"mode":"tokens","limit":10000}`, "Content-Type": "application/json", "Accept": "application/json"}
		if o.Encrypted {
			want["X-Openai-Encrypted-Tool-Arguments"] = "true"
		}
		n := 0
		for k, v := range g.Header {
			if k == "Accept-Encoding" || k == "Content-Length" {
				continue
			}
			n++
			if len(v) != 1 || v[0] != want[k] {
				t.Errorf("%s: backend header %s=%q, want %q", o.Path(), k, v, want[k])
			}
		}
		if n != len(want) {
			t.Errorf("%s: backend got %d headers %v, want exactly %v", o.Path(), n, g.Header, want)
		}
	}
	if n, e := s.entries(); n != 0 || e != 0 {
		t.Errorf("remote mode touched the index: %d sessions, %d entries", n, e)
	}
	if s.sha() != sum {
		t.Error("session file changed")
	}
	m := s.metricsText()
	for _, o := range hxOps {
		line := `contextd_remote_requests_total{namespace="` + o.NS + `",operation="` + o.Op + `",outcome="ok"} 1`
		if !strings.Contains(m, line) {
			t.Errorf("/metrics lacks %s", line)
		}
	}
	hxNoSecrets(t, s.Logs.String()+m)
}

// TestRemoteNoFallback: with local data present and the backend broken in
// each way, every route answers the error (never local data) and the index
// is never read.
func TestRemoteNoFallback(t *testing.T) {
	// Control: the same file answers local data in Local mode.
	local := newHXStack(t, hxOptions{Serve: true})
	for _, o := range hxOps[:1] {
		r := local.post(o.Path(), o.Body(hxSessionID), nil)
		if r.Status != http.StatusOK || !bytes.Contains(r.Body, []byte(hxLocalMarker)) {
			t.Fatalf("control: local %s answered %d %.300s, want local data", o.Path(), r.Status, r.Body)
		}
	}

	be := newHXBackend(t)
	s := newHXStack(t, hxOptions{RemoteBase: be.URL, Serve: true})
	s.Remote.Timeout = 300 * time.Millisecond
	s.register(contextd.ModeRemote)
	sum := s.sha()
	cases := []struct {
		mode    string
		status  int
		outcome string
		parts   []string
	}{
		{"500", 502, "http_error", []string{"Unable to perform operation: The backend request failed.", "HTTP 500 Internal Server Error", "x-request-id: req-hx-500"}},
		{"403", 502, "http_error", []string{"Unable to perform operation: The backend request failed.", "HTTP 403 Forbidden", "cf-ray: 8f-hx-ray", "ChatGPT-Account-ID"}},
		{"invalid", 502, "invalid_json", []string{"Unable to perform operation: The backend returned invalid JSON.", "HTTP 200 OK", "x-request-id: req-hx-bad"}},
		{"array", 502, "invalid_json", []string{"Unable to perform operation: The backend returned invalid JSON.", "a JSON array"}},
		{"slow", 504, "timeout", []string{"Unable to perform operation: The backend request failed.", "did not answer within 300ms"}},
		{"close", 502, "network_error", []string{"Unable to perform operation: The backend request failed.", "Could not reach the Codex backend"}},
	}
	for _, tc := range cases {
		be.set(tc.mode)
		for _, o := range hxOps {
			r := s.post(o.Path(), o.Body(hxSessionID), hxCodexHeaders())
			if r.Status != tc.status {
				t.Errorf("backend %s, %s: status %d, want %d; body %.300s", tc.mode, o.Path(), r.Status, tc.status, r.Body)
				continue
			}
			p := r.problem(t)
			if !strings.HasPrefix(p.Detail, "Unable to perform operation: ") {
				t.Errorf("detail %q lacks the Codex prefix", p.Detail)
			}
			for _, part := range tc.parts {
				if !strings.Contains(p.Detail, part) {
					t.Errorf("backend %s, %s: detail %q lacks %q", tc.mode, o.Path(), p.Detail, part)
				}
			}
			if bytes.Contains(r.Body, []byte("pi-session")) || bytes.Contains(r.Body, []byte("UPSTREAM-SECRET-BODY")) {
				t.Errorf("backend %s, %s: answer holds local data or the backend body: %s", tc.mode, o.Path(), r.Body)
			}
		}
		m := s.metricsText()
		line := `contextd_remote_requests_total{namespace="notes",operation="write_file",outcome="` + tc.outcome + `"}`
		if !strings.Contains(m, line) {
			t.Errorf("backend %s: /metrics lacks %s", tc.mode, line)
		}
	}

	// Backend unreachable: nothing listens at the base URL.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	s.Remote.BaseURL = "http://" + ln.Addr().String()
	ln.Close()
	for _, o := range hxOps {
		r := s.post(o.Path(), o.Body(hxSessionID), hxCodexHeaders())
		if r.Status != http.StatusBadGateway || !strings.Contains(r.problem(t).Detail, "connection refused") {
			t.Errorf("unreachable backend, %s: %d %s", o.Path(), r.Status, r.Body)
		}
	}

	// Missing Authorization: 401 without calling the backend.
	s.Remote.BaseURL = be.URL
	be.set("ok")
	before := len(be.seen())
	for _, o := range hxOps {
		hdr := hxCodexHeaders()
		hdr["Authorization"] = ""
		r := s.post(o.Path(), o.Body(hxSessionID), hdr)
		if r.Status != http.StatusUnauthorized || !strings.HasPrefix(r.problem(t).Detail, "Unable to perform operation: Could not resolve backend authentication.") {
			t.Errorf("no Authorization, %s: %d %s", o.Path(), r.Status, r.Body)
		}
	}
	if n := len(be.seen()) - before; n != 0 {
		t.Errorf("backend called %d times without Authorization", n)
	}

	if n, e := s.entries(); n != 0 || e != 0 {
		t.Errorf("remote mode touched the index: %d sessions, %d entries", n, e)
	}
	if s.sha() != sum {
		t.Error("session file changed")
	}
	hxNoSecrets(t, s.Logs.String()+s.metricsText())
	if !strings.Contains(s.Logs.String(), "outcome=timeout") {
		t.Errorf("logs lack the timeout line:\n%s", s.Logs.String())
	}
}

// TestRemoteDefaultMode: an unregistered session under --default-mode
// remote is forwarded too (ModeOf reads the state database only).
func TestRemoteDefaultMode(t *testing.T) {
	be := newHXBackend(t)
	s := newHXStack(t, hxOptions{RemoteBase: be.URL, DefaultMode: contextd.ModeRemote})
	o := hxOps[9]
	r := s.post(o.Path(), o.Body("never-registered-session"), hxCodexHeaders())
	if r.Status != http.StatusOK || string(r.Body) != hxAnswer {
		t.Fatalf("%d %s", r.Status, r.Body)
	}
	if got := be.seen(); len(got) != 1 || !bytes.Equal(got[0].Body, o.Body("never-registered-session")) {
		t.Errorf("backend saw %+v", got)
	}
	if n, _ := s.entries(); n != 0 {
		t.Errorf("index knows %d sessions", n)
	}
}

// hxNoSecrets fails when text holds a credential or encrypted text.
func hxNoSecrets(t *testing.T, text string) {
	t.Helper()
	for _, secret := range []string{hxAuth, "eyJ-SECRET", hxAccount, hxCipher, "gAAAAB", "UPSTREAM-SECRET-BODY", hxToken} {
		if strings.Contains(text, secret) {
			t.Errorf("logs or metrics leak %q", secret)
		}
	}
}
