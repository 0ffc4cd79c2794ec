// Package remote is the Codex backend client of Remote mode (docs/codex-contract.md
// "Results and encryption", "Backend transport", "Remote wire shaping"): it forwards a history or notes
// call byte for byte, once, and never answers from local data (docs/design.md §6
// invariant 8, "No fallback").
//
// One call is one POST {base}/alpha/{namespace}/v2/{operation}. The request
// body is the caller's bytes unchanged (encrypted `query`/`text` included);
// the answer is the backend's bytes unchanged when it is a 2xx JSON object.
// Every failure is a *contextd.Error whose message starts with "Unable to
// perform operation:" (the Codex wording, docs/codex-contract.md "Backend transport" and "Error texts"):
//
//	missing Authorization            → EUnauthorized (401), backend not called
//	no answer within Timeout         → EUpstreamSlow (504)
//	connection error, non-2xx status → EUpstream (502)
//	2xx body not one JSON object     → EUpstream (502)
//
// Credentials, request and response bodies never reach logs or metric
// labels: logs carry the namespace, operation, outcome, HTTP status,
// upstream request id and duration only.
package remote

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"

	"contextd"
)

// DefaultBaseURL is the ChatGPT Codex backend base (docs/codex-contract.md "Backend transport").
const DefaultBaseURL = "https://chatgpt.com/backend-api/codex"

// Timeout is the one-attempt timeout of a backend call (docs/codex-contract.md "Backend transport": 35 s). It
// covers connecting, sending, and reading the whole response body.
const Timeout = 35 * time.Second

// MaxResponseBytes bounds the response body read from the backend: 16 MiB.
// Results are at most ~10,000 tokens before encryption (docs/codex-contract.md "Tool surface" Limits), so a
// larger body is a broken backend; it is refused as invalid JSON rather
// than buffered without bound.
const MaxResponseBytes = 16 << 20

// EncryptedArgumentsHeader is set to "true" on the routes whose arguments
// carry model-encrypted fields (docs/codex-contract.md "Results and encryption").
const EncryptedArgumentsHeader = "x-openai-encrypted-tool-arguments"

// ForwardedHeaders are the caller headers copied to the backend request
// when present (docs/codex-contract.md "Backend transport" "Auth headers"); every other caller header is dropped.
var ForwardedHeaders = []string{
	"Authorization",
	"ChatGPT-Account-ID",
	"User-Agent",
	"originator",
	"version",
	"x-openai-tool-output-truncation-policy",
}

// DefaultUserAgent is sent when the caller sent no User-Agent (instead of
// Go's "Go-http-client/1.1").
const DefaultUserAgent = "contextd"

// operations maps namespace → operation → whether its arguments hold
// encrypted fields: history.search_contents.query, notes.search_contents.query
// and text of both note writes (docs/codex-contract.md "Tool surface" "Enc" column, docs/codex-contract.md "Results and encryption").
var operations = map[string]map[string]bool{
	"history": {"list_windows": false, "list_items": false, "read_item": false, "search_contents": true},
	"notes": {"list_files_by_prefix": false, "read_file": false, "search_contents": true,
		"append_to_file": true, "write_file": true, "thread_hint": false},
}

// Encrypted reports whether namespace/op sends encrypted arguments (and so
// the EncryptedArgumentsHeader), and whether it is one of the ten
// operations at all.
func Encrypted(namespace, op string) (encrypted, known bool) {
	encrypted, known = operations[namespace][op]
	return encrypted, known
}

// Outcomes, the values of the outcome label of
// contextd_remote_requests_total.
const (
	OutcomeOK           = "ok"            // 2xx and one JSON object
	OutcomeHTTPError    = "http_error"    // non-2xx status (3xx included: redirects are not followed)
	OutcomeTimeout      = "timeout"       // no full answer within Timeout
	OutcomeNetworkError = "network_error" // connect/TLS/reset/EOF, unusable base URL, or the caller went away
	OutcomeInvalidJSON  = "invalid_json"  // 2xx body that is not one JSON object within MaxResponseBytes
	OutcomeUnauthorized = "unauthorized"  // no Authorization header; the backend was not called
)

