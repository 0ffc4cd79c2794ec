package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestFindDuplicateKey: the first repeated member name in document order,
// with huma's location syntax; the same name in different objects, or
// differing in case, is no duplicate.
func TestFindDuplicateKey(t *testing.T) {
	for _, tc := range []struct{ body, name, loc string }{
		{`{"a":1,"b":2}`, "", ""},
		{`{"a":1,"a":2}`, "a", "body.a"},
		{`{"a":{"x":1},"b":{"x":2}}`, "", ""},
		{`{"a":1,"A":2}`, "", ""},
		{` { "c" : { "s" : "1" , "s" : "2" } } `, "s", "body.c.s"},
		{`{"a":1,"\u0061":2}`, "a", "body.a"},
		{`{"x":[{"k":1},{"k":2,"k":3}]}`, "k", "body.x[1].k"},
		{`{"t":"q\"a\\","a":"\"a\":","a":0}`, "a", "body.a"},
		{`{"":1,"":2}`, "", "body."},
		{`{"n":[1,2.5e3,true,null,"s",[],{}],"n":0}`, "n", "body.n"},
		{`[{"a":1},{"b":1,"b":1}]`, "b", "body[1].b"},
		{`{"m\u00e9":1,"mé":2}`, "mé", "body.mé"},
	} {
		if !json.Valid([]byte(tc.body)) {
			t.Fatalf("%s: not valid JSON", tc.body)
		}
		e := findDuplicateKey([]byte(tc.body))
		switch {
		case tc.loc == "" && e != nil:
			t.Errorf("%s: found %+v, want none", tc.body, e)
		case tc.loc != "" && (e == nil || e.Name != tc.name || e.Location != tc.loc):
			t.Errorf("%s: found %+v, want %q at %s", tc.body, e, tc.name, tc.loc)
		}
	}
	// An object of more members than smallObject switches to a map.
	var b strings.Builder
	b.WriteString(`{`)
	for i := 0; i < 40; i++ {
		b.WriteString(`"k` + strconv.Itoa(i) + `":1,`)
	}
	b.WriteString(`"k2":2}`)
	if e := findDuplicateKey([]byte(b.String())); e == nil || e.Name != "k2" || e.Location != "body.k2" {
		t.Errorf("large object: %+v", e)
	}
}

// TestDuplicateKeyRefused: a request body with a repeated member name is
// refused with 422 naming the name and its location, on every route huma
// decodes (a Codex mirror, a registration), and before Remote forwards it.
func TestDuplicateKeyRefused(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	b := newSessionBuilder("dups")
	b.boundary(0, "w0", "w0", "")
	s.writeFile("dups.jsonl", b.bytes())
	for _, tc := range []struct{ method, path, body, loc, name string }{
		{"POST", "/alpha/notes/v2/write_file", `{"path":"a.md","text":"x","path":"b.md","context":{"session_id":"dups"}}`, "body.path", "path"},
		{"POST", "/alpha/notes/v2/read_file", `{"path":"a.md","context":{"session_id":"dups","session_id":"other"}}`, "body.context.session_id", "session_id"},
		{"POST", "/alpha/history/v2/list_windows", `{"limit":1,"lim\u0069t":2,"context":{"session_id":"dups"}}`, "body.limit", "limit"},
		{"PUT", "/v1/sessions/dups", `{"session_file":"dups.jsonl","mode":"local","mode":"tree"}`, "body.mode", "mode"},
	} {
		r := s.request(tc.method, tc.path, json.RawMessage(tc.body), nil)
		if r.Status != http.StatusUnprocessableEntity {
			t.Errorf("%s %s: status %d, want 422; body %s", tc.method, tc.body, r.Status, r.Body)
			continue
		}
		p := r.problem(t)
		want := `Invalid request: ` + tc.loc + `: duplicate member name "` + tc.name + `" (each name may appear once in an object; send it once, with the value you mean).`
		if p.Detail != want || len(p.Errors) != 1 || p.Errors[0].Location != tc.loc {
			t.Errorf("%s: detail %q errors %+v\nwant %q at %s", tc.body, p.Detail, p.Errors, want, tc.loc)
		}
	}
	// The same name in two objects is fine.
	s.codexOK("notes/write_file", "dups", "", map[string]any{"path": "a.md", "text": "x"}, nil)
}

// BenchmarkDuplicateKeyCheck compares the scan for duplicate names with
// the decode it follows (encoding/json into an any, huma's validation
// parse) for 64 KiB bodies: a note write (one long text) and one of many
// small members (an array of 1,000 objects).
func BenchmarkDuplicateKeyCheck(b *testing.B) {
	note, _ := json.Marshal(map[string]any{"path": "plan.md", "text": strings.Repeat("- a line of the plan, with \"quotes\" and \\ slashes\n", 1290), "context": map[string]any{"session_id": "s1"}})
	var objs []map[string]any
	for i := 0; len(objs) < 1000; i++ {
		objs = append(objs, map[string]any{"id": i, "name": "entry", "kind": "custom", "ok": true})
	}
	many, _ := json.Marshal(map[string]any{"items": objs, "pad": strings.Repeat("x", 65536-37*1000-30)})
	for _, c := range []struct {
		name string
		body []byte
	}{{"note", note}, {"objects", many}} {
		b.Run(c.name+"/decode", func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				var v any
				if err := json.Unmarshal(c.body, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(c.name+"/dupcheck", func(b *testing.B) {
			b.SetBytes(int64(len(c.body)))
			for b.Loop() {
				if e := findDuplicateKey(c.body); e != nil {
					b.Fatal(e)
				}
			}
		})
	}
}
