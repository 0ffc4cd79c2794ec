package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"testing"

	"contextd"
	"contextd/coordinator"
)

// tree-basic.jsonl (testdata/pi-tree, tree-basic.expected.json rollovers[0]).
const (
	rollTreeFile = "tree-basic.jsonl"
	rollTreeID   = "019f3d67-b1fd-7c0a-87d5-9b46277407ba"
)

// rolloverServer serves a copy of tree-basic.jsonl cut before its rollover
// (lines 1-38: the new_context tool result 42a59a75 is the last entry),
// registered with mode, with the rollover routes installed.
func rolloverServer(t *testing.T, mode contextd.Mode) (*testServer, [][]byte) {
	t.Helper()
	b, err := os.ReadFile(fixturePiTree + "/" + rollTreeFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	s := newTestServer(t, serverOptions{})
	s.writeFile(rollTreeFile, append(bytes.Join(lines[:38], []byte("\n")), '\n'))
	if r := s.register(rollTreeID, rollTreeFile, mode); r.Status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	return s, lines
}

func wantRollProblem(t *testing.T, r response, status int, detail string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	if p := r.problem(t); !bytes.Contains([]byte(p.Detail), []byte(detail)) {
		t.Fatalf("detail %q does not say %q", p.Detail, detail)
	}
}

// TestRolloverRoutesTree drives a Tree rollover over HTTP: statuses,
// answer shapes, refusals, GET session's rollover and incomplete fields.
func TestRolloverRoutesTree(t *testing.T) {
	s, lines := rolloverServer(t, contextd.ModeTree)
	base := "/v1/sessions/" + rollTreeID + "/rollovers"
	hash := fileSHA256(t, s.path(rollTreeFile))

	wantRollProblem(t, s.post(base, map[string]any{"leaf_id": "42a59a75"}), http.StatusPreconditionFailed, "command_context_ready: true")
	r := s.post(base, map[string]any{"leaf_id": "42a59a75", "command_context_ready": true})
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var created coordinator.RolloverCreated
	r.decode(t, &created)
	if created.State != "pending" || created.ToolResult != coordinator.RolloverToolResult || created.Rollover.BoundaryEntryID != "b3504875" {
		t.Fatalf("create: %+v", created)
	}
	id := created.RolloverID
	// The same leaf joins it (200); another branch is refused (409).
	r = s.post(base, map[string]any{"leaf_id": "42a59a75", "command_context_ready": true})
	if r.Status != http.StatusOK {
		t.Fatalf("repeat create: %d %s", r.Status, r.Body)
	}
	other := s.post(base, map[string]any{"leaf_id": "b423e27c", "command_context_ready": true})
	wantRollProblem(t, other, http.StatusConflict, "a rollover is already pending")
	if c := problemCode(t, other); c != "rollover_pending" {
		t.Errorf("create while another rollover is open: code %q, want rollover_pending (the extension branches on it)", c)
	}
	wantRollProblem(t, s.post(base+"/"+id+"/commit", map[string]any{"summary_entry_id": "bae0cbce"}), http.StatusConflict, "settle it first")
	wantRollProblem(t, s.post(base+"/nope/settle", map[string]any{}), http.StatusNotFound, `has no rollover "nope"`)
	wantRollProblem(t, s.post(base+"/"+id+"/settle", map[string]any{"leaf_id": "b423e27c"}), http.StatusPreconditionFailed, "ancestry mismatch")

	r = s.mustOK(base+"/"+id+"/settle", map[string]any{"leaf_id": "42a59a75"}, nil)
	var settle map[string]any
	r.decode(t, &settle)
	if settle["navigate_to"] != "b3504875" || settle["summarize"] != true || settle["label"] != "contextd window 0 archive" || settle["summary_parent_id"] != "0af25e58" ||
		settle["archived_leaf_id"] != "42a59a75" {
		t.Fatalf("settle: %s", r.Body)
	}
	wantRollProblem(t, s.post(base+"/"+id+"/commit", map[string]any{"summary_entry_id": "bae0cbce"}), http.StatusPreconditionFailed, "not in the session file yet")
	wantRollProblem(t, s.post(base+"/"+id+"/commit", map[string]any{"summary_entry_id": "42a59a75"}), http.StatusUnprocessableEntity, "summary mismatch")
	if got := fileSHA256(t, s.path(rollTreeFile)); got != hash {
		t.Fatal("contextd changed the session file")
	}

	// Pi appends the branch summary; the session reports the incomplete rollover.
	s.appendLine(rollTreeFile, lines[38])
	var st struct {
		Rollover   *coordinator.RolloverInfo       `json:"rollover"`
		Incomplete *coordinator.IncompleteRollover `json:"incomplete_rollover"`
	}
	s.request(http.MethodGet, "/v1/sessions/"+rollTreeID, nil, nil).decode(t, &st)
	if st.Rollover == nil || st.Rollover.RolloverID != id || st.Rollover.State != "settled" || st.Incomplete == nil || st.Incomplete.SummaryEntryID != "bae0cbce" {
		t.Fatalf("session state: %+v %+v", st.Rollover, st.Incomplete)
	}

	r = s.mustOK(base+"/"+id+"/commit", map[string]any{"summary_entry_id": "bae0cbce"}, nil)
	var commit struct {
		State  string            `json:"state"`
		Append []json.RawMessage `json:"append"`
	}
	r.decode(t, &commit)
	if commit.State != "committed" || len(commit.Append) != 3 {
		t.Fatalf("commit: %s", r.Body)
	}
	// Each entry is ready for pi.appendEntry / pi.sendMessage: exactly these keys.
	wantKeys := [][]string{{"type", "customType", "data"}, {"type", "customType", "data"}, {"type", "customType", "content", "display", "details"}}
	for k, raw := range commit.Append {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		if len(m) != len(wantKeys[k]) {
			t.Fatalf("append[%d] keys: %s", k, raw)
		}
		for _, key := range wantKeys[k] {
			if _, ok := m[key]; !ok {
				t.Fatalf("append[%d] has no %s: %s", k, key, raw)
			}
		}
	}
	if !bytes.Contains(commit.Append[0], []byte(`"data":{"protocol":1,"strategy":"codex-context-tree","windowId":"93e1557d-7342-47d3-970c-2383fd5384d7","boundaryEntryId":"b3504875","summaryEntryId":"bae0cbce","archivedLeafId":"42a59a75","branchBaseId":"0af25e58"}`)) {
		t.Fatalf("manifest: %s", commit.Append[0])
	}
	// Waiting for Pi to append the planned entries is no error (202).
	if r := s.post(base+"/"+id+"/complete", nil); r.Status != http.StatusAccepted || !bytes.Contains(r.Body, []byte(`"state":"committed"`)) ||
		!bytes.Contains(r.Body, []byte(`"waiting_for":["codex-context-tree-archive","codex-context-note-snapshot","codex-context-window"]`)) {
		t.Fatalf("complete before the entries: %d %s", r.Status, r.Body)
	}
	// … and the request metrics count it as a success, never as a 4xx.
	m := s.get("/metrics")
	completeOp := `operation="/v1/sessions/{session_id}/rollovers/{rollover_id}/complete"`
	if want := `contextd_http_requests_total{code="202",method="POST",` + completeOp + `} 1`; m.Status != http.StatusOK || !bytes.Contains(m.Body, []byte(want)) ||
		bytes.Contains(m.Body, []byte(`code="412",method="POST",`+completeOp)) {
		t.Errorf("/metrics lacks %s, or counts a 412 on complete", want)
	}
	wantRollProblem(t, s.post(base+"/"+id+"/abort", map[string]any{"reason": rollLongString(2000)}), http.StatusUnprocessableEntity, "reason")

	r = s.mustOK(base+"/"+id+"/abort", map[string]any{"reason": "navigation cancelled"}, nil)
	var info coordinator.RolloverInfo
	r.decode(t, &info)
	if info.State != "aborted" || info.Reason != "navigation cancelled" {
		t.Fatalf("abort: %s", r.Body)
	}
	wantRollProblem(t, s.post(base+"/"+id+"/commit", map[string]any{"summary_entry_id": "bae0cbce"}), http.StatusConflict, "was aborted: navigation cancelled")
	r = s.get(base + "/" + id)
	if r.Status != http.StatusOK {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}
	r.decode(t, &info)
	if info.State != "aborted" || info.SummaryEntryID != "bae0cbce" || info.NextWindow == nil {
		t.Fatalf("get: %s", r.Body)
	}
}

// TestRolloverRoutesLocal: the Local flow over HTTP ends with the new
// boundary in the file and the rollover completed.
func TestRolloverRoutesLocal(t *testing.T) {
	s, _ := rolloverServer(t, contextd.ModeLocal)
	base := "/v1/sessions/" + rollTreeID + "/rollovers"
	r := s.post(base, map[string]any{"leaf_id": "42a59a75"})
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var created coordinator.RolloverCreated
	r.decode(t, &created)
	id := created.RolloverID
	var settle map[string]any
	s.mustOK(base+"/"+id+"/settle", map[string]any{}, nil).decode(t, &settle)
	if v, ok := settle["navigate_to"]; !ok || v != nil || settle["summarize"] != false {
		t.Fatalf("local settle: %v", settle)
	}
	wantRollProblem(t, s.post(base+"/"+id+"/commit", map[string]any{"summary_entry_id": "bae0cbce"}), http.StatusUnprocessableEntity, "local rollovers have no branch summary")
	var commit coordinator.CommitAnswer
	s.mustOK(base+"/"+id+"/commit", map[string]any{}, nil).decode(t, &commit)
	if len(commit.Append) != 1 || commit.Window.WindowNumber != 1 {
		t.Fatalf("local commit: %+v", commit)
	}
	b := commit.Append[0]
	line, err := json.Marshal(map[string]any{"type": b.Type, "customType": b.CustomType, "content": b.Content, "display": *b.Display,
		"details": b.Details, "id": "c0ffee01", "parentId": "42a59a75", "timestamp": "2026-07-07T16:38:48.093Z"})
	if err != nil {
		t.Fatal(err)
	}
	s.appendLine(rollTreeFile, line)
	var info coordinator.RolloverInfo
	s.mustOK(base+"/"+id+"/complete", nil, nil).decode(t, &info)
	if info.State != "completed" || info.NextWindow == nil || info.NextWindow.CurrentWindowID != commit.Window.CurrentWindowID {
		t.Fatalf("complete: %+v", info)
	}
	// A new rollover may start in the new window.
	if r := s.post(base, map[string]any{"leaf_id": "c0ffee01"}); r.Status != http.StatusCreated {
		t.Fatalf("next create: %d %s", r.Status, r.Body)
	}
}

// TestRolloverRoutesOffMode: off mode refuses with 409.
func TestRolloverRoutesOffMode(t *testing.T) {
	s, _ := rolloverServer(t, contextd.ModeOff)
	wantRollProblem(t, s.post("/v1/sessions/"+rollTreeID+"/rollovers", map[string]any{}), http.StatusConflict, "context management is off")
}

func rollLongString(n int) string { return string(bytes.Repeat([]byte("x"), n)) }

// TestUnknownLeafSame404: a leaf_id that is not an entry of the file is
// 404 with the same detail on every route that takes one: the rollover
// create, settle and reset log, /branch and /context.
func TestUnknownLeafSame404(t *testing.T) {
	s, _ := rolloverServer(t, contextd.ModeLocal)
	sess := "/v1/sessions/" + rollTreeID
	want := `leaf_id "nope" is not an entry of session "` + rollTreeID + `"; pass the id of an entry in its file, or omit leaf_id to use the last entry`
	check := func(name string, r response) {
		t.Helper()
		if r.Status != http.StatusNotFound {
			t.Errorf("%s: status %d, want 404: %s", name, r.Status, r.Body)
			return
		}
		if p := r.problem(t); p.Detail != want {
			t.Errorf("%s: detail %q, want %q", name, p.Detail, want)
		}
	}
	check("POST rollovers", s.post(sess+"/rollovers", map[string]any{"leaf_id": "nope"}))
	check("GET rollovers", s.get(sess+"/rollovers?leaf_id=nope"))
	check("GET branch", s.get(sess+"/branch?leaf_id=nope"))
	check("POST context", s.post(sess+"/context", map[string]any{"leaf_id": "nope"}))
	check("history list_windows", s.post("/alpha/history/v2/list_windows", map[string]any{"context": map[string]any{"session_id": rollTreeID, "leaf_id": "nope"}}))
	r := s.post(sess+"/rollovers", map[string]any{"leaf_id": "42a59a75"})
	if r.Status != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	var created coordinator.RolloverCreated
	r.decode(t, &created)
	check("POST settle", s.post(sess+"/rollovers/"+created.RolloverID+"/settle", map[string]any{"leaf_id": "nope"}))
}