// Metrics are the Remote-mode collectors. Labels are the fixed namespace
// and operation names and an outcome: never ids, credentials or bodies.
type Metrics struct {
	Requests *prometheus.CounterVec   // contextd_remote_requests_total{namespace,operation,outcome}
	Duration *prometheus.HistogramVec // contextd_remote_request_duration_seconds{namespace,operation}
}

// NewMetrics creates the Remote-mode metrics on reg. A nil reg gives
// working, unregistered collectors (tests). Registering twice on one
// registry panics, as promauto does.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	f := promauto.With(reg)
	return &Metrics{
		Requests: f.NewCounterVec(prometheus.CounterOpts{
			Name: "contextd_remote_requests_total",
			Help: "Remote-mode calls by namespace, operation and outcome (ok, http_error, timeout, network_error, invalid_json, unauthorized).",
		}, []string{"namespace", "operation", "outcome"}),
		Duration: f.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "contextd_remote_request_duration_seconds",
			Help:    "Time of one Codex backend call, from sending the request to the end of the response body (calls refused before sending are not observed).",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 35, 60},
		}, []string{"namespace", "operation"}),
	}
}

// Client forwards calls to the Codex backend. The zero value is not
// usable; build it with New. Fields may be changed before the first call.
type Client struct {
	// BaseURL is the backend base, e.g. DefaultBaseURL; a trailing "/" is
	// ignored. It must be an absolute http or https URL.
	BaseURL string
	// HTTP sends the requests. New's client follows no redirects and has no
	// client-level timeout (Timeout applies per call).
	HTTP *http.Client
	// Timeout bounds one call (default Timeout, 35 s).
	Timeout time.Duration
	// MaxResponseBytes bounds the response body (default MaxResponseBytes).
	MaxResponseBytes int64
	// Log receives one line per call (warn on failure, debug on success).
	Log     *slog.Logger
	Metrics *Metrics
}

// Call is one forwarded operation.
type Call struct {
	Namespace string      // "history" or "notes"
	Op        string      // operation name, e.g. "list_items" or "thread_hint"
	Body      []byte      // request body, forwarded unchanged (copied before sending)
	Header    http.Header // caller headers; only ForwardedHeaders are used
}

