package e2e

// The validating proxy between the extension and contextd: every answer a
// real Pi run receives is checked against the committed OpenAPI document
// (openapi.Validator, the check the api tests use), so an answer that
// breaks the spec (an array answered as null, an undocumented status)
// fails the e2e test that received it.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"contextd/openapi"
)

var specValidator = sync.OnceValues(openapi.NewValidator)

// specProxy is one validating reverse proxy on a loopback port of its own.
type specProxy struct {
	addr string
	srv  *http.Server

	mu   sync.Mutex
	errs []string
	n    int // answers checked
	// forwardsPlain: the test's fake Codex backend answers plain JSON
	// objects (no encrypted_output), which Remote mode forwards unchanged;
	// those 200 answers of the Codex routes are only checked to be JSON
	// objects. Everything else is checked against the spec.
	forwardsPlain bool
}

// startSpecProxy listens on 127.0.0.1:0 and forwards to contextd at
// target; at the test's end, every answer that did not match the spec
// fails t. When contextd is down the proxy closes the client's connection
// without an answer, so the extension sees contextd unreachable, as it
// would without the proxy.
func startSpecProxy(t *testing.T, target string) *specProxy {
	t.Helper()
	v, err := specValidator()
	if err != nil {
		t.Fatalf("openapi: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &specProxy{addr: l.Addr().String()}
	to := &url.URL{Scheme: "http", Host: target}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(to)
			pr.Out.Host = target
		},
		ModifyResponse: func(resp *http.Response) error {
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			resp.Body = io.NopCloser(bytes.NewReader(body))
			req := resp.Request
			p.mu.Lock()
			plain := p.forwardsPlain && resp.StatusCode == http.StatusOK && strings.HasPrefix(req.URL.Path, "/alpha/")
			p.mu.Unlock()
			if plain {
				var obj map[string]any
				if json.Unmarshal(body, &obj) != nil {
					p.mu.Lock()
					p.errs = append(p.errs, fmt.Sprintf("%s %s: a forwarded Codex answer that is not a JSON object: %.200s", req.Method, req.URL.Path, body))
					p.mu.Unlock()
				}
			} else if err := v.Check(req.Method, req.URL.Path, resp.StatusCode, resp.Header.Get("Content-Type"), body); err != nil {
				p.mu.Lock()
				p.errs = append(p.errs, err.Error())
				p.mu.Unlock()
			}
			p.mu.Lock()
			p.n++
			p.mu.Unlock()
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
					return
				}
			}
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.srv = &http.Server{Handler: rp}
	go func() {
		if err := p.srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("spec proxy: %v", err)
		}
	}()
	t.Cleanup(func() {
		p.close()
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.errs) > 0 {
			t.Errorf("%d of %d contextd answers Pi received do not match openapi/openapi.yaml:\n%s", len(p.errs), p.n, strings.Join(p.errs, "\n"))
		}
	})
	return p
}

// allowPlainForwards sets forwardsPlain (see there).
func (p *specProxy) allowPlainForwards() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.forwardsPlain = true
}

// close stops the proxy (idempotent).
func (p *specProxy) close() { p.srv.Close() }

// checked is the number of answers checked so far.
func (p *specProxy) checked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}
