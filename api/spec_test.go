package api

// Every response the api tests receive is validated against the committed
// OpenAPI document (openapi/openapi.yaml) with a JSON Schema 2020-12
// validator (santhosh-tekuri/jsonschema; OpenAPI 3.1 schemas are 2020-12):
// newTestServer and newHXStack route their requests through specChecked.
// TestResponsesMatchSpec then drives every operation to a 2xx, Local and
// Remote, and checks each was seen.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"contextd"
	"contextd/coordinator"
)

// specDoc is the committed document, compiled once for all tests.
type specDoc struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	routes   []specRoute

	mu      sync.Mutex
	schemas map[string]*jsonschema.Schema
	seen    map[string]bool // "METHOD template status" answered 2xx
}

// specRoute is one path template and its matcher.
type specRoute struct {
	template string
	re       *regexp.Regexp
}

const specURL = "file:///contextd/openapi.json"

var loadSpecDoc = sync.OnceValues(func() (*specDoc, error) {
	raw, err := os.ReadFile("../openapi/openapi.yaml")
	if err != nil {
		return nil, err
	}
	var y any
	if err := yaml.Unmarshal(raw, &y); err != nil {
		return nil, err
	}
	j, err := json.Marshal(y)
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(specURL, doc); err != nil {
		return nil, err
	}
	d := &specDoc{doc: doc.(map[string]any), compiler: c, schemas: map[string]*jsonschema.Schema{}, seen: map[string]bool{}}
	for tpl := range d.doc["paths"].(map[string]any) {
		pat := regexp.MustCompile(`\\\{[a-z_]+\\\}`).ReplaceAllString(regexp.QuoteMeta(tpl), `[^/]+`)
		d.routes = append(d.routes, specRoute{template: tpl, re: regexp.MustCompile("^" + pat + "$")})
	}
	return d, nil
})

func specFor(tb testing.TB) *specDoc {
	tb.Helper()
	d, err := loadSpecDoc()
	if err != nil {
		tb.Fatalf("loading openapi/openapi.yaml: %v", err)
	}
	return d
}

// pointerPart escapes one JSON pointer token (RFC 6901).
func pointerPart(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// check validates one response to method urlPath against the spec. Paths
// the spec does not describe (/healthz, /metrics, /openapi.*, unknown
// routes) are not checked. It returns "" or what is wrong.
func (d *specDoc) check(method, urlPath string, status int, contentType string, body []byte) string {
	tpl := ""
	for _, r := range d.routes {
		if r.re.MatchString(urlPath) {
			tpl = r.template
			break
		}
	}
	if tpl == "" {
		return ""
	}
	m := strings.ToLower(method)
	op, ok := d.doc["paths"].(map[string]any)[tpl].(map[string]any)[m].(map[string]any)
	if !ok {
		return "" // 405 from the router: not an operation of the spec
	}
	responses := op["responses"].(map[string]any)
	code := strconv.Itoa(status)
	resp, ok := responses[code].(map[string]any)
	if !ok {
		code = "default"
		resp, ok = responses[code].(map[string]any)
	}
	if !ok {
		return fmt.Sprintf("%s %s: status %d is not documented", method, tpl, status)
	}
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if len(body) != 0 {
			return fmt.Sprintf("%s %s %d: a body where the spec documents none: %.200s", method, tpl, status, body)
		}
		return ""
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || content[mt] == nil {
		return fmt.Sprintf("%s %s %d: Content-Type %q, documented %v", method, tpl, status, contentType, keys(content))
	}
	ptr := "#/paths/" + pointerPart(tpl) + "/" + m + "/responses/" + code + "/content/" + pointerPart(mt) + "/schema"
	d.mu.Lock()
	sch := d.schemas[ptr]
	if sch == nil {
		sch, err = d.compiler.Compile(specURL + ptr)
		if err != nil {
			d.mu.Unlock()
			return fmt.Sprintf("compiling %s: %v", ptr, err)
		}
		d.schemas[ptr] = sch
	}
	if status >= 200 && status < 300 {
		d.seen[method+" "+tpl] = true
	}
	d.mu.Unlock()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Sprintf("%s %s %d: body is not JSON: %v: %.200s", method, tpl, status, err, body)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Sprintf("%s %s %d: the body does not match the spec: %v\nbody: %.1000s", method, tpl, status, err, body)
	}
	return ""
}

// operations lists "METHOD template" of every operation of the spec.
func (d *specDoc) operations() []string {
	var out []string
	for tpl, item := range d.doc["paths"].(map[string]any) {
		for m := range item.(map[string]any) {
			out = append(out, strings.ToUpper(m)+" "+tpl)
		}
	}
	sort.Strings(out)
	return out
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// specChecked wraps h: every response is validated against the spec, and a
// mismatch fails tb.
func specChecked(tb testing.TB, h http.Handler) http.Handler {
	d := specFor(tb)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if msg := d.check(r.Method, r.URL.Path, rec.Code, rec.Header().Get("Content-Type"), rec.Body.Bytes()); msg != "" {
			tb.Errorf("OpenAPI: %s", msg)
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
	ok(s.post("/v1/index/rebuild", nil), 200)
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

	d.mu.Lock()
	defer d.mu.Unlock()
	for _, op := range d.operations() {
		if !d.seen[op] {
			t.Errorf("%s was never answered with a 2xx in this test", op)
		}
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
