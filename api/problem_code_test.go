package api

import (
	"net/http"
	"slices"
	"testing"

	"contextd"
)

// problemCode decodes the code member of a problem body.
func problemCode(t *testing.T, r response) string {
	t.Helper()
	var p struct {
		Code string `json:"code"`
	}
	r.decode(t, &p)
	return p.Code
}

// TestProblemCodes: every problem body carries the machine-readable code a
// client branches on: the application error's own code (open_tool_calls for
// a new window over a tool call without its result, conflict for an off
// session), and for problems of the HTTP layer the code of their status.
func TestProblemCodes(t *testing.T) {
	const sid = "0190a000-0000-7000-8000-00000000c0de"
	b := newSessionBuilder(sid)
	b.boundary(0, "w0", "w0", "")
	b.user("run it")
	b.assistant(map[string]any{"type": "toolCall", "id": "call_open", "name": "bash", "arguments": map[string]any{"command": "ls"}})
	s := newTestServer(t, serverOptions{})
	s.writeFile("open.jsonl", b.bytes())
	if r := s.register(sid, "open.jsonl", contextd.ModeLocal); r.Status >= 300 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}

	r := s.post("/v1/sessions/"+sid+"/windows", map[string]any{})
	if r.Status != http.StatusConflict || problemCode(t, r) != "open_tool_calls" {
		t.Errorf("windows over an open call: %d %s, want 409 code open_tool_calls", r.Status, r.Body)
	}
	if r := s.register(sid, "open.jsonl", contextd.ModeOff); r.Status >= 300 {
		t.Fatalf("register off: %d %s", r.Status, r.Body)
	}
	r = s.post("/v1/sessions/"+sid+"/windows", map[string]any{})
	if r.Status != http.StatusConflict || problemCode(t, r) != "conflict" {
		t.Errorf("windows when off: %d %s, want 409 code conflict", r.Status, r.Body)
	}
	for _, tc := range []struct {
		name   string
		r      response
		status int
		code   string
	}{
		{"validation", s.post("/v1/sessions/"+sid+"/windows", map[string]any{"leaf_id": 7}), http.StatusUnprocessableEntity, "invalid"},
		{"no route", s.get("/v1/nothing-here"), http.StatusNotFound, "not_found"},
		{"no token", s.request(http.MethodGet, "/v1/sessions", nil, http.Header{TokenHeader: {""}}), http.StatusUnauthorized, "unauthorized"},
		{"unknown session", s.get("/v1/sessions/0190a000-0000-7000-8000-00000000dead"), http.StatusNotFound, "not_found"},
	} {
		if tc.r.Status != tc.status || problemCode(t, tc.r) != tc.code {
			t.Errorf("%s: %d %s, want %d code %s", tc.name, tc.r.Status, tc.r.Body, tc.status, tc.code)
		}
	}
}

// TestProblemCodeOfStatus: every application code maps to a status and is
// listed; a bare status gets the code of that status.
func TestProblemCodeOfStatus(t *testing.T) {
	for c := range statusOf {
		if !slices.Contains(ProblemCodes, c) {
			t.Errorf("code %q has a status but is not in ProblemCodes", c)
		}
	}
	for status, want := range map[int]contextd.Code{
		400: contextd.EBadRequest, 401: contextd.EUnauthorized, 404: contextd.ENotFound, 405: CodeMethodNotAllowed,
		409: contextd.EConflict, 413: contextd.ETooLarge, 415: CodeUnsupportedMediaType, 418: contextd.EBadRequest,
		421: CodeMisdirected, 422: contextd.EInvalid, 500: contextd.EInternal, 502: contextd.EUpstream, 507: CodeDiskFull,
	} {
		if got := codeOfStatus(status); got != want {
			t.Errorf("codeOfStatus(%d) = %q, want %q", status, got, want)
		}
	}
}
