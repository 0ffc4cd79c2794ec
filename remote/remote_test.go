package remote

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"contextd"
)

// The ten operations and whether each sends encrypted arguments
// (docs/codex-contract.md "Tool surface" "Enc" column, docs/codex-contract.md "Results and encryption").
var allOps = []struct {
	ns, op    string
	encrypted bool
}{
	{"history", "list_windows", false},
	{"history", "list_items", false},
	{"history", "read_item", false},
	{"history", "search_contents", true},
	{"notes", "list_files_by_prefix", false},
	{"notes", "read_file", false},
	{"notes", "search_contents", true},
	{"notes", "append_to_file", true},
	{"notes", "write_file", true},
	{"notes", "thread_hint", false},
}

// Secrets that must never reach a log line or an error message.
const (
	secretToken   = "Bearer sk-SECRET-access-token-0123456789"
	secretAccount = "acct-SECRET-4242"
	secretCipher  = "gAAAAA-ENCRYPTED-CIPHERTEXT-zzz"
	secretUpBody  = "UPSTREAM-BODY-MARKER-must-not-leak"
)

// oddBody has unusual whitespace, key order, escapes and number spelling:
// any re-encoding would change its bytes.
const oddBody = "{ \"text\" :\"" + secretCipher + "\\u00e9\\n\" ,\n\t\"path\":\"plan.md\",   \"limit\":1.0e1,\"z\":[ ],\r\n  \"context\":{\"current_agent_name\":\"/root\",\"session_id\":\"s-1\"} }\n"

// oddAnswer is a backend answer with odd spacing, returned unchanged.
const oddAnswer = "  {\"encrypted_output\" : \"" + secretCipher + "\",\n \"b\":[1, 2 ,3],\"a\":null}\n"

// callerHeader is what the extension sends: the forwarded set plus headers
// that must be dropped.
func callerHeader() http.Header {
	h := http.Header{}
	h.Set("Authorization", secretToken)
	h.Set("ChatGPT-Account-ID", secretAccount)
	h.Set("User-Agent", "pi-codex/0.85.1")
	h.Set("originator", "pi")
	h.Set("version", "0.154.0")
	h.Set("x-openai-tool-output-truncation-policy", `{"mode":"tokens","limit":10000}`)
	h.Set("X-Contextd-Token", "local-service-token")
	h.Set("Cookie", "session=abc")
	h.Set("x-codex-turn-metadata", "{}")
	h.Set(EncryptedArgumentsHeader, "false")
	return h
}

// received is one request seen by the fake backend.
type received struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// backend is a fake Codex backend. answer writes the response; every
// request is recorded first.
type backend struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []received
}

func newBackend(t *testing.T, answer http.HandlerFunc) *backend {
	t.Helper()
	b := &backend{}
	b.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.reqs = append(b.reqs, received{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone(), Body: body})
		b.mu.Unlock()
		answer(w, r)
	}))
	t.Cleanup(b.Close)
	return b
}

func (b *backend) requests() []received {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]received(nil), b.reqs...)
}

func answerJSON(status int, body string, hdr ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(hdr); i += 2 {
			w.Header().Set(hdr[i], hdr[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// newClient returns a client for base with its own registry and a log
// buffer.
func newClient(base string) (*Client, *prometheus.Registry, *bytes.Buffer) {
	reg := prometheus.NewRegistry()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return New(base, reg, log), reg, &logs
}

type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// metricValue returns the value of the counter (or the sample count of the
// histogram) name with exactly labels, 0 when absent.
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if !sameLabels(m.GetLabel(), labels) {
				continue
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
		}
	}
	return 0
}

func sameLabels(got []*dto.LabelPair, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, l := range got {
		if want[l.GetName()] != l.GetValue() {
			return false
		}
	}
	return true
}

// wantErr checks that err is a *contextd.Error with code whose message
// starts with prefix and contains every part.
func wantErr(t *testing.T, err error, code contextd.Code, prefix string, parts ...string) string {
	t.Helper()
	if err == nil {
		t.Fatalf("Forward succeeded, want %s error", code)
	}
	if got := contextd.ErrorCode(err); got != code {
		t.Fatalf("error code %q, want %q (message %q)", got, code, err)
	}
	msg := contextd.ErrorMessage(err)
	if !strings.HasPrefix(msg, prefix) {
		t.Errorf("message %q does not start with %q", msg, prefix)
	}
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("message %q lacks %q", msg, p)
		}
	}
	for _, s := range []string{secretToken, "sk-SECRET", secretAccount, secretCipher, secretUpBody} {
		if strings.Contains(msg, s) {
			t.Errorf("message %q leaks %q", msg, s)
		}
	}
	return msg
}

