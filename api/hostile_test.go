package api

// Hostile input through the full middleware stack on a real loopback
// listener with HTTPServer's settings (docs/security.md): each request gets its
// pinned status, the answer is problem+json, the server stays up, and no
// hostile request reaches the index or changes a session file.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hxBodyTypes are the Go body types of the ten routes, by route.
var hxBodyTypes = map[string]reflect.Type{
	"/alpha/history/v2/list_windows":       reflect.TypeFor[ListWindowsBody](),
	"/alpha/history/v2/list_items":         reflect.TypeFor[ListItemsBody](),
	"/alpha/history/v2/read_item":          reflect.TypeFor[ReadItemBody](),
	"/alpha/history/v2/search_contents":    reflect.TypeFor[HistorySearchBody](),
	"/alpha/notes/v2/list_files_by_prefix": reflect.TypeFor[ListFilesBody](),
	"/alpha/notes/v2/read_file":            reflect.TypeFor[ReadFileBody](),
	"/alpha/notes/v2/search_contents":      reflect.TypeFor[NotesSearchBody](),
	"/alpha/notes/v2/append_to_file":       reflect.TypeFor[AppendBody](),
	"/alpha/notes/v2/write_file":           reflect.TypeFor[WriteBody](),
	"/alpha/notes/v2/thread_hint":          reflect.TypeFor[ThreadHintBody](),
}

// hxField is one JSON argument of a body: its dotted path under body
// (e.g. "limit", "context.session_id") and its Go kind.
type hxField struct {
	Path string
	Kind reflect.Kind
}

// hxFields lists every JSON field of t (embedded structs flattened,
// nested structs as dotted paths), so new arguments are covered without
// editing the test.
func hxFields(t reflect.Type, prefix string) []hxField {
	var out []hxField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if f.Anonymous && ft.Kind() == reflect.Struct {
			out = append(out, hxFields(ft, prefix)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		if ft.Kind() == reflect.Struct {
			out = append(out, hxFields(ft, prefix+name+".")...)
			continue
		}
		out = append(out, hxField{Path: prefix + name, Kind: ft.Kind()})
	}
	return out
}

// hxWith returns body (a JSON object) with the dotted path set to raw JSON.
func hxWith(tb testing.TB, body []byte, path string, raw string) []byte {
	tb.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		tb.Fatal(err)
	}
	head, rest, nested := strings.Cut(path, ".")
	if nested {
		inner := m[head]
		if inner == nil {
			inner = json.RawMessage(`{}`)
		}
		m[head] = hxWith(tb, inner, rest, raw)
	} else {
		m[head] = json.RawMessage(raw)
	}
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatalf("set %s to %s: %v", path, raw, err)
	}
	return b
}

// hxCase is one hostile request and its pinned answer.
type hxCase struct {
	name   string
	method string
	path   string
	body   []byte
	hdr    map[string]string
	status int
	detail string // substring of the problem detail ("" = any)
	loc    string // an errors[].location that must be present ("" = none required)
}