// New returns a client for base with metrics on reg (nil: unregistered)
// and logs on log (nil: discarded).
func New(base string, reg prometheus.Registerer, log *slog.Logger) *Client {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Client{
		BaseURL: base,
		HTTP: &http.Client{
			Transport: http.DefaultTransport.(*http.Transport).Clone(),
			// One attempt, to the configured URL only: a redirect is answered
			// as the 3xx it is (and never carries the credentials elsewhere).
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		Timeout:          Timeout,
		MaxResponseBytes: MaxResponseBytes,
		Log:              log,
		Metrics:          NewMetrics(reg),
	}
}

// Error sentences of the Codex client (docs/codex-contract.md "Backend transport", "Error texts"). Each failure
// message starts with one of them and goes on with the specifics.
const (
	msgAuth        = "Unable to perform operation: Could not resolve backend authentication."
	msgProvider    = "Unable to perform operation: Could not resolve the backend provider."
	msgFailed      = "Unable to perform operation: The backend request failed."
	msgInvalidJSON = "Unable to perform operation: The backend returned invalid JSON."
)

// Forward sends c to {BaseURL}/alpha/{c.Namespace}/v2/{c.Op} once, with
// c.Body as the body byte for byte, the present ForwardedHeaders of
// c.Header, Content-Type and Accept application/json, and
// "x-openai-encrypted-tool-arguments: true" on the four encrypted routes.
// It returns the backend's body unchanged when the status is 2xx and the
// body is one JSON object. Errors (all *contextd.Error, message prefixed
// "Unable to perform operation:"): EUnauthorized when c.Header has no
// Authorization (nothing is sent); EUpstreamSlow when the call takes longer
// than cl.Timeout; EUpstream for an unusable base URL, a connection error,
// a non-2xx status or a body that is not a JSON object (the message names
// the HTTP status and the upstream request id when known); EInternal for a
// namespace/op outside the ten operations (a programming error).
func (cl *Client) Forward(ctx context.Context, c Call) ([]byte, error) {
	enc, known := Encrypted(c.Namespace, c.Op)
	if !known {
		return nil, contextd.Errorf(contextd.EInternal, "remote: unknown operation %q/%q", c.Namespace, c.Op)
	}
	auth := c.Header.Get("Authorization")
	if strings.TrimSpace(auth) == "" {
		cl.done(c, OutcomeUnauthorized, 0, "", 0, "no Authorization header")
		return nil, contextd.Errorf(contextd.EUnauthorized, "%s Send the ChatGPT access token as `Authorization: Bearer <token>` (and `ChatGPT-Account-ID`); Remote mode forwards them to the Codex backend and never answers from local data.", msgAuth)
	}
	endpoint, ok := cl.endpoint(c.Namespace, c.Op)
	if !ok {
		cl.done(c, OutcomeNetworkError, 0, "", 0, "unusable base URL")
		return nil, contextd.Errorf(contextd.EUpstream, "%s The Codex base URL %s is not an absolute http(s) URL; set --codex-base-url (env CONTEXTD_CODEX_BASE_URL), default %s.",
			msgProvider, strconv.Quote(redact(cl.BaseURL)), DefaultBaseURL)
	}

	timeout := cl.Timeout
	if timeout <= 0 {
		timeout = Timeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// The transport may still read the body after Do returns; the caller's
	// buffer may be reused once Forward returns, so send a copy.
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, endpoint, bytes.NewReader(bytes.Clone(c.Body)))
	if err != nil {
		cl.done(c, OutcomeNetworkError, 0, "", 0, "build request")
		return nil, contextd.Errorf(contextd.EUpstream, "%s Could not build the request to the Codex backend; check --codex-base-url.", msgProvider)
	}
	for _, k := range ForwardedHeaders {
		if v := c.Header.Get(k); v != "" {
			req.Header.Set(k, v)
		}
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", DefaultUserAgent)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if enc {
		req.Header.Set(EncryptedArgumentsHeader, "true")
	}

	start := time.Now()
	resp, err := cl.HTTP.Do(req)
	if err != nil {
		return nil, cl.transportError(c, cctx, ctx, err, 0, "", time.Since(start), timeout)
	}
	defer resp.Body.Close()
	rid := requestID(resp.Header)
	limit := cl.MaxResponseBytes
	if limit <= 0 {
		limit = MaxResponseBytes
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	elapsed := time.Since(start)
	if err != nil {
		return nil, cl.transportError(c, cctx, ctx, err, resp.StatusCode, rid, elapsed, timeout)
	}
	status := statusText(resp.StatusCode)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		cl.done(c, OutcomeHTTPError, resp.StatusCode, rid, elapsed, "")
		return nil, contextd.Errorf(contextd.EUpstream, "%s The Codex backend answered %s (%s); %s", msgFailed, status, rid, statusHint(resp))
	}
	if int64(len(body)) > limit {
		cl.done(c, OutcomeInvalidJSON, resp.StatusCode, rid, elapsed, "body over limit")
		return nil, contextd.Errorf(contextd.EUpstream, "%s The Codex backend answered %s (%s) with a body larger than %d bytes; results are far smaller, so the backend or --codex-base-url is wrong.", msgInvalidJSON, status, rid, limit)
	}
	if what := notObject(body); what != "" {
		cl.done(c, OutcomeInvalidJSON, resp.StatusCode, rid, elapsed, what)
		return nil, contextd.Errorf(contextd.EUpstream, "%s The Codex backend answered %s (%s) with %s, not a JSON object; check --codex-base-url.", msgInvalidJSON, status, rid, what)
	}
	cl.done(c, OutcomeOK, resp.StatusCode, rid, elapsed, "")
	return body, nil
}

// endpoint builds {BaseURL}/alpha/{ns}/v2/{op}, the operation path
// joined to the base's path (url.URL.JoinPath, not string concatenation);
// ok is false when the base fails CheckBaseURL.
func (cl *Client) endpoint(ns, op string) (string, bool) {
	if CheckBaseURL(cl.BaseURL) != nil {
		return "", false
	}
	u, _ := url.Parse(cl.BaseURL)
	return u.JoinPath("alpha", ns, "v2", op).String(), true
}

// transportError classifies a failed send or body read: our deadline →
// EUpstreamSlow, anything else → EUpstream.
func (cl *Client) transportError(c Call, cctx, parent context.Context, err error, code int, rid string, elapsed, timeout time.Duration) error {
	where := "no HTTP status"
	if code != 0 {
		where = statusText(code) + " (" + rid + "), then the body read failed"
	}
	if perr := parent.Err(); perr != nil {
		// The caller went away or its own deadline passed: not the
		// backend's fault. The error wraps the context error so the HTTP
		// layer answers it as such (499, 503).
		cl.done(c, OutcomeNetworkError, code, rid, elapsed, "caller canceled")
		return fmt.Errorf("%w: %w", contextd.Errorf(contextd.EUpstream, "%s The caller canceled the request before the Codex backend answered (%s).", msgFailed, where), perr)
	}
	if errors.Is(cctx.Err(), context.DeadlineExceeded) {
		cl.done(c, OutcomeTimeout, code, rid, elapsed, "timeout")
		return contextd.Errorf(contextd.EUpstreamSlow, "%s The Codex backend did not answer within %s (%s; one attempt, Remote mode never falls back to local data); retry later.", msgFailed, timeout, where)
	}
	cause := causeOf(err)
	cl.done(c, OutcomeNetworkError, code, rid, elapsed, cause)
	return contextd.Errorf(contextd.EUpstream, "%s Could not reach the Codex backend (%s: %s); check the network and --codex-base-url, then retry.", msgFailed, where, cause)
}

// done records the outcome of one call in the metrics and the log. detail
// is a fixed classification or a transport error text: never a body,
// header value or argument.
func (cl *Client) done(c Call, outcome string, code int, rid string, elapsed time.Duration, detail string) {
	if cl.Metrics != nil {
		cl.Metrics.Requests.WithLabelValues(c.Namespace, c.Op, outcome).Inc()
		if elapsed > 0 {
			cl.Metrics.Duration.WithLabelValues(c.Namespace, c.Op).Observe(elapsed.Seconds())
		}
	}
	if cl.Log == nil {
		return
	}
	attrs := []any{"namespace", c.Namespace, "operation", c.Op, "outcome", outcome, "status", code, "request_id", rid, "duration", elapsed}
	if outcome == OutcomeOK {
		cl.Log.Debug("remote call", attrs...)
		return
	}
	cl.Log.Warn("remote call failed", append(attrs, "detail", detail)...)
}

// requestIDHeaders are the response headers that identify a backend
// request, in order of preference.
var requestIDHeaders = []string{"x-request-id", "openai-request-id", "x-openai-request-id", "cf-ray"}

// requestID names the upstream request id as "header: value", or "no
// request id". The value is reduced to printable ASCII and 128 bytes.
func requestID(h http.Header) string {
	for _, k := range requestIDHeaders {
		if v := h.Get(k); v != "" {
			return k + ": " + sanitize(v, 128)
		}
	}
	return "no request id"
}

// sanitize keeps the printable ASCII of s, at most n bytes.
func sanitize(s string, n int) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < n; i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			b.WriteByte(c)
		}
	}
	return b.String()
}