// noSecrets fails when the logs hold a credential, ciphertext or body.
func noSecrets(t *testing.T, logs string) {
	t.Helper()
	for _, s := range []string{"sk-SECRET", secretAccount, secretCipher, secretUpBody, "local-service-token", "session=abc"} {
		if strings.Contains(logs, s) {
			t.Errorf("logs leak %q:\n%s", s, logs)
		}
	}
}

func TestEncryptedTable(t *testing.T) {
	n := 0
	for _, o := range allOps {
		enc, known := Encrypted(o.ns, o.op)
		if !known || enc != o.encrypted {
			t.Errorf("Encrypted(%s, %s) = %v, %v; want %v, true", o.ns, o.op, enc, known, o.encrypted)
		}
		if enc {
			n++
		}
	}
	if n != 4 {
		t.Errorf("%d encrypted routes, want 4", n)
	}
	for _, bad := range [][2]string{{"history", "write_file"}, {"notes", "list_items"}, {"memory", "read_file"}, {"", ""}} {
		if _, known := Encrypted(bad[0], bad[1]); known {
			t.Errorf("Encrypted(%q, %q) is known", bad[0], bad[1])
		}
	}
}

// TestForwardByteForByte sends every operation and checks what the backend
// receives (method, exact path, exact header set, body bytes) and that the
// answer's bytes come back unchanged.
func TestForwardByteForByte(t *testing.T) {
	be := newBackend(t, answerJSON(200, oddAnswer, "x-request-id", "req_ok"))
	cl, reg, logs := newClient(be.URL + "/backend-api/codex/") // trailing "/" is ignored
	for _, o := range allOps {
		got, err := cl.Forward(t.Context(), Call{Namespace: o.ns, Op: o.op, Body: []byte(oddBody), Header: callerHeader()})
		if err != nil {
			t.Fatalf("%s/%s: %v", o.ns, o.op, err)
		}
		if string(got) != oddAnswer {
			t.Errorf("%s/%s: answer %q, want the backend's bytes %q", o.ns, o.op, got, oddAnswer)
		}
	}
	reqs := be.requests()
	if len(reqs) != len(allOps) {
		t.Fatalf("backend saw %d requests, want %d (one attempt each)", len(reqs), len(allOps))
	}
	for i, o := range allOps {
		r := reqs[i]
		if r.Method != http.MethodPost {
			t.Errorf("%s/%s: method %s, want POST", o.ns, o.op, r.Method)
		}
		if want := "/backend-api/codex/alpha/" + o.ns + "/v2/" + o.op; r.Path != want {
			t.Errorf("path %q, want %q", r.Path, want)
		}
		if !bytes.Equal(r.Body, []byte(oddBody)) {
			t.Errorf("%s/%s: body %q, want the caller's bytes %q", o.ns, o.op, r.Body, oddBody)
		}
		want := map[string]string{
			"Authorization":                          secretToken,
			"Chatgpt-Account-Id":                     secretAccount,
			"User-Agent":                             "pi-codex/0.85.1",
			"Originator":                             "pi",
			"Version":                                "0.154.0",
			"X-Openai-Tool-Output-Truncation-Policy": `{"mode":"tokens","limit":10000}`,
			"Content-Type":                           "application/json",
			"Accept":                                 "application/json",
		}
		if o.encrypted {
			want["X-Openai-Encrypted-Tool-Arguments"] = "true"
		}
		checkHeaders(t, o.ns+"/"+o.op, r.Header, want)
		if got := metricValue(t, reg, "contextd_remote_requests_total", map[string]string{"namespace": o.ns, "operation": o.op, "outcome": "ok"}); got != 1 {
			t.Errorf("%s/%s: ok counter %v, want 1", o.ns, o.op, got)
		}
		if got := metricValue(t, reg, "contextd_remote_request_duration_seconds", map[string]string{"namespace": o.ns, "operation": o.op}); got != 1 {
			t.Errorf("%s/%s: duration samples %v, want 1", o.ns, o.op, got)
		}
	}
	noSecrets(t, logs.String())
	if !strings.Contains(logs.String(), "operation=write_file outcome=ok status=200 request_id=\"x-request-id: req_ok\"") {
		t.Errorf("debug log lacks the call line:\n%s", logs)
	}
}

