// Package api is contextd's HTTP surface (docs/design.md §5): a chi router with
// huma v2 operations (OpenAPI 3.1 from Go types), the security middleware
// (loopback Host, Origin allow-list, token, JSON bodies, size bounds),
// Prometheus metrics, and the one place where application errors become
// HTTP statuses (RFC 9457 problem+json).
package api

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"path"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humachi"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"contextd/coordinator"
	"contextd/remote"
)

// Version is the API version in the OpenAPI document.
const Version = "0.1.0"

// TokenHeader carries the service token on every request but /healthz.
// Authorization stays free for the Codex credentials Remote mode forwards.
const TokenHeader = "X-Contextd-Token"

// DefaultMaxBodyBytes bounds POST/PUT bodies: 8 MiB, room for a note write
// of 1,000,000 UTF-8 bytes even when JSON escaping grows it.
const DefaultMaxBodyBytes = 8 << 20

// Config configures the HTTP surface.
type Config struct {
	Token          string   // required on every route but /healthz and ProofPath (empty only in tests that set NoAuth)
	TokenFile      string   // where Token is kept, named in the 401 detail ("" = not named)
	NoAuth         bool     // tests only: skip the token check
	AllowedHosts   []string // Host names accepted besides loopback names and addresses
	AllowedOrigins []string // Origin values accepted; any other present Origin is refused
	MaxBodyBytes   int64
	Logger         *slog.Logger
	Registry       *prometheus.Registry // dedicated registry served on /metrics
	RequestTimeout time.Duration        // deadline of every request (0 = DefaultRequestTimeout)
}

// Server holds the router and its dependencies.
type Server struct {
	cfg     Config
	svc     *coordinator.Service
	remote  *remote.Client
	router  chi.Router
	api     huma.API
	metrics *httpMetrics
	log     *slog.Logger
}

