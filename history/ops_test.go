package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"contextd"
	"contextd/session"
)

// builder assembles a View backed by MemTexts.
type builder struct {
	v     View
	texts MemTexts
}

func newBuilder() *builder {
	b := &builder{texts: MemTexts{}}
	b.v.Texts = b.texts
	return b
}

func (b *builder) window(id string) *builder {
	b.v.Windows = append(b.v.Windows, Window{ID: id})
	return b
}

// item adds an item to the last window.
func (b *builder) item(id, role, tool, ns string, summary bool, text string) *builder {
	w := &b.v.Windows[len(b.v.Windows)-1]
	key := int64(len(b.texts) + 1)
	b.texts[key] = text
	w.Items = append(w.Items, ItemRef{WindowID: w.ID, ItemID: id, Role: role, ToolName: tool, ToolNamespace: ns,
		Summary: summary, Chars: session.CountChars(text), Key: key})
	return b
}

func ip(v int) *int            { return &v }
func sp(v string) *string      { return &v }
func bp(v bool) *bool          { return &v }
func ids(r ItemsResult) string { return idList(r.Items) }

func idList(items []ItemPreview) string {
	s := make([]string, len(items))
	for i, it := range items {
		s[i] = it.ItemID
	}
	return strings.Join(s, ",")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestListWindows(t *testing.T) {
	b := newBuilder()
	b.window("w0").item("a", "user", "", "", false, "x").item("b", "assistant", "", "", false, "y")
	b.window("w1")
	b.window("w2").item("c", "user", "", "", false, "z")
	got, err := b.v.ListWindows(ListWindowsArgs{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"source":"pi-session","windows":[{"window_id":"w0","item_count":2},{"window_id":"w1","item_count":0},{"window_id":"w2","item_count":1}]}`
	if s := mustJSON(t, got); s != want {
		t.Errorf("got  %s\nwant %s", s, want)
	}
	got, _ = b.v.ListWindows(ListWindowsArgs{RecentFirst: bp(true), Limit: ip(2)})
	want = `{"source":"pi-session","windows":[{"window_id":"w2","item_count":1},{"window_id":"w1","item_count":0}]}`
	if s := mustJSON(t, got); s != want {
		t.Errorf("recent: got %s\nwant %s", s, want)
	}
	got, _ = b.v.ListWindows(ListWindowsArgs{RecentFirst: bp(false), Limit: ip(1)})
	if s := mustJSON(t, got); s != `{"source":"pi-session","windows":[{"window_id":"w0","item_count":2}]}` {
		t.Errorf("oldest: %s", s)
	}
	empty, _ := (&View{}).ListWindows(ListWindowsArgs{})
	if s := mustJSON(t, empty); s != `{"source":"pi-session","windows":[]}` {
		t.Errorf("empty view: %s", s)
	}
}

func TestListWindowsLimitBounds(t *testing.T) {
	b := newBuilder()
	for i := 0; i < 150; i++ {
		b.window(fmt.Sprintf("w%03d", i))
	}
	cases := []struct {
		limit *int
		want  int
	}{
		{nil, 20}, {ip(math.MinInt), 20}, {ip(-5), 20}, {ip(0), 20}, {ip(1), 1}, {ip(20), 20},
		{ip(99), 99}, {ip(100), 100}, {ip(101), 100}, {ip(math.MaxInt), 100},
	}
	for _, c := range cases {
		got, _ := b.v.ListWindows(ListWindowsArgs{Limit: c.limit})
		if len(got.Windows) != c.want {
			t.Errorf("limit %v: %d windows, want %d", deref(c.limit), len(got.Windows), c.want)
		}
	}
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// many builds one window of n short items i00, i01, ….
func many(n int) *builder {
	b := newBuilder().window("w")
	for i := 0; i < n; i++ {
		b.item(fmt.Sprintf("i%02d", i), "user", "", "", false, "short text")
	}
	return b
}

func TestItemsLimitBounds(t *testing.T) {
	b := many(40)
	cases := []struct {
		limit *int
		want  int
	}{
		{nil, 10}, {ip(math.MinInt), 10}, {ip(-1), 10}, {ip(0), 10}, {ip(1), 1}, {ip(10), 10},
		{ip(24), 24}, {ip(25), 25}, {ip(26), 25}, {ip(math.MaxInt), 25},
	}
	for _, c := range cases {
		got, err := b.v.ListItems(ListItemsArgs{Limit: c.limit})
		if err != nil || len(got.Items) != c.want {
			t.Errorf("list_items limit %v: %d items (%v), want %d", deref(c.limit), len(got.Items), err, c.want)
		}
		got, err = b.v.Search(SearchArgs{Query: "short", Limit: c.limit})
		if err != nil || len(got.Items) != c.want {
			t.Errorf("search limit %v: %d items (%v), want %d", deref(c.limit), len(got.Items), err, c.want)
		}
	}
}

func TestMaxCharsPerItemBounds(t *testing.T) {
	text := strings.Repeat("é", 1500) // 1,500 code points, 3,000 bytes
	b := newBuilder().window("w").item("x", "user", "", "", false, text)
	cases := []struct {
		max  *int
		want int
	}{
		{nil, 1000}, {ip(math.MinInt), 1000}, {ip(-3), 1000}, {ip(0), 1000}, {ip(1), 1}, {ip(999), 999},
		{ip(1000), 1000}, {ip(1001), 1000}, {ip(math.MaxInt), 1000},
	}
	for _, c := range cases {
		got, _ := b.v.ListItems(ListItemsArgs{MaxCharsPerItem: c.max})
		p := got.Items[0]
		if p.TruncatedContent != strings.Repeat("é", c.want) || p.ContentChars != 1500 {
			t.Errorf("max %v: %d chars, content_chars %d; want %d, 1500", deref(c.max), utf8.RuneCountInString(p.TruncatedContent), p.ContentChars, c.want)
		}
	}
	// Search previews use the default 1,000.
	got, _ := b.v.Search(SearchArgs{Query: "éé"})
	if n := utf8.RuneCountInString(got.Items[0].TruncatedContent); n != 1000 {
		t.Errorf("search preview %d chars, want 1000", n)
	}
}

func TestPreviewJSONChars(t *testing.T) {
	// Hand count of {"window_id":"w","item_id":"a","role":"user","truncated_content":"<n chars>","content_chars":<n>}:
	// `{"window_id":"w",` 17 + `"item_id":"a",` 14 + `"role":"user",` 14 +
	// `"truncated_content":"` 21 + n + `",` 2 + `"content_chars":` 16 + digits(n) + `}` 1
	// = 85 + n + digits(n).
	for _, n := range []int{0, 7, 289, 1000} {
		p := ItemPreview{WindowID: "w", ItemID: "a", Role: "user", TruncatedContent: strings.Repeat("a", n), ContentChars: n}
		if got, want := PreviewJSONChars(p), 85+n+len(fmt.Sprint(n)); got != want {
			t.Errorf("n=%d: %d, want %d", n, got, want)
		}
	}
	// Non-ASCII counts as code points, escapes as their escaped length, no HTML escaping.
	p := ItemPreview{WindowID: "w", ItemID: "a", Role: "user", TruncatedContent: "世<\n\x01", ContentChars: 4, Summary: true, ToolName: "t"}
	// 85 + len(`世<\n\u0001`)=1+1+2+6=10 + 1 digit + `"tool_name":"t",` 16 + `"summary":true,` 15
	if got := PreviewJSONChars(p); got != 85+10+1+16+15 {
		t.Errorf("escaped: %d, want %d", got, 85+10+1+16+15)
	}
}

// capView builds one window whose items have single-letter IDs a, b, … and
// ASCII texts of the given lengths (preview size 85+n+digits(n), see
// TestPreviewJSONChars).
func capView(lengths ...int) *builder {
	b := newBuilder().window("w")
	for i, n := range lengths {
		b.item(string(rune('a'+i)), "user", "", "", false, strings.Repeat("a", n))
	}
	return b
}

func TestOutputCap(t *testing.T) {
	k := 1000
	cases := []struct {
		name    string
		lengths []int
		want    string
	}{
		// 7 × 1,089 = 7,623; + 377 (n=289) = 8,000 exactly: included; the next (87) is not.
		{"exactly 8000", []int{k, k, k, k, k, k, k, 289, 1}, "a,b,c,d,e,f,g,h"},
		// 7,623 + 378 (n=290) = 8,001: h is left out and so is the small i after it (stop, not skip).
		{"one over", []int{k, k, k, k, k, k, k, 290, 1}, "a,b,c,d,e,f,g"},
		// 10 × 1,089: 7 fit.
		{"ten big", []int{k, k, k, k, k, k, k, k, k, k}, "a,b,c,d,e,f,g"},
		// previews are capped at 1,000 code points: 5,000-char texts still give 1,089 each.
		{"long texts", []int{5000, 5000, 5000, 5000, 5000, 5000, 5000, 5000}, "a,b,c,d,e,f,g"},
		{"small", []int{1, 2, 3}, "a,b,c"},
	}
	for _, c := range cases {
		b := capView(c.lengths...)
		got, _ := b.v.ListItems(ListItemsArgs{Limit: ip(25)})
		if ids(got) != c.want {
			t.Errorf("%s: list %s, want %s", c.name, ids(got), c.want)
		}
		got, _ = b.v.Search(SearchArgs{Query: "a", Limit: ip(25)})
		if ids(got) != c.want {
			t.Errorf("%s: search %s, want %s", c.name, ids(got), c.want)
		}
		total := 0
		for _, p := range got.Items {
			total += PreviewJSONChars(p)
		}
		if len(got.Items) > 1 && total > MaxOutputChars {
			t.Errorf("%s: total %d", c.name, total)
		}
	}
	// An item ID of 3,000 chars is cut to 256 code points (BoundID: "…" and
	// the last 255), so with 1,000 control chars escaped as \u0001 (6,000)
	// the first item's JSON stays under 8,000 and the next one fits.
	b := newBuilder().window("w").
		item(strings.Repeat("x", 3000), "user", "", "", false, strings.Repeat("\x01", 1000)).
		item("small", "user", "", "", false, "\x01")
	got, _ := b.v.ListItems(ListItemsArgs{})
	if len(got.Items) != 2 || got.Items[0].ItemID != "…"+strings.Repeat("x", 255) || PreviewJSONChars(got.Items[0]) != 85-1+256+6000+4 {
		t.Errorf("huge first: %d items, size %d", len(got.Items), PreviewJSONChars(got.Items[0]))
	}
}

// filterView: two windows of mixed items.
func filterView() *builder {
	b := newBuilder()
	b.window("w1").
		item("u1", "user", "", "", false, "please read").
		item("a1", "assistant", "read", "", false, `{"tool":"read"}`).
		item("t1", "tool", "read", "", false, "file").
		item("a2", "assistant", "write_file", "notes", false, "note call").
		item("t2", "tool", "write_file", "notes", false, "note ok").
		item("d1", "developer", "", "", false, "reminder").
		item("x1", "tool", "", "notes", false, "namespace without tool name")
	b.window("w2").
		item("u2", "user", "", "", false, "list please").
		item("a3", "assistant", "list_items", "history", false, "list call").
		item("t3", "tool", "list_items", "history", false, "list result").
		item("a4", "assistant", "", "", false, "done")
	return b
}

func TestListItemsFilters(t *testing.T) {
	b := filterView()
	all := "u1,a1,t1,a2,t2,d1,x1,u2,a3,t3,a4"
	cases := []struct {
		name string
		a    ListItemsArgs
		want string
	}{
		{"none", ListItemsArgs{Limit: ip(25)}, all},
		{"empty strings", ListItemsArgs{Limit: ip(25), Role: sp(""), ToolName: sp(""), ToolNamespace: sp(""), WindowID: sp(""), AgentName: sp("")}, all},
		{"role tool", ListItemsArgs{Role: sp("tool")}, "t1,t2,x1,t3"},
		{"role system", ListItemsArgs{Role: sp("system")}, ""},
		{"role bogus", ListItemsArgs{Role: sp("User")}, ""},
		{"tool_name read", ListItemsArgs{ToolName: sp("read")}, "a1,t1"},
		{"tool_namespace notes", ListItemsArgs{ToolNamespace: sp("notes")}, "a2,t2"},
		{"notes + role tool", ListItemsArgs{ToolNamespace: sp("notes"), Role: sp("tool")}, "t2"},
		{"w2 + assistant", ListItemsArgs{WindowID: sp("w2"), Role: sp("assistant")}, "a3,a4"},
		{"w2 + list_items", ListItemsArgs{WindowID: sp("w2"), ToolName: sp("list_items")}, "a3,t3"},
		{"w2 + read", ListItemsArgs{WindowID: sp("w2"), ToolName: sp("read")}, ""},
		{"name + namespace", ListItemsArgs{ToolName: sp("list_items"), ToolNamespace: sp("history")}, "a3,t3"},
		{"name + wrong namespace", ListItemsArgs{ToolName: sp("list_items"), ToolNamespace: sp("notes")}, ""},
		{"unknown window", ListItemsArgs{WindowID: sp("w3")}, ""},
		{"window prefix is not a match", ListItemsArgs{WindowID: sp("w")}, ""},
		{"recent_first", ListItemsArgs{Limit: ip(25), RecentFirst: bp(true)}, "a4,t3,a3,u2,x1,d1,t2,a2,t1,a1,u1"},
		{"recent_first false", ListItemsArgs{Limit: ip(3), RecentFirst: bp(false)}, "u1,a1,t1"},
		{"recent_first limit 3", ListItemsArgs{Limit: ip(3), RecentFirst: bp(true)}, "a4,t3,a3"},
		{"recent_first + tool", ListItemsArgs{RecentFirst: bp(true), Role: sp("tool")}, "t3,x1,t2,t1"},
		{"default limit 10", ListItemsArgs{}, "u1,a1,t1,a2,t2,d1,x1,u2,a3,t3"},
	}
	for _, c := range cases {
		got, err := b.v.ListItems(c.a)
		if err != nil || ids(got) != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.name, ids(got), err, c.want)
		}
	}
	// Preview fields.
	got, _ := b.v.ListItems(ListItemsArgs{WindowID: sp("w1"), Limit: ip(4), MaxCharsPerItem: ip(4)})
	want := `{"source":"pi-session","items":[` +
		`{"window_id":"w1","item_id":"u1","role":"user","truncated_content":"plea","content_chars":11},` +
		`{"window_id":"w1","item_id":"a1","role":"assistant","tool_name":"read","truncated_content":"{\"to","content_chars":15},` +
		`{"window_id":"w1","item_id":"t1","role":"tool","tool_name":"read","truncated_content":"file","content_chars":4},` +
		`{"window_id":"w1","item_id":"a2","role":"assistant","tool_name":"write_file","tool_namespace":"notes","truncated_content":"note","content_chars":9}]}`
	if s := mustJSON(t, got); s != want {
		t.Errorf("previews\n got %s\nwant %s", s, want)
	}
	empty, _ := b.v.ListItems(ListItemsArgs{WindowID: sp("nope")})
	if s := mustJSON(t, empty); s != `{"source":"pi-session","items":[]}` {
		t.Errorf("empty: %s", s)
	}
}

func TestAgentName(t *testing.T) {
	b := filterView()
	root := []*string{nil, sp(""), sp("/root")}
	other := []*string{sp("/root/child"), sp("root"), sp("/ROOT"), sp("/root/"), sp(" /root")}
	check := func(v *View, name *string, wantAll bool) {
		t.Helper()
		w, _ := v.ListWindows(ListWindowsArgs{AgentName: name})
		l, _ := v.ListItems(ListItemsArgs{AgentName: name})
		s, err := v.Search(SearchArgs{Query: "e", AgentName: name})
		r, rerr := v.ReadItem(ReadItemArgs{AgentName: name, ItemID: "u1", WindowID: "w1"})
		if err != nil || rerr != nil {
			t.Fatal(err, rerr)
		}
		got := len(w.Windows) > 0 && len(l.Items) > 0 && len(s.Items) > 0 && r.Item != nil
		none := len(w.Windows) == 0 && len(l.Items) == 0 && len(s.Items) == 0 && r.Item == nil
		if wantAll && !got || !wantAll && !none {
			t.Errorf("agent %v (view %q): windows %d items %d search %d read %v", derefS(name), v.Agent, len(w.Windows), len(l.Items), len(s.Items), r.Item != nil)
		}
	}
	for _, n := range root {
		check(&b.v, n, true)
	}
	for _, n := range other {
		check(&b.v, n, false)
	}
	b.v.Agent = "/root/worker"
	check(&b.v, sp("/root/worker"), true)
	check(&b.v, nil, true)
	check(&b.v, sp(""), true)
	check(&b.v, sp("/root"), false)
	// The empty result is still well formed.
	r, _ := b.v.ReadItem(ReadItemArgs{AgentName: sp("/root"), ItemID: "u1", WindowID: "w1"})
	if s := mustJSON(t, r); s != `{"source":"pi-session","item":null}` {
		t.Errorf("read other agent: %s", s)
	}
}

func derefS(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestSearch(t *testing.T) {
	b := filterView()
	cases := []struct {
		name string
		a    SearchArgs
		want string
	}{
		{"literal", SearchArgs{Query: "please"}, "u1,u2"},
		{"case-sensitive", SearchArgs{Query: "Please"}, ""},
		{"regexp is literal", SearchArgs{Query: "list.*"}, ""},
		{"json text", SearchArgs{Query: `{"tool"`}, "a1"},
		{"role", SearchArgs{Query: "list", Role: sp("tool")}, "t3"},
		{"tool_name", SearchArgs{Query: "note", ToolName: sp("write_file")}, "a2,t2"},
		{"tool_namespace excludes non-tool", SearchArgs{Query: "n", ToolNamespace: sp("notes")}, "a2,t2"},
		{"window", SearchArgs{Query: "e", WindowID: sp("w2")}, "u2,t3,a4"},
		{"recent_first", SearchArgs{Query: "e", WindowID: sp("w2"), RecentFirst: bp(true)}, "a4,t3,u2"},
		{"limit", SearchArgs{Query: "e", Limit: ip(2)}, "u1,a1"},
		{"no match", SearchArgs{Query: "zzz"}, ""},
	}
	for _, c := range cases {
		got, err := b.v.Search(c.a)
		if err != nil || ids(got) != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.name, ids(got), err, c.want)
		}
	}
	_, err := b.v.Search(SearchArgs{})
	var he *contextd.Error
	if !errors.As(err, &he) || he.Code != contextd.EInvalid || he.Message != "history search_contents requires a non-empty query." {
		t.Errorf("empty query: %v", err)
	}
}

// treeView: two archived windows (summary first) and the current window.
func treeView() *builder {
	b := newBuilder()
	b.window("w0").
		item("s0", "assistant", "", "", true, "alpha summary zero").
		item("r0a", "user", "", "", false, "alpha raw zero").
		item("r0b", "assistant", "", "", false, "beta raw zero")
	b.window("w1").
		item("s1", "assistant", "", "", true, "alpha summary one").
		item("r1a", "user", "", "", false, "alpha raw one")
	b.window("w2").
		item("c1", "user", "", "", false, "alpha current").
		item("c2", "assistant", "", "", false, "alpha reply")
	return b
}

func TestTreeOrder(t *testing.T) {
	b := treeView()
	var order []string
	for _, r := range Collect(SearchOrder(&b.v)) {
		order = append(order, r.ItemID)
	}
	if got := strings.Join(order, ","); got != "s0,s1,r0a,r0b,r1a,c1,c2" {
		t.Errorf("SearchOrder = %s", got)
	}
	cases := []struct {
		name string
		a    SearchArgs
		want string
	}{
		{"summaries first", SearchArgs{Query: "alpha"}, "s0,s1,r0a,r1a,c1,c2"},
		{"recent_first keeps summaries first", SearchArgs{Query: "alpha", RecentFirst: bp(true)}, "s1,s0,c2,c1,r1a,r0a"},
		{"limit", SearchArgs{Query: "alpha", Limit: ip(3)}, "s0,s1,r0a"},
		{"window", SearchArgs{Query: "alpha", WindowID: sp("w1")}, "s1,r1a"},
		{"assistant", SearchArgs{Query: "alpha", Role: sp("assistant")}, "s0,s1,c2"},
	}
	for _, c := range cases {
		got, err := b.v.Search(c.a)
		if err != nil || ids(got) != c.want {
			t.Errorf("%s: got %q (%v), want %q", c.name, ids(got), err, c.want)
		}
	}
	got, _ := b.v.ListItems(ListItemsArgs{WindowID: sp("w0")})
	want := `{"source":"pi-session","items":[` +
		`{"window_id":"w0","item_id":"s0","role":"assistant","summary":true,"truncated_content":"alpha summary zero","content_chars":18},` +
		`{"window_id":"w0","item_id":"r0a","role":"user","truncated_content":"alpha raw zero","content_chars":14},` +
		`{"window_id":"w0","item_id":"r0b","role":"assistant","truncated_content":"beta raw zero","content_chars":13}]}`
	if s := mustJSON(t, got); s != want {
		t.Errorf("list w0\n got %s\nwant %s", s, want)
	}
	if got, _ := b.v.ListItems(ListItemsArgs{RecentFirst: bp(true)}); ids(got) != "c2,c1,r1a,s1,r0b,r0a,s0" {
		t.Errorf("list recent_first: %s", ids(got))
	}
	r, _ := b.v.ReadItem(ReadItemArgs{ItemID: "s1", WindowID: "w1"})
	if s := mustJSON(t, r); s != `{"source":"pi-session","item":{"window_id":"w1","item_id":"s1","role":"assistant","summary":true,"content":"alpha summary one","total_chars":17}}` {
		t.Errorf("read summary: %s", s)
	}
}

// countingTexts wraps MemTexts and records what Search was asked.
type countingTexts struct {
	MemTexts
	limit, calls int
}

func (c *countingTexts) Search(q string, refs ItemList, limit int, fn func(ItemRef) bool) error {
	c.limit = limit
	return c.MemTexts.Search(q, refs, 0, func(r ItemRef) bool {
		c.calls++
		return fn(r)
	})
}

func TestSearchStops(t *testing.T) {
	b := many(40)
	ct := &countingTexts{MemTexts: b.texts}
	b.v.Texts = ct
	got, err := b.v.Search(SearchArgs{Query: "text", Limit: ip(3)})
	if err != nil || ids(got) != "i00,i01,i02" || ct.limit != 3 || ct.calls != 3 {
		t.Errorf("got %s err %v limit %d calls %d", ids(got), err, ct.limit, ct.calls)
	}
}

func TestTextSourceErrors(t *testing.T) {
	b := filterView()
	b.v.Texts = MemTexts{} // no texts
	if _, err := b.v.ListItems(ListItemsArgs{}); err == nil {
		t.Error("list: no error")
	}
	if _, err := b.v.Search(SearchArgs{Query: "x"}); err == nil {
		t.Error("search: no error")
	}
	if _, err := b.v.ReadItem(ReadItemArgs{ItemID: "u1", WindowID: "w1"}); err == nil {
		t.Error("read: no error")
	}
	b.v.Texts = nil
	if _, err := b.v.Search(SearchArgs{Query: "x"}); err == nil {
		t.Error("nil texts: no error")
	}
	var he *contextd.Error
	if _, err := b.v.ListItems(ListItemsArgs{}); err == nil || errors.As(err, &he) {
		t.Errorf("nil texts should be an internal error: %v", err)
	}
	// A view with no matching items never touches the TextSource.
	if got, err := b.v.ListItems(ListItemsArgs{WindowID: sp("none")}); err != nil || len(got.Items) != 0 {
		t.Errorf("no items: %v", err)
	}
}

func TestReadItemMatching(t *testing.T) {
	b := newBuilder()
	b.window("w").
		item("abc123", "user", "", "", false, "one").
		item("xyz123", "assistant", "", "", false, "two").
		item("abc999", "tool", "read", "", false, "three").
		item("123", "user", "", "", false, "four")
	b.window("w-other").item("only-here", "user", "", "", false, "five")
	b.window("w7")
	for i := 0; i < 7; i++ {
		b.item(fmt.Sprintf("id%d7", i), "user", "", "", false, "x")
	}
	cases := []struct {
		name, window, id string
		want             string        // item ID, "" = null
		err              contextd.Code // error code
	}{
		{"exact", "w", "abc123", "abc123", ""},
		{"exact wins over suffix", "w", "123", "123", ""},
		{"unique suffix", "w", "999", "abc999", ""},
		{"unique suffix 2", "w", "z123", "xyz123", ""},
		{"ambiguous suffix", "w", "23", "", contextd.EAmbiguous},
		{"no match", "w", "nope", "", ""},
		{"prefix is not a match", "w", "abc", "", ""},
		{"other window", "w", "only-here", "", ""},
		{"right window", "w-other", "only-here", "only-here", ""},
		{"suffix of window id is not a window", "other", "only-here", "", ""},
		{"unknown window", "zz", "abc123", "", ""},
		{"empty item_id", "w", "", "", contextd.EInvalid},
		{"empty window_id", "", "abc123", "", contextd.EInvalid},
		{"many candidates", "w7", "7", "", contextd.EAmbiguous},
	}
	for _, c := range cases {
		r, err := b.v.ReadItem(ReadItemArgs{ItemID: c.id, WindowID: c.window})
		var he *contextd.Error
		switch {
		case c.err != "":
			if !errors.As(err, &he) || he.Code != c.err || r.Item != nil {
				t.Errorf("%s: err %v, want code %s", c.name, err, c.err)
			}
		case err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want == "" && r.Item != nil:
			t.Errorf("%s: got %s, want null", c.name, r.Item.ItemID)
		case c.want != "" && (r.Item == nil || r.Item.ItemID != c.want):
			t.Errorf("%s: got %+v, want %s", c.name, r.Item, c.want)
		}
	}
	_, err := b.v.ReadItem(ReadItemArgs{ItemID: "23", WindowID: "w"})
	if want := `history read_item item_id "23" is ambiguous in window w: it is the end of 3 item IDs (abc123, xyz123, 123); pass the full item ID.`; err == nil || err.Error() != want {
		t.Errorf("ambiguous message:\n got %v\nwant %s", err, want)
	}
	_, err = b.v.ReadItem(ReadItemArgs{ItemID: "7", WindowID: "w7"})
	if want := `history read_item item_id "7" is ambiguous in window w7: it is the end of 7 item IDs (id07, id17, id27, id37, id47, and 2 more); pass the full item ID.`; err == nil || err.Error() != want {
		t.Errorf("ambiguous message (many):\n got %v\nwant %s", err, want)
	}
	_, err = b.v.ReadItem(ReadItemArgs{WindowID: "w"})
	if want := "history read_item requires item_id: pass an item ID returned by list_items or search_contents."; err == nil || err.Error() != want {
		t.Errorf("empty item_id: %v", err)
	}
	_, err = b.v.ReadItem(ReadItemArgs{ItemID: "x"})
	if want := "history read_item requires window_id: pass the full ID of the window that contains the item."; err == nil || err.Error() != want {
		t.Errorf("empty window_id: %v", err)
	}
	r, _ := b.v.ReadItem(ReadItemArgs{ItemID: "999", WindowID: "w"})
	if s := mustJSON(t, r); s != `{"source":"pi-session","item":{"window_id":"w","item_id":"abc999","role":"tool","tool_name":"read","content":"three","total_chars":5}}` {
		t.Errorf("read json: %s", s)
	}
}

func TestReadItemRanges(t *testing.T) {
	// a, é, 👍, 世, e, U+0301, z: 7 code points, 1+2+4+3+1+2+1 = 14 bytes.
	text := "aé👍世e\u0301z"
	b := newBuilder().window("w").item("x", "user", "", "", false, text)
	cases := []struct {
		name          string
		offset, limit *int
		content       string
		next          any // nil = absent
	}{
		{"whole", nil, nil, text, nil},
		{"offset 0 limit 3", ip(0), ip(3), "aé👍", 3},
		{"offset 3 limit 2", ip(3), ip(2), "世e", 5},
		{"combining split at code point", ip(5), ip(1), "\u0301", 6},
		{"last char", ip(6), ip(1), "z", nil},
		{"last two, limit bigger", ip(5), ip(100), "\u0301z", nil},
		{"offset = len", ip(7), nil, "", nil},
		{"offset over len", ip(100), ip(3), "", nil},
		{"offset MaxInt", ip(math.MaxInt), nil, "", nil},
		{"offset negative", ip(-5), ip(2), "aé", 2},
		{"offset MinInt", ip(math.MinInt), ip(1), "a", 1},
		{"limit 0 = default", ip(2), ip(0), "👍世e\u0301z", nil},
		{"limit negative = default", ip(1), ip(-1), "é👍世e\u0301z", nil},
		{"limit MinInt = default", nil, ip(math.MinInt), text, nil},
		{"limit huge", ip(0), ip(math.MaxInt), text, nil},
		{"limit exact", ip(0), ip(7), text, nil},
		{"limit one short", ip(0), ip(6), "aé👍世e\u0301", 6},
	}
	for _, c := range cases {
		r, err := b.v.ReadItem(ReadItemArgs{ItemID: "x", WindowID: "w", OffsetChars: c.offset, LimitChars: c.limit})
		if err != nil || r.Item == nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		var next any
		if r.Item.NextOffsetChars != nil {
			next = *r.Item.NextOffsetChars
		}
		if r.Item.Content != c.content || next != c.next || r.Item.TotalChars != 7 {
			t.Errorf("%s: content %q next %v total %d; want %q %v 7", c.name, r.Item.Content, next, r.Item.TotalChars, c.content, c.next)
		}
	}
	// next_offset_chars is omitted from the JSON when absent.
	r, _ := b.v.ReadItem(ReadItemArgs{ItemID: "x", WindowID: "w", OffsetChars: ip(0), LimitChars: ip(3)})
	if s := mustJSON(t, r); s != `{"source":"pi-session","item":{"window_id":"w","item_id":"x","role":"user","content":"aé👍","total_chars":7,"next_offset_chars":3}}` {
		t.Errorf("json: %s", s)
	}
}

func TestReadItemLimitBounds(t *testing.T) {
	text := strings.Repeat("ab", 5000) // 10,000 code points
	b := newBuilder().window("w").item("x", "user", "", "", false, text)
	cases := []struct {
		limit *int
		want  int
	}{
		{nil, 8000}, {ip(math.MinInt), 8000}, {ip(-1), 8000}, {ip(0), 8000}, {ip(1), 1}, {ip(7999), 7999},
		{ip(8000), 8000}, {ip(8001), 8000}, {ip(math.MaxInt), 8000},
	}
	for _, c := range cases {
		r, _ := b.v.ReadItem(ReadItemArgs{ItemID: "x", WindowID: "w", LimitChars: c.limit})
		if n := utf8.RuneCountInString(r.Item.Content); n != c.want || *r.Item.NextOffsetChars != c.want {
			t.Errorf("limit %v: %d chars, want %d", deref(c.limit), n, c.want)
		}
	}
}

func TestReadItemPagesLargeItem(t *testing.T) {
	// About 2 MiB of mixed-width text. One unit: "a" (1 byte), "é" (2), "世"
	// (3), "👍" (4), "e" (1), U+0301 (2), "\n" (1) = 14 bytes, 7 code points.
	unit := "aé世👍e\u0301\n"
	text := strings.Repeat(unit, 2<<20/len(unit)+1)
	chars := utf8.RuneCountInString(text)
	if len(text) < 2<<20 || chars != len(text)/14*7 {
		t.Fatalf("text: %d bytes %d chars", len(text), chars)
	}
	b := newBuilder().window("w").item("big", "tool", "read", "", false, text)
	var sb strings.Builder
	pages := 0
	var off *int
	for {
		r, err := b.v.ReadItem(ReadItemArgs{ItemID: "big", WindowID: "w", OffsetChars: off})
		if err != nil || r.Item == nil {
			t.Fatal(err)
		}
		pages++
		n := utf8.RuneCountInString(r.Item.Content)
		if !utf8.ValidString(r.Item.Content) || n > MaxReadLimitChars || r.Item.TotalChars != chars {
			t.Fatalf("page %d: %d chars, valid %v", pages, n, utf8.ValidString(r.Item.Content))
		}
		sb.WriteString(r.Item.Content)
		if r.Item.NextOffsetChars == nil {
			break
		}
		if n != MaxReadLimitChars {
			t.Fatalf("short page %d before the end: %d", pages, n)
		}
		off = r.Item.NextOffsetChars
	}
	if sb.String() != text {
		t.Error("pages do not concatenate to the text")
	}
	if want := (chars + MaxReadLimitChars - 1) / MaxReadLimitChars; pages != want {
		t.Errorf("pages %d, want %d", pages, want)
	}
}

func TestSliceChars(t *testing.T) {
	cases := []struct {
		s             string
		offset, limit int
		want          string
	}{
		{"héllo", 1, 3, "éll"},
		{"héllo", -1, 2, "hé"},
		{"héllo", 5, 2, ""},
		{"héllo", 0, 0, ""},
		{"héllo", 0, -1, ""},
		{"a\xffb", 1, 1, "\xff"},
		{"a\xe4\xb8b", 1, 2, "\xe4\xb8"}, // truncated 3-byte sequence: 2 invalid bytes, 2 code points
		{"", 0, 10, ""},
	}
	for _, c := range cases {
		if got := SliceChars(c.s, c.offset, c.limit); got != c.want {
			t.Errorf("SliceChars(%q,%d,%d) = %q, want %q", c.s, c.offset, c.limit, got, c.want)
		}
	}
}

func TestClampLimit(t *testing.T) {
	cases := []struct {
		v    *int
		want int
	}{{nil, 5}, {ip(-1), 5}, {ip(0), 5}, {ip(1), 1}, {ip(9), 9}, {ip(10), 10}, {ip(11), 10}}
	for _, c := range cases {
		if got := ClampLimit(c.v, 5, 10); got != c.want {
			t.Errorf("ClampLimit(%v) = %d, want %d", deref(c.v), got, c.want)
		}
	}
}

func TestArgsJSON(t *testing.T) {
	// Codex field names; null and absent both decode to nil.
	var a ListItemsArgs
	body := `{"limit":3,"recent_first":true,"tool_namespace":null,"role":"tool","agent_name":"/root","tool_name":"read","window_id":"w","max_chars_per_item":50}`
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatal(err)
	}
	if *a.Limit != 3 || !*a.RecentFirst || a.ToolNamespace != nil || *a.Role != "tool" || *a.AgentName != "/root" ||
		*a.ToolName != "read" || *a.WindowID != "w" || *a.MaxCharsPerItem != 50 {
		t.Errorf("%+v", a)
	}
	var r ReadItemArgs
	if err := json.Unmarshal([]byte(`{"item_id":"x","window_id":"w","offset_chars":5,"limit_chars":10,"agent_name":null}`), &r); err != nil {
		t.Fatal(err)
	}
	if r.ItemID != "x" || r.WindowID != "w" || *r.OffsetChars != 5 || *r.LimitChars != 10 || r.AgentName != nil {
		t.Errorf("%+v", r)
	}
	var s SearchArgs
	if err := json.Unmarshal([]byte(`{"query":"q","limit":null,"recent_first":null}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.Query != "q" || s.Limit != nil || s.RecentFirst != nil {
		t.Errorf("%+v", s)
	}
	var w ListWindowsArgs
	if err := json.Unmarshal([]byte(`{"limit":7,"agent_name":"","recent_first":false}`), &w); err != nil {
		t.Fatal(err)
	}
	if *w.Limit != 7 || *w.AgentName != "" || *w.RecentFirst {
		t.Errorf("%+v", w)
	}
}

// TestBoundedIDsAndNames: item and window IDs over MaxIDChars code points
// and tool names and namespaces over MaxNameChars are cut in every answer
// (list_windows, list_items, search_contents, read_item, the ambiguity
// error), with CutMarker, and a cut ID passed back reads the item (at
// a03e7ac a 1 MiB entry ID made every answer naming it 1 MiB).
func TestBoundedIDsAndNames(t *testing.T) {
	longW := strings.Repeat("w", 100000) + "-win"
	longI := strings.Repeat("i", 100000) + "-item"
	longT := strings.Repeat("T", 50000)
	b := newBuilder().window(longW).item(longI, "tool", longT, longT, false, "the result text")
	wantW, wantI := "…"+lastRunes(longW, 255), "…"+lastRunes(longI, 255)
	wantT := strings.Repeat("T", 255) + "…"
	ws, _ := b.v.ListWindows(ListWindowsArgs{})
	if len(ws.Windows) != 1 || ws.Windows[0].WindowID != wantW {
		t.Fatalf("list_windows: %+v", ws)
	}
	for name, got := range map[string]func() (ItemsResult, error){
		"list_items": func() (ItemsResult, error) { return b.v.ListItems(ListItemsArgs{}) },
		"search":     func() (ItemsResult, error) { return b.v.Search(SearchArgs{Query: "result"}) },
		"list_items by cut window_id": func() (ItemsResult, error) {
			return b.v.ListItems(ListItemsArgs{WindowID: &wantW})
		},
	} {
		r, err := got()
		if err != nil || len(r.Items) != 1 {
			t.Fatalf("%s: %+v %v", name, r, err)
		}
		p := r.Items[0]
		if p.WindowID != wantW || p.ItemID != wantI || p.ToolName != wantT || p.ToolNamespace != wantT {
			t.Errorf("%s: ids or names not cut: window %d, item %d, tool %d, namespace %d code points", name,
				len([]rune(p.WindowID)), len([]rune(p.ItemID)), len([]rune(p.ToolName)), len([]rune(p.ToolNamespace)))
		}
		if n := PreviewJSONChars(p); n > 1200 {
			t.Errorf("%s: preview of %d code points, want about 1,100", name, n)
		}
	}
	rd, err := b.v.ReadItem(ReadItemArgs{WindowID: wantW, ItemID: wantI})
	if err != nil || rd.Item == nil || rd.Item.Content != "the result text" || rd.Item.ItemID != wantI || rd.Item.WindowID != wantW || rd.Item.ToolName != wantT {
		t.Fatalf("read_item with the cut ids: %+v %v", rd.Item, err)
	}
	// Exactly 256 code points are kept whole.
	if id := strings.Repeat("é", 256); BoundID(id) != id || BoundName(id) != id {
		t.Error("a 256-code-point ID or name was cut")
	}
}