// checkHeaders compares the headers the backend saw, minus transport
// headers Go sets itself (Accept-Encoding, Content-Length), with want.
func checkHeaders(t *testing.T, what string, got http.Header, want map[string]string) {
	t.Helper()
	var keys []string
	for k := range got {
		if k == "Accept-Encoding" || k == "Content-Length" {
			continue
		}
		keys = append(keys, k)
		if len(got[k]) != 1 || got[k][0] != want[k] {
			t.Errorf("%s: header %s = %q, want %q", what, k, got[k], want[k])
		}
	}
	if len(keys) != len(want) {
		sort.Strings(keys)
		t.Errorf("%s: headers %v, want exactly the keys of %v", what, keys, want)
	}
}

// TestForwardMinimalHeaders: absent caller headers stay absent; the
// User-Agent defaults to contextd.
func TestForwardMinimalHeaders(t *testing.T) {
	be := newBackend(t, answerJSON(200, `{}`))
	cl, _, _ := newClient(be.URL)
	h := http.Header{}
	h.Set("Authorization", secretToken)
	if _, err := cl.Forward(t.Context(), Call{Namespace: "notes", Op: "thread_hint", Body: []byte(`{"context":{"session_id":"s"}}`), Header: h}); err != nil {
		t.Fatal(err)
	}
	r := be.requests()[0]
	if r.Path != "/alpha/notes/v2/thread_hint" {
		t.Errorf("path %q", r.Path)
	}
	checkHeaders(t, "thread_hint", r.Header, map[string]string{
		"Authorization": secretToken, "User-Agent": "contextd", "Content-Type": "application/json", "Accept": "application/json",
	})
}

func TestForwardWithoutAuthorization(t *testing.T) {
	be := newBackend(t, answerJSON(200, `{}`))
	cl, reg, logs := newClient(be.URL)
	for _, auth := range []string{"", "   "} {
		h := callerHeader()
		h.Set("Authorization", auth)
		_, err := cl.Forward(t.Context(), Call{Namespace: "history", Op: "search_contents", Body: []byte(oddBody), Header: h})
		wantErr(t, err, contextd.EUnauthorized, "Unable to perform operation: Could not resolve backend authentication.", "Authorization: Bearer")
	}
	_, err := cl.Forward(t.Context(), Call{Namespace: "history", Op: "list_items", Body: []byte(`{}`)})
	wantErr(t, err, contextd.EUnauthorized, "Unable to perform operation: Could not resolve backend authentication.")
	if n := len(be.requests()); n != 0 {
		t.Errorf("backend called %d times without Authorization, want 0", n)
	}
	if got := metricValue(t, reg, "contextd_remote_requests_total", map[string]string{"namespace": "history", "operation": "search_contents", "outcome": "unauthorized"}); got != 2 {
		t.Errorf("unauthorized counter %v, want 2", got)
	}
	if got := metricValue(t, reg, "contextd_remote_request_duration_seconds", map[string]string{"namespace": "history", "operation": "search_contents"}); got != 0 {
		t.Errorf("duration observed %v times for calls never sent, want 0", got)
	}
	noSecrets(t, logs.String())
}

