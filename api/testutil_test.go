package api

// Shared helpers of the api tests: a real contextd HTTP stack (store index
// and state, coordinator, api router, httptest server) over a temporary
// copy of fixture session files, and small JSON request helpers.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"contextd"
	"contextd/coordinator"
	"contextd/internal/testkit"
	"contextd/remote"
	"contextd/store"
)

// testToken is the service token of every test server.
const testToken = "t0k3n-for-tests-0123456789abcdef"

// Fixture paths, relative to the api package directory.
var (
	fixturePiTree     = filepath.Join("..", "testdata", "pi-tree")
	fixturePiSessions = filepath.Join("..", "testdata", "pi-sessions")
)

// Fixture ids of testdata/pi-tree/local-basic.jsonl (local-basic.expected.json).
const (
	localBasicFile      = "local-basic.jsonl"
	localBasicSessionID = "019f3776-3d33-70c6-baa2-5155ff71613c"
)

// testServer is a running contextd HTTP stack over a temporary sessions
// directory. Everything lives under t.TempDir() and is closed by t.Cleanup.
type testServer struct {
	t        *testing.T
	Sessions string // sessions directory (holds the copied files)
	StateDir string // index and state databases
	Index    *store.Index
	State    *store.State
	Svc      *coordinator.Service
	API      *Server
	HTTP     *httptest.Server
	URL      string // base URL, e.g. http://127.0.0.1:41234
	Token    string
}

// serverOptions tune newTestServer; the zero value is a Local-mode server
// with the test token and no Remote backend.
type serverOptions struct {
	DefaultMode contextd.Mode    // default mode of unregistered sessions; "" = local
	Remote      *remote.Client   // Remote-mode client; nil = remote.New("", nil, nil)
	Config      func(c *Config)  // edits the api.Config before New
	Clock       func() time.Time // the coordinator's clock; nil = time.Now
	MemoryLimit int64            // the store's memory limit (store.EntryBudget); 0 = none
}

// fixture names one file to copy into the sessions directory: Src is a
// path (relative to the api package), Name the file name under the
// sessions directory ("" = base name of Src; may contain one "sub/" dir).
type fixture struct{ Src, Name string }

// piTree and piSessions name fixture files by base name.
func piTree(name string) fixture     { return fixture{Src: filepath.Join(fixturePiTree, name)} }
func piSessions(name string) fixture { return fixture{Src: filepath.Join(fixturePiSessions, name)} }

// newTestServer copies files into a fresh sessions directory and starts
// the HTTP stack on it.
func newTestServer(t *testing.T, opts serverOptions, files ...fixture) *testServer {
	t.Helper()
	root := t.TempDir()
	s := &testServer{t: t, Sessions: filepath.Join(root, "sessions"), StateDir: filepath.Join(root, "state"), Token: testToken}
	for _, d := range []string{s.Sessions, s.StateDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		name := f.Name
		if name == "" {
			name = filepath.Base(f.Src)
		}
		s.copyFile(f.Src, name)
	}
	var copts []coordinator.Option
	if opts.Clock != nil {
		copts = append(copts, coordinator.WithClock(opts.Clock))
	}
	be := testkit.OpenBackend(t, s.Sessions, s.StateDir, testkit.Options{DefaultMode: opts.DefaultMode, Coordinator: copts, MemoryLimit: opts.MemoryLimit})
	s.Index, s.State, s.Svc = be.Index, be.State, be.Svc
	cfg := Config{Token: s.Token, Registry: prometheus.NewRegistry()}
	if opts.Config != nil {
		opts.Config(&cfg)
	}
	rc := opts.Remote
	if rc == nil {
		rc = remote.New("", nil, nil)
	}
	s.API = New(cfg, s.Svc, rc)
	s.HTTP = httptest.NewServer(specChecked(t, s.API.Handler()))
	t.Cleanup(s.HTTP.Close)
	s.URL = s.HTTP.URL
	return s
}