func statusText(code int) string {
	if t := http.StatusText(code); t != "" {
		return "HTTP " + strconv.Itoa(code) + " " + t
	}
	return "HTTP " + strconv.Itoa(code)
}

// statusHint says what to do about a non-2xx status.
func statusHint(resp *http.Response) string {
	code := resp.StatusCode
	switch {
	case code >= 300 && code < 400:
		return "redirects are not followed; set --codex-base-url to the final backend URL."
	case code == http.StatusUnauthorized:
		return "the ChatGPT access token was refused; sign in again and send the new token as Authorization."
	case code == http.StatusForbidden:
		return "the account may not use these tools; check ChatGPT-Account-ID and the account's plan."
	case code == http.StatusNotFound || code == http.StatusMethodNotAllowed:
		return "the backend has no such endpoint; check --codex-base-url (default " + DefaultBaseURL + ")."
	case code == http.StatusTooManyRequests:
		if ra := sanitize(resp.Header.Get("Retry-After"), 32); ra != "" {
			return "rate limited; retry after " + ra + " seconds."
		}
		return "rate limited; retry later."
	case code >= 500:
		return "the backend failed; retry later."
	}
	return "the backend refused the request; check the arguments against the tool schema."
}

// notObject describes why body is not one JSON object ("" when it is).
func notObject(body []byte) string {
	t := bytes.TrimLeft(body, " \t\r\n")
	if len(t) == 0 {
		return "an empty body"
	}
	if !json.Valid(body) {
		return "a body that is not valid JSON"
	}
	switch t[0] {
	case '{':
		return ""
	case '[':
		return "a JSON array"
	case '"':
		return "a JSON string"
	case 't', 'f':
		return "a JSON boolean"
	case 'n':
		return "JSON null"
	}
	return "a JSON number"
}