// TestForwardFailures: each broken backend gives its error code, Codex
// sentence, status and request id, and its outcome counter; nothing leaks.
func TestForwardFailures(t *testing.T) {
	hijackClose := func(w http.ResponseWriter, _ *http.Request) {
		c, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			panic(err)
		}
		c.Close()
	}
	cases := []struct {
		name    string
		answer  http.HandlerFunc
		code    contextd.Code
		prefix  string
		outcome string
		parts   []string
	}{
		{"500 with x-request-id", answerJSON(500, `{"error":"`+secretUpBody+`"}`, "x-request-id", "req_500abc"),
			contextd.EUpstream, "Unable to perform operation: The backend request failed.", OutcomeHTTPError,
			[]string{"HTTP 500 Internal Server Error", "x-request-id: req_500abc", "retry later"}},
		{"503 with openai-request-id", answerJSON(503, secretUpBody, "openai-request-id", "oai-77"),
			contextd.EUpstream, "Unable to perform operation: The backend request failed.", OutcomeHTTPError,
			[]string{"HTTP 503 Service Unavailable", "openai-request-id: oai-77"}},
		{"401 with cf-ray", answerJSON(401, `{"detail":"`+secretUpBody+`"}`, "cf-ray", "8f00aa-LHR"),
			contextd.EUpstream, "Unable to perform operation: The backend request failed.", OutcomeHTTPError,
			[]string{"HTTP 401 Unauthorized", "cf-ray: 8f00aa-LHR", "access token was refused"}},
		{"404 no request id", answerJSON(404, `{}`),
			contextd.EUpstream, "Unable to perform operation: The backend request failed.", OutcomeHTTPError,
			[]string{"HTTP 404 Not Found", "no request id", "--codex-base-url"}},
		{"429 retry-after", answerJSON(429, `{}`, "Retry-After", "7", "x-request-id", "r429"),
			contextd.EUpstream, "Unable to perform operation: The backend request failed.", OutcomeHTTPError,
			[]string{"HTTP 429 Too Many Requests", "x-request-id: r429", "retry after 7 seconds"}},
		{"422", answerJSON(422, `{}`, "x-request-id", "r422"),
			contextd.EUpstream, "Unable to perform operation: The backend request failed.", OutcomeHTTPError,
			[]string{"HTTP 422 Unprocessable Entity", "x-request-id: r422", "tool schema"}},
		{"302 not followed", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}, contextd.EUpstream, "Unable to perform operation: The backend request failed.", OutcomeHTTPError,
			[]string{"HTTP 302 Found", "redirects are not followed"}},
		{"invalid JSON", answerJSON(200, `{"encrypted_output": "`+secretUpBody, "x-request-id", "rbad"),
			contextd.EUpstream, "Unable to perform operation: The backend returned invalid JSON.", OutcomeInvalidJSON,
			[]string{"HTTP 200 OK", "x-request-id: rbad", "not valid JSON"}},
		{"JSON array", answerJSON(200, ` [{"a":1}]`, "x-request-id", "rarr"),
			contextd.EUpstream, "Unable to perform operation: The backend returned invalid JSON.", OutcomeInvalidJSON,
			[]string{"HTTP 200 OK", "x-request-id: rarr", "a JSON array, not a JSON object"}},
		{"JSON string", answerJSON(200, `"`+secretUpBody+`"`),
			contextd.EUpstream, "Unable to perform operation: The backend returned invalid JSON.", OutcomeInvalidJSON,
			[]string{"a JSON string, not a JSON object"}},
		{"JSON null", answerJSON(200, `null`),
			contextd.EUpstream, "Unable to perform operation: The backend returned invalid JSON.", OutcomeInvalidJSON,
			[]string{"JSON null, not a JSON object"}},
		{"two objects", answerJSON(200, `{} {}`),
			contextd.EUpstream, "Unable to perform operation: The backend returned invalid JSON.", OutcomeInvalidJSON,
			[]string{"not valid JSON"}},
		{"204 empty", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) },
			contextd.EUpstream, "Unable to perform operation: The backend returned invalid JSON.", OutcomeInvalidJSON,
			[]string{"HTTP 204 No Content", "an empty body"}},
		{"over the size bound", answerJSON(200, `{"a":"`+strings.Repeat("x", 100)+`"}`),
			contextd.EUpstream, "Unable to perform operation: The backend returned invalid JSON.", OutcomeInvalidJSON,
			[]string{"larger than 64 bytes"}},
		{"connection closed", hijackClose,
			contextd.EUpstream, "Unable to perform operation: The backend request failed.", OutcomeNetworkError,
			[]string{"Could not reach the Codex backend", "no HTTP status", "the connection closed before a complete answer"}},
		{"body cut short", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", "100")
			w.Header().Set("x-request-id", "rcut")
			w.WriteHeader(200)
			io.WriteString(w, `{"a":`)
		}, contextd.EUpstream, "Unable to perform operation: The backend request failed.", OutcomeNetworkError,
			[]string{"HTTP 200 OK (x-request-id: rcut), then the body read failed", "the connection closed before a complete answer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			be := newBackend(t, tc.answer)
			cl, reg, logs := newClient(be.URL)
			cl.MaxResponseBytes = 64
			_, err := cl.Forward(t.Context(), Call{Namespace: "notes", Op: "write_file", Body: []byte(oddBody), Header: callerHeader()})
			wantErr(t, err, tc.code, tc.prefix, tc.parts...)
			if n := len(be.requests()); n != 1 {
				t.Errorf("backend saw %d requests, want exactly 1 (no retry, no redirect)", n)
			}
			for _, oc := range []string{OutcomeOK, OutcomeHTTPError, OutcomeTimeout, OutcomeNetworkError, OutcomeInvalidJSON, OutcomeUnauthorized} {
				want := 0.0
				if oc == tc.outcome {
					want = 1
				}
				if got := metricValue(t, reg, "contextd_remote_requests_total", map[string]string{"namespace": "notes", "operation": "write_file", "outcome": oc}); got != want {
					t.Errorf("outcome %s counter %v, want %v", oc, got, want)
				}
			}
			if !strings.Contains(logs.String(), "outcome="+tc.outcome) {
				t.Errorf("logs lack outcome=%s:\n%s", tc.outcome, logs)
			}
			noSecrets(t, logs.String())
		})
	}
}