// copyFile copies src to name under the sessions directory and returns the
// destination path.
func (s *testServer) copyFile(src, name string) string {
	s.t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		s.t.Fatalf("read fixture: %v", err)
	}
	return s.writeFile(name, b)
}

// writeFile writes data to name under the sessions directory (creating a
// subdirectory when name has one) and returns the path.
func (s *testServer) writeFile(name string, data []byte) string {
	s.t.Helper()
	dst := filepath.Join(s.Sessions, name)
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		s.t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		s.t.Fatal(err)
	}
	return dst
}

// path returns the absolute path of name under the sessions directory.
func (s *testServer) path(name string) string { return filepath.Join(s.Sessions, name) }

// appendLine appends one JSONL line (a "\n" is added) to name, as Pi's
// appendFileSync does.
func (s *testServer) appendLine(name string, line []byte) {
	s.t.Helper()
	f, err := os.OpenFile(s.path(name), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(append([]byte{}, line...), '\n')); err != nil {
		s.t.Fatal(err)
	}
}

// response is a finished HTTP exchange.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// decode unmarshals the body into v, failing the test on error.
func (r response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v\nbody: %.2000s", http.StatusText(r.Status), err, r.Body)
	}
}

// problem decodes an RFC 9457 problem document.
func (r response) problem(t *testing.T) problemDoc {
	t.Helper()
	var p problemDoc
	r.decode(t, &p)
	return p
}

// problemDoc is huma's problem+json error model.
type problemDoc struct {
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	Errors []struct {
		Message  string `json:"message"`
		Location string `json:"location"`
	} `json:"errors"`
}

