package api

// Every response the api tests receive is validated against the committed
// OpenAPI document (openapi/openapi.yaml) by openapi.Validator:
// newTestServer and newHXStack route their requests through specChecked.
// TestResponsesMatchSpec then drives every operation to every documented
// status (2xx and the default problem document), Local, Tree and Remote,
// and checks each was seen.

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"contextd"
	"contextd/coordinator"
	"contextd/openapi"
)

// loadSpec compiles the committed document once for all tests.
var loadSpec = sync.OnceValues(openapi.NewValidator)

func specFor(tb testing.TB) *openapi.Validator {
	tb.Helper()
	d, err := loadSpec()
	if err != nil {
		tb.Fatalf("loading openapi/openapi.yaml: %v", err)
	}
	return d
}

// specChecked wraps h: every response is validated against the spec, and a
// mismatch fails tb.
func specChecked(tb testing.TB, h http.Handler) http.Handler {
	d := specFor(tb)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if err := d.Check(r.Method, r.URL.Path, rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes()); err != nil {
			tb.Errorf("OpenAPI: %v", err)
		}
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

// TestResponsesMatchSpec answers every operation of the spec with a 2xx
// through specChecked, in Local/Tree mode and (the Codex routes) in Remote
// mode against a fake backend, including the answers that are empty or
// null: no windows of another agent, an unknown item (item null), a note
// file that does not exist (file null), no notes.
func TestResponsesMatchSpec(t *testing.T) {
	d := specFor(t)
	s, _ := rolloverServer(t, contextd.ModeLocal)
	s.copyFile(fixturePiTree+"/tree-multi.jsonl", "tree-multi.jsonl")
	const treeID = "019f429d-87f0-7841-b1ab-51687b222864" // tree-multi.jsonl
	id := rollTreeID
	ok := func(r response, want int) response {
		t.Helper()
		if r.Status != want {
			t.Fatalf("status %d, want %d: %.1000s", r.Status, want, r.Body)
		}
		return r
	}
	ok(s.get("/v1/sessions"), 200)
	ok(s.register(id, rollTreeFile, contextd.ModeLocal), 200)
	ok(s.post("/v1/sessions/"+id+"/rollovers", map[string]any{"leaf_id": "42a59a75", "command_context_ready": true}), 201)
	ok(s.post("/v1/sessions/"+id+"/rollovers", map[string]any{"leaf_id": "42a59a75", "command_context_ready": true}), 200)
	ok(s.get("/v1/sessions/"+id), 200)
	ok(s.get("/v1/sessions/"+id+"/rollover_loop"), 200)
	ok(s.get("/v1/sessions/"+id+"/branch"), 200)
	ok(s.get("/v1/sessions/"+id+"/branch?tail=2"), 200)
	ok(s.post("/v1/sessions/"+id+"/context", map[string]any{}), 200)
	ok(s.post("/v1/sessions/"+id+"/windows", map[string]any{}), 200)
	var windows struct {
		Windows []struct {
			WindowID string `json:"window_id"`
		} `json:"windows"`
	}
	s.codexOK("history/list_windows", id, "", nil, &windows)
	empty := func(r response, want string) {
		t.Helper()
		if !bytes.Contains(r.Body, []byte(want)) {
			t.Errorf("%s, want %s", r.Body, want)
		}
	}
	empty(s.codexOK("history/list_windows", id, "", map[string]any{"agent_name": "/root/other"}, nil), `"windows":[]`)
	var items struct {
		Items []struct {
			ItemID string `json:"item_id"`
		} `json:"items"`
	}
	s.codexOK("history/list_items", id, "", map[string]any{"window_id": windows.Windows[0].WindowID}, &items)
	empty(s.codexOK("history/list_items", id, "", map[string]any{"window_id": "no-such-window", "role": nil}, nil), `"items":[]`)
	s.codexOK("history/read_item", id, "", map[string]any{"window_id": windows.Windows[0].WindowID, "item_id": items.Items[0].ItemID}, nil)
	empty(s.codexOK("history/read_item", id, "", map[string]any{"window_id": windows.Windows[0].WindowID, "item_id": "no-such-item"}, nil), `"item":null`)
	s.codexOK("history/search_contents", id, "", map[string]any{"query": "the", "role": "assistant"}, nil)
	empty(s.codexOK("history/search_contents", id, "", map[string]any{"query": "no such text anywhere"}, nil), `"items":[]`)
	s.codexOK("notes/list_files_by_prefix", id, "", nil, nil)
	empty(s.codexOK("notes/list_files_by_prefix", id, "", map[string]any{"prefix": "/root/notes/no-such-dir/"}, nil), `"files":[]`)
	empty(s.codexOK("notes/read_file", id, "", map[string]any{"path": "missing.md"}, nil), `"file":null`)
	empty(s.codexOK("notes/search_contents", id, "", map[string]any{"query": "no such note text"}, nil), `"files":[]`)
	s.codexOK("notes/write_file", id, "", map[string]any{"path": "plan.md", "text": "- a\n"}, nil)
	s.codexOK("notes/append_to_file", id, "", map[string]any{"path": "plan.md", "text": "- b\n"}, nil)
	s.codexOK("notes/thread_hint", id, "", nil, nil)

	// A Local rollover, from the new_context result (42a59a75) to complete.
	base := "/v1/sessions/" + id + "/rollovers"
	var created struct {
		RolloverID string `json:"rollover_id"`
	}
	ok(s.post(base, map[string]any{"leaf_id": "42a59a75", "command_context_ready": true}), 200).decode(t, &created)
	rid := created.RolloverID
	ok(s.post(base+"/"+rid+"/settle", map[string]any{"leaf_id": "42a59a75"}), 200)
	var commit coordinator.CommitAnswer
	ok(s.post(base+"/"+rid+"/commit", map[string]any{}), 200).decode(t, &commit)
	b := commit.Append[0]
	line, err := json.Marshal(map[string]any{"type": b.Type, "customType": b.CustomType, "content": b.Content, "display": *b.Display,
		"details": b.Details, "id": "c0ffee01", "parentId": "42a59a75", "timestamp": "2026-07-07T16:38:48.093Z"})
	if err != nil {
		t.Fatal(err)
	}
	// Before the boundary is in the file: 202, waiting for it.
	ok(s.post(base+"/"+rid+"/complete", nil), 202)
	s.appendLine(rollTreeFile, line)
	ok(s.post(base+"/"+rid+"/complete", nil), 200)
	ok(s.get("/v1/sessions/"+id+"/windows/"+commit.Window.PreviousWindowID+"/cut"), 200)
	ok(s.get(base+"/"+rid), 200)
	ok(s.get(base), 200)
	ok(s.post(base, map[string]any{"command_context_ready": true}), 201).decode(t, &created)
	ok(s.post(base+"/"+created.RolloverID+"/abort", map[string]any{"reason": "test"}), 200)

	// Tree: the compaction summary.
	ok(s.register(treeID, "tree-multi.jsonl", contextd.ModeTree), 201)
	ok(s.post("/v1/sessions/"+treeID+"/compaction", map[string]any{}), 200)
	ok(s.get("/v1/index"), 200)
	ok(s.post("/v1/index/rebuild", nil), 200)
	ok(s.get("/v1/index"), 200)
	// Errors are problem documents (the default response).
	ok(s.get("/v1/sessions/no-such-session"), 404)
	ok(s.codex("history/read_item", id, "", map[string]any{"window_id": "w"}), 422)

	// Remote: every Codex route answers the backend's object.
	be := newHXBackend(t)
	hx := newHXStack(t, hxOptions{RemoteBase: be.URL + "/backend-api/codex"})
	hx.register(contextd.ModeRemote)
	for _, o := range hxOps {
		if r := hx.post(o.Path(), o.Body(hxSessionID), hxCodexHeaders()); r.Status != 200 || !bytes.Contains(r.Body, []byte("encrypted_output")) {
			t.Fatalf("remote %s: %d %s", o.Path(), r.Status, r.Body)
		}
	}

	// Every operation's default response: a problem document. A refused
	// Origin reaches every route (the security middleware), and an unknown
	// session every session route.
	for _, r := range d.Responses() {
		method, rest, _ := strings.Cut(r, " ")
		tpl, status, _ := strings.Cut(rest, " ")
		if status != "default" {
			continue
		}
		path := strings.NewReplacer("{session_id}", "no-such-session", "{rollover_id}", "no-such-rollover", "{window_id}", "no-such-window").Replace(tpl)
		var body any
		if method != http.MethodGet {
			body = map[string]any{}
		}
		if got := s.request(method, path, body, http.Header{"Origin": {"https://evil.example"}}); got.Status != http.StatusForbidden {
			t.Errorf("%s %s with a foreign Origin: %d, want 403", method, path, got.Status)
		}
	}

	emptySessionsMatchSpec(t, s)

	for _, r := range d.Responses() {
		if !d.Seen(r) {
			t.Errorf("%s was never answered in this test", r)
		}
	}
}

// emptySessionsMatchSpec drives every session route, through specChecked,
// for sessions without a rollover (Local and Tree, with a file) and for
// registered sessions whose file Pi has not written yet: every array the
// spec declares is answered as [] (case-17: GET …/rollovers answered
// "rollovers": null and the extension's /contextd ended in a TypeError).
func emptySessionsMatchSpec(t *testing.T, s *testServer) {
	t.Helper()
	b := newSessionBuilder("0195e000-0000-7000-8000-00000000e017")
	b.user("hello")
	b.assistant(map[string]any{"type": "text", "text": "hello back"})
	s.writeFile("no-rollovers.jsonl", b.bytes())
	sessions := []struct {
		id, file string
		mode     contextd.Mode
	}{
		{"0195e000-0000-7000-8000-00000000e017", "no-rollovers.jsonl", contextd.ModeLocal},
		{"0195e000-0000-7000-8000-00000000e117", "no-rollovers-tree.jsonl", contextd.ModeTree},
		{"0195e000-0000-7000-8000-00000000e217", "not-written-yet.jsonl", contextd.ModeLocal},
		{"0195e000-0000-7000-8000-00000000e317", "not-written-yet-tree.jsonl", contextd.ModeTree},
	}
	s.writeFile("no-rollovers-tree.jsonl", bytes.ReplaceAll(b.bytes(), []byte("e017"), []byte("e117")))
	for _, c := range sessions {
		if r := s.register(c.id, c.file, c.mode); r.Status != http.StatusCreated {
			t.Fatalf("register %s: %d %s", c.id, r.Status, r.Body)
		}
		base := "/v1/sessions/" + c.id
		has := func(r response, want ...string) {
			t.Helper()
			if r.Status != http.StatusOK {
				t.Errorf("%s: %d %s", c.file, r.Status, r.Body)
				return
			}
			for _, w := range want {
				if !bytes.Contains(r.Body, []byte(w)) {
					t.Errorf("%s: %s lacks %s", c.file, r.Body, w)
				}
			}
		}
		has(s.get(base+"/rollovers"), `"rollovers":[]`)
		has(s.get(base))
		has(s.post(base+"/context", map[string]any{}))
		has(s.post(base+"/windows", map[string]any{}))
		if strings.HasPrefix(c.file, "not-written-yet") {
			// The other routes read the file: 410 until Pi writes it
			// (validated as the default response).
			if r := s.get(base + "/branch"); r.Status != http.StatusGone {
				t.Errorf("%s: GET branch %d, want 410", c.file, r.Status)
			}
			continue
		}
		has(s.get(base + "/branch"))
		has(s.get(base+"/rollover_loop"), `"window_ids":[]`, `"windows":0`)
		has(s.codexOK("history/list_windows", c.id, "", nil, nil))
		has(s.codexOK("history/list_items", c.id, "", nil, nil), `"items":[`)
		has(s.codexOK("history/search_contents", c.id, "", map[string]any{"query": "no such text"}, nil), `"items":[]`)
		has(s.codexOK("notes/list_files_by_prefix", c.id, "", nil, nil), `"files":[]`)
		has(s.codexOK("notes/search_contents", c.id, "", map[string]any{"query": "x"}, nil), `"files":[]`)
		has(s.codexOK("notes/thread_hint", c.id, "", nil, nil))
	}
	if r := s.get("/v1/sessions"); r.Status != http.StatusOK || bytes.Contains(r.Body, []byte("null")) {
		t.Errorf("GET /v1/sessions: %d %.2000s (no null where the spec declares an array)", r.Status, r.Body)
	}
}

// TestSpecDocuments: the four served documents (3.1 and its 3.0.3
// downgrade, JSON and YAML) are the ones Spec* build, and the shapes the
// generators need are in both: servers, the nullable read_item item (3.1:
// anyOf with a null type; 3.0, which has no null type: allOf + nullable),
// no octet-stream request body, result arrays without null.
func TestSpecDocuments(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	for _, d := range []struct {
		path, contentType string
		build             func() ([]byte, error)
	}{
		{"/openapi.json", "application/openapi+json", SpecJSON},
		{"/openapi.yaml", "application/openapi+yaml", SpecYAML},
		{"/openapi-3.0.json", "application/openapi+json", Spec30JSON},
		{"/openapi-3.0.yaml", "application/openapi+yaml", Spec30YAML},
	} {
		want, err := d.build()
		if err != nil {
			t.Fatal(err)
		}
		r := s.get(d.path)
		if r.Status != http.StatusOK || r.Header.Get("Content-Type") != d.contentType || !bytes.Equal(r.Body, want) {
			t.Errorf("GET %s: %d %q, %d bytes; want the %d bytes Spec builds", d.path, r.Status, r.Header.Get("Content-Type"), len(r.Body), len(want))
		}
	}
	item := func(doc []byte) map[string]any {
		var v struct {
			OpenAPI    string `json:"openapi"`
			Servers    []struct{ URL string }
			Components struct {
				Schemas map[string]struct {
					Properties map[string]map[string]any
				}
			}
		}
		if err := json.Unmarshal(doc, &v); err != nil {
			t.Fatal(err)
		}
		if len(v.Servers) != 1 || v.Servers[0].URL != "http://127.0.0.1:7467" {
			t.Errorf("%s servers %+v", v.OpenAPI, v.Servers)
		}
		if items := v.Components.Schemas["HistoryItemsResult"].Properties["items"]; items["type"] != "array" {
			t.Errorf("%s: items type %v, want array (never null)", v.OpenAPI, items["type"])
		}
		return v.Components.Schemas["HistoryReadResult"].Properties["item"]
	}
	j31, _ := SpecJSON()
	j30, _ := Spec30JSON()
	ref := map[string]any{"$ref": "#/components/schemas/HistoryItemBody"}
	if got := item(j31); !reflect.DeepEqual(got["anyOf"], []any{ref, map[string]any{"type": "null"}}) {
		t.Errorf("3.1 item: %v", got)
	}
	if got := item(j30); !reflect.DeepEqual(got["allOf"], []any{ref}) || got["nullable"] != true || got["anyOf"] != nil {
		t.Errorf("3.0 item: %v", got)
	}
	for name, doc := range map[string][]byte{"3.1": j31, "3.0": j30} {
		if bytes.Contains(doc, []byte("octet-stream")) {
			t.Errorf("%s advertises application/octet-stream", name)
		}
	}
	if bytes.Contains(j30, []byte(`"type":"null"`)) {
		t.Error("the 3.0 document has a null type")
	}
}
