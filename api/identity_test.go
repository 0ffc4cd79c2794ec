package api

import (
	"net/http"
	"os"
	"strings"
	"testing"
)

// TestRegisteredFileHoldsAnotherSession: the header id is checked at
// registration, but a registered file may be written later (registered
// before Pi created it) or replaced. Every session route then answers 409
// naming both ids instead of serving (and planning appends into) another
// session's file; the session whose id the file holds is served normally.
func TestRegisteredFileHoldsAnotherSession(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	for _, id := range []string{"aaaa", "bbbb"} {
		if r := s.put("/v1/sessions/"+id, map[string]any{"session_file": "later.jsonl", "mode": "local"}); r.Status/100 != 2 {
			t.Fatalf("register %s before the file exists: %d %s", id, r.Status, r.Body)
		}
	}
	b := newSessionBuilder("aaaa")
	b.user("hello")
	s.writeFile("later.jsonl", b.bytes())

	want := `the registered session_file ` + s.path("later.jsonl") + ` of session \"bbbb\" holds session \"aaaa\" (its header id)`
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/v1/sessions/bbbb"},
		{http.MethodPost, "/v1/sessions/bbbb/context"},
		{http.MethodPost, "/v1/sessions/bbbb/windows"},
		{http.MethodPost, codexPath("history/list_windows")},
	} {
		body := any(map[string]any{})
		if strings.HasPrefix(tc.path, "/alpha/") {
			body = map[string]any{"context": map[string]any{"session_id": "bbbb"}}
		}
		if tc.method == http.MethodGet {
			body = nil
		}
		r := s.request(tc.method, tc.path, body, nil)
		if r.Status != http.StatusConflict || !strings.Contains(string(r.Body), want) {
			t.Errorf("%s %s: %d %s\nwant 409 containing %s", tc.method, tc.path, r.Status, r.Body, want)
		}
	}
	if r := s.post("/v1/sessions/aaaa/windows", map[string]any{}); r.Status != http.StatusOK {
		t.Errorf("the file's own session: POST windows %d %s, want 200", r.Status, r.Body)
	}
}

// TestSessionIDFormat: a session id in the path or in a Codex context is a
// Pi session id (Pi writes UUIDs): letters, digits and . _ : @ + -, not
// starting with a punctuation mark. Anything else is refused with 422
// before it is stored or echoed.
func TestSessionIDFormat(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	for _, id := range []string{"%00", "..%2Fx", "%ff", ".hidden", "a%20b", "%E2%80%AE"} {
		r := s.put("/v1/sessions/"+id, map[string]any{"session_file": "x.jsonl", "mode": "local"})
		if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "path.session_id") {
			t.Errorf("PUT /v1/sessions/%s: %d %s, want 422 naming path.session_id", id, r.Status, r.Body)
		}
	}
	r := s.post(codexPath("history/list_windows"), map[string]any{"context": map[string]any{"session_id": "a/b"}})
	if r.Status != http.StatusUnprocessableEntity || !strings.Contains(string(r.Body), "body.context.session_id") {
		t.Errorf("context.session_id a/b: %d %s, want 422 naming body.context.session_id", r.Status, r.Body)
	}
	regs, err := s.State.Registrations(t.Context())
	if err != nil || len(regs) != 0 {
		t.Fatalf("refused ids were stored: %v %v", regs, err)
	}
	if r := s.put("/v1/sessions/019f3776-3d33-70c6-baa2-5155ff71613c", map[string]any{"session_file": "x.jsonl", "mode": "local"}); r.Status/100 != 2 {
		t.Errorf("a UUID session id: %d %s, want 2xx", r.Status, r.Body)
	}
}

// TestMissingFileMessages: a registered file Pi has not written yet is
// "not written yet" on every route that reports it; a file that was
// indexed and then deleted "no longer exists".
func TestMissingFileMessages(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	if r := s.put("/v1/sessions/cccc", map[string]any{"session_file": "soon.jsonl", "mode": "local"}); r.Status/100 != 2 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	const notYet = "the session file does not exist yet: Pi writes it at the session's first message"
	if r := s.get("/v1/sessions/cccc"); r.Status != http.StatusOK || !strings.Contains(string(r.Body), notYet) {
		t.Errorf("state before the file: %d %s, want %q", r.Status, r.Body, notYet)
	}
	if r := s.post(codexPath("history/list_windows"), map[string]any{"context": map[string]any{"session_id": "cccc"}}); !strings.Contains(string(r.Body), notYet) {
		t.Errorf("list_windows before the file: %d %s, want %q", r.Status, r.Body, notYet)
	}
	b := newSessionBuilder("cccc")
	b.user("hello")
	path := s.writeFile("soon.jsonl", b.bytes())
	if r := s.get("/v1/sessions/cccc"); r.Status != http.StatusOK {
		t.Fatalf("state after the file: %d %s", r.Status, r.Body)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	const gone = "the session file no longer exists"
	if r := s.get("/v1/sessions/cccc"); !strings.Contains(string(r.Body), gone) {
		t.Errorf("state after deletion: %d %s, want %q", r.Status, r.Body, gone)
	}
}
