package api

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// hxFuzzRemoteID is a session registered in Remote mode in the fuzz stack.
const hxFuzzRemoteID = "fuzz-remote-session"

// hxMemBackend is an in-memory Codex backend (no network): its answer
// depends on the body length, so the fuzzer reaches every Remote outcome:
// a JSON object, a 500, invalid JSON and a JSON array.
type hxMemBackend struct{}

func (hxMemBackend) RoundTrip(r *http.Request) (*http.Response, error) {
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	status, body := http.StatusOK, `{"encrypted_output":"x"}`
	switch len(b) % 4 {
	case 1:
		status, body = http.StatusInternalServerError, `{"error":"boom"}`
	case 2:
		body = `{"encrypted_output":`
	case 3:
		body = `[1,2]`
	}
	return &http.Response{StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"mem-1"}}, Body: io.NopCloser(strings.NewReader(body)), Request: r}, nil
}

// FuzzCodexBodies posts arbitrary bytes as the body of one of the ten
// Codex routes (route picks it, modulo 10) through the whole handler stack
// (middleware, huma decoding and validation, Local handlers over
// local-basic.jsonl, the Remote branch against an in-memory backend).
// Properties: never a 500 (or any 5xx but the Remote 502/504); a 200 is
// one JSON object with Content-Type application/json; every error is a
// problem+json document whose status matches and whose detail is set.
func FuzzCodexBodies(f *testing.F) {
	s := newHXStack(f, hxOptions{})
	s.Remote.BaseURL = "http://codex.invalid/backend-api/codex"
	s.Remote.HTTP = &http.Client{Transport: hxMemBackend{}}
	reg := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodPut, "/v1/sessions/"+hxFuzzRemoteID, strings.NewReader(`{"session_file":"remote.jsonl","mode":"remote"}`))
	req.Host = "127.0.0.1:7467" // httptest's default example.com is refused (421)
	req.Header.Set(TokenHeader, s.Token)
	req.Header.Set("Content-Type", "application/json")
	s.API.Handler().ServeHTTP(reg, req)
	if reg.Code != http.StatusCreated {
		f.Fatalf("register remote session: %d %s", reg.Code, reg.Body)
	}
	for i, o := range hxOps {
		f.Add(uint8(i), o.Body(hxSessionID))
		f.Add(uint8(i), o.Body(hxFuzzRemoteID))
	}
	f.Add(uint8(0), []byte(`{"limit":1e30,"context":{"session_id":"`+hxSessionID+`"}}`))
	f.Add(uint8(2), []byte(`{"item_id":"`+"\xff"+`","window_id":"w","context":{"session_id":"`+hxSessionID+`"}}`))
	f.Add(uint8(8), []byte(`{"path":"../../etc/passwd","text":"x","context":{"session_id":"`+hxSessionID+`"}}`))
	f.Add(uint8(5), []byte(`{"path":"a.md","start_line":-9223372036854775808,"stop_line":9223372036854775807,"context":{"session_id":"`+hxSessionID+`"}}`))
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		o := hxOps[int(route)%len(hxOps)]
		req := httptest.NewRequest(http.MethodPost, o.Path(), bytes.NewReader(body))
		req.Host = "127.0.0.1:7467"
		req.Header.Set(TokenHeader, s.Token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer fuzz")
		w := httptest.NewRecorder()
		s.API.Handler().ServeHTTP(w, req)
		code, ct, out := w.Code, w.Header().Get("Content-Type"), w.Body.Bytes()
		if code >= 500 && code != http.StatusBadGateway && code != http.StatusGatewayTimeout {
			t.Fatalf("%s: status %d for body %q: %s", o.Path(), code, body, out)
		}
		if code == http.StatusOK {
			if ct != "application/json" || !json.Valid(out) || len(bytes.TrimSpace(out)) == 0 || bytes.TrimSpace(out)[0] != '{' {
				t.Fatalf("%s: 200 %q is not one JSON object: %.300s", o.Path(), ct, out)
			}
			return
		}
		if ct != "application/problem+json" {
			t.Fatalf("%s: status %d with Content-Type %q: %.300s", o.Path(), code, ct, out)
		}
		var p hxProblem
		if err := json.Unmarshal(out, &p); err != nil || p.Status != code || p.Detail == "" {
			t.Fatalf("%s: status %d, bad problem document (%v): %.300s", o.Path(), code, err, out)
		}
	})
}
