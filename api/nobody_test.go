package api

import (
	"net/http"
	"strings"
	"testing"
)

// TestBodyRefusedWhereNone: an operation that declares no request body
// answers 422 code invalid to a non-empty body (api/nobody.go), never 200
// as if it had not been sent; no body, an empty one and the empty object
// {} still work.
func TestBodyRefusedWhereNone(t *testing.T) {
	s := newTestServer(t, serverOptions{}, piTree("local-basic.jsonl"))
	const want = "Invalid request: body: this route takes no body; send the request without one (or with an empty JSON object {})."
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/index/rebuild", `{"x":1}`},
		{http.MethodPost, "/v1/index/rebuild", `[]`},
		{http.MethodPost, "/v1/index/rebuild", `null`},
		{http.MethodGet, "/v1/sessions", `{"limit":5}`},
	} {
		r := s.request(tc.method, tc.path, tc.body, nil)
		var p struct {
			Detail string `json:"detail"`
			Code   string `json:"code"`
		}
		r.decode(t, &p)
		if r.Status != http.StatusUnprocessableEntity || p.Detail != want || p.Code != "invalid" {
			t.Errorf("%s %s %s: %d %s, want 422 code invalid with detail %q", tc.method, tc.path, tc.body, r.Status, r.Body, want)
		}
	}
	for _, body := range []any{nil, "", " { \n} "} {
		if r := s.request(http.MethodPost, "/v1/index/rebuild", body, nil); r.Status != http.StatusOK {
			t.Errorf("rebuild with body %q: %d %s, want 200", body, r.Status, r.Body)
		}
	}
}

// TestNoBodyAllowed: the bodies a bodiless route accepts, by hand from
// RFC 8259 §2 whitespace.
func TestNoBodyAllowed(t *testing.T) {
	for body, want := range map[string]bool{
		"": true, " \t\r\n": true, "{}": true, " {\n }\t": true,
		"{ x }": false, "{}{}": false, "[]": false, "0": false, "\v{}": false,
		"{" + string(make([]byte, maxNoBodyPeek)) + "}": false,
	} {
		if got := noBodyAllowed(strings.NewReader(body)); got != want {
			t.Errorf("noBodyAllowed(%q) = %v, want %v", body, got, want)
		}
	}
}
