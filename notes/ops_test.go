package notes

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"contextd"
)

func ptr[T any](v T) *T { return &v }

// t0 is 2026-07-06T12:47:08.114Z.
const t0 int64 = 1783342028114

// testState builds a state from (action, path, text, ts) events.
func testState(t *testing.T, evs ...Event) *State {
	t.Helper()
	for i := range evs {
		if evs[i].EntryID == "" {
			evs[i].EntryID = fmt.Sprintf("e%d", i)
		}
	}
	s := Replay(evs)
	if len(s.Skipped) > 0 {
		t.Fatalf("skipped: %v", s.Skipped)
	}
	return s
}

func w(path, text string, ts int64) Event {
	return Event{Action: ActionWrite, Path: path, Text: text, Timestamp: ts}
}

func a(path, text string, ts int64) Event {
	return Event{Action: ActionAppend, Path: path, Text: text, Timestamp: ts}
}

func asError(t *testing.T, err error, code contextd.Code, msg string) {
	t.Helper()
	var ne *contextd.Error
	if !errors.As(err, &ne) || ne.Code != code || ne.Message != msg {
		t.Fatalf("err = %#v, want *contextd.Error{%s, %q}", err, code, msg)
	}
}

func TestBound(t *testing.T) {
	tests := []struct {
		v    *int
		want int
	}{
		{nil, 20}, {ptr(-5), 20}, {ptr(0), 20}, {ptr(1), 1}, {ptr(20), 20}, {ptr(99), 99}, {ptr(100), 100}, {ptr(101), 100}, {ptr(1 << 62), 100},
	}
	for _, tt := range tests {
		if got := Bound(tt.v, 20, 100); got != tt.want {
			t.Errorf("Bound(%v) = %d, want %d", tt.v, got, tt.want)
		}
	}
}

func manyFiles(t *testing.T, n int) *State {
	var evs []Event
	for i := range n {
		evs = append(evs, w(fmt.Sprintf("/root/notes/f%03d.md", i), fmt.Sprintf("needle %d\n", i), t0+int64(i)))
	}
	return testState(t, evs...)
}

func TestListBounds(t *testing.T) {
	s := manyFiles(t, 150)
	tests := []struct {
		v    *int
		want int
	}{{nil, 20}, {ptr(-1), 20}, {ptr(0), 20}, {ptr(1), 1}, {ptr(57), 57}, {ptr(100), 100}, {ptr(101), 100}, {ptr(1_000_000), 100}}
	for _, tt := range tests {
		res, err := ListFilesByPrefix(s, "", ListFilesByPrefixArgs{MaxResults: tt.v})
		if err != nil || len(res.Files) != tt.want {
			t.Errorf("max_results %v: %d files, %v; want %d", tt.v, len(res.Files), err, tt.want)
		}
	}
}

func TestSearchBounds(t *testing.T) {
	s := manyFiles(t, 150)
	for _, tt := range []struct {
		v    *int
		want int
	}{{nil, 20}, {ptr(-3), 20}, {ptr(0), 20}, {ptr(2), 2}, {ptr(100), 100}, {ptr(5000), 100}} {
		res, err := SearchContents(s, "", SearchArgs{Query: "needle", MaxFiles: tt.v})
		if err != nil || len(res.Files) != tt.want {
			t.Errorf("max_files %v: %d files, %v; want %d", tt.v, len(res.Files), err, tt.want)
		}
	}
	text := strings.Repeat("x needle\n", 300)
	s2 := testState(t, w("/root/notes/big.md", text, t0))
	for _, tt := range []struct {
		v    *int
		want int
	}{{nil, 20}, {ptr(-1), 20}, {ptr(0), 20}, {ptr(3), 3}, {ptr(100), 100}, {ptr(101), 100}} {
		res, err := SearchContents(s2, "", SearchArgs{Query: "needle", MaxMatchesPerFile: tt.v})
		if err != nil || len(res.Files) != 1 || len(res.Files[0].Matches) != tt.want {
			t.Errorf("max_matches_per_file %v: %+v, %v; want %d", tt.v, res, err, tt.want)
		}
	}
}