// causeOf names a transport failure from a closed set of sentences. It
// never returns the Go error text: that text can carry whatever the
// backend sent (a malformed header line, a bad status line) and the URL
// with its user info (docs/security.md).
func causeOf(err error) string {
	var ne *net.OpError
	var dnsErr *net.DNSError
	var tlsErr tls.RecordHeaderError
	var certErr *tls.CertificateVerificationError
	switch {
	case errors.As(err, &dnsErr):
		return "could not resolve the backend host name"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "could not connect: connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "the connection was reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "could not connect: host or network unreachable"
	case errors.As(err, &certErr):
		return "the backend's TLS certificate was not accepted"
	case errors.As(err, &tlsErr):
		return "the backend does not speak TLS at that address"
	case errors.As(err, &ne) && ne.Op == "dial":
		return "could not connect"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "the connection closed before a complete answer"
	case strings.Contains(err.Error(), "malformed"):
		return "the backend sent a malformed HTTP response"
	}
	return "transport error"
}

// redact hides a password in a URL's user info; a URL that does not parse
// is not shown at all (it could hold a password in any form).
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(a URL that does not parse)"
	}
	if u.User != nil {
		return u.Redacted()
	}
	return raw
}

// CheckBaseURL validates a --codex-base-url at start: an absolute http or
// https URL with a host and no query or fragment (the operation paths are
// joined to its path; a "?" or "#" would send every operation to one URL,
// or drop the operation path). The error never repeats the URL's user
// info.
func CheckBaseURL(raw string) error {
	u, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("--codex-base-url %s is not an absolute http(s) URL with a host; pass one such as %s", strconv.Quote(redact(raw)), DefaultBaseURL)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(raw, "#") {
		bare := *u
		bare.RawQuery, bare.ForceQuery, bare.Fragment, bare.RawFragment = "", false, "", ""
		return fmt.Errorf("--codex-base-url %s has a query or fragment (\"?\" or \"#\"), not repeated here; pass the base URL alone, such as %s: contextd joins /alpha/{namespace}/v2/{operation} to its path", strconv.Quote(redact(bare.String())+"…"), DefaultBaseURL)
	}
	return nil
}