// TestForwardAcceptsObjects: any 2xx JSON object passes, whatever its
// spacing; the size bound is inclusive.
func TestForwardAcceptsObjects(t *testing.T) {
	for _, body := range []string{`{}`, "\n\t {\"text\":\"hint\"} \n", `{"a":"` + strings.Repeat("x", 56) + `"}`} {
		be := newBackend(t, answerJSON(201, body))
		cl, _, _ := newClient(be.URL)
		cl.MaxResponseBytes = 64
		got, err := cl.Forward(t.Context(), Call{Namespace: "notes", Op: "thread_hint", Body: []byte(`{}`), Header: callerHeader()})
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if string(got) != body {
			t.Errorf("answer %q, want %q", got, body)
		}
	}
}

func TestForwardTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	slow := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	slowBody := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-request-id", "rslow")
		w.WriteHeader(200)
		io.WriteString(w, `{"a":`)
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	for name, tc := range map[string]struct {
		h     http.HandlerFunc
		parts []string
	}{
		"no headers": {slow, []string{"did not answer within 150ms", "no HTTP status", "never falls back"}},
		"slow body":  {slowBody, []string{"did not answer within 150ms", "HTTP 200 OK (x-request-id: rslow)"}},
	} {
		t.Run(name, func(t *testing.T) {
			be := newBackend(t, tc.h)
			cl, reg, logs := newClient(be.URL)
			cl.Timeout = 150 * time.Millisecond
			start := time.Now()
			_, err := cl.Forward(t.Context(), Call{Namespace: "history", Op: "search_contents", Body: []byte(oddBody), Header: callerHeader()})
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("Forward took %v with a 150ms timeout", d)
			}
			wantErr(t, err, contextd.EUpstreamSlow, "Unable to perform operation: The backend request failed.", tc.parts...)
			if got := metricValue(t, reg, "contextd_remote_requests_total", map[string]string{"namespace": "history", "operation": "search_contents", "outcome": "timeout"}); got != 1 {
				t.Errorf("timeout counter %v, want 1", got)
			}
			noSecrets(t, logs.String())
		})
	}
}