func TestListOrderAndPrefix(t *testing.T) {
	s := testState(t,
		w("/root/notes/b.md", "bb", t0+10),
		w("/root/notes/a.md", "a", t0+20),
		w("/root/notes/c.md", "ccc", t0+20),
		a("/root/notes/b.md", "!", t0+30),
		w("/root/notes_backup/notes/z.md", "z", t0),
		w("/root/worker/notes/w.md", "w", t0),
		w("/root/notes/drafts/d.md", "d", t0+5),
	)
	paths := func(res ListResult) string {
		var p []string
		for _, f := range res.Files {
			p = append(p, strings.TrimPrefix(f.Path, "/root/notes/"))
		}
		return strings.Join(p, ",")
	}
	tests := []struct {
		args ListFilesByPrefixArgs
		want string
	}{
		{ListFilesByPrefixArgs{}, "a.md,b.md,c.md,drafts/d.md"},
		{ListFilesByPrefixArgs{FileOrder: ptr("descending")}, "drafts/d.md,c.md,b.md,a.md"},
		{ListFilesByPrefixArgs{FileOrderBy: ptr("created_at")}, "drafts/d.md,b.md,a.md,c.md"},
		{ListFilesByPrefixArgs{FileOrderBy: ptr("created_at"), FileOrder: ptr("descending")}, "a.md,c.md,b.md,drafts/d.md"},
		{ListFilesByPrefixArgs{FileOrderBy: ptr("updated_at"), FileOrder: ptr("descending")}, "b.md,a.md,c.md,drafts/d.md"},
		{ListFilesByPrefixArgs{FileOrderBy: ptr("updated_at")}, "drafts/d.md,a.md,c.md,b.md"},
		{ListFilesByPrefixArgs{FileOrderBy: ptr(""), FileOrder: ptr("")}, "a.md,b.md,c.md,drafts/d.md"},
		{ListFilesByPrefixArgs{Prefix: ptr("drafts/")}, "drafts/d.md"},
		{ListFilesByPrefixArgs{Prefix: ptr("b")}, "b.md"},
		{ListFilesByPrefixArgs{Prefix: ptr("/root/notes")}, "a.md,b.md,c.md,drafts/d.md"},
		{ListFilesByPrefixArgs{Prefix: ptr("/root/worker/notes")}, "/root/worker/notes/w.md"},
		{ListFilesByPrefixArgs{Prefix: ptr("/root/notes_backup/notes/")}, "/root/notes_backup/notes/z.md"},
		{ListFilesByPrefixArgs{Prefix: ptr("nothing")}, ""},
	}
	for _, tt := range tests {
		res, err := ListFilesByPrefix(s, "", tt.args)
		if err != nil || paths(res) != tt.want || res.Source != Source {
			t.Errorf("%+v: %q, %v; want %q", tt.args, paths(res), err, tt.want)
		}
	}
	// A sub-agent's default prefix is its own notes.
	res, _ := ListFilesByPrefix(s, "/root/worker", ListFilesByPrefixArgs{})
	if paths(res) != "/root/worker/notes/w.md" {
		t.Errorf("worker default: %q", paths(res))
	}
	_, err := ListFilesByPrefix(s, "", ListFilesByPrefixArgs{FileOrderBy: ptr("size")})
	asError(t, err, contextd.EInvalid, `Invalid file_order_by "size": use "name", "created_at" or "updated_at"`)
	_, err = ListFilesByPrefix(s, "", ListFilesByPrefixArgs{FileOrder: ptr("up")})
	asError(t, err, contextd.EInvalid, `Invalid file_order "up": use "ascending" or "descending"`)
	_, err = ListFilesByPrefix(s, "", ListFilesByPrefixArgs{Prefix: ptr("../")})
	var ne *contextd.Error
	if !errors.As(err, &ne) {
		t.Fatal(err)
	}
}