func TestHostileInputs(t *testing.T) {
	s := newHXStack(t, hxOptions{Serve: true})
	sum := s.sha()
	valid := func(route string) []byte {
		for _, o := range hxOps {
			if o.Path() == route {
				return o.Body(hxSessionID)
			}
		}
		t.Fatalf("no route %s", route)
		return nil
	}
	lw := "/alpha/history/v2/list_windows"
	// Nesting beyond encoding/json's depth limit (10,000) cannot go
	// through hxWith, which re-encodes with encoding/json.
	ctxJSON := `"context":{"session_id":"` + hxSessionID + `"}`
	deep := []byte(`{"limit":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "," + ctxJSON + "}")
	deepObj := []byte(`{"bogus":` + strings.Repeat(`{"a":`, 100000) + "1" + strings.Repeat("}", 100000) + "," + ctxJSON + "}")
	cases := []hxCase{
		// Security middleware.
		{name: "missing token", path: lw, body: valid(lw), hdr: map[string]string{TokenHeader: ""}, status: 401, detail: "Missing or wrong X-Contextd-Token"},
		{name: "wrong token", path: lw, body: valid(lw), hdr: map[string]string{TokenHeader: strings.Repeat("x", len(hxToken))}, status: 401, detail: "Missing or wrong X-Contextd-Token"},
		{name: "token prefix", path: lw, body: valid(lw), hdr: map[string]string{TokenHeader: hxToken[:len(hxToken)-1]}, status: 401},
		{name: "token plus a byte", path: lw, body: valid(lw), hdr: map[string]string{TokenHeader: hxToken + "x"}, status: 401},
		{name: "token in Authorization only", path: lw, body: valid(lw), hdr: map[string]string{TokenHeader: "", "Authorization": "Bearer " + hxToken}, status: 401},
		{name: "foreign Host", path: lw, body: valid(lw), hdr: map[string]string{"Host": "evil.example"}, status: 421, detail: "is not a loopback address"},
		{name: "rebinding Host", path: lw, body: valid(lw), hdr: map[string]string{"Host": "127.0.0.1.nip.io:7467"}, status: 421},
		{name: "localhost-prefixed Host", path: lw, body: valid(lw), hdr: map[string]string{"Host": "localhost.evil.example"}, status: 421},
		{name: "foreign Host on healthz", method: http.MethodGet, path: "/healthz", hdr: map[string]string{"Host": "evil.example"}, status: 421},
		{name: "Origin not allowed", path: lw, body: valid(lw), hdr: map[string]string{"Origin": "https://evil.example"}, status: 403, detail: "is not allowed"},
		{name: "Origin null", path: lw, body: valid(lw), hdr: map[string]string{"Origin": "null"}, status: 403},
		{name: "text/plain", path: lw, body: valid(lw), hdr: map[string]string{"Content-Type": "text/plain"}, status: 415, detail: "send the body as application/json"},
		{name: "form", path: lw, body: []byte("limit=1"), hdr: map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, status: 415},
		{name: "multipart", path: lw, body: valid(lw), hdr: map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, status: 415},
		{name: "no Content-Type", path: lw, body: valid(lw), hdr: map[string]string{"Content-Type": ""}, status: 415},
		{name: "garbled Content-Type", path: lw, body: valid(lw), hdr: map[string]string{"Content-Type": "application/json; ;;="}, status: 415},
		{name: "+json suffix type unknown to huma", path: lw, body: valid(lw), hdr: map[string]string{"Content-Type": "application/merge-patch+json"}, status: 200},
		{name: "body over MaxBodyBytes", path: lw, body: append(append([]byte(`{"x":"`), bytes.Repeat([]byte("a"), DefaultMaxBodyBytes)...), `"}`...), status: 413, detail: "send at most 8388608 bytes"},
		{name: "unknown route", path: "/alpha/history/v2/delete_everything", body: valid(lw), status: 404, detail: "No route POST /alpha/history/v2/delete_everything"},
		{name: "unknown namespace", path: "/alpha/memory/v2/read_file", body: valid(lw), status: 404},
		{name: "path traversal", method: http.MethodGet, path: "/alpha/../v1/sessions/../../etc/passwd", status: 404},
		{name: "GET on a POST route", method: http.MethodGet, path: lw, status: 405, detail: "Method GET is not allowed"},

		// Body decoding.
		{name: "empty body", path: lw, body: []byte{}, status: 400, detail: "request body is required"},
		{name: "JSON null", path: lw, body: []byte("null"), status: 422},
		{name: "JSON array", path: lw, body: []byte(`[{"context":{"session_id":"x"}}]`), status: 422, loc: "body"},
		{name: "JSON string", path: lw, body: []byte(`"hello"`), status: 422, loc: "body"},
		{name: "truncated JSON", path: lw, body: []byte(`{"context":{"session_id":`), status: 400, detail: "unexpected end of JSON input"},
		{name: "trailing garbage", path: lw, body: append(valid(lw), " x"...), status: 400},
		{name: "two objects", path: lw, body: append(valid(lw), valid(lw)...), status: 400},
		{name: "100k nested arrays in a field", path: lw, body: deep, status: 400, detail: "exceeded max depth"},
		{name: "100k nested objects", path: lw, body: deepObj, status: 400, detail: "exceeded max depth"},
		{name: "invalid UTF-8 in a string", path: "/alpha/history/v2/search_contents", body: []byte("{\"query\":\"a\xff\xfeb\",\"context\":{\"session_id\":\"" + hxSessionID + "\"}}"), status: 400, detail: "not valid UTF-8"},
		{name: "invalid UTF-8 under a +json type", path: "/alpha/history/v2/search_contents", body: []byte("{\"query\":\"\xff\",\"context\":{\"session_id\":\"" + hxSessionID + "\"}}"), hdr: map[string]string{"Content-Type": "application/merge-patch+json"}, status: 400, detail: "not valid UTF-8"},
		{name: "overlong UTF-8 slash", path: "/alpha/notes/v2/read_file", body: []byte("{\"path\":\"..\xc0\xafetc\",\"context\":{\"session_id\":\"" + hxSessionID + "\"}}"), status: 400, detail: "not valid UTF-8"},
		{name: "invalid UTF-8 in a key", path: lw, body: []byte("{\"lim\xffit\":1,\"context\":{\"session_id\":\"" + hxSessionID + "\"}}"), status: 400, detail: "not valid UTF-8"},
		{name: "duplicate key", path: lw, body: []byte(`{"limit":1,"limit":"x","context":{"session_id":"` + hxSessionID + `"}}`), status: 422, loc: "body.limit", detail: `duplicate member name "limit"`},
		{name: "missing context", path: lw, body: []byte(`{"limit":1}`), status: 422, loc: "body", detail: "required property context"},
		{name: "empty session_id", path: lw, body: hxWith(t, valid(lw), "context.session_id", `""`), status: 422, loc: "body.context.session_id"},
		{name: "session_id over 256", path: lw, body: hxWith(t, valid(lw), "context.session_id", `"`+strings.Repeat("s", 257)+`"`), status: 422, loc: "body.context.session_id"},
		{name: "agent name over 1024", path: lw, body: hxWith(t, valid(lw), "context.current_agent_name", `"/root/`+strings.Repeat("a", 1024)+`"`), status: 422, loc: "body.context.current_agent_name"},
		{name: "missing item_id", path: "/alpha/history/v2/read_item", body: []byte(`{"window_id":"w","context":{"session_id":"` + hxSessionID + `"}}`), status: 422, loc: "body", detail: "required property item_id"},
		{name: "missing text", path: "/alpha/notes/v2/write_file", body: []byte(`{"path":"a.md","context":{"session_id":"` + hxSessionID + `"}}`), status: 422, loc: "body", detail: "required property text"},
		{name: "bad enum", path: "/alpha/notes/v2/list_files_by_prefix", body: hxWith(t, valid("/alpha/notes/v2/list_files_by_prefix"), "file_order_by", `"size"`), status: 422, loc: "body.file_order_by"},
		{name: "float for an integer", path: lw, body: hxWith(t, valid(lw), "limit", `2.5`), status: 422, loc: "body.limit"},
	}

	// Wrong types, unknown fields and huge integers for every argument of
	// every route.
	for route, typ := range hxBodyTypes {
		base := valid(route)
		for _, f := range hxFields(typ, "") {
			var wrong []string
			switch f.Kind {
			case reflect.String:
				wrong = []string{`12345`, `true`, `{}`, `["a"]`}
			case reflect.Int, reflect.Int64:
				wrong = []string{`"7"`, `true`, `[1]`, `{}`}
			case reflect.Bool:
				wrong = []string{`"true"`, `1`, `[]`}
			default:
				t.Fatalf("%s %s: no wrong values for kind %s; extend the test", route, f.Path, f.Kind)
			}
			for _, w := range wrong {
				cases = append(cases, hxCase{name: fmt.Sprintf("%s %s=%s", route, f.Path, w), path: route, body: hxWith(t, base, f.Path, w),
					status: 422, detail: "body." + f.Path, loc: "body." + f.Path})
			}
			if f.Kind == reflect.Int || f.Kind == reflect.Int64 {
				// Whole numbers pass the schema's integer check but do not
				// fit Go's int64: 422 from decoding (no clamp), naming the
				// field. 1e400 is not even a float64: 400.
				for _, huge := range []string{`1e30`, `9223372036854775808`, `-9223372036854775809`, `-1e30`} {
					cases = append(cases, hxCase{name: fmt.Sprintf("%s %s=%s", route, f.Path, huge), path: route, body: hxWith(t, base, f.Path, huge),
						status: 422, detail: "body." + f.Path, loc: "body." + f.Path})
				}
				cases = append(cases, hxCase{name: fmt.Sprintf("%s %s=1e400", route, f.Path), path: route, body: hxWith(t, base, f.Path, `1e400`), status: 400})
			}
		}
		cases = append(cases,
			hxCase{name: route + " unknown field", path: route, body: hxWith(t, base, "bogus", `1`), status: 422, detail: "body.bogus", loc: "body.bogus"},
			hxCase{name: route + " unknown context field", path: route, body: hxWith(t, base, "context.bogus", `"x"`), status: 422, loc: "body.context.bogus"},
			hxCase{name: route + " context not an object", path: route, body: hxWith(t, base, "context", `"s"`), status: 422, loc: "body.context"},
		)
	}

	for _, tc := range cases {
		method := tc.method
		if method == "" {
			method = http.MethodPost
		}
		r := s.do(s.newReq(method, tc.path, tc.body, tc.hdr))
		if r.Status != tc.status {
			t.Errorf("%s: status %d, want %d; body %.400s", tc.name, r.Status, tc.status, r.Body)
			continue
		}
		if r.Status == http.StatusOK {
			continue
		}
		p := r.problem(t)
		if tc.detail != "" && !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("%s: detail %q lacks %q", tc.name, p.Detail, tc.detail)
		}
		if tc.loc != "" {
			found := false
			for _, e := range p.Errors {
				found = found || e.Location == tc.loc
			}
			if !found {
				t.Errorf("%s: errors %+v lack location %q", tc.name, p.Errors, tc.loc)
			}
		}
	}
	if s.sha() != sum {
		t.Error("a hostile request changed the session file")
	}
	hxCheckServerUp(t, s)
}

// TestHostileNothingIndexed: every refused request above is refused
// before the coordinator: after all of them the index knows no session.
func TestHostileNothingIndexed(t *testing.T) {
	s := newHXStack(t, hxOptions{Serve: true})
	sum := s.sha()
	lw := "/alpha/history/v2/list_windows"
	body := hxOps[0].Body(hxSessionID)
	for _, r := range []*http.Request{
		s.newReq(http.MethodPost, lw, body, map[string]string{TokenHeader: ""}),
		s.newReq(http.MethodPost, lw, body, map[string]string{"Host": "evil.example"}),
		s.newReq(http.MethodPost, lw, body, map[string]string{"Origin": "https://evil.example"}),
		s.newReq(http.MethodPost, lw, body, map[string]string{"Content-Type": "text/plain"}),
		s.newReq(http.MethodPost, lw, hxWith(t, body, "limit", `"x"`), nil),
		s.newReq(http.MethodPost, lw, hxWith(t, body, "limit", `1e30`), nil),
		s.newReq(http.MethodPost, lw, hxWith(t, body, "bogus", `1`), nil),
		s.newReq(http.MethodPost, lw, []byte(`{"limit":`+strings.Repeat("[", 20000)+strings.Repeat("]", 20000)+`,"context":{"session_id":"`+hxSessionID+`"}}`), nil),
		s.newReq(http.MethodPost, "/alpha/history/v2/search_contents", []byte("{\"query\":\"\xff\",\"context\":{\"session_id\":\""+hxSessionID+"\"}}"), nil),
		s.newReq(http.MethodPost, lw, bytes.Repeat([]byte(" "), DefaultMaxBodyBytes+1), nil),
	} {
		if got := s.do(r); got.Status < 400 || got.Status >= 500 {
			t.Errorf("%s %s: status %d, want a 4xx", r.Method, r.URL.Path, got.Status)
		}
	}
	for _, raw := range hxRawHostile(s) {
		hxRaw(t, s, raw.req)
	}
	if n, e := s.entries(); n != 0 || e != 0 {
		t.Errorf("hostile requests reached the index: %d sessions, %d entries", n, e)
	}
	if s.sha() != sum {
		t.Error("session file changed")
	}
	// Control: a valid request does index the session.
	if r := s.post(lw, body, nil); r.Status != http.StatusOK {
		t.Fatalf("valid request: %d %s", r.Status, r.Body)
	}
	if n, e := s.entries(); n != 1 || e == 0 {
		t.Errorf("after a valid request the index has %d sessions, %d entries; want 1 and > 0", n, e)
	}
}

// hxRawCase is a request written byte by byte on a fresh connection.
type hxRawCase struct {
	name   string
	req    string
	status int
}

func hxRawHostile(s *hxStack) []hxRawCase {
	host := strings.TrimPrefix(s.URL, "http://")
	body := string(hxOps[0].Body(hxSessionID))
	return []hxRawCase{
		// Go's server counts the request line against MaxHeaderBytes
		// (64 KiB in HTTPServer): 431, before any handler runs.
		{"1 MB query string", "GET /healthz?q=" + strings.Repeat("a", 1<<20) + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n", 431},
		{"1 MB path", "GET /" + strings.Repeat("a", 1<<20) + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n", 431},
		{"100 KiB header", "GET /healthz HTTP/1.1\r\nHost: " + host + "\r\nX-Big: " + strings.Repeat("b", 100<<10) + "\r\n\r\n", 431},
		{"10,000 headers", "GET /healthz HTTP/1.1\r\nHost: " + host + "\r\n" + strings.Repeat("X-A: b\r\n", 10000) + "\r\n", 431},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400},
		{"two Hosts", "GET /healthz HTTP/1.1\r\nHost: " + host + "\r\nHost: evil.example\r\n\r\n", 400},
		{"bad request line", "GET\r\n\r\n", 400},
		{"HTTP/0.9-style", "GET /healthz\r\n\r\n", 400},
		{"CL and TE", "POST /alpha/history/v2/list_windows HTTP/1.1\r\nHost: " + host + "\r\n" + TokenHeader + ": " + hxToken + "\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
		{"two Content-Lengths", "POST /alpha/history/v2/list_windows HTTP/1.1\r\nHost: " + host + "\r\n" + TokenHeader + ": " + hxToken + "\r\nContent-Type: application/json\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n{}", 400},
		{"negative Content-Length", "POST /alpha/history/v2/list_windows HTTP/1.1\r\nHost: " + host + "\r\n" + TokenHeader + ": " + hxToken + "\r\nContent-Type: application/json\r\nContent-Length: -1\r\n\r\n{}", 400},
		{"huge Content-Length", "POST /alpha/history/v2/list_windows HTTP/1.1\r\nHost: " + host + "\r\n" + TokenHeader + ": " + hxToken + "\r\nContent-Type: application/json\r\nContent-Length: 99999999999999999\r\n\r\n{}", 413},
		{"malformed chunked body", "POST /alpha/history/v2/list_windows HTTP/1.1\r\nHost: " + host + "\r\n" + TokenHeader + ": " + hxToken + "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n" + body + "\r\n0\r\n\r\n", 400},
		{"chunked body over MaxBodyBytes", "POST /alpha/history/v2/list_windows HTTP/1.1\r\nHost: " + host + "\r\n" + TokenHeader + ": " + hxToken + "\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" +
			fmt.Sprintf("%x\r\n", DefaultMaxBodyBytes+10) + strings.Repeat(" ", DefaultMaxBodyBytes+10) + "\r\n0\r\n\r\n", 413},
		{"body shorter than Content-Length", "POST /alpha/history/v2/list_windows HTTP/1.1\r\nHost: " + host + "\r\n" + TokenHeader + ": " + hxToken + "\r\nContent-Type: application/json\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n" + body, 400},
	}
}

// hxRaw writes raw on a new connection and returns the response status,
// or -1 when the server closed the connection without one.
func hxRaw(t *testing.T, s *hxStack, raw string) (int, []byte) {
	t.Helper()
	c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.URL, "http://"), 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		// The server may answer before reading everything; a write error
		// then is expected.
		io.WriteString(c, raw)
		if cw, ok := c.(*net.TCPConn); ok && strings.Contains(raw, "Content-Length: 100000") {
			cw.CloseWrite()
		}
	}()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return -1, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestHostileRawRequests(t *testing.T) {
	s := newHXStack(t, hxOptions{Serve: true})
	sum := s.sha()
	for _, tc := range hxRawHostile(s) {
		got, body := hxRaw(t, s, tc.req)
		if got != tc.status {
			t.Errorf("%s: status %d, want %d; body %.300s", tc.name, got, tc.status, body)
		}
	}
	if n, _ := s.entries(); n != 0 {
		t.Errorf("raw hostile requests reached the index: %d sessions", n)
	}
	if s.sha() != sum {
		t.Error("session file changed")
	}
	hxCheckServerUp(t, s)
	m := s.metricsText()
	if strings.Contains(m, `code="500"`) {
		t.Errorf("a hostile request got a 500:\n%s", m)
	}
}

// hxCheckServerUp requires /healthz to answer 200 within 5 s.
func hxCheckServerUp(t *testing.T, s *hxStack) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	cl := &http.Client{Timeout: time.Second}
	for {
		resp, err := cl.Get(s.URL + "/healthz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 && string(b) == `{"status":"ok"}` {
				return
			}
			err = fmt.Errorf("status %d %s", resp.StatusCode, b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("server not healthy: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestHostileConnectionFlood opens 10,000 loopback connections at once
// against a server capped at 64 (LimitListener). The cap holds (never more
// than 64 connections served at once), the excess waits in the accept
// queue or is refused by the kernel, nothing crashes, and once the flood
// ends /healthz answers and a burst of 2,000 requests is served in full.
func TestHostileConnectionFlood(t *testing.T) {
	const (
		capConns = 64
		flood    = 10000
		dialers  = 1000 // goroutines; the race detector allows 8128
	)
	start := time.Now()
	// Count open accepted connections under LimitListener: a connection
	// counts from Accept to its Close.
	cl := &hxCountingListener{}
	s := newHXStack(t, hxOptions{Serve: true, MaxConns: capConns,
		Server: func(hs *http.Server) { hs.ReadHeaderTimeout = time.Second },
		Wrap:   func(l net.Listener) net.Listener { cl.Listener = l; return cl }})
	maxActive := &cl.max
	addr := strings.TrimPrefix(s.URL, "http://")

	// Phase 1: hold 10,000 connections open at once.
	var (
		mu        sync.Mutex
		held      []net.Conn
		refused   atomic.Int64 // timed out or refused by the kernel
		otherErrs atomic.Int64
	)
	next := atomic.Int64{}
	// Time budget: dialing stops after 10 s whatever the machine's load,
	// so the whole test stays well under 20 s plus the burst.
	phase1End := time.Now().Add(10 * time.Second)
	var late atomic.Int64
	var wg sync.WaitGroup
	for range dialers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= flood {
				if time.Now().After(phase1End) {
					late.Add(1) // time budget spent: not dialed
					continue
				}
				c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
				if err != nil {
					var ne net.Error
					if errors.As(err, &ne) && ne.Timeout() || strings.Contains(err.Error(), "refused") {
						refused.Add(1)
					} else {
						otherErrs.Add(1)
					}
					continue
				}
				mu.Lock()
				held = append(held, c)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("flood: %d connections open at once, %d refused or timed out by the kernel, %d other dial errors, %d not dialed (time budget), server max %d active, in %v",
		len(held), refused.Load(), otherErrs.Load(), late.Load(), maxActive.Load(), time.Since(start))
	if len(held) <= capConns {
		t.Errorf("only %d connections established; the flood did not exceed the cap %d", len(held), capConns)
	}
	if got := int(refused.Load()+otherErrs.Load()+late.Load()) + len(held); got != flood {
		t.Errorf("accounted %d dials, want %d", got, flood)
	}
	if m := maxActive.Load(); m > capConns {
		t.Errorf("server had %d connections at once, cap %d", m, capConns)
	}

	// Phase 2: end the flood; the server recovers.
	for _, c := range held {
		c.(*net.TCPConn).SetLinger(0) // reset, leave no TIME_WAIT behind
		c.Close()
	}
	hxCheckServerUp(t, s)
	t.Logf("healthy again at %v", time.Since(start))

	// Phase 3: 2,000 real requests from 200 clients at once: all queued and
	// served, none refused.
	var ok, bad atomic.Int64
	jobs := atomic.Int64{}
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			for jobs.Add(1) <= 2000 {
				resp, err := cl.Get(s.URL + "/healthz")
				if err != nil {
					if bad.Add(1) < 5 {
						t.Logf("burst error: %v", err)
					}
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					ok.Add(1)
				} else {
					bad.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("burst served at %v", time.Since(start))
	if ok.Load() != 2000 || bad.Load() != 0 {
		t.Errorf("burst: %d ok, %d failed; want 2000 ok", ok.Load(), bad.Load())
	}
	if m := maxActive.Load(); m > capConns {
		t.Errorf("server had %d connections at once, cap %d", m, capConns)
	}
	if strings.Contains(s.metricsText(), `code="5`) {
		t.Error("the flood produced a 5xx")
	}
}

// hxCountingListener counts its open accepted connections and the most
// open at once.
type hxCountingListener struct {
	net.Listener
	open, max atomic.Int64
}

func (l *hxCountingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.open.Add(1)
	for m := l.max.Load(); n > m && !l.max.CompareAndSwap(m, n); m = l.max.Load() {
	}
	return &hxCountedConn{Conn: c, l: l}, nil
}

type hxCountedConn struct {
	net.Conn
	once sync.Once
	l    *hxCountingListener
}

func (c *hxCountedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}

// TestLimitListener pins the listener's semantics without HTTP.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if LimitListener(inner, 0, nil) != inner {
		t.Error("LimitListener(l, 0, nil) must return l unchanged")
	}
	l := LimitListener(inner, 2, nil)
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
		}
	}()
	var clients []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	a1, a2 := <-accepted, <-accepted
	select {
	case <-accepted:
		t.Fatal("a third connection was accepted while 2 were open")
	case <-time.After(200 * time.Millisecond):
	}
	a1.Close()
	a1.Close() // a second Close must not free a second slot
	select {
	case c := <-accepted:
		defer c.Close()
	case <-time.After(2 * time.Second):
		t.Fatal("the queued connection was not accepted after a slot was freed")
	}
	c4, _ := net.Dial("tcp", inner.Addr().String())
	defer c4.Close()
	select {
	case <-accepted:
		t.Fatal("double Close freed two slots")
	case <-time.After(200 * time.Millisecond):
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case _, open := <-accepted:
		if open {
			t.Error("Accept returned a connection after Close")
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not wake the waiting Accept")
	}
	a2.Close()
	for _, c := range clients {
		c.Close()
	}
}