// request sends method path with body (nil: none; []byte or string: raw;
// anything else: JSON-encoded) and hdr. The token and, for a body,
// Content-Type application/json are set unless hdr sets them (an empty
// value in hdr removes the header).
func (s *testServer) request(method, path string, body any, hdr http.Header) response {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case string:
		rd = strings.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			s.t.Fatalf("encode body: %v", err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, s.URL+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set(TokenHeader, s.Token)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, vs := range hdr {
		req.Header.Del(k)
		for _, v := range vs {
			if v != "" {
				req.Header.Add(k, v)
			}
		}
	}
	if h := hdr.Get("Host"); h != "" {
		req.Host = h
	}
	resp, err := s.HTTP.Client().Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// get sends GET path with the token.
func (s *testServer) get(path string) response { return s.request(http.MethodGet, path, nil, nil) }

// post sends POST path with body as JSON and the token.
func (s *testServer) post(path string, body any) response {
	return s.request(http.MethodPost, path, body, nil)
}

// put sends PUT path with body as JSON and the token.
func (s *testServer) put(path string, body any) response {
	return s.request(http.MethodPut, path, body, nil)
}

// mustOK posts body to path, requires 200 and decodes the answer into out
// (when out is not nil). It returns the raw response.
func (s *testServer) mustOK(path string, body any, out any) response {
	s.t.Helper()
	r := s.post(path, body)
	if r.Status != http.StatusOK {
		s.t.Fatalf("POST %s: status %d, want 200\nbody: %.2000s", path, r.Status, r.Body)
	}
	if out != nil {
		r.decode(s.t, out)
	}
	return r
}

// callCtx is the `context` object of a Codex mirror body.
type callCtx struct {
	SessionID        string `json:"session_id"`
	CurrentAgentName string `json:"current_agent_name,omitempty"`
	LeafID           string `json:"leaf_id,omitempty"`
}

// codexBody returns args (nil = no arguments) plus context{session_id,
// leaf_id}, the body of a Codex mirror route. args is not modified.
func codexBody(sessionID, leafID string, args map[string]any) map[string]any {
	b := map[string]any{}
	for k, v := range args {
		b[k] = v
	}
	b["context"] = callCtx{SessionID: sessionID, CurrentAgentName: "/root", LeafID: leafID}
	return b
}

// codex posts a Codex mirror operation ("history/list_items",
// "notes/read_file", ...) for sessionID at leafID ("" = last entry).
func (s *testServer) codex(op, sessionID, leafID string, args map[string]any) response {
	s.t.Helper()
	return s.post(codexPath(op), codexBody(sessionID, leafID, args))
}

// codexOK is codex that requires 200 and decodes into out.
func (s *testServer) codexOK(op, sessionID, leafID string, args map[string]any, out any) response {
	s.t.Helper()
	return s.mustOK(codexPath(op), codexBody(sessionID, leafID, args), out)
}

// codexPath maps "history/list_items" to "/alpha/history/v2/list_items".
func codexPath(op string) string {
	ns, name, ok := strings.Cut(op, "/")
	if !ok {
		panic("codexPath: want ns/op, got " + op)
	}
	return "/alpha/" + ns + "/v2/" + name
}

// getJSON sends GET path, requires 200 and decodes the answer into out.
func (s *testServer) getJSON(path string, out any) {
	s.t.Helper()
	r := s.get(path)
	if r.Status != http.StatusOK {
		s.t.Fatalf("GET %s: status %d, want 200\nbody: %.2000s", path, r.Status, r.Body)
	}
	r.decode(s.t, out)
}

// sessionsList answers GET /v1/sessions, decoded.
func (s *testServer) sessionsList() []coordinator.SessionSummary {
	s.t.Helper()
	r := s.get("/v1/sessions")
	if r.Status != http.StatusOK {
		s.t.Fatalf("GET /v1/sessions: %d\n%s", r.Status, r.Body)
	}
	var out struct {
		Sessions []coordinator.SessionSummary `json:"sessions"`
	}
	r.decode(s.t, &out)
	return out.Sessions
}

// register registers sessionID with PUT /v1/sessions/{id}.
func (s *testServer) register(sessionID, file string, mode contextd.Mode) response {
	s.t.Helper()
	return s.put("/v1/sessions/"+sessionID, map[string]any{"session_file": file, "mode": string(mode)})
}

// fileSHA256 returns the hex SHA-256 of the file at path.
func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// jsonlLine returns line n (1-based) of a JSONL file, without its "\n".
func jsonlLine(t *testing.T, path string, n int) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(b, []byte("\n"))
	if n < 1 || n > len(lines) {
		t.Fatalf("%s has no line %d", path, n)
	}
	return lines[n-1]
}

// jsonlEntry returns the raw line of the entry with id in a JSONL file.
func jsonlEntry(t *testing.T, path, id string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		var e struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(line, &e) == nil && e.ID == id {
			return line
		}
	}
	t.Fatalf("%s has no entry %q", path, id)
	return nil
}

// piEntry serializes like Pi's SessionManager: the fields of each entry
// type in Pi's order, then a "\n" (appendMessage: type, id, parentId,
// timestamp, message; appendCustomEntry: type, customType, data, id,
// parentId, timestamp; appendCustomMessageEntry: type, customType,
// content, display, details, id, parentId, timestamp).
type (
	piMessageEntry struct {
		Type      string  `json:"type"`
		ID        string  `json:"id"`
		ParentID  *string `json:"parentId"`
		Timestamp string  `json:"timestamp"`
		Message   any     `json:"message"`
	}
	piCustomEntry struct {
		Type       string  `json:"type"`
		CustomType string  `json:"customType"`
		Data       any     `json:"data"`
		ID         string  `json:"id"`
		ParentID   *string `json:"parentId"`
		Timestamp  string  `json:"timestamp"`
	}
	piCustomMessageEntry struct {
		Type       string  `json:"type"`
		CustomType string  `json:"customType"`
		Content    any     `json:"content"`
		Display    bool    `json:"display"`
		Details    any     `json:"details"`
		ID         string  `json:"id"`
		ParentID   *string `json:"parentId"`
		Timestamp  string  `json:"timestamp"`
	}
)