func TestForwardCallerCanceled(t *testing.T) {
	entered := make(chan struct{})
	be := newBackend(t, func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		<-r.Context().Done()
	})
	cl, reg, _ := newClient(be.URL)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-entered; cancel() }()
	_, err := cl.Forward(ctx, Call{Namespace: "history", Op: "list_items", Body: []byte(`{}`), Header: callerHeader()})
	wantErr(t, err, contextd.EUpstream, "Unable to perform operation: The backend request failed.", "caller canceled")
	if got := metricValue(t, reg, "contextd_remote_requests_total", map[string]string{"namespace": "history", "operation": "list_items", "outcome": "network_error"}); got != 1 {
		t.Errorf("network_error counter %v, want 1", got)
	}
}

func TestForwardConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cl, reg, logs := newClient("http://" + addr)
	_, err = cl.Forward(t.Context(), Call{Namespace: "notes", Op: "read_file", Body: []byte(`{}`), Header: callerHeader()})
	wantErr(t, err, contextd.EUpstream, "Unable to perform operation: The backend request failed.", "could not connect", "connection refused", "--codex-base-url")
	if got := metricValue(t, reg, "contextd_remote_requests_total", map[string]string{"namespace": "notes", "operation": "read_file", "outcome": "network_error"}); got != 1 {
		t.Errorf("network_error counter %v, want 1", got)
	}
	noSecrets(t, logs.String())
}

func TestForwardBadBaseURL(t *testing.T) {
	for _, base := range []string{"", "chatgpt.com/backend-api/codex", "ftp://example.com", "http://", "https://user:hunter2@/x"} {
		cl, _, _ := newClient(base)
		_, err := cl.Forward(t.Context(), Call{Namespace: "notes", Op: "read_file", Body: []byte(`{}`), Header: callerHeader()})
		msg := wantErr(t, err, contextd.EUpstream, "Unable to perform operation: Could not resolve the backend provider.", "--codex-base-url", DefaultBaseURL)
		if strings.Contains(msg, "hunter2") {
			t.Errorf("message %q leaks the URL password", msg)
		}
	}
}

func TestForwardUnknownOperation(t *testing.T) {
	be := newBackend(t, answerJSON(200, `{}`))
	cl, reg, _ := newClient(be.URL)
	_, err := cl.Forward(t.Context(), Call{Namespace: "history", Op: "write_file", Body: []byte(`{}`), Header: callerHeader()})
	wantErr(t, err, contextd.EInternal, "remote: unknown operation")
	if len(be.requests()) != 0 {
		t.Error("backend called for an unknown operation")
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if len(mf.GetMetric()) != 0 {
			t.Errorf("metric %s has series for an unknown operation", mf.GetName())
		}
	}
}

// TestForwardCopiesBody: the caller may reuse its buffer once Forward
// returns (huma pools request bodies).
func TestForwardCopiesBody(t *testing.T) {
	be := newBackend(t, answerJSON(200, `{}`))
	cl, _, _ := newClient(be.URL)
	buf := []byte(oddBody)
	if _, err := cl.Forward(t.Context(), Call{Namespace: "notes", Op: "write_file", Body: buf, Header: callerHeader()}); err != nil {
		t.Fatal(err)
	}
	for i := range buf {
		buf[i] = 'X'
	}
	if got := be.requests()[0].Body; string(got) != oddBody {
		t.Errorf("backend body %q", got)
	}
}

func TestNewDefaults(t *testing.T) {
	cl := New(DefaultBaseURL, nil, nil)
	if cl.Timeout != 35*time.Second || cl.MaxResponseBytes != 16<<20 || cl.HTTP == nil || cl.Log == nil || cl.Metrics == nil || cl.BaseURL != DefaultBaseURL {
		t.Errorf("New defaults: %+v", cl)
	}
	if cl.HTTP.Timeout != 0 {
		t.Errorf("client-level timeout %v; Forward applies Timeout per call", cl.HTTP.Timeout)
	}
	reg := prometheus.NewRegistry()
	New("", reg, nil)
	defer func() {
		if recover() == nil {
			t.Error("registering the remote metrics twice on one registry did not panic")
		}
	}()
	New("", reg, nil)
}