// New builds the router: middleware first (chi), then the huma operations.
func New(cfg Config, svc *coordinator.Service, rc *remote.Client) *Server {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	installErrorDetails()
	setArrayNullable()
	s := &Server{cfg: cfg, svc: svc, remote: rc, log: cfg.Logger}
	s.metrics = newHTTPMetrics(cfg.Registry)
	r := chi.NewRouter()
	r.Use(s.recoverer, s.metrics.middleware, s.deadline, s.checkHost, s.checkOrigin, s.checkToken, s.checkBody)
	healthz := func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"ok"}`)) // net/http sends no body to HEAD
	}
	r.Get("/healthz", healthz)
	r.Head("/healthz", healthz) // probes that only look at the status
	r.Get(ProofPath, s.serveProof)

	r.Handle("/metrics", promhttp.HandlerFor(cfg.Registry, promhttp.HandlerOpts{Registry: cfg.Registry}))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusNotFound, "No route "+clip(r.Method)+" "+clip(r.URL.Path)+"; see /openapi.json for the routes.")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, http.StatusMethodNotAllowed, "Method "+clip(r.Method)+" is not allowed on "+clip(r.URL.Path)+"; see /openapi.json.")
	})
	s.router = r
	s.api = humachi.New(r, HumaConfig())
	s.api.UseMiddleware(refuseUnknownQuery(s.api)) // before register: huma composes middlewares per operation when registering
	s.api.UseMiddleware(refuseBodyWhereNone(s.api))
	s.register(s.api)
	finishSpec(s.api.OpenAPI())
	s.serveSpecs(r)
	if svc != nil {
		// Rollovers a previous run left open count as pending from the start.
		svc.RefreshPending(context.Background())
	}
	s.metrics.patterns = sync.OnceValue(func() map[string]bool {
		// Walked on first use, after every route is registered.
		out := map[string]bool{}
		chi.Walk(r, func(_ string, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
			out[route] = true
			return nil
		})
		return out
	})
	return s
}

// HumaConfig is the huma configuration: no /docs page (it loads scripts
// from a CDN), no $schema link fields in bodies (the Codex mirror answers
// exact shapes) and no spec routes of huma's own (serveSpecs serves the
// finished document and its 3.0 downgrade).
func HumaConfig() huma.Config {
	c := huma.DefaultConfig("contextd", Version)
	c.Components.Schemas = huma.NewMapRegistry("#/components/schemas/", schemaNamer)
	c.Formats = map[string]huma.Format{"application/json": strictJSON, "json": strictJSON}
	c.CreateHooks = nil
	c.DocsPath = ""
	c.OpenAPIPath = ""
	c.SchemasPath = ""
	c.Info.Description = "Codex-style context management for Pi coding-agent sessions: history, notes, windows and rollovers over Pi's session JSONL."
	c.Components.SecuritySchemes = map[string]*huma.SecurityScheme{
		"token": {Type: "apiKey", In: "header", Name: TokenHeader, Description: "Random token from the state directory's token file."},
	}
	c.Security = []map[string][]string{{"token": {}}}
	return c
}

// strictJSON is huma's JSON format that writes no array as null
// (withArrays), refuses request bodies with a duplicate member name
// (dupkeys.go), and also refuses request bodies that
// are not valid UTF-8 (RFC 8259 §8.1: JSON exchanged between systems MUST
// be UTF-8). encoding/json would silently turn each invalid byte into
// U+FFFD, so a note, query or path would not be what the caller sent and a
// Remote call would forward bytes the backend rejects. huma reports the
// error as 400 at location "body".
var strictJSON = huma.Format{
	Marshal: func(w io.Writer, v any) error { return huma.DefaultJSONFormat.Marshal(w, withArrays(v)) },
	Unmarshal: func(data []byte, v any) error {
		if !utf8.Valid(data) {
			return errInvalidUTF8(data)
		}
		if err := json.Unmarshal(data, v); err != nil {
			return err
		}
		// huma parses every body twice: into an any to validate it
		// against the schema, then into the operation's type. The first
		// parse checks for duplicate member names, so each body is scanned
		// once (api/dupkeys.go; errors.go answers 422).
		if _, ok := v.(*any); ok {
			if e := findDuplicateKey(data); e != nil {
				return e
			}
		}
		return nil
	},
}

// errInvalidUTF8 names the offset of the first invalid byte.
func errInvalidUTF8(data []byte) error {
	off := 0
	for off < len(data) {
		r, n := utf8.DecodeRune(data[off:])
		if r == utf8.RuneError && n <= 1 {
			break
		}
		off += n
	}
	return fmt.Errorf("the body is not valid UTF-8 (first invalid byte at offset %d); send JSON text encoded as UTF-8", off)
}

// schemaNamer prefixes schema names with their package (history.ReadResult
// → HistoryReadResult) so equal type names of different packages differ;
// huma's own types (ErrorModel) keep their names.
func schemaNamer(t reflect.Type, hint string) string {
	name := huma.DefaultSchemaNamer(t, hint)
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if op, ok := strings.CutSuffix(hint, "Response"); ok && t.Name() == "" {
		// An anonymous response body is named by its operation:
		// list-sessionsResponse → ListSessionsResult (not …Response: client
		// generators give each operation's response wrapper that name).
		return exportedName(op) + "Result"
	}
	pkg := path.Base(t.PkgPath())
	if pkg == "" || pkg == "." || pkg == "api" || t.PkgPath() == reflect.TypeOf(huma.ErrorModel{}).PkgPath() || strings.HasPrefix(name, strings.ToUpper(pkg[:1])+pkg[1:]) {
		return name
	}
	return strings.ToUpper(pkg[:1]) + pkg[1:] + name
}

// Handler is the root handler.
func (s *Server) Handler() http.Handler { return s.router }

// HTTPServer wraps h with timeouts suited to a local service. A client
// has ReadHeaderTimeout (2 s) to send a request's headers, a kept-alive
// connection is closed after 15 s idle (Node's keep-alive agents reconnect
// transparently), and when the LimitListener's cap is reached the
// connection waiting longest for its first headers is closed first, then
// the longest-idle one (ConnState: TrackConnState), so slow and idle
// sockets never starve new clients (docs/security.md).
func HTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 2 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      90 * time.Second, // Remote calls take up to 35 s
		IdleTimeout:       15 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ConnState:         TrackConnState,
	}
}

// DefaultRequestTimeout bounds every request (docs/security.md): below the
// server's WriteTimeout (90 s), so the answer still reaches the client, and
// above the Remote timeout (35 s).
const DefaultRequestTimeout = 80 * time.Second

// deadline gives every request a context deadline (Config.RequestTimeout):
// indexing, SQLite queries and Remote calls stop there, and the request
// answers 503 instead of holding its connection.
func (s *Server) deadline(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if err, ok := v.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(v)
				}
				s.log.Error("panic serving request", "method", r.Method, "route", r.URL.Path, "panic", v)
				writeProblem(w, http.StatusInternalServerError, "Internal error.")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// IsLoopbackHost reports whether host (a Host header value, with or without
// port) names a loopback address: localhost, 127.0.0.0/8 or ::1.
func IsLoopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") || strings.HasSuffix(strings.ToLower(h), ".localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// checkHost refuses a Host that is not loopback or allow-listed (DNS
// rebinding), with 421 Misdirected Request.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsLoopbackHost(r.Host) {
			next.ServeHTTP(w, r)
			return
		}
		h := r.Host
		if hh, _, err := net.SplitHostPort(h); err == nil {
			h = hh
		}
		for _, a := range s.cfg.AllowedHosts {
			if strings.EqualFold(a, h) || strings.EqualFold(a, r.Host) {
				next.ServeHTTP(w, r)
				return
			}
		}
		writeProblem(w, http.StatusMisdirectedRequest, "Host "+quote(r.Host)+" is not a loopback address; call contextd as 127.0.0.1 or localhost (or add the host with --allowed-hosts).")
	})
}

// checkOrigin refuses any request carrying an Origin that is not
// allow-listed (browsers send Origin on cross-site requests).
func (s *Server) checkOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o := r.Header.Get("Origin")
		if o == "" {
			next.ServeHTTP(w, r)
			return
		}
		for _, a := range s.cfg.AllowedOrigins {
			if a == o {
				next.ServeHTTP(w, r)
				return
			}
		}
		writeProblem(w, http.StatusForbidden, "Origin "+quote(o)+" is not allowed; contextd answers only local tools (start it with --allowed-origins to allow one).")
	})
}

// checkToken requires the token header on every route but /healthz and
// ProofPath, compared in constant time. The 401 detail names the token
// file (Config.TokenFile), so a client that read another one (a Pi with
// another agent directory, a state directory recreated) can say which
// file contextd reads.
func (s *Server) checkToken(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.NoAuth || r.URL.Path == "/healthz" || r.URL.Path == ProofPath {
			next.ServeHTTP(w, r)
			return
		}
		got := r.Header.Get(TokenHeader)
		if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(s.cfg.Token)) != 1 {
			where := "the file `token` in contextd's state directory"
			if s.cfg.TokenFile != "" {
				where = s.cfg.TokenFile
			}
			writeProblem(w, http.StatusUnauthorized, "Missing or wrong "+TokenHeader+" header; send the token from "+where+".")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkBody requires application/json on POST/PUT bodies and bounds them.
func (s *Server) checkBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch {
			if r.ContentLength > s.cfg.MaxBodyBytes {
				writeProblem(w, http.StatusRequestEntityTooLarge, "Request body is larger than the limit; send at most "+itoa(s.cfg.MaxBodyBytes)+" bytes.")
				return
			}
			ct := r.Header.Get("Content-Type")
			hasBody := r.ContentLength > 0 || (r.ContentLength < 0 && r.Body != nil && r.Body != http.NoBody)
			if ct != "" || hasBody {
				mt, params, err := mime.ParseMediaType(ct)
				if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
					writeProblem(w, http.StatusUnsupportedMediaType, "Content-Type "+quote(ct)+" is not supported; send the body as application/json.")
					return
				}
				// Media types are case-insensitive (RFC 9110 §8.3.1); huma
				// matches formats by exact string, so pass it the lower case.
				r.Header.Set("Content-Type", mime.FormatMediaType(mt, params))
			}
			r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
		}
		next.ServeHTTP(w, r)
	})
}

// humaBodyLimit is the per-operation huma body limit: huma refuses a body
// of exactly its limit, while contextd accepts bodies of at most
// MaxBodyBytes (checkBody enforces the bound first).
func (s *Server) humaBodyLimit() int64 { return s.cfg.MaxBodyBytes + 1 }