// sessionBuilder writes a v3 Pi session file by hand, one linear chain:
// every entry's parentId is the previous entry (the leaf). Ids are 8 hex
// digits from a counter (e0000001, e0000002, …) so that tests can name
// them; timestamps advance one second per entry.
type sessionBuilder struct {
	lines [][]byte
	leaf  string
	n     int
}

func newSessionBuilder(sessionID string) *sessionBuilder {
	b := &sessionBuilder{}
	h, _ := json.Marshal(map[string]any{"type": "session", "version": 3, "id": sessionID,
		"timestamp": "2026-08-01T10:00:00.000Z", "cwd": "/home/dev/hand-built"})
	b.lines = append(b.lines, h)
	return b
}

func (b *sessionBuilder) next() (id string, parent *string, ts string) {
	b.n++
	id = "e" + strings.Repeat("0", 7-len(itoa(int64(b.n)))) + itoa(int64(b.n))
	if b.leaf != "" {
		p := b.leaf
		parent = &p
	}
	ts = "2026-08-01T10:" + pad2(b.n/60%60) + ":" + pad2(b.n%60) + ".000Z"
	b.leaf = id
	return id, parent, ts
}

func pad2(n int) string {
	if n < 10 {
		return "0" + itoa(int64(n))
	}
	return itoa(int64(n))
}

func (b *sessionBuilder) add(v any) {
	j, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	b.lines = append(b.lines, j)
}

// message appends a message entry with the given message object.
func (b *sessionBuilder) message(m map[string]any) string {
	id, parent, ts := b.next()
	b.add(piMessageEntry{Type: "message", ID: id, ParentID: parent, Timestamp: ts, Message: m})
	return id
}

// user appends a user message with string content.
func (b *sessionBuilder) user(text string) string {
	return b.message(map[string]any{"role": "user", "content": text, "timestamp": 1785578400000 + b.n})
}

// assistant appends an assistant message with the given content parts.
func (b *sessionBuilder) assistant(parts ...map[string]any) string {
	return b.message(map[string]any{"role": "assistant", "content": parts, "api": "openai-codex-responses",
		"provider": "openai-codex", "model": "gpt-5.5", "stopReason": "toolUse", "timestamp": 1785578400000 + b.n})
}

// toolResult appends a toolResult answering call id with text.
func (b *sessionBuilder) toolResult(callID, toolName, text string) string {
	return b.message(map[string]any{"role": "toolResult", "toolCallId": callID, "toolName": toolName,
		"content": []map[string]any{{"type": "text", "text": text}}, "isError": false, "timestamp": 1785578400000 + b.n})
}

// boundary appends a codex-context-window window boundary (docs/codex-contract.md
// "Window boundaries") for window number n with the given ids (previous "" = none).
func (b *sessionBuilder) boundary(n int, first, current, previous string) string {
	cm := map[string]any{"protocol": 1, "kind": "window", "firstWindowId": first, "currentWindowId": current, "windowNumber": n}
	if previous != "" {
		cm["previousWindowId"] = previous
	}
	id, parent, ts := b.next()
	b.add(piCustomMessageEntry{Type: "custom_message", CustomType: "codex-context-window",
		Content: "<context_window>\nAgent name: /root\nCurrent context window id: " + current + "\n</context_window>",
		Display: true, Details: map[string]any{"protocol": 1, "id": "marker-" + id, "contextManagement": cm},
		ID: id, ParentID: parent, Timestamp: ts})
	return id
}

// note appends a codex-context-note custom entry (docs/codex-contract.md "Local notes").
func (b *sessionBuilder) note(action, path, text string, tsMillis int64) string {
	id, parent, ts := b.next()
	data := map[string]any{"protocol": 1, "action": action, "path": path, "text": text, "timestamp": tsMillis}
	b.add(piCustomEntry{Type: "custom", CustomType: "codex-context-note", Data: data, ID: id, ParentID: parent, Timestamp: ts})
	return id
}

// bytes returns the file content: every line followed by "\n".
func (b *sessionBuilder) bytes() []byte {
	return append(bytes.Join(b.lines, []byte("\n")), '\n')
}
