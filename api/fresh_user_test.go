package api

// Fixes from a fresh-user run (docs/operations.md "Inspecting a session"): what GET /v1/sessions lists for
// a session registered before Pi wrote its file, after that registration
// moves to another file, and for a directory named like a session file.

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd"
	"contextd/coordinator"
)

// TestSessionsListAwaitingAndDirectory: a registration whose file does not
// exist yet is listed with state awaiting_file under its own id and the
// path contextd will read; re-registering it elsewhere leaves exactly one
// row for it, at the new path; a directory named dir.jsonl is listed as
// unreadable ("not a regular file"), as docs/security.md's table says.
func TestSessionsListAwaitingAndDirectory(t *testing.T) {
	s := newTestServer(t, serverOptions{}, piTree("local-basic.jsonl"))
	if err := os.Mkdir(filepath.Join(s.Sessions, "dir.jsonl"), 0o700); err != nil {
		t.Fatal(err)
	}
	if r := s.put("/v1/sessions/later", map[string]any{"session_file": "later.jsonl", "mode": "local"}); r.Status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	// /context makes the coordinator look at the path (a session object
	// for it), as the extension does before Pi writes the file.
	s.mustOK("/v1/sessions/later/context", map[string]any{}, nil)
	byFile := func() map[string]coordinator.SessionSummary {
		out := map[string]coordinator.SessionSummary{}
		for _, r := range s.sessionsList() {
			out[filepath.Base(r.File)] = r
		}
		return out
	}
	rows := byFile()
	if len(rows) != 3 {
		t.Fatalf("rows %v, want local-basic.jsonl, dir.jsonl, later.jsonl", rows)
	}
	later := rows["later.jsonl"]
	if later.SessionID != "later" || later.State != coordinator.StateAwaitingFile || !later.Registered || later.Mode != contextd.ModeLocal ||
		later.File != filepath.Join(s.Sessions, "later.jsonl") || later.Entries != 0 {
		t.Errorf("awaiting row: %+v", later)
	}
	dir := rows["dir.jsonl"]
	if dir.State != "unreadable" || len(dir.Problems) != 1 || dir.Problems[0].Reason != "unreadable" || dir.Problems[0].Detail == "" ||
		!strings.Contains(dir.Problems[0].Detail, "not a regular file") {
		t.Errorf("dir.jsonl row: %+v", dir)
	}
	if st := s.get("/v1/sessions/later"); st.Status != http.StatusOK || !strings.Contains(string(st.Body), `"state":"awaiting_file"`) {
		t.Errorf("GET /v1/sessions/later: %d %s", st.Status, st.Body)
	}

	// Registered again under another (still unwritten) file: one row, the new one.
	if r := s.put("/v1/sessions/later", map[string]any{"session_file": "later-2.jsonl", "mode": "tree"}); r.Status != http.StatusOK {
		t.Fatalf("re-register: %d %s", r.Status, r.Body)
	}
	rows = byFile()
	if _, stale := rows["later.jsonl"]; stale || len(rows) != 3 {
		t.Fatalf("after re-registration: %v, want local-basic.jsonl, dir.jsonl, later-2.jsonl", rows)
	}
	if r := rows["later-2.jsonl"]; r.SessionID != "later" || r.State != coordinator.StateAwaitingFile || r.Mode != contextd.ModeTree {
		t.Errorf("re-registered row: %+v", r)
	}
}

// TestSessionCopies: two existing files carry one header id (a copy of
// tree-multi.jsonl at zz/copy.jsonl). GET /v1/sessions/{id} serves the one
// with the smallest path, tree-multi.jsonl, before and after a rebuild
// (the rebuild re-indexes in another order), and reports
// duplicate_session_id naming the copy; the listing reports it on both
// rows. Registering the id at a path that does not exist is refused with
// 409 naming the file that holds the session, and changes nothing.
func TestSessionCopies(t *testing.T) {
	const id = "019f429d-87f0-7841-b1ab-51687b222864"
	s := newTestServer(t, serverOptions{}, piTree("tree-multi.jsonl"), fixture{Src: filepath.Join(fixturePiTree, "tree-multi.jsonl"), Name: "zz/copy.jsonl"})
	orig, cp := filepath.Join(s.Sessions, "tree-multi.jsonl"), filepath.Join(s.Sessions, "zz", "copy.jsonl")
	check := func(when string) {
		t.Helper()
		var st coordinator.SessionState
		s.getJSON("/v1/sessions/"+id, &st)
		want := []coordinator.SessionProblem{{Reason: "duplicate_session_id", Detail: "the header id is also that of " + cp + "; contextd serves the file with the smallest path; register the one Pi writes with PUT /v1/sessions/{id} to choose it"}}
		if st.File != orig || !cmp.Equal(st.Problems, want) {
			t.Errorf("%s: file %s problems %+v, want %s and %+v", when, st.File, st.Problems, orig, want)
		}
	}
	check("first lookup")
	if r := s.post("/v1/index/rebuild", map[string]any{}); r.Status != http.StatusOK {
		t.Fatalf("rebuild: %d %s", r.Status, r.Body)
	}
	check("after rebuild")
	for _, r := range s.sessionsList() {
		if len(r.Problems) != 1 || r.Problems[0].Reason != "duplicate_session_id" {
			t.Errorf("row %s: problems %+v, want one duplicate_session_id", r.File, r.Problems)
		}
	}

	r := s.put("/v1/sessions/"+id, map[string]any{"session_file": "pi-tree/nonexistent.jsonl", "mode": "tree"})
	wantMsg := `session \"` + id + `\" is already in ` + orig
	if r.Status != http.StatusConflict || !strings.Contains(string(r.Body), wantMsg) {
		t.Fatalf("register a missing path: %d %s, want 409 containing %s", r.Status, r.Body, wantMsg)
	}
	var st coordinator.SessionState
	s.getJSON("/v1/sessions/"+id, &st)
	if st.Registered || st.File != orig || st.State != "ok" {
		t.Errorf("after the refused registration: registered %v file %s state %s, want false %s ok", st.Registered, st.File, st.State, orig)
	}
}