func TestListJSONShape(t *testing.T) {
	res, _ := ListFilesByPrefix(testState(t, w("/root/notes/plan.md", "é\n", t0)), "", ListFilesByPrefixArgs{})
	b, _ := json.Marshal(res)
	want := `{"source":"pi-session","files":[{"path":"/root/notes/plan.md","bytes":3,"created_at":"2026-07-06T12:47:08.114Z","updated_at":"2026-07-06T12:47:08.114Z"}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	empty, _ := ListFilesByPrefix(nil, "", ListFilesByPrefixArgs{})
	if b, _ := json.Marshal(empty); string(b) != `{"source":"pi-session","files":[]}` {
		t.Errorf("empty: %s", b)
	}
}

func TestReadFileWindows(t *testing.T) {
	// 5 lines: "l1".."l4" and an empty last line after the trailing "\n".
	s := testState(t, w("/root/notes/r.md", "l1\nl2\nl3\nl4\n", t0), w("/root/notes/one.md", "solo", t0), w("/root/notes/empty.md", "", t0))
	tests := []struct {
		path        string
		start, stop *int
		content     string
		s, e, total int
	}{
		{"r.md", nil, nil, "l1\nl2\nl3\nl4\n", 1, 5, 5},
		{"r.md", ptr(0), ptr(0), "l1\nl2\nl3\nl4\n", 1, 5, 5},
		{"r.md", ptr(2), ptr(3), "l2\nl3", 2, 3, 5},
		{"r.md", ptr(2), nil, "l2\nl3\nl4\n", 2, 5, 5},
		{"r.md", nil, ptr(1), "l1", 1, 1, 5},
		{"r.md", ptr(-1), nil, "", 5, 5, 5},
		{"r.md", ptr(-2), ptr(-2), "l4", 4, 4, 5},
		{"r.md", ptr(-3), ptr(-1), "l3\nl4\n", 3, 5, 5},
		{"r.md", ptr(-100), ptr(2), "l1\nl2", 1, 2, 5},
		{"r.md", ptr(3), ptr(100), "l3\nl4\n", 3, 5, 5},
		{"r.md", ptr(100), ptr(200), "", 5, 5, 5},
		{"r.md", ptr(-100), ptr(-100), "l1", 1, 1, 5},
		{"one.md", nil, nil, "solo", 1, 1, 1},
		{"one.md", ptr(-1), ptr(7), "solo", 1, 1, 1},
		{"empty.md", nil, nil, "", 0, 0, 0},
		{"empty.md", ptr(3), ptr(-2), "", 0, 0, 0},
	}
	for _, tt := range tests {
		res, err := ReadFile(s, "", ReadFileArgs{Path: tt.path, StartLine: tt.start, StopLine: tt.stop})
		if err != nil || res.File == nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		f := res.File
		if f.Content != tt.content || f.StartLine != tt.s || f.StopLine != tt.e || f.TotalLines != tt.total {
			t.Errorf("%s [%v,%v]: got %q %d..%d/%d; want %q %d..%d/%d", tt.path, deref(tt.start), deref(tt.stop),
				f.Content, f.StartLine, f.StopLine, f.TotalLines, tt.content, tt.s, tt.e, tt.total)
		}
	}
	res, err := ReadFile(s, "", ReadFileArgs{Path: "missing.md"})
	if err != nil || res.File != nil {
		t.Fatalf("missing: %+v %v", res, err)
	}
	if b, _ := json.Marshal(res); string(b) != `{"source":"pi-session","file":null}` {
		t.Errorf("missing JSON: %s", b)
	}
	_, err = ReadFile(s, "", ReadFileArgs{Path: ""})
	asError(t, err, contextd.EInvalid, MsgPathRequired)
	res, _ = ReadFile(s, "", ReadFileArgs{Path: "one.md"})
	b, _ := json.Marshal(res)
	want := `{"source":"pi-session","file":{"path":"/root/notes/one.md","bytes":4,"created_at":"2026-07-06T12:47:08.114Z","updated_at":"2026-07-06T12:47:08.114Z","content":"solo","start_line":1,"stop_line":1,"total_lines":1}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	// Both given and reversed (negatives resolved against 5 lines): refused,
	// naming both; an empty file has no lines to reverse.
	for _, tc := range []struct {
		start, stop int
		msg         string
	}{
		{4, 2, "start_line 4 is after stop_line 2 (lines 4 and 2 of 5); pass a start_line at or before stop_line"},
		{-1, -5, "start_line -1 is after stop_line -5 (lines 5 and 1 of 5); pass a start_line at or before stop_line"},
	} {
		_, err := ReadFile(s, "", ReadFileArgs{Path: "r.md", StartLine: ptr(tc.start), StopLine: ptr(tc.stop)})
		// The code (invalid argument, HTTP 422) is checked through the API
		// in api's TestLocalBoundsNotes.
		if err == nil || err.Error() != tc.msg {
			t.Errorf("[%d,%d]: %v, want %q", tc.start, tc.stop, err, tc.msg)
		}
	}
}

func deref(p *int) any {
	if p == nil {
		return "nil"
	}
	return *p
}

func TestSearchContents(t *testing.T) {
	s := testState(t,
		w("/root/notes/b.md", "alpha\nBeta beta\nbeta\n", t0+1),
		w("/root/notes/a.md", "no\nbeta end", t0+2),
		w("/root/notes/c.md", "gamma", t0+3),
		w("/root/notes/sub/d.md", "beta", t0),
		w("/root/worker/notes/x.md", "beta", t0),
	)
	got := func(res SearchResult) string {
		var parts []string
		for _, f := range res.Files {
			var m []string
			for _, x := range f.Matches {
				m = append(m, fmt.Sprintf("%d:%s", x.LineNumber, x.Line))
			}
			parts = append(parts, f.Path+"="+strings.Join(m, "|"))
		}
		return strings.Join(parts, " ")
	}
	tests := []struct {
		args SearchArgs
		want string
	}{
		{SearchArgs{Query: "beta"}, "/root/notes/a.md=2:beta end /root/notes/b.md=2:Beta beta|3:beta /root/notes/sub/d.md=1:beta"},
		{SearchArgs{Query: "Beta"}, "/root/notes/b.md=2:Beta beta"},
		{SearchArgs{Query: "beta", RecentFileFirst: ptr(true)}, "/root/notes/a.md=2:beta end /root/notes/b.md=2:Beta beta|3:beta /root/notes/sub/d.md=1:beta"},
		{SearchArgs{Query: "beta", RecentFileFirst: ptr(true), MaxFiles: ptr(1)}, "/root/notes/a.md=2:beta end"},
		{SearchArgs{Query: "a", RecentFileFirst: ptr(true)}, "/root/notes/c.md=1:gamma /root/notes/a.md=2:beta end /root/notes/b.md=1:alpha|2:Beta beta|3:beta /root/notes/sub/d.md=1:beta"},
		{SearchArgs{Query: "beta", MaxMatchesPerFile: ptr(1)}, "/root/notes/a.md=2:beta end /root/notes/b.md=2:Beta beta /root/notes/sub/d.md=1:beta"},
		{SearchArgs{Query: "beta", PathPrefix: ptr("sub/")}, "/root/notes/sub/d.md=1:beta"},
		{SearchArgs{Query: "beta", PathPrefix: ptr("/root/worker/notes")}, "/root/worker/notes/x.md=1:beta"},
		{SearchArgs{Query: "alpha\nBeta"}, ""},
		{SearchArgs{Query: "zzz"}, ""},
		{SearchArgs{Query: ".*"}, ""},
	}
	for _, tt := range tests {
		res, err := SearchContents(s, "", tt.args)
		if err != nil || got(res) != tt.want {
			t.Errorf("%+v:\n got %q, %v\nwant %q", tt.args, got(res), err, tt.want)
		}
	}
	_, err := SearchContents(s, "", SearchArgs{})
	asError(t, err, contextd.EInvalid, MsgQueryRequired)
	res, _ := SearchContents(nil, "", SearchArgs{Query: "x"})
	if b, _ := json.Marshal(res); string(b) != `{"source":"pi-session","files":[]}` {
		t.Errorf("empty JSON: %s", b)
	}
	res, _ = SearchContents(s, "", SearchArgs{Query: "gamma"})
	if b, _ := json.Marshal(res); string(b) != `{"source":"pi-session","files":[{"path":"/root/notes/c.md","matches":[{"line_number":1,"line":"gamma"}]}]}` {
		t.Errorf("JSON: %s", b)
	}
}

func TestPlanWriteAndAppend(t *testing.T) {
	s := testState(t, w("/root/notes/plan.md", "one\n", t0))
	now := time.UnixMilli(t0 + 1000)

	res, entry, err := PlanAppend(s, "", AppendArgs{Path: "plan.md", Text: "two\n"}, now)
	if err != nil {
		t.Fatal(err)
	}
	gotRes, _ := json.Marshal(res)
	wantRes := `{"source":"pi-session","file":{"path":"/root/notes/plan.md","bytes":8,"created_at":"2026-07-06T12:47:08.114Z","updated_at":"2026-07-06T12:47:09.114Z"}}`
	if string(gotRes) != wantRes {
		t.Errorf("append result\n got %s\nwant %s", gotRes, wantRes)
	}
	gotEntry, _ := json.Marshal(entry)
	wantEntry := `{"type":"custom","customType":"codex-context-note","data":{"protocol":1,"action":"append","path":"/root/notes/plan.md","text":"two\n","timestamp":1783342029114}}`
	if string(gotEntry) != wantEntry {
		t.Errorf("append entry\n got %s\nwant %s", gotEntry, wantEntry)
	}
	if f, _ := s.File("/root/notes/plan.md"); f.Text != "one\n" {
		t.Errorf("PlanAppend changed the state: %q", f.Text)
	}

	// Applying the planned entry gives the metadata the plan announced.
	ev, err := DecodeEvent("x", entry.CustomType, mustJSON(entry.Data))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Apply(ev); err != nil {
		t.Fatal(err)
	}
	if f, _ := s.File("/root/notes/plan.md"); f.Meta() != res.File || f.Text != "one\ntwo\n" {
		t.Errorf("after apply: %+v", f)
	}

	// write keeps created_at of an existing file; creates otherwise.
	res, entry, err = PlanWrite(s, "", WriteArgs{Path: "/root/notes/plan.md", Text: "new"}, now.Add(time.Second))
	if err != nil || res.File.CreatedAt != "2026-07-06T12:47:08.114Z" || res.File.UpdatedAt != "2026-07-06T12:47:10.114Z" || res.File.Bytes != 3 || entry.Data.Action != "write" {
		t.Errorf("write existing: %+v %+v %v", res, entry, err)
	}
	res, entry, err = PlanWrite(s, "/root/worker", WriteArgs{Path: "w.md", Text: ""}, now)
	if err != nil || res.File.Path != "/root/worker/notes/w.md" || res.File.CreatedAt != res.File.UpdatedAt || entry.Data.Path != "/root/worker/notes/w.md" {
		t.Errorf("write new: %+v %+v %v", res, entry, err)
	}
	res, _, err = PlanAppend(nil, "", AppendArgs{Path: "new.md", Text: "x"}, now)
	if err != nil || res.File.Bytes != 1 || res.File.CreatedAt != "2026-07-06T12:47:09.114Z" {
		t.Errorf("append creates: %+v %v", res, err)
	}

	_, _, err = PlanWrite(s, "", WriteArgs{Path: "../x", Text: "t"}, now)
	asError(t, err, contextd.EInvalid, `Invalid note path "../x": path components must not be empty, "." or ".."`+acceptedForms)
	_, _, err = PlanAppend(s, "", AppendArgs{Path: "", Text: "t"}, now)
	asError(t, err, contextd.EInvalid, MsgPathRequired)
	_, _, err = PlanWrite(s, "", WriteArgs{Path: "x", Text: "bad\xff"}, now)
	asError(t, err, contextd.EInvalid, MsgTextNotUTF8)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func TestPlanSizeLimit(t *testing.T) {
	now := time.UnixMilli(t0)
	exact := strings.Repeat("x", MaxFileBytes)
	over := exact + "x"

	// write: exactly 1,000,000 bytes is accepted, 1,000,001 refused.
	if res, _, err := PlanWrite(nil, "", WriteArgs{Path: "w.md", Text: exact}, now); err != nil || res.File.Bytes != MaxFileBytes {
		t.Fatalf("write exact: %v", err)
	}
	_, _, err := PlanWrite(nil, "", WriteArgs{Path: "w.md", Text: over}, now)
	asError(t, err, contextd.ETooLarge, "Note file exceeds the 1,000,000-byte limit")

	// Multi-byte characters count in UTF-8 bytes, not characters ("€" is 3 bytes).
	euro := strings.Repeat("€", MaxFileBytes/3) // 999,999 bytes
	if _, _, err := PlanWrite(nil, "", WriteArgs{Path: "e.md", Text: euro + "x"}, now); err != nil {
		t.Fatalf("write 999,999+1 bytes: %v", err)
	}
	_, _, err = PlanWrite(nil, "", WriteArgs{Path: "e.md", Text: euro + "é"}, now)
	asError(t, err, contextd.ETooLarge, MsgFileTooLarge)

	// append: the resulting file counts.
	s := testState(t, w("/root/notes/a.md", strings.Repeat("y", 600_000), t0))
	if res, _, err := PlanAppend(s, "", AppendArgs{Path: "a.md", Text: strings.Repeat("z", 400_000)}, now); err != nil || res.File.Bytes != MaxFileBytes {
		t.Fatalf("append to exact: %+v %v", res, err)
	}
	_, _, err = PlanAppend(s, "", AppendArgs{Path: "a.md", Text: strings.Repeat("z", 400_001)}, now)
	asError(t, err, contextd.ETooLarge, MsgFileTooLarge)
	if f, _ := s.File("/root/notes/a.md"); len(f.Text) != 600_000 {
		t.Fatal("refused append changed the state")
	}
	// A write may replace a big file with a big text.
	if _, _, err := PlanWrite(s, "", WriteArgs{Path: "a.md", Text: exact}, now); err != nil {
		t.Fatalf("write over big file: %v", err)
	}
	// append to a missing file: the text alone counts.
	if _, _, err := PlanAppend(s, "", AppendArgs{Path: "new.md", Text: exact}, now); err != nil {
		t.Fatalf("append exact new: %v", err)
	}
	_, _, err = PlanAppend(s, "", AppendArgs{Path: "new.md", Text: over}, now)
	asError(t, err, contextd.ETooLarge, MsgFileTooLarge)

	// Replay skips an over-limit append and keeps the file as it was.
	r := Replay([]Event{
		{EntryID: "w", Action: ActionWrite, Path: "/root/notes/a.md", Text: exact, Timestamp: t0},
		{EntryID: "a", Action: ActionAppend, Path: "/root/notes/a.md", Text: "!", Timestamp: t0 + 1},
	})
	if f, _ := r.File("/root/notes/a.md"); len(f.Text) != MaxFileBytes || f.UpdatedAt != t0 || len(r.Skipped) != 1 || r.Skipped[0] != (Skip{EntryID: "a", Reason: MsgFileTooLarge}) {
		t.Errorf("replay over limit: %d %v", len(f.Text), r.Skipped)
	}
}

func TestSnapshot(t *testing.T) {
	s := testState(t,
		w("/root/notes/b.md", "b <&> \u2028 \"q\"\n\t\x01", t0+5),
		a("/root/notes/a.md", "a", t0),
		a("/root/notes/a.md", "b", t0+9),
		w("/root/worker/notes/é.md", "é", t0+1),
	)
	d, err := Snapshot(s, time.UnixMilli(t0+100))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"protocol":1,"timestamp":1783342028214,"files":[{"path":"/root/notes/a.md","text":"ab","createdAt":1783342028114,"updatedAt":1783342028123},{"path":"/root/notes/b.md","text":"b \u003c\u0026\u003e \u2028 \"q\"\n\t\u0001","createdAt":1783342028119,"updatedAt":1783342028119},{"path":"/root/worker/notes/é.md","text":"é","createdAt":1783342028115,"updatedAt":1783342028115}]}`
	if got := string(mustJSON(d)); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// The snapshot entry replays to the same state.
	e := d.Entry()
	if e.Type != "custom" || e.CustomType != CustomTypeNoteSnapshot {
		t.Fatalf("entry: %+v", e)
	}
	ev, err := DecodeEvent("snap", e.CustomType, mustJSON(e.Data))
	if err != nil {
		t.Fatal(err)
	}
	r := Replay([]Event{w("/root/notes/gone.md", "x", t0), ev})
	if fmt.Sprint(r.Files()) != fmt.Sprint(s.Files()) {
		t.Errorf("replayed snapshot differs:\n%v\n%v", r.Files(), s.Files())
	}
	// The tracked size equals the real JSON size without HTML escaping.
	if got, want := snapshotJSONLen(s.snapBytes, d.Timestamp), len(compactJSON(d)); got != want {
		t.Errorf("tracked snapshot size %d, real %d", got, want)
	}
	// Empty state.
	d, err = Snapshot(nil, time.UnixMilli(t0))
	if err != nil || string(mustJSON(d)) != `{"protocol":1,"timestamp":1783342028114,"files":[]}` {
		t.Errorf("empty snapshot: %s %v", mustJSON(d), err)
	}
}

// The tracked snapshot size follows every kind of change exactly.
func TestSnapshotSizeTracking(t *testing.T) {
	s := &State{}
	steps := []Event{
		w("/root/notes/a", "x\x00\x1f\"\\<", t0),
		a("/root/notes/a", "\u2029é", t0+1),
		w("/root/notes/b", "", t0+22),
		w("/root/notes/a", "short", t0+333),
		{Action: ActionSnapshot, Timestamp: t0, Files: []SnapshotFile{{Path: "/root/notes/z", Text: "zz", CreatedAt: 1, UpdatedAt: 2}}},
		a("/root/notes/y", "\x7f", t0),
		{Action: ActionSnapshot, Timestamp: t0},
		a("/root/notes/q", "q", 0),
	}
	for i, ev := range steps {
		if err := s.Apply(ev); err != nil {
			t.Fatal(err)
		}
		d, err := Snapshot(s, time.UnixMilli(t0))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := snapshotJSONLen(s.snapBytes, t0), len(compactJSON(d)); got != want {
			t.Errorf("step %d: tracked %d, real %d", i, got, want)
		}
	}
}

func TestSnapshotLimit(t *testing.T) {
	// Ten files of 1,000,000 bytes make more than 10,000,000 bytes of JSON.
	var evs []Event
	big := strings.Repeat("n", MaxFileBytes)
	for i := range 9 {
		evs = append(evs, w(fmt.Sprintf("/root/notes/%d", i), big, t0))
	}
	s := testState(t, evs...)
	now := time.UnixMilli(t0)
	if _, err := Snapshot(s, now); err != nil {
		t.Fatalf("9 MB snapshot: %v", err)
	}
	// A tenth file would push the snapshot over its cap: the write is refused.
	_, _, err := PlanWrite(s, "", WriteArgs{Path: "9", Text: big}, now)
	asError(t, err, contextd.ETooLarge, MsgSnapshotTooLarge)
	// A file that still fits is accepted...
	room := MaxSnapshotBytes - snapshotJSONLen(s.snapBytes, t0) - len(`,{"path":"/root/notes/9","text":"","createdAt":1783342028114,"updatedAt":1783342028114}`)
	if _, _, err := PlanWrite(s, "", WriteArgs{Path: "9", Text: big[:room]}, now); err != nil {
		t.Fatalf("write that exactly fills the snapshot: %v", err)
	}
	_, _, err = PlanWrite(s, "", WriteArgs{Path: "9", Text: big[:room+1]}, now)
	asError(t, err, contextd.ETooLarge, MsgSnapshotTooLarge)
	// ...and replacing an existing file's text counts only the difference.
	if _, _, err := PlanWrite(s, "", WriteArgs{Path: "0", Text: big}, now); err != nil {
		t.Fatalf("rewrite: %v", err)
	}
	// Replay does not enforce the cap (entries already exist); Snapshot does.
	s2 := testState(t, append(evs, w("/root/notes/9", big, t0))...)
	_, err = Snapshot(s2, now)
	asError(t, err, contextd.ETooLarge, MsgSnapshotTooLarge)
}

func TestFormatTime(t *testing.T) {
	for ms, want := range map[int64]string{
		0:             "1970-01-01T00:00:00.000Z",
		t0:            "2026-07-06T12:47:08.114Z",
		1783343746774: "2026-07-06T13:15:46.774Z",
		MaxTimestamp:  "9999-12-31T23:59:59.999Z",
	} {
		if got := FormatTime(ms); got != want {
			t.Errorf("FormatTime(%d) = %s, want %s", ms, got, want)
		}
	}
}

// A one-line note ending in "\n" has 2 lines in Codex's counting: the text is
// split at "\n" like JavaScript's split("\n"), so the trailing newline ends in
// an empty second line (package doc "Lines"). The rule is the one the seed's
// Pi-written fixtures show: tree-multi's checkpoint.md holds 12 "\n", ends
// with one, and its thread hint says "13 lines" (TestFixtureThreadHints
// re-renders those hints). Hand-computed: "- find the port\n" split at "\n" is
// ["- find the port", ""], so total_lines 2, window 1-2, content the whole text;
// the last line alone (-1) is "".
func TestReadFileTrailingNewlineLineCount(t *testing.T) {
	s := testState(t, w("/root/notes/port.md", "- find the port\n", t0))
	res, err := ReadFile(s, "", ReadFileArgs{Path: "port.md"})
	if err != nil || res.File == nil {
		t.Fatalf("read: %+v %v", res, err)
	}
	if f := res.File; f.TotalLines != 2 || f.StartLine != 1 || f.StopLine != 2 || f.Content != "- find the port\n" || f.Bytes != 16 {
		t.Errorf("got %q %d..%d/%d (%d bytes); want %q 1..2/2 (16 bytes)", f.Content, f.StartLine, f.StopLine, f.TotalLines, f.Bytes, "- find the port\n")
	}
	res, _ = ReadFile(s, "", ReadFileArgs{Path: "port.md", StartLine: ptr(1), StopLine: ptr(1)})
	if f := res.File; f.Content != "- find the port" || f.TotalLines != 2 {
		t.Errorf("line 1: got %q of %d; want %q of 2", f.Content, f.TotalLines, "- find the port")
	}
	if got := ThreadHint(s, nil); !strings.Contains(got, "- /root/notes/port.md (2 lines, 16 UTF-8 bytes)") {
		t.Errorf("hint: %q", got)
	}
}
