package api

// Local-mode tests through the real HTTP stack (docs/design.md §4, Local):
// the Codex mirror routes, /v1/sessions/{id}/windows and …/context, off
// mode, the Pi harness session and the GET /v1/sessions listing, over
// temporary copies of the fixtures.
//
// Expected values come from testdata/pi-tree/local-basic.expected.json
// and the fixture's own boundary contents (written by the seed extension
// on real Pi 0.85), from docs/codex-contract.md "Local history" and "Local notes", or
// were computed by hand from the JSONL (an independent Python renderer
// following the seed's Local history rendering); each such value says so.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"contextd"
	"contextd/coordinator"
	"contextd/e2e"
	"contextd/history"
	"contextd/notes"
)

// Window ids of local-basic (local-basic.expected.json "windows").
const (
	lbW0 = "e636b0b7-d739-4a87-ad1c-80eb5320dfff" // boundary c96cd189, window 0
	lbW1 = "058f6ded-97f5-4969-ade0-fa96ccce6093" // boundary 1ad99795, window 1
	lbW2 = "3f758502-0c0f-4460-92e9-45bd32510d50" // boundary 177c1e63, window 2
)

// localBasic starts a server over a copy of local-basic.jsonl.
func localBasic(t *testing.T) *testServer {
	t.Helper()
	return newTestServer(t, serverOptions{}, piTree(localBasicFile))
}

func itemIDs(items []history.ItemPreview) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.ItemID
	}
	return out
}

// runeSlice returns code points [off, off+n) of s, clamped to its end.
func runeSlice(s string, off, n int) string {
	r := []rune(s)
	end := min(off+n, len(r))
	return string(r[min(off, len(r)):end])
}

// TestLocalListWindows: the three windows of local-basic with their item
// counts, oldest first and with recent_first, limit and agent_name.
//
// Item counts, counted by hand on the active branch of local-basic.jsonl
// (an item is every message and custom_message entry after a boundary up
// to the next one; the boundary itself and custom note entries are not
// items, docs/codex-contract.md "Local history"):
//   - window 0: boundary c96cd189 is branch entry 3, boundary 1ad99795
//     entry 48; the 44 entries between them include 3 codex-context-note
//     entries (244df0e2, 9b371cc2, e94001b1) → 41 items (40 messages,
//     among them the bashExecution f7de1fa0, plus the reminder 82e29e2d).
//   - window 1: 1ad99795 (48) to 177c1e63 (84): 35 entries − 3 notes
//     (c968c743, 2bc664f4, f42c8deb) → 32 items.
//   - window 2: after 177c1e63 to the leaf 588752ae (entry 106): 22
//     entries − 2 notes (5aa4ca14, 8a54f746) → 20 items.
func TestLocalListWindows(t *testing.T) {
	s := localBasic(t)
	raw, err := os.ReadFile(filepath.Join(fixturePiTree, "local-basic.expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Windows []struct {
			WindowID string `json:"windowId"`
		} `json:"windows"`
	}
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	if len(exp.Windows) != 3 || exp.Windows[0].WindowID != lbW0 || exp.Windows[1].WindowID != lbW1 || exp.Windows[2].WindowID != lbW2 {
		t.Fatalf("expected.json windows = %+v", exp.Windows)
	}
	all := []history.WindowInfo{{WindowID: lbW0, ItemCount: 41}, {WindowID: lbW1, ItemCount: 32}, {WindowID: lbW2, ItemCount: 20}}
	rev := []history.WindowInfo{all[2], all[1], all[0]}
	for _, tc := range []struct {
		name string
		args map[string]any
		want []history.WindowInfo
	}{
		{"default", nil, all},
		{"recent_first", map[string]any{"recent_first": true}, rev},
		{"recent_first false", map[string]any{"recent_first": false}, all},
		{"limit 2", map[string]any{"limit": 2}, all[:2]},
		{"limit 1 recent_first", map[string]any{"limit": 1, "recent_first": true}, rev[:1]},
		{"agent /root", map[string]any{"agent_name": "/root"}, all},
		{"agent empty", map[string]any{"agent_name": ""}, all},
		{"agent null", map[string]any{"agent_name": nil}, all},
		{"other agent", map[string]any{"agent_name": "/root/worker"}, []history.WindowInfo{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got history.WindowsResult
			s.codexOK("history/list_windows", localBasicSessionID, "", tc.args, &got)
			if got.Source != "pi-session" || !reflect.DeepEqual(got.Windows, tc.want) {
				t.Errorf("got %+v, want source pi-session and %+v", got, tc.want)
			}
		})
	}
	// At the leaf just before the second boundary only window 0 exists,
	// with all its 41 items.
	var got history.WindowsResult
	s.codexOK("history/list_windows", localBasicSessionID, "311c04e4", nil, &got)
	if want := all[:1]; !reflect.DeepEqual(got.Windows, want) {
		t.Errorf("at leaf 311c04e4: %+v, want %+v", got.Windows, want)
	}
}

// TestLocalListItems: filters, order and limits of list_items. Expected
// id lists were computed by hand from local-basic.jsonl (rendering of
// docs/codex-contract.md "Local history"; tool_name = first toolCall of an assistant message, toolName of a
// toolResult, the action for flat notes router calls).
func TestLocalListItems(t *testing.T) {
	s := localBasic(t)
	notesItems := []string{ // every flat notes router call and result, in branch order
		"d0e62bbd", "6ee61fe7", "ba4b42de", "bf26480b", "d6ee75d5", "57858ff1", // window 0
		"56ee3191", "eeb21aab", "8ea9e91d", "becf5541", "46d06431", "dcbd1e1e", "34ee1813", "ebd30e92", // window 1
		"7517beb7", "82611342", "d61db1f9", "144b7ed9", "25a503e9", "4092d4c2", // window 2
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		want []string
	}{
		{"window 1 limit 3", map[string]any{"window_id": lbW1, "limit": 3}, []string{"56ee3191", "eeb21aab", "72642517"}},
		{"window 2 recent_first", map[string]any{"window_id": lbW2, "limit": 3, "recent_first": true}, []string{"588752ae", "4092d4c2", "25a503e9"}},
		// role user includes the bashExecution f7de1fa0 (a user `!git status`).
		{"role user", map[string]any{"role": "user", "limit": 25}, []string{"2623e50c", "f7de1fa0", "4075226e", "873ba1dd", "4b644770", "3c8df77c", "ae8ec817"}},
		// The two reminders; the boundaries themselves are not items.
		{"role developer", map[string]any{"role": "developer", "limit": 25}, []string{"82e29e2d", "f795cd48"}},
		{"role system", map[string]any{"role": "system", "limit": 25}, []string{}},
		{"role tool limit 2", map[string]any{"role": "tool", "limit": 2, "max_chars_per_item": 1}, []string{"0ae5ea70", "6ee61fe7"}},
		{"tool_name write_file", map[string]any{"tool_name": "write_file", "limit": 25, "max_chars_per_item": 1},
			[]string{"d0e62bbd", "6ee61fe7", "d6ee75d5", "57858ff1", "8ea9e91d", "becf5541"}},
		{"tool_namespace notes", map[string]any{"tool_namespace": "notes", "limit": 25, "max_chars_per_item": 1}, notesItems},
		{"tool_namespace history", map[string]any{"tool_namespace": "history", "limit": 25}, []string{}},
		// The router name is replaced by the action: nothing is listed as "notes".
		{"tool_name notes", map[string]any{"tool_name": "notes", "limit": 25}, []string{}},
		// 51916bf6's first toolCall is grep, a44089d1's is bash.
		{"tool_name read in window 2", map[string]any{"tool_name": "read", "window_id": lbW2, "limit": 25, "max_chars_per_item": 1},
			[]string{"321f5636", "a45d4a87", "21f65162"}},
		// 65a117fc calls edit then bash: listed under edit only.
		{"tool_name bash in window 0", map[string]any{"tool_name": "bash", "window_id": lbW0, "limit": 25, "max_chars_per_item": 1},
			[]string{"9251a52e", "bd1d13e0", "c84b8381", "27fbadcc"}},
		{"role tool + tool_name new_context", map[string]any{"role": "tool", "tool_name": "new_context", "limit": 25}, []string{"311c04e4", "8f24378d"}},
		{"empty filters mean none", map[string]any{"window_id": "", "role": "", "tool_name": "", "tool_namespace": "", "limit": 2}, []string{"2623e50c", "de10da7e"}},
		{"null filters mean none", map[string]any{"window_id": nil, "role": nil, "tool_name": nil, "tool_namespace": nil, "limit": 2}, []string{"2623e50c", "de10da7e"}},
		{"unknown window", map[string]any{"window_id": "no-such-window"}, []string{}},
		{"window id prefix is not a window", map[string]any{"window_id": "e636b0b7"}, []string{}},
		{"other agent", map[string]any{"agent_name": "/root/worker"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got history.ItemsResult
			s.codexOK("history/list_items", localBasicSessionID, "", tc.args, &got)
			if got.Source != "pi-session" {
				t.Errorf("source = %q", got.Source)
			}
			if ids := itemIDs(got.Items); !reflect.DeepEqual(ids, tc.want) {
				t.Errorf("items = %v, want %v", ids, tc.want)
			}
		})
	}

	// Exact previews of window 1's first three items with
	// max_chars_per_item 40 (texts and lengths computed by hand; lengths are
	// code points of the full rendered text).
	var got history.ItemsResult
	s.codexOK("history/list_items", localBasicSessionID, "", map[string]any{"window_id": lbW1, "limit": 3, "max_chars_per_item": 40}, &got)
	want := []history.ItemPreview{
		{WindowID: lbW1, ItemID: "56ee3191", Role: "assistant", ToolName: "read_file", ToolNamespace: "notes",
			TruncatedContent: "**Resuming from notes**\n\nThe new window ", ContentChars: 194},
		{WindowID: lbW1, ItemID: "eeb21aab", Role: "tool", ToolName: "read_file", ToolNamespace: "notes",
			TruncatedContent: `{"source":"pi-session","file":{"path":"/`, ContentChars: 704},
		{WindowID: lbW1, ItemID: "72642517", Role: "assistant", ToolName: "read",
			TruncatedContent: "**Tracing the query path**\n\nI need to lo", ContentChars: 502},
	}
	if !reflect.DeepEqual(got.Items, want) {
		t.Errorf("previews:\n got %+v\nwant %+v", got.Items, want)
	}
	// tool_name / tool_namespace are omitted (not empty strings) on items
	// without them: 2623e50c is a plain user message.
	r := s.codexOK("history/list_items", localBasicSessionID, "", map[string]any{"limit": 1}, nil)
	if want := `{"source":"pi-session","items":[{"window_id":"` + lbW0 + `","item_id":"2623e50c","role":"user","truncated_content":"Add a ` +
		"`useWidgetFilters`" + ` hook that syncs the filter state with the URL query string, including back/forward navigation.","content_chars":119}]}`; string(r.Body) != want {
		t.Errorf("body:\n got %s\nwant %s", r.Body, want)
	}
}

// TestLocalFlatRouterMapping: flat `notes` router calls (Pi tool "notes"
// with an `action` argument, docs/codex-contract.md "Modes"/"Local history") are listed with the
// action as tool_name and "notes" as tool_namespace, both the assistant
// call and its toolResult (whose toolName on disk is "notes").
func TestLocalFlatRouterMapping(t *testing.T) {
	s := localBasic(t)
	// On disk: d0e62bbd calls {"name":"notes","arguments":{"action":"write_file",…}}
	// and 6ee61fe7 is its toolResult with toolName "notes".
	var line struct {
		Message struct {
			ToolName string `json:"toolName"`
		} `json:"message"`
	}
	if err := json.Unmarshal(jsonlEntry(t, s.path(localBasicFile), "6ee61fe7"), &line); err != nil || line.Message.ToolName != "notes" {
		t.Fatalf("fixture toolResult 6ee61fe7 toolName = %q (%v), want notes", line.Message.ToolName, err)
	}
	for _, tc := range []struct{ id, window, role, tool string }{
		{"d0e62bbd", lbW0, "assistant", "write_file"},
		{"6ee61fe7", lbW0, "tool", "write_file"},
		{"ba4b42de", lbW0, "assistant", "append_to_file"},
		{"bf26480b", lbW0, "tool", "append_to_file"},
		{"56ee3191", lbW1, "assistant", "read_file"},
		{"eeb21aab", lbW1, "tool", "read_file"},
	} {
		var got history.ReadResult
		s.codexOK("history/read_item", localBasicSessionID, "", map[string]any{"window_id": tc.window, "item_id": tc.id, "limit_chars": 1}, &got)
		if got.Item == nil || got.Item.Role != tc.role || got.Item.ToolName != tc.tool || got.Item.ToolNamespace != "notes" {
			t.Errorf("%s: item %+v, want role %s tool_name %s tool_namespace notes", tc.id, got.Item, tc.role, tc.tool)
		}
	}
	// A non-router tool keeps its name and has no namespace.
	var got history.ReadResult
	s.codexOK("history/read_item", localBasicSessionID, "", map[string]any{"window_id": lbW0, "item_id": "0ae5ea70", "limit_chars": 1}, &got)
	if got.Item == nil || got.Item.ToolName != "read" || got.Item.ToolNamespace != "" {
		t.Errorf("0ae5ea70: %+v, want tool_name read, no namespace", got.Item)
	}
	// The assistant call renders as {"tool":"notes","arguments":{…}} after
	// its thinking text (docs/codex-contract.md "Local history" content parts).
	s.codexOK("history/read_item", localBasicSessionID, "", map[string]any{"window_id": lbW1, "item_id": "56ee3191"}, &got)
	if want := `{"tool":"notes","arguments":{"action":"read_file","path":"/root/notes/checkpoint.md"}}`; got.Item == nil || !strings.HasSuffix(got.Item.Content, "\n"+want) {
		t.Errorf("56ee3191 content %q does not end with the toolCall JSON %s", got.Item.Content, want)
	}
}

// TestLocalReadItem: read_item by full id and unique suffix, ambiguity,
// misses, and code-point paging with next_offset_chars.
func TestLocalReadItem(t *testing.T) {
	s := localBasic(t)
	const userText = "Add a `useWidgetFilters` hook that syncs the filter state with the URL query string, including back/forward navigation."
	read := func(args map[string]any) history.ReadResult {
		t.Helper()
		var got history.ReadResult
		s.codexOK("history/read_item", localBasicSessionID, "", args, &got)
		if got.Source != "pi-session" {
			t.Errorf("source = %q", got.Source)
		}
		return got
	}
	full := &history.ItemBody{WindowID: lbW0, ItemID: "2623e50c", Role: "user", Content: userText, TotalChars: 119}
	for _, id := range []string{"2623e50c", "3e50c", "50c"} {
		if got := read(map[string]any{"window_id": lbW0, "item_id": id}); !reflect.DeepEqual(got.Item, full) {
			t.Errorf("item_id %q: %+v, want %+v", id, got.Item, full)
		}
	}
	// Misses answer item null (docs/codex-contract.md "Local history"): unknown id, the right id in
	// the wrong window, an unknown window, another agent.
	for _, args := range []map[string]any{
		{"window_id": lbW0, "item_id": "zzzzzzzz"},
		{"window_id": lbW1, "item_id": "2623e50c"},
		{"window_id": "no-such-window", "item_id": "2623e50c"},
		{"window_id": lbW0, "item_id": "2623e50c", "agent_name": "/root/worker"},
	} {
		r := s.codexOK("history/read_item", localBasicSessionID, "", args, nil)
		if want := `{"source":"pi-session","item":null}`; string(r.Body) != want {
			t.Errorf("%v: %s, want %s", args, r.Body, want)
		}
	}
	// "d" ends 7 item ids of window 0 (listed in branch order, the first 5
	// named): 422 with the seed-style sentence.
	r := s.codex("history/read_item", localBasicSessionID, "", map[string]any{"window_id": lbW0, "item_id": "d"})
	if p := r.problem(t); r.Status != http.StatusUnprocessableEntity ||
		p.Detail != `history read_item item_id "d" is ambiguous in window `+lbW0+`: it is the end of 7 item IDs (d0e62bbd, 93c48abd, 873ba1dd, f6b104dd, 0175ed0d, and 2 more); pass the full item ID.` {
		t.Errorf("ambiguous: %d %q", r.Status, p.Detail)
	}
	// Empty ids are refused by the operation, missing ones by the schema.
	for _, tc := range []struct {
		args   map[string]any
		detail string
	}{
		{map[string]any{"window_id": lbW0, "item_id": ""}, "history read_item requires item_id: pass an item ID returned by list_items or search_contents."},
		{map[string]any{"window_id": "", "item_id": "2623e50c"}, "history read_item requires window_id: pass the full ID of the window that contains the item."},
		{map[string]any{"window_id": lbW0}, "Invalid request: body: expected required property item_id to be present."},
		{map[string]any{"item_id": "2623e50c"}, "Invalid request: body: expected required property window_id to be present."},
	} {
		r := s.codex("history/read_item", localBasicSessionID, "", tc.args)
		if p := r.problem(t); r.Status != http.StatusUnprocessableEntity || p.Detail != tc.detail {
			t.Errorf("%v: %d %q, want 422 %q", tc.args, r.Status, p.Detail, tc.detail)
		}
	}

	// Paging: offset 10, 20 code points → userText[10:30], next 30.
	// ("Add a `use" is 10 code points.)
	got := read(map[string]any{"window_id": lbW0, "item_id": "2623e50c", "offset_chars": 10, "limit_chars": 20})
	if got.Item == nil || got.Item.Content != "WidgetFilters` hook " || got.Item.TotalChars != 119 || got.Item.NextOffsetChars == nil || *got.Item.NextOffsetChars != 30 {
		t.Errorf("offset 10 limit 20: %+v", got.Item)
	}
	// The last range has no next_offset_chars.
	got = read(map[string]any{"window_id": lbW0, "item_id": "2623e50c", "offset_chars": 100, "limit_chars": 19})
	if got.Item == nil || got.Item.Content != "forward navigation." || got.Item.NextOffsetChars != nil {
		t.Errorf("offset 100 limit 19: %+v", got.Item)
	}
	// The field is absent from the JSON, not null.
	r = s.codexOK("history/read_item", localBasicSessionID, "", map[string]any{"window_id": lbW0, "item_id": "2623e50c", "offset_chars": 118}, nil)
	if want := `{"source":"pi-session","item":{"window_id":"` + lbW0 + `","item_id":"2623e50c","role":"user","content":".","total_chars":119}}`; string(r.Body) != want {
		t.Errorf("last char: %s, want %s", r.Body, want)
	}

	// 4f1722d3 is the 71,625-byte ctx_execute toolResult: its text (one
	// text part, decoded from the JSONL line here) is 70,034 code points,
	// read back whole in 9 pages of at most 8,000 (8 × 8,000 + 6,034).
	text := toolResultText(t, jsonlEntry(t, s.path(localBasicFile), "4f1722d3"))
	if n := utf8.RuneCountInString(text); n != 70034 {
		t.Fatalf("4f1722d3 text has %d code points, want 70034", n)
	}
	pages := readAllPages(t, s, localBasicSessionID, lbW0, "4f1722d3", nil)
	if len(pages) != 9 || utf8.RuneCountInString(pages[8]) != 6034 || strings.Join(pages, "") != text {
		t.Errorf("4f1722d3: %d pages, last %d code points, concatenation equal %v", len(pages), utf8.RuneCountInString(pages[len(pages)-1]), strings.Join(pages, "") == text)
	}
}

// toolResultText decodes a message entry line and joins its text parts
// with "\n" (independently of contextd's renderer).
func toolResultText(t *testing.T, line []byte) string {
	t.Helper()
	var e struct {
		Message struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(line, &e); err != nil {
		t.Fatal(err)
	}
	var parts []string
	for _, p := range e.Message.Content {
		if p.Type != "text" {
			t.Fatalf("unexpected part type %q", p.Type)
		}
		parts = append(parts, p.Text)
	}
	return strings.Join(parts, "\n")
}

// readAllPages reads an item through read_item from offset 0, following
// next_offset_chars; each page is checked to be valid UTF-8, at most
// limit (default 8,000) code points, and next = offset + its length.
func readAllPages(t *testing.T, s *testServer, sessionID, windowID, itemID string, limit *int) []string {
	t.Helper()
	var pages []string
	off := 0
	max := 8000
	if limit != nil {
		max = *limit
	}
	for i := 0; ; i++ {
		args := map[string]any{"window_id": windowID, "item_id": itemID, "offset_chars": off}
		if limit != nil {
			args["limit_chars"] = *limit
		}
		var got history.ReadResult
		s.codexOK("history/read_item", sessionID, "", args, &got)
		if got.Item == nil {
			t.Fatalf("%s at offset %d: item null", itemID, off)
		}
		c := got.Item.Content
		n := utf8.RuneCountInString(c)
		if !utf8.ValidString(c) || n > max || (n < max && got.Item.NextOffsetChars != nil) {
			t.Fatalf("%s page %d: valid %v, %d code points (max %d), next %v", itemID, i, utf8.ValidString(c), n, max, got.Item.NextOffsetChars)
		}
		pages = append(pages, c)
		if got.Item.NextOffsetChars == nil {
			if off+n != got.Item.TotalChars {
				t.Fatalf("%s ended at %d, total_chars %d", itemID, off+n, got.Item.TotalChars)
			}
			return pages
		}
		if *got.Item.NextOffsetChars != off+n {
			t.Fatalf("%s page %d: next_offset_chars %d, want %d", itemID, i, *got.Item.NextOffsetChars, off+n)
		}
		off = *got.Item.NextOffsetChars
	}
}

// TestLocalSearchContents: case-sensitive literal search, filters, order,
// and the required query. Matches were found by hand in the rendered
// texts: "useWidgetFilters" occurs in the user message 2623e50c and in
// the notes write_file call d0e62bbd (plan.md text); no item contains it
// in another case. "DST transitions" occurs in 873ba1dd (user), d6ee75d5
// (checkpoint write_file call), eeb21aab and 82611342 (checkpoint reads).
func TestLocalSearchContents(t *testing.T) {
	s := localBasic(t)
	for _, tc := range []struct {
		name string
		args map[string]any
		want []string
	}{
		{"exact case", map[string]any{"query": "useWidgetFilters"}, []string{"2623e50c", "d0e62bbd"}},
		{"lower case finds nothing", map[string]any{"query": "usewidgetfilters"}, []string{}},
		{"capitalized finds nothing", map[string]any{"query": "UseWidgetFilters"}, []string{}},
		{"across windows", map[string]any{"query": "DST transitions"}, []string{"873ba1dd", "d6ee75d5", "eeb21aab", "82611342"}},
		{"recent_first", map[string]any{"query": "DST transitions", "recent_first": true}, []string{"82611342", "eeb21aab", "d6ee75d5", "873ba1dd"}},
		{"limit 2", map[string]any{"query": "DST transitions", "limit": 2}, []string{"873ba1dd", "d6ee75d5"}},
		{"window 1", map[string]any{"query": "DST transitions", "window_id": lbW1}, []string{"eeb21aab"}},
		{"role user", map[string]any{"query": "DST transitions", "role": "user"}, []string{"873ba1dd"}},
		{"tool_name read_file", map[string]any{"query": "DST transitions", "tool_name": "read_file"}, []string{"eeb21aab", "82611342"}},
		{"tool_namespace notes", map[string]any{"query": "DST transitions", "tool_namespace": "notes"}, []string{"d6ee75d5", "eeb21aab", "82611342"}},
		{"literal, not a pattern", map[string]any{"query": "DST.transitions"}, []string{}},
		{"other agent", map[string]any{"query": "DST transitions", "agent_name": "/root/worker"}, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got history.ItemsResult
			s.codexOK("history/search_contents", localBasicSessionID, "", tc.args, &got)
			if ids := itemIDs(got.Items); got.Source != "pi-session" || !reflect.DeepEqual(ids, tc.want) {
				t.Errorf("items = %v (source %q), want %v", ids, got.Source, tc.want)
			}
		})
	}
	// A hit's preview is the first 1,000 code points, like list_items.
	var got history.ItemsResult
	s.codexOK("history/search_contents", localBasicSessionID, "", map[string]any{"query": "useWidgetFilters", "limit": 1}, &got)
	want := []history.ItemPreview{{WindowID: lbW0, ItemID: "2623e50c", Role: "user",
		TruncatedContent: "Add a `useWidgetFilters` hook that syncs the filter state with the URL query string, including back/forward navigation.", ContentChars: 119}}
	if !reflect.DeepEqual(got.Items, want) {
		t.Errorf("preview %+v, want %+v", got.Items, want)
	}
	r := s.codex("history/search_contents", localBasicSessionID, "", map[string]any{"query": ""})
	if p := r.problem(t); r.Status != http.StatusUnprocessableEntity || p.Detail != "history search_contents requires a non-empty query." {
		t.Errorf("empty query: %d %q", r.Status, p.Detail)
	}
}

// TestLocalOutputCap: list/search answers stop before the items' JSON
// passes 8,000 characters (docs/codex-contract.md "Local history"), and the first item is always
// included.
//
// Window 0 with limit 25 and previews of 1,000: the compact JSON of the
// first items is 249, 524, 1,175, 711, 353, 649, 521, 485, 1,176 and
// 1,184 code points (7,027 in all; computed by hand); the 11th, 22c6b82e,
// is 1,175 and would make 8,202 > 8,000, so exactly 10 items come back.
// Newest first over all windows: 12 items, 7,666 code points.
func TestLocalOutputCap(t *testing.T) {
	s := localBasic(t)
	sizes := func(items []history.ItemPreview) (sum int, each []int) {
		for _, it := range items {
			n := history.PreviewJSONChars(it)
			each = append(each, n)
			sum += n
		}
		return sum, each
	}
	var got history.ItemsResult
	s.codexOK("history/list_items", localBasicSessionID, "", map[string]any{"window_id": lbW0, "limit": 25}, &got)
	wantIDs := []string{"2623e50c", "de10da7e", "0ae5ea70", "d0e62bbd", "6ee61fe7", "9251a52e", "bd1d13e0", "c84b8381", "b2934ad7", "fdf1d79c"}
	sum, each := sizes(got.Items)
	if ids := itemIDs(got.Items); !reflect.DeepEqual(ids, wantIDs) || sum != 7027 ||
		!reflect.DeepEqual(each, []int{249, 524, 1175, 711, 353, 649, 521, 485, 1176, 1184}) {
		t.Errorf("window 0 capped: %v sizes %v sum %d", ids, each, sum)
	}
	// Independently of PreviewJSONChars: measure the items of the answer
	// as sent. The body escapes <, > and & as \u003c, \u003e, \u0026
	// (encoding/json); the cap counts JSON.stringify's form, where each is
	// one character, so every escape counts 1 instead of 6.
	var rawItems struct {
		Items []json.RawMessage `json:"items"`
	}
	r := s.codexOK("history/list_items", localBasicSessionID, "", map[string]any{"window_id": lbW0, "limit": 25}, &rawItems)
	total := 0
	for _, it := range rawItems.Items {
		n := utf8.RuneCount(it)
		for _, esc := range []string{`\u003c`, `\u003e`, `\u0026`} {
			n -= 5 * strings.Count(string(it), esc)
		}
		total += n
	}
	if total != 7027 {
		t.Errorf("raw item JSON = %d code points, want 7027\n%.300s", total, r.Body)
	}

	s.codexOK("history/list_items", localBasicSessionID, "", map[string]any{"limit": 25, "recent_first": true}, &got)
	sum, _ = sizes(got.Items)
	if ids := itemIDs(got.Items); !reflect.DeepEqual(ids, []string{"588752ae", "4092d4c2", "25a503e9", "144b7ed9", "d61db1f9", "2c32dfe1",
		"21f65162", "f3c32ca6", "51916bf6", "a45d4a87", "321f5636", "ae8ec817"}) || sum != 7666 {
		t.Errorf("recent_first capped: %v sum %d", ids, sum)
	}
	// Search is capped the same way: "the" is in most items.
	s.codexOK("history/search_contents", localBasicSessionID, "", map[string]any{"query": "the", "limit": 25}, &got)
	if sum, _ = sizes(got.Items); sum > 8000 || len(got.Items) == 0 {
		t.Errorf("search: %d items, %d code points", len(got.Items), sum)
	}

	// A hand-built session whose window id is 9,000 characters: the id is
	// cut to 256 code points in every item ("…" and its last 255;
	// history.BoundID), so the items stay small and both are listed.
	longID := strings.Repeat("w", 9000)
	b := newSessionBuilder("hand-long-window")
	b.boundary(0, longID, longID, "")
	first := b.user("first")
	second := b.user("second")
	s2 := newTestServer(t, serverOptions{})
	s2.writeFile("long.jsonl", b.bytes())
	s2.codexOK("history/list_items", "hand-long-window", "", map[string]any{"limit": 25}, &got)
	if ids := itemIDs(got.Items); !reflect.DeepEqual(ids, []string{first, second}) || got.Items[0].WindowID != "…"+strings.Repeat("w", 255) || history.PreviewJSONChars(got.Items[0]) > 400 {
		t.Errorf("long window: %v", ids)
	}
	s2.codexOK("history/search_contents", "hand-long-window", "", map[string]any{"query": "s"}, &got)
	if ids := itemIDs(got.Items); !reflect.DeepEqual(ids, []string{first, second}) {
		t.Errorf("long window search: %v", ids)
	}
}

// boundsSession is a hand-built session for the bounds tables: 105
// windows (w-001 … w-105) of one user item "ping NNN" each, and 106 note
// files: f001.md … f105.md ("match\n") plus many.md, 105 lines "match K".
func boundsSession(t *testing.T) *testServer {
	t.Helper()
	b := newSessionBuilder("hand-bounds")
	first := "w-001"
	for i := 1; i <= 105; i++ {
		cur := fmt.Sprintf("w-%03d", i)
		prev := ""
		if i > 1 {
			prev = fmt.Sprintf("w-%03d", i-1)
		}
		b.boundary(i-1, first, cur, prev)
		b.user(fmt.Sprintf("ping %03d", i))
		b.note("write", fmt.Sprintf("/root/notes/f%03d.md", i), "match\n", 1785578400000+int64(i)*1000)
	}
	var many []string
	for k := 1; k <= 105; k++ {
		many = append(many, fmt.Sprintf("match %d", k))
	}
	b.note("write", "/root/notes/many.md", strings.Join(many, "\n"), 1785578400000+200*1000)
	s := newTestServer(t, serverOptions{})
	s.writeFile("bounds.jsonl", b.bytes())
	return s
}

// TestLocalBoundsHistory: every history bound of docs/codex-contract.md "Local history" through
// HTTP. Absent, null, zero and negative values take the default; values
// above the maximum, up to the largest int64, take the maximum (contextd
// reads 0 and negatives as "default", history.ClampLimit).
func TestLocalBoundsHistory(t *testing.T) {
	s := boundsSession(t)
	const huge = int64(9223372036854775807)
	type clampCase struct {
		value any // nil: the argument is absent; "null": JSON null
		want  int
	}
	// want -1: refused with 422 (the Codex schemas' minimum 1; docs/codex-contract.md
	// "Tool surface" table "integer ≥1").
	clamp := func(def, max int) []clampCase {
		return []clampCase{{nil, def}, {"null", def}, {-1, -1}, {-1000000, -1}, {0, -1}, {1, 1}, {max - 1, max - 1},
			{max, max}, {max + 1, max}, {1000000000, max}, {huge, max}}
	}
	refused := func(r response, field, bound string) {
		t.Helper()
		p := r.problem(t)
		if r.Status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Location != "body."+field || p.Errors[0].Message != "expected number >= "+bound ||
			!strings.Contains(p.Detail, "body."+field+": expected number >= "+bound) {
			t.Errorf("%s: %d %s, want 422 naming body.%s and its minimum %s", field, r.Status, r.Body, field, bound)
		}
	}
	with := func(base map[string]any, key string, v any) map[string]any {
		m := map[string]any{}
		for k, x := range base {
			m[k] = x
		}
		switch v {
		case nil:
		case "null":
			m[key] = nil
		default:
			m[key] = v
		}
		return m
	}
	for _, tc := range clamp(history.DefaultWindowsLimit, history.MaxWindowsLimit) { // 20, 100
		if tc.want < 0 {
			refused(s.codex("history/list_windows", "hand-bounds", "", with(nil, "limit", tc.value)), "limit", "1")
			continue
		}
		var got history.WindowsResult
		s.codexOK("history/list_windows", "hand-bounds", "", with(nil, "limit", tc.value), &got)
		if len(got.Windows) != tc.want {
			t.Errorf("list_windows limit %v: %d windows, want %d", tc.value, len(got.Windows), tc.want)
		}
	}
	for _, tc := range clamp(history.DefaultItemsLimit, history.MaxItemsLimit) { // 10, 25
		if tc.want < 0 {
			refused(s.codex("history/list_items", "hand-bounds", "", with(nil, "limit", tc.value)), "limit", "1")
			refused(s.codex("history/search_contents", "hand-bounds", "", with(map[string]any{"query": "ping"}, "limit", tc.value)), "limit", "1")
			continue
		}
		var got history.ItemsResult
		s.codexOK("history/list_items", "hand-bounds", "", with(nil, "limit", tc.value), &got)
		if len(got.Items) != tc.want || (tc.want > 0 && got.Items[0].TruncatedContent != "ping 001") {
			t.Errorf("list_items limit %v: %d items, want %d", tc.value, len(got.Items), tc.want)
		}
		s.codexOK("history/search_contents", "hand-bounds", "", with(map[string]any{"query": "ping"}, "limit", tc.value), &got)
		if len(got.Items) != tc.want {
			t.Errorf("search_contents limit %v: %d items, want %d", tc.value, len(got.Items), tc.want)
		}
	}

	// max_chars_per_item (default and max 1,000) and read_item limit_chars
	// (default and max 8,000) on local-basic: 0ae5ea70 has 2,956 code
	// points, 4f1722d3 70,034 (counted by hand).
	lb := localBasic(t)
	for _, tc := range clamp(history.DefaultMaxCharsPerItem, history.MaxMaxCharsPerItem) {
		if tc.want < 0 {
			refused(lb.codex("history/list_items", localBasicSessionID, "", with(map[string]any{"window_id": lbW0, "role": "tool", "limit": 1}, "max_chars_per_item", tc.value)), "max_chars_per_item", "1")
			continue
		}
		var got history.ItemsResult
		lb.codexOK("history/list_items", localBasicSessionID, "", with(map[string]any{"window_id": lbW0, "role": "tool", "limit": 1}, "max_chars_per_item", tc.value), &got)
		if len(got.Items) != 1 || got.Items[0].ItemID != "0ae5ea70" || utf8.RuneCountInString(got.Items[0].TruncatedContent) != tc.want || got.Items[0].ContentChars != 2956 {
			t.Errorf("max_chars_per_item %v: %+v, want %d code points", tc.value, got.Items, tc.want)
		}
	}
	for _, tc := range clamp(history.DefaultReadLimitChars, history.MaxReadLimitChars) {
		if tc.want < 0 {
			refused(lb.codex("history/read_item", localBasicSessionID, "", with(map[string]any{"window_id": lbW0, "item_id": "4f1722d3"}, "limit_chars", tc.value)), "limit_chars", "1")
			continue
		}
		var got history.ReadResult
		lb.codexOK("history/read_item", localBasicSessionID, "", with(map[string]any{"window_id": lbW0, "item_id": "4f1722d3"}, "limit_chars", tc.value), &got)
		if got.Item == nil || utf8.RuneCountInString(got.Item.Content) != tc.want || got.Item.NextOffsetChars == nil || *got.Item.NextOffsetChars != tc.want {
			t.Errorf("limit_chars %v: %d code points, want %d", tc.value, utf8.RuneCountInString(got.Item.Content), tc.want)
		}
	}
	// offset_chars is at least 0 (the Codex schema's minimum): negative is
	// refused; at or past the end gives "" and no next_offset_chars.
	for _, v := range []any{-1, -huge} {
		refused(lb.codex("history/read_item", localBasicSessionID, "", with(map[string]any{"window_id": lbW0, "item_id": "4f1722d3"}, "offset_chars", v)), "offset_chars", "0")
	}
	text := toolResultText(t, jsonlEntry(t, lb.path(localBasicFile), "4f1722d3"))
	for _, tc := range []struct {
		value any
		want  string
		next  int // -1: absent
	}{
		{nil, runeSlice(text, 0, 8000), 8000},
		{"null", runeSlice(text, 0, 8000), 8000},
		{0, runeSlice(text, 0, 8000), 8000},
		{70000, runeSlice(text, 70000, 34), -1},
		{70033, runeSlice(text, 70033, 1), -1},
		{70034, "", -1},
		{70035, "", -1},
		{huge, "", -1},
	} {
		var got history.ReadResult
		lb.codexOK("history/read_item", localBasicSessionID, "", with(map[string]any{"window_id": lbW0, "item_id": "4f1722d3"}, "offset_chars", tc.value), &got)
		next := -1
		if got.Item != nil && got.Item.NextOffsetChars != nil {
			next = *got.Item.NextOffsetChars
		}
		if got.Item == nil || got.Item.Content != tc.want || next != tc.next || got.Item.TotalChars != 70034 {
			t.Errorf("offset_chars %v: next %d, want %d; content equal %v", tc.value, next, tc.next, got.Item != nil && got.Item.Content == tc.want)
		}
	}
}

// TestLocalBoundsNotes: the notes bounds of docs/codex-contract.md "Local notes" through HTTP:
// list max_results, search max_files and max_matches_per_file (default
// 20, max 100 each; absent and null take the default; 0 and negatives are
// refused, the Codex schemas' minimum 1), and read_file line indices (a
// reversed range is refused, naming both).
func TestLocalBoundsNotes(t *testing.T) {
	s := boundsSession(t) // 106 note files; many.md has 105 matching lines
	const huge = int64(9223372036854775807)
	cases := []struct {
		value any
		want  int
	}{{nil, 20}, {"null", 20}, {-1, -1}, {0, -1}, {1, 1}, {99, 99}, {100, 100}, {101, 100}, {1000000000, 100}, {huge, 100}}
	refused := func(r response, field string) {
		t.Helper()
		p := r.problem(t)
		if r.Status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Location != "body."+field || p.Errors[0].Message != "expected number >= 1" {
			t.Errorf("%s: %d %s, want 422 naming body.%s and its minimum 1", field, r.Status, r.Body, field)
		}
	}
	arg := func(base map[string]any, key string, v any) map[string]any {
		m := map[string]any{}
		for k, x := range base {
			m[k] = x
		}
		if v == "null" {
			m[key] = nil
		} else if v != nil {
			m[key] = v
		}
		return m
	}
	for _, tc := range cases {
		if tc.want < 0 {
			refused(s.codex("notes/list_files_by_prefix", "hand-bounds", "", arg(nil, "max_results", tc.value)), "max_results")
			refused(s.codex("notes/search_contents", "hand-bounds", "", arg(map[string]any{"query": "match"}, "max_files", tc.value)), "max_files")
			refused(s.codex("notes/search_contents", "hand-bounds", "", arg(map[string]any{"query": "match", "path_prefix": "many"}, "max_matches_per_file", tc.value)), "max_matches_per_file")
			continue
		}
		var list notes.ListResult
		s.codexOK("notes/list_files_by_prefix", "hand-bounds", "", arg(nil, "max_results", tc.value), &list)
		if len(list.Files) != tc.want || list.Files[0].Path != "/root/notes/f001.md" {
			t.Errorf("max_results %v: %d files, want %d", tc.value, len(list.Files), tc.want)
		}
		var found notes.SearchResult
		s.codexOK("notes/search_contents", "hand-bounds", "", arg(map[string]any{"query": "match"}, "max_files", tc.value), &found)
		if len(found.Files) != tc.want {
			t.Errorf("max_files %v: %d files, want %d", tc.value, len(found.Files), tc.want)
		}
		s.codexOK("notes/search_contents", "hand-bounds", "", arg(map[string]any{"query": "match", "path_prefix": "many"}, "max_matches_per_file", tc.value), &found)
		if len(found.Files) != 1 || len(found.Files[0].Matches) != tc.want || found.Files[0].Matches[0] != (notes.Match{LineNumber: 1, Line: "match 1"}) {
			t.Errorf("max_matches_per_file %v: %+v, want %d matches", tc.value, found.Files, tc.want)
		}
	}
	// read_file lines of many.md (105 lines "match K"): 1-based,
	// inclusive, negative from the end, 0 or null the default, clamped.
	for _, tc := range []struct {
		start, stop       any
		wantStart, wantTo int
	}{
		{nil, nil, 1, 105},
		{0, 0, 1, 105},
		{"null", "null", 1, 105},
		{3, 5, 3, 5},
		{-2, nil, 104, 105},
		{nil, -104, 1, 2},
		{-1000, 2, 1, 2},
		{104, 1000, 104, 105},
		{huge, huge, 105, 105},
		{-huge, -huge, 1, 1},
	} {
		var got notes.ReadResult
		args := arg(arg(map[string]any{"path": "many.md"}, "start_line", tc.start), "stop_line", tc.stop)
		s.codexOK("notes/read_file", "hand-bounds", "", args, &got)
		var want []string
		for k := tc.wantStart; k <= tc.wantTo; k++ {
			want = append(want, fmt.Sprintf("match %d", k))
		}
		if got.File == nil || got.File.StartLine != tc.wantStart || got.File.StopLine != tc.wantTo || got.File.TotalLines != 105 ||
			got.File.Content != strings.Join(want, "\n") {
			t.Errorf("start %v stop %v: %+v, want lines %d..%d", tc.start, tc.stop, got.File, tc.wantStart, tc.wantTo)
		}
	}
	// Both given and reversed (negatives resolved against 105 lines): 422
	// naming both as sent and as lines.
	for _, tc := range []struct {
		start, stop int
		detail      string
	}{
		{5, 3, "start_line 5 is after stop_line 3 (lines 5 and 3 of 105); pass a start_line at or before stop_line"},
		{-2, 3, "start_line -2 is after stop_line 3 (lines 104 and 3 of 105); pass a start_line at or before stop_line"},
		{200, -104, "start_line 200 is after stop_line -104 (lines 200 and 2 of 105); pass a start_line at or before stop_line"},
	} {
		r := s.codex("notes/read_file", "hand-bounds", "", map[string]any{"path": "many.md", "start_line": tc.start, "stop_line": tc.stop})
		if p := r.problem(t); r.Status != http.StatusUnprocessableEntity || p.Detail != tc.detail {
			t.Errorf("start %d stop %d: %d %s, want 422 %q", tc.start, tc.stop, r.Status, r.Body, tc.detail)
		}
	}
}

// TestLocalWrongTypes: an argument of the wrong JSON type is a 422 whose
// detail and errors[] name the field (body.<name>), for every numeric,
// boolean and string argument of the ten routes, and for integers that do
// not fit or are written as decimals.
func TestLocalWrongTypes(t *testing.T) {
	s := localBasic(t)
	for _, tc := range []struct {
		op, field string
		value     any
		msg       string
	}{
		{"history/list_windows", "limit", "5", "expected integer"},
		{"history/list_windows", "limit", 2.5, "expected integer"},
		{"history/list_windows", "recent_first", "yes", "expected boolean"},
		{"history/list_windows", "agent_name", 7, "expected string"},
		{"history/list_items", "limit", true, "expected integer"},
		{"history/list_items", "max_chars_per_item", "1000", "expected integer"},
		{"history/list_items", "role", 1, "expected string"},
		{"history/list_items", "tool_name", []string{"read"}, "expected string"},
		{"history/list_items", "tool_namespace", map[string]any{}, "expected string"},
		{"history/list_items", "window_id", 12, "expected string"},
		{"history/list_items", "recent_first", 1, "expected boolean"},
		{"history/read_item", "item_id", 5, "expected string"},
		{"history/read_item", "window_id", false, "expected string"},
		{"history/read_item", "offset_chars", "0", "expected integer"},
		{"history/read_item", "limit_chars", 1.5, "expected integer"},
		{"history/search_contents", "query", 42, "expected string"},
		{"history/search_contents", "limit", "10", "expected integer"},
		{"notes/list_files_by_prefix", "prefix", 1, "expected string"},
		{"notes/list_files_by_prefix", "max_results", "20", "expected integer"},
		{"notes/read_file", "path", 1, "expected string"},
		{"notes/read_file", "start_line", "1", "expected integer"},
		{"notes/read_file", "stop_line", 1.5, "expected integer"},
		{"notes/search_contents", "max_files", "x", "expected integer"},
		{"notes/search_contents", "max_matches_per_file", true, "expected integer"},
		{"notes/search_contents", "recent_file_first", "true", "expected boolean"},
		{"notes/search_contents", "path_prefix", 3, "expected string"},
		{"notes/append_to_file", "text", 3, "expected string"},
		{"notes/write_file", "path", nil, "expected string"},
	} {
		t.Run(tc.op+" "+tc.field, func(t *testing.T) {
			args := map[string]any{tc.field: tc.value}
			// Required arguments of the route, valid, so only the field under test is wrong.
			for k, v := range map[string]map[string]any{
				"history/read_item":       {"item_id": "2623e50c", "window_id": lbW0},
				"history/search_contents": {"query": "x"},
				"notes/read_file":         {"path": "plan.md"},
				"notes/search_contents":   {"query": "x"},
				"notes/append_to_file":    {"path": "plan.md", "text": "x"},
				"notes/write_file":        {"path": "plan.md", "text": "x"},
			}[tc.op] {
				if _, ok := args[k]; !ok {
					args[k] = v
				}
			}
			r := s.codex(tc.op, localBasicSessionID, "", args)
			p := r.problem(t)
			loc := "body." + tc.field
			if r.Status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Location != loc || p.Errors[0].Message != tc.msg ||
				p.Detail != "Invalid request: "+loc+": "+tc.msg+"." {
				t.Errorf("%d %s", r.Status, r.Body)
			}
		})
	}
	// Integers out of int64 range, and integer-valued decimals, pass the
	// schema (JSON Schema integers) but not Go decoding: still 422 naming
	// the field, without Go type names.
	const outOfRange = "expected integer written without a fraction or exponent, between -9223372036854775808 and 9223372036854775807"
	for _, tc := range []struct{ op, body, field string }{
		{"history/list_windows", `{"limit": 1e30, "context": {"session_id": "` + localBasicSessionID + `"}}`, "limit"},
		{"history/list_items", `{"limit": 99999999999999999999999, "context": {"session_id": "` + localBasicSessionID + `"}}`, "limit"},
		{"history/list_items", `{"max_chars_per_item": 2.0, "context": {"session_id": "` + localBasicSessionID + `"}}`, "max_chars_per_item"},
		{"history/read_item", `{"item_id": "2623e50c", "window_id": "` + lbW0 + `", "offset_chars": 1e20, "context": {"session_id": "` + localBasicSessionID + `"}}`, "offset_chars"},
		{"notes/list_files_by_prefix", `{"max_results": 1e19, "context": {"session_id": "` + localBasicSessionID + `"}}`, "max_results"},
	} {
		r := s.post(codexPath(tc.op), tc.body)
		p := r.problem(t)
		loc := "body." + tc.field
		if r.Status != http.StatusUnprocessableEntity || len(p.Errors) != 1 || p.Errors[0].Location != loc || p.Errors[0].Message != outOfRange ||
			p.Detail != "Invalid request: "+loc+": "+outOfRange+"." {
			t.Errorf("%s %s: %d %s", tc.op, tc.body, r.Status, r.Body)
		}
	}
	// A context of the wrong type names context.session_id.
	r := s.post(codexPath("history/list_windows"), `{"context": {"session_id": 5}}`)
	if p := r.problem(t); r.Status != http.StatusUnprocessableEntity || p.Detail != "Invalid request: body.context.session_id: expected string." {
		t.Errorf("context.session_id: %d %s", r.Status, r.Body)
	}
}

// lbNotes are the note files of local-basic at its leaf
// (local-basic.expected.json notesActiveBranch; created/updated ms turned
// into ISO by hand).
var lbNotes = []notes.FileMeta{
	{Path: "/root/notes/backlog.md", Bytes: 73, CreatedAt: "2026-07-06T13:15:13.461Z", UpdatedAt: "2026-07-06T13:15:13.461Z"},
	{Path: "/root/notes/checkpoint.md", Bytes: 947, CreatedAt: "2026-07-06T12:56:58.543Z", UpdatedAt: "2026-07-06T13:09:05.034Z"},
	{Path: "/root/notes/decisions.md", Bytes: 79, CreatedAt: "2026-07-06T13:02:12.881Z", UpdatedAt: "2026-07-06T13:02:12.881Z"},
	{Path: "/root/notes/plan.md", Bytes: 283, CreatedAt: "2026-07-06T12:47:08.114Z", UpdatedAt: "2026-07-06T12:47:08.114Z"},
	{Path: "/root/notes/progress.md", Bytes: 695, CreatedAt: "2026-07-06T12:51:59.207Z", UpdatedAt: "2026-07-06T13:15:46.774Z"},
}

// expectedNoteText returns a note's text from local-basic.expected.json.
func expectedNoteText(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(fixturePiTree, "local-basic.expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Notes []struct {
			Path string `json:"path"`
			Text string `json:"text"`
		} `json:"notesActiveBranch"`
	}
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	for _, n := range exp.Notes {
		if n.Path == path {
			return n.Text
		}
	}
	t.Fatalf("no note %s in expected.json", path)
	return ""
}

// TestLocalNotesRead: list, read and search the notes of local-basic.
func TestLocalNotesRead(t *testing.T) {
	s := localBasic(t)
	var list notes.ListResult
	s.codexOK("notes/list_files_by_prefix", localBasicSessionID, "", nil, &list)
	if list.Source != "pi-session" || !reflect.DeepEqual(list.Files, lbNotes) {
		t.Errorf("list:\n got %+v\nwant %+v", list, lbNotes)
	}
	// Ordered by updated_at, newest first: progress, backlog, checkpoint, decisions, plan.
	s.codexOK("notes/list_files_by_prefix", localBasicSessionID, "", map[string]any{"file_order_by": "updated_at", "file_order": "descending", "max_results": 2}, &list)
	if want := []notes.FileMeta{lbNotes[4], lbNotes[0]}; !reflect.DeepEqual(list.Files, want) {
		t.Errorf("by updated_at desc: %+v", list.Files)
	}
	for _, prefix := range []string{"p", "/root/notes/p"} {
		s.codexOK("notes/list_files_by_prefix", localBasicSessionID, "", map[string]any{"prefix": prefix}, &list)
		if want := []notes.FileMeta{lbNotes[3], lbNotes[4]}; !reflect.DeepEqual(list.Files, want) {
			t.Errorf("prefix %q: %+v", prefix, list.Files)
		}
	}
	// Earlier on the branch (leaf 311c04e4, end of window 0) only three
	// files exist: plan, progress (first append, 252 bytes) and checkpoint
	// (first write, 473 bytes); the sizes match boundary 1ad99795's hint.
	s.codexOK("notes/list_files_by_prefix", localBasicSessionID, "311c04e4", nil, &list)
	if len(list.Files) != 3 || list.Files[0].Path != "/root/notes/checkpoint.md" || list.Files[0].Bytes != 473 ||
		list.Files[1].Path != "/root/notes/plan.md" || list.Files[2].Path != "/root/notes/progress.md" || list.Files[2].Bytes != 252 {
		t.Errorf("at 311c04e4: %+v", list.Files)
	}

	checkpoint := expectedNoteText(t, "/root/notes/checkpoint.md")
	var rf notes.ReadResult
	s.codexOK("notes/read_file", localBasicSessionID, "", map[string]any{"path": "checkpoint.md"}, &rf)
	want := &notes.FileContent{FileMeta: lbNotes[1], Content: checkpoint, StartLine: 1, StopLine: 25, TotalLines: 25}
	if rf.Source != "pi-session" || !reflect.DeepEqual(rf.File, want) {
		t.Errorf("read checkpoint.md:\n got %+v\nwant %+v", rf.File, want)
	}
	s.codexOK("notes/read_file", localBasicSessionID, "", map[string]any{"path": "/root/notes/checkpoint.md", "start_line": 13, "stop_line": 15}, &rf)
	if rf.File == nil || rf.File.Content != "# Checkpoint\n\nActive request: Migrate `ServiceTable` from the old context store to the zustand store we use elsewhere." {
		t.Errorf("lines 13-15: %+v", rf.File)
	}
	r := s.codexOK("notes/read_file", localBasicSessionID, "", map[string]any{"path": "missing.md"}, nil)
	if string(r.Body) != `{"source":"pi-session","file":null}` {
		t.Errorf("missing file: %s", r.Body)
	}

	// Search is case-sensitive and per line: "Checkpoint" is lines 1 and
	// 13 of checkpoint.md and nowhere else; "checkpoint" matches nothing.
	var sr notes.SearchResult
	s.codexOK("notes/search_contents", localBasicSessionID, "", map[string]any{"query": "Checkpoint"}, &sr)
	wantS := []notes.SearchFile{{Path: "/root/notes/checkpoint.md", Matches: []notes.Match{{LineNumber: 1, Line: "# Checkpoint"}, {LineNumber: 13, Line: "# Checkpoint"}}}}
	if sr.Source != "pi-session" || !reflect.DeepEqual(sr.Files, wantS) {
		t.Errorf("search Checkpoint: %+v", sr.Files)
	}
	s.codexOK("notes/search_contents", localBasicSessionID, "", map[string]any{"query": "checkpoint"}, &sr)
	if len(sr.Files) != 0 {
		t.Errorf("search checkpoint: %+v", sr.Files)
	}
	// "npx vitest run" is in plan.md line 9 and checkpoint.md lines 12 and 24.
	s.codexOK("notes/search_contents", localBasicSessionID, "", map[string]any{"query": "npx vitest run"}, &sr)
	wantS = []notes.SearchFile{
		{Path: "/root/notes/checkpoint.md", Matches: []notes.Match{{LineNumber: 12, Line: "2. Run `npx vitest run` and update notes"}, {LineNumber: 24, Line: "2. Run `npx vitest run` and update notes"}}},
		{Path: "/root/notes/plan.md", Matches: []notes.Match{{LineNumber: 9, Line: "- [ ] run `npx vitest run`"}}},
	}
	if !reflect.DeepEqual(sr.Files, wantS) {
		t.Errorf("search npx vitest run: %+v", sr.Files)
	}
	r = s.codex("notes/search_contents", localBasicSessionID, "", map[string]any{"query": ""})
	if p := r.problem(t); r.Status != http.StatusUnprocessableEntity || p.Detail != "notes search_contents requires query" {
		t.Errorf("empty query: %d %s", r.Status, r.Body)
	}
}

// appendNoteEntry appends a planned note entry to the session file as
// Pi's appendCustomEntry(customType, data) writes it, as the child of
// parent, and returns its id.
func appendNoteEntry(t *testing.T, s *testServer, file, parent, id string, e notes.AppendEntry) string {
	t.Helper()
	if e.Type != "custom" || e.CustomType != "codex-context-note" {
		t.Fatalf("planned entry %+v is not a custom codex-context-note", e)
	}
	p := parent
	line, err := json.Marshal(piCustomEntry{Type: "custom", CustomType: e.CustomType, Data: e.Data, ID: id, ParentID: &p,
		Timestamp: time.UnixMilli(e.Data.Timestamp).UTC().Format("2006-01-02T15:04:05.000Z")})
	if err != nil {
		t.Fatal(err)
	}
	s.appendLine(file, line)
	return id
}

// TestLocalNotesWriteAppend: a write plans exactly one entry and changes
// nothing; once the test appends it (as the extension would), read_file,
// list and search see it; append_to_file likewise.
func TestLocalNotesWriteAppend(t *testing.T) {
	// The clock is read by the server's goroutines: keep it atomic.
	var clock atomic.Int64
	clock.Store(time.Date(2026, 8, 1, 12, 0, 0, 123e6, time.UTC).UnixMilli())
	nowFn := func() time.Time { return time.UnixMilli(clock.Load()).UTC() }
	s := newTestServer(t, serverOptions{Clock: nowFn}, piTree(localBasicFile))
	now := nowFn()
	file := s.path(localBasicFile)
	before := fileSHA256(t, file)

	var w coordinator.NoteWrite
	s.codexOK("notes/write_file", localBasicSessionID, "", map[string]any{"path": "ideas.md", "text": "# Ideas\n- one\n"}, &w)
	wantMeta := notes.FileMeta{Path: "/root/notes/ideas.md", Bytes: 14, CreatedAt: "2026-08-01T12:00:00.123Z", UpdatedAt: "2026-08-01T12:00:00.123Z"}
	wantEntry := notes.AppendEntry{Type: "custom", CustomType: "codex-context-note",
		Data: notes.NoteData{Protocol: 1, Action: "write", Path: "/root/notes/ideas.md", Text: "# Ideas\n- one\n", Timestamp: now.UnixMilli()}}
	if w.Source != "pi-session" || w.File != wantMeta || len(w.Append) != 1 || w.Append[0] != wantEntry {
		t.Fatalf("write answer %+v", w)
	}
	if fileSHA256(t, file) != before {
		t.Fatal("a planned write changed the session file")
	}
	// Not applied until appended.
	r := s.codexOK("notes/read_file", localBasicSessionID, "", map[string]any{"path": "ideas.md"}, nil)
	if string(r.Body) != `{"source":"pi-session","file":null}` {
		t.Fatalf("before append: %s", r.Body)
	}
	leaf1 := appendNoteEntry(t, s, localBasicFile, "588752ae", "a1b2c3d4", w.Append[0])
	var rf notes.ReadResult
	s.codexOK("notes/read_file", localBasicSessionID, "", map[string]any{"path": "/root/notes/ideas.md"}, &rf)
	want := &notes.FileContent{FileMeta: wantMeta, Content: "# Ideas\n- one\n", StartLine: 1, StopLine: 3, TotalLines: 3}
	if !reflect.DeepEqual(rf.File, want) {
		t.Fatalf("after write: %+v, want %+v", rf.File, want)
	}

	// Append: created_at kept, updated_at = now, text appended exactly.
	clock.Add(90_000)
	now = nowFn()
	s.codexOK("notes/append_to_file", localBasicSessionID, leaf1, map[string]any{"path": "ideas.md", "text": "- two 🎉\n"}, &w)
	wantMeta = notes.FileMeta{Path: "/root/notes/ideas.md", Bytes: 14 + 11, CreatedAt: "2026-08-01T12:00:00.123Z", UpdatedAt: "2026-08-01T12:01:30.123Z"}
	if w.File != wantMeta || len(w.Append) != 1 || w.Append[0].Data.Action != "append" || w.Append[0].Data.Text != "- two 🎉\n" || w.Append[0].Data.Timestamp != now.UnixMilli() {
		t.Fatalf("append answer %+v", w)
	}
	leaf2 := appendNoteEntry(t, s, localBasicFile, leaf1, "b2c3d4e5", w.Append[0])
	s.codexOK("notes/read_file", localBasicSessionID, "", map[string]any{"path": "ideas.md"}, &rf)
	want = &notes.FileContent{FileMeta: wantMeta, Content: "# Ideas\n- one\n- two 🎉\n", StartLine: 1, StopLine: 4, TotalLines: 4}
	if !reflect.DeepEqual(rf.File, want) {
		t.Fatalf("after append: %+v, want %+v", rf.File, want)
	}
	// Appending to an existing fixture note extends it (progress.md, 695 bytes).
	s.codexOK("notes/append_to_file", localBasicSessionID, leaf2, map[string]any{"path": "progress.md", "text": "tail"}, &w)
	appendNoteEntry(t, s, localBasicFile, leaf2, "c3d4e5f6", w.Append[0])
	s.codexOK("notes/read_file", localBasicSessionID, "", map[string]any{"path": "progress.md", "start_line": -1}, &rf)
	if rf.File == nil || rf.File.Bytes != 699 || rf.File.Content != "tail" || rf.File.TotalLines != 16 || rf.File.CreatedAt != lbNotes[4].CreatedAt {
		t.Errorf("progress.md after append: %+v", rf.File)
	}
	// Listing and search see the new file; the thread hint names it first.
	var list notes.ListResult
	s.codexOK("notes/list_files_by_prefix", localBasicSessionID, "", map[string]any{"prefix": "ideas"}, &list)
	if len(list.Files) != 1 || list.Files[0] != wantMeta {
		t.Errorf("list after writes: %+v", list.Files)
	}
	var sr notes.SearchResult
	s.codexOK("notes/search_contents", localBasicSessionID, "", map[string]any{"query": "🎉"}, &sr)
	if want := []notes.SearchFile{{Path: "/root/notes/ideas.md", Matches: []notes.Match{{LineNumber: 3, Line: "- two 🎉"}}}}; !reflect.DeepEqual(sr.Files, want) {
		t.Errorf("search 🎉: %+v", sr.Files)
	}
	// ideas.md and progress.md were both updated last at 12:01:30.123:
	// equal times are ordered by path (docs/codex-contract.md "Local notes").
	var hint coordinator.ThreadHintResult
	s.codexOK("notes/thread_hint", localBasicSessionID, "", nil, &hint)
	wantHint := "Recent notes (up to 5, most-recent first):\n" +
		"- /root/notes/ideas.md (4 lines, 25 UTF-8 bytes)\n" +
		"- /root/notes/progress.md (16 lines, 699 UTF-8 bytes)\n" +
		"- /root/notes/backlog.md (3 lines, 73 UTF-8 bytes)\n" +
		"- /root/notes/checkpoint.md (25 lines, 947 UTF-8 bytes)\n" +
		"- /root/notes/decisions.md (2 lines, 79 UTF-8 bytes)\n" +
		`Previous window history IDs: {"window_id":"` + lbW1 + `","user_item_ids":["3c8df77c","4b644770"]}`
	if hint.Text != wantHint {
		t.Errorf("hint:\n got %q\nwant %q", hint.Text, wantHint)
	}
}

// TestLocalNotesSizeLimit: a note file may hold exactly 1,000,000 UTF-8
// bytes (docs/codex-contract.md "Local notes"); one byte more is refused with the seed's
// sentence and nothing is planned.
func TestLocalNotesSizeLimit(t *testing.T) {
	t.Parallel() // slow (large files); independent of the other tests
	s := localBasic(t)
	file := s.path(localBasicFile)
	before := fileSHA256(t, file)
	tooLarge := func(r response) {
		t.Helper()
		p := r.problem(t)
		if r.Status != http.StatusRequestEntityTooLarge || p.Detail != "Note file exceeds the 1,000,000-byte limit" || strings.Contains(string(r.Body), `"append"`) {
			t.Errorf("%d %.300s", r.Status, r.Body)
		}
	}
	var w coordinator.NoteWrite
	// Exactly 1,000,000 bytes: ASCII, and 500,000 two-byte "é" (the limit
	// is bytes, not characters).
	for _, text := range []string{strings.Repeat("a", 1_000_000), strings.Repeat("é", 500_000)} {
		s.codexOK("notes/write_file", localBasicSessionID, "", map[string]any{"path": "big.md", "text": text}, &w)
		if w.File.Bytes != 1_000_000 || len(w.Append) != 1 || len(w.Append[0].Data.Text) != 1_000_000 {
			t.Errorf("1,000,000 bytes: %+v bytes %d", w.File, w.File.Bytes)
		}
	}
	// 1,000,001 bytes: ASCII, and 499,999 "é" + "abc".
	for _, text := range []string{strings.Repeat("a", 1_000_001), strings.Repeat("é", 499_999) + "abc"} {
		tooLarge(s.codex("notes/write_file", localBasicSessionID, "", map[string]any{"path": "big.md", "text": text}))
		tooLarge(s.codex("notes/append_to_file", localBasicSessionID, "", map[string]any{"path": "fresh.md", "text": text}))
	}
	// Appends count the existing bytes: progress.md has 695 bytes, so
	// 999,305 more reach the limit exactly and 999,306 pass it.
	s.codexOK("notes/append_to_file", localBasicSessionID, "", map[string]any{"path": "progress.md", "text": strings.Repeat("b", 999_305)}, &w)
	if w.File.Bytes != 1_000_000 {
		t.Errorf("append to the limit: %+v", w.File)
	}
	tooLarge(s.codex("notes/append_to_file", localBasicSessionID, "", map[string]any{"path": "progress.md", "text": strings.Repeat("b", 999_306)}))
	// Nothing was applied: the file is unchanged and the notes are the fixture's.
	if fileSHA256(t, file) != before {
		t.Error("session file changed")
	}
	var list notes.ListResult
	s.codexOK("notes/list_files_by_prefix", localBasicSessionID, "", nil, &list)
	if !reflect.DeepEqual(list.Files, lbNotes) {
		t.Errorf("notes after refused writes: %+v", list.Files)
	}
}

// TestLocalNotePathRules: the path rules of docs/codex-contract.md "Local notes" through
// write_file, append_to_file and read_file: refused paths are 422 with a
// sentence that shows an accepted form.
func TestLocalNotePathRules(t *testing.T) {
	s := localBasic(t)
	const accepted = `; use a relative path like "plan.md" or an absolute one like "/root/notes/plan.md"`
	const comps = `path components must not be empty, "." or ".."`
	for _, tc := range []struct{ path, detail string }{
		{"../x", `Invalid note path "../x": ` + comps + accepted},
		{"x/..", `Invalid note path "x/..": ` + comps + accepted},
		{"/root/notes/..", `Invalid note path "/root/notes/..": ` + comps + accepted},
		{"/root/notes/../notes/x", `Invalid note path "/root/notes/../notes/x": ` + comps + accepted},
		{"./plan.md", `Invalid note path "./plan.md": ` + comps + accepted},
		{"%2e%2e/x", `Invalid note path "%2e%2e/x": ` + comps + accepted},
		{"/root/notes/%2E%2E", `Invalid note path "/root/notes/%2E%2E": ` + comps + accepted},
		{"a//b", `Invalid note path "a//b": ` + comps + accepted},
		{"/root/notes_backup/x", `Invalid note path "/root/notes_backup/x": an absolute path must have the form <agent>/notes/<name>, with "notes" as a whole component` + accepted},
		{"/root/notes", `Invalid note path "/root/notes": it names a notes directory itself, not a file` + accepted},
		{"/root/notes/", `Invalid note path "/root/notes/": it names a notes directory, not a file` + accepted},
		{"plan.md/", `Invalid note path "plan.md/": a file path must not end with "/"` + accepted},
		{"/etc/passwd", `Invalid note path "/etc/passwd": an absolute path must start with an agent name under "/root", as in "/root/notes/plan.md" or "/root/worker/notes/plan.md"` + accepted},
		{"a\x00b", `Invalid note path "a\x00b": the path must not contain control characters such as NUL, newline or DEL` + accepted},
		{"a\nb", `Invalid note path "a\nb": the path must not contain control characters such as NUL, newline or DEL` + accepted},
		{`a\b`, `Invalid note path "a\\b": components are separated by "/"; backslashes are not allowed` + accepted},
		{`..\x`, `Invalid note path "..\\x": components are separated by "/"; backslashes are not allowed` + accepted},
		{"", "Note file path is required"},
	} {
		for _, op := range []string{"notes/write_file", "notes/append_to_file", "notes/read_file"} {
			args := map[string]any{"path": tc.path}
			if op != "notes/read_file" {
				args["text"] = "x"
			}
			r := s.codex(op, localBasicSessionID, "", args)
			if p := r.problem(t); r.Status != http.StatusUnprocessableEntity || p.Detail != tc.detail || strings.Contains(string(r.Body), `"append"`) {
				t.Errorf("%s %q: %d %q\nwant 422 %q", op, tc.path, r.Status, p.Detail, tc.detail)
			}
		}
	}
	// Accepted forms resolve to full paths. Paths are virtual, never URL
	// decoded: "a%2fb" is a file literally named "a%2fb" under /root/notes
	// (notes.ResolveFile, notes/path_test.go), "~" is literal
	// (docs/codex-contract.md "Tool surface"), and other agents' notes may be named.
	for _, tc := range []struct{ path, full string }{
		{"plan.md", "/root/notes/plan.md"},
		{"drafts/a b.md", "/root/notes/drafts/a b.md"},
		{"notes/x", "/root/notes/notes/x"},
		{"a%2fb", "/root/notes/a%2fb"},
		{"~/x", "/root/notes/~/x"},
		{"/root/worker/notes/x.md", "/root/worker/notes/x.md"},
		{"漢字.md", "/root/notes/漢字.md"},
	} {
		var w coordinator.NoteWrite
		s.codexOK("notes/write_file", localBasicSessionID, "", map[string]any{"path": tc.path, "text": "x"}, &w)
		if w.File.Path != tc.full || len(w.Append) != 1 || w.Append[0].Data.Path != tc.full {
			t.Errorf("%q: %+v, want %s", tc.path, w, tc.full)
		}
	}
	// Prefixes follow the same rules (list and search).
	for _, op := range []string{"notes/list_files_by_prefix", "notes/search_contents"} {
		args := map[string]any{"prefix": "../"}
		if op == "notes/search_contents" {
			args = map[string]any{"path_prefix": "../", "query": "x"}
		}
		r := s.codex(op, localBasicSessionID, "", args)
		want := `Invalid note prefix "../": path components must not be empty, "." or ".."; use a relative prefix like "drafts/" or an absolute one like "/root/notes/"`
		if p := r.problem(t); r.Status != http.StatusUnprocessableEntity || p.Detail != want {
			t.Errorf("%s ../: %d %q", op, r.Status, p.Detail)
		}
	}
}

// TestLocalThreadHint: the thread hint at the leaf and at the end of
// window 0 (docs/codex-contract.md "Local notes"). At the leaf: the five notes by updated_at
// newest first (sizes and line counts from expected.json
// notesActiveBranch: line count = the text split at "\n"), then the
// previous window (1) with its user messages newest first, as in
// boundary 177c1e63's content.
func TestLocalThreadHint(t *testing.T) {
	s := localBasic(t)
	var hint coordinator.ThreadHintResult
	s.codexOK("notes/thread_hint", localBasicSessionID, "", nil, &hint)
	want := "Recent notes (up to 5, most-recent first):\n" +
		"- /root/notes/progress.md (16 lines, 695 UTF-8 bytes)\n" +
		"- /root/notes/backlog.md (3 lines, 73 UTF-8 bytes)\n" +
		"- /root/notes/checkpoint.md (25 lines, 947 UTF-8 bytes)\n" +
		"- /root/notes/decisions.md (2 lines, 79 UTF-8 bytes)\n" +
		"- /root/notes/plan.md (10 lines, 283 UTF-8 bytes)\n" +
		`Previous window history IDs: {"window_id":"` + lbW1 + `","user_item_ids":["3c8df77c","4b644770"]}`
	if hint.Text != want {
		t.Errorf("hint at leaf:\n got %q\nwant %q", hint.Text, want)
	}
	// At the leaf 56ee3191 (first entry of window 1) the previous window
	// is window 0: its user messages newest first, without the
	// bashExecution f7de1fa0, exactly as the seed wrote them in boundary
	// 1ad99795.
	s.codexOK("notes/thread_hint", localBasicSessionID, "56ee3191", nil, &hint)
	want = "Recent notes (up to 5, most-recent first):\n" +
		"- /root/notes/checkpoint.md (13 lines, 473 UTF-8 bytes)\n" +
		"- /root/notes/progress.md (6 lines, 252 UTF-8 bytes)\n" +
		"- /root/notes/plan.md (10 lines, 283 UTF-8 bytes)\n" +
		`Previous window history IDs: {"window_id":"` + lbW0 + `","user_item_ids":["873ba1dd","4075226e","2623e50c"]}`
	if hint.Text != want {
		t.Errorf("hint at 56ee3191:\n got %q\nwant %q", hint.Text, want)
	}
	// In window 0 there is no previous window: notes only.
	s.codexOK("notes/thread_hint", localBasicSessionID, "311c04e4", nil, &hint)
	if want := "Recent notes (up to 5, most-recent first):\n- /root/notes/checkpoint.md (13 lines, 473 UTF-8 bytes)\n- /root/notes/progress.md (6 lines, 252 UTF-8 bytes)\n- /root/notes/plan.md (10 lines, 283 UTF-8 bytes)"; hint.Text != want {
		t.Errorf("hint at 311c04e4: %q", hint.Text)
	}
	// Before any note or window: empty.
	s.codexOK("notes/thread_hint", localBasicSessionID, "3807cd16", nil, &hint)
	if hint.Text != "" {
		t.Errorf("hint at 3807cd16: %q", hint.Text)
	}
}

// fixtureBoundary returns the content and details of a boundary entry of
// a fixture file.
func fixtureBoundary(t *testing.T, path, id string) (content string, cm coordinator.WindowIdentity) {
	t.Helper()
	var e struct {
		Content string `json:"content"`
		Details struct {
			ContextManagement coordinator.WindowIdentity `json:"contextManagement"`
		} `json:"details"`
	}
	if err := json.Unmarshal(jsonlEntry(t, path, id), &e); err != nil {
		t.Fatal(err)
	}
	return e.Content, e.Details.ContextManagement
}

// TestLocalWindowsBoundary: POST …/windows at the leaf just before each
// Local rollover of local-basic answers the boundary the seed wrote there,
// except for the new window id (and the marker id, a fresh UUID).
func TestLocalWindowsBoundary(t *testing.T) {
	s := localBasic(t)
	for _, tc := range []struct {
		leaf, boundary string // leaf = the boundary's parentId in the fixture
		number         int
		previous       string
	}{
		{"311c04e4", "1ad99795", 1, lbW0},
		{"8f24378d", "177c1e63", 2, lbW1},
	} {
		t.Run(tc.boundary, func(t *testing.T) {
			content, cm := fixtureBoundary(t, s.path(localBasicFile), tc.boundary)
			var got coordinator.WindowsAnswer
			s.mustOK("/v1/sessions/"+localBasicSessionID+"/windows", map[string]any{"leaf_id": tc.leaf}, &got)
			id := got.Window.CurrentWindowID
			if got.First || len(got.Append) != 1 || id == "" || id == cm.CurrentWindowID || id == tc.previous {
				t.Fatalf("answer %+v", got)
			}
			wantID := coordinator.WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: lbW0, CurrentWindowID: id, PreviousWindowID: tc.previous, WindowNumber: tc.number}
			if got.Window != wantID {
				t.Errorf("window %+v, want %+v", got.Window, wantID)
			}
			b := got.Append[0]
			if want := strings.ReplaceAll(content, cm.CurrentWindowID, id); b.Content != want {
				t.Errorf("content:\n got %q\nwant %q", b.Content, want)
			}
			if b.Type != "custom_message" || b.CustomType != "codex-context-window" || !b.Display || b.Details.Protocol != 1 ||
				b.Details.ContextManagement != wantID || len(b.Details.ID) != 36 || b.Details.ID == id {
				t.Errorf("boundary %+v", b)
			}
			// The fixture's own identity is the one contextd computed, but for the id.
			cm.CurrentWindowID = id
			if cm != wantID {
				t.Errorf("fixture identity %+v, want %+v", cm, wantID)
			}
		})
	}

	// A file with no boundary: window 0, first == current, no previous,
	// no hint: the content is fixture boundary c96cd189's (window 0 of
	// local-basic) with the id replaced.
	const kimchiID = "019dcd91-86ff-737d-86b6-08c8e5ec7284"
	k := newTestServer(t, serverOptions{}, piSessions("kimchi-dev-session.jsonl"))
	content0, _ := fixtureBoundary(t, s.path(localBasicFile), "c96cd189")
	var got coordinator.WindowsAnswer
	k.mustOK("/v1/sessions/"+kimchiID+"/windows", map[string]any{}, &got)
	id := got.Window.CurrentWindowID
	// kimchi already holds a conversation: window 0 adopts it from the
	// branch's first entry, model_change 9f59d35c (docs/design.md §4
	// "Adoption").
	want0 := coordinator.WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: id, CurrentWindowID: id, WindowNumber: 0, StartEntryID: "9f59d35c"}
	if !got.First || got.Window != want0 || len(got.Append) != 1 || got.Append[0].Content != strings.ReplaceAll(content0, lbW0, id) ||
		got.Append[0].Details.ContextManagement != want0 {
		t.Fatalf("kimchi window 0: %+v", got)
	}
	// The extension appends it (pi.sendMessage → appendCustomMessageEntry);
	// then the file has one window holding the earlier conversation: its
	// 6 user, 56 assistant and 60 toolResult messages and 12 custom
	// messages of another extension (counted in the file by hand), …
	b := got.Append[0]
	parent := "6bb1d673" // kimchi's last entry
	line, _ := json.Marshal(piCustomMessageEntry{Type: b.Type, CustomType: b.CustomType, Content: b.Content, Display: b.Display,
		Details: b.Details, ID: "d0d0d0d0", ParentID: &parent, Timestamp: "2026-08-01T12:00:00.000Z"})
	k.appendLine("kimchi-dev-session.jsonl", line)
	var wins history.WindowsResult
	k.codexOK("history/list_windows", kimchiID, "", nil, &wins)
	if want := []history.WindowInfo{{WindowID: id, ItemCount: 134}}; !reflect.DeepEqual(wins.Windows, want) {
		t.Errorf("kimchi windows after append: %+v", wins.Windows)
	}
	// … and the next call answers window 1, previous = window 0, with the
	// closing window named in the hint with its 5 newest user items.
	var next coordinator.WindowsAnswer
	k.mustOK("/v1/sessions/"+kimchiID+"/windows", map[string]any{}, &next)
	if next.First || next.Window.FirstWindowID != id || next.Window.PreviousWindowID != id || next.Window.WindowNumber != 1 ||
		!strings.HasSuffix(next.Append[0].Content, "Previous context window id: "+id+"\nPrevious window history IDs: {\"window_id\":\""+id+"\",\"user_item_ids\":[\"e24da0c9\",\"961b2c3f\",\"05fa0772\",\"8260bbd8\",\"b730eec6\"]}\n</context_window>") {
		t.Errorf("kimchi window 1: %+v", next)
	}
}

// TestLocalContext: the per-call context answer (current boundary and
// slice point) for several leaves of local-basic, and for a hand-built
// file where a boundary separates tool calls from their results.
func TestLocalContext(t *testing.T) {
	s := localBasic(t)
	w2 := coordinator.WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: lbW0, CurrentWindowID: lbW2, PreviousWindowID: lbW1, WindowNumber: 2}
	w1 := coordinator.WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: lbW0, CurrentWindowID: lbW1, PreviousWindowID: lbW0, WindowNumber: 1}
	w0 := coordinator.WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: lbW0, CurrentWindowID: lbW0, WindowNumber: 0}
	// notes: codex-context-note entries on the branch after its boundary
	// (counted in local-basic.jsonl: 244df0e2, 9b371cc2, e94001b1 before
	// 311c04e4; c968c743, 2bc664f4, f42c8deb before 8f24378d; 5aa4ca14,
	// 8a54f746 before 588752ae; the reminders 82e29e2d, f795cd48 are no
	// boundary).
	for _, tc := range []struct {
		leaf, wantLeaf, boundary string
		window                   *coordinator.WindowIdentity
		notes                    int
	}{
		{"", "588752ae", "177c1e63", &w2, 2},
		{"588752ae", "588752ae", "177c1e63", &w2, 2},
		{"177c1e63", "177c1e63", "177c1e63", &w2, 0},
		{"8f24378d", "8f24378d", "1ad99795", &w1, 3},
		{"1ad99795", "1ad99795", "1ad99795", &w1, 0},
		{"311c04e4", "311c04e4", "c96cd189", &w0, 3},
		{"2623e50c", "2623e50c", "c96cd189", &w0, 0},
		{"3807cd16", "3807cd16", "", nil, 0},
	} {
		var got coordinator.ContextAnswer
		s.mustOK("/v1/sessions/"+localBasicSessionID+"/context", map[string]any{"leaf_id": tc.leaf}, &got)
		want := coordinator.ContextAnswer{Mode: contextd.ModeLocal, LeafID: tc.wantLeaf, Window: tc.window, BoundaryEntryID: tc.boundary,
			SliceFromEntryID: tc.boundary, OrphanedToolResults: []string{}, HiddenSummaries: []coordinator.HiddenSummary{}, NeedsBoundary: tc.window == nil,
			WindowNoteWrites: tc.notes, Projection: coordinator.Projection{Drop: []coordinator.MessageKey{}}}
		if tc.window != nil {
			want.Projection.StartAt = &coordinator.MessageKey{Role: "custom", CustomType: "codex-context-window", WindowID: tc.window.CurrentWindowID}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("leaf %q:\n got %+v\nwant %+v", tc.leaf, got, want)
		}
	}
	r := s.post("/v1/sessions/"+localBasicSessionID+"/context", map[string]any{"leaf_id": "nope"})
	if p := r.problem(t); r.Status != http.StatusNotFound ||
		p.Detail != `leaf_id "nope" is not an entry of session "`+localBasicSessionID+`"; pass the id of an entry in its file, or omit leaf_id to use the last entry` {
		t.Errorf("unknown leaf: %d %s", r.Status, r.Body)
	}

	// Hand-built: the assistant e0000003 calls bash twice; the boundary
	// e0000004 lands before both results (e0000005, e0000007; a note entry
	// in between). Slicing at the boundary would orphan them, so the slice
	// starts at the assistant message and the boundary is sent after the
	// last written result (the pairing rule of docs/modes.md "Tool-call pairing").
	b := newSessionBuilder("hand-orphans")
	b.boundary(0, "win-a", "win-a", "") // e0000001
	b.user("run two commands")          // e0000002
	b.assistant(map[string]any{"type": "toolCall", "id": "call_1", "name": "bash", "arguments": map[string]any{"command": "ls"}},
		map[string]any{"type": "toolCall", "id": "call_2", "name": "bash", "arguments": map[string]any{"command": "pwd"}}) // e0000003
	b.boundary(1, "win-a", "win-b", "win-a")                    // e0000004
	b.toolResult("call_1", "bash", "a.txt")                     // e0000005
	b.note("write", "/root/notes/x.md", "x", 1785578400000)     // e0000006
	b.toolResult("call_2", "bash", "/home")                     // e0000007
	b.assistant(map[string]any{"type": "text", "text": "done"}) // e0000008
	b.user("next")                                              // e0000009
	h := newTestServer(t, serverOptions{})
	h.writeFile("orphans.jsonl", b.bytes())
	wb := coordinator.WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: "win-a", CurrentWindowID: "win-b", PreviousWindowID: "win-a", WindowNumber: 1}
	bwb := coordinator.MessageKey{Role: "custom", CustomType: "codex-context-window", WindowID: "win-b"}
	inside := []coordinator.SessionProblem{{Line: 5, Reason: "boundary_inside_tool_call",
		Detail: "boundary e0000004 is written between the calls of assistant e0000003 and their results; the context starts at the assistant and the boundary follows the results"}}
	for _, tc := range []struct {
		leaf     string
		after    string // the result call id the boundary follows; "" no move
		slice    string
		problems []coordinator.SessionProblem
		notes    int // the note e0000006 is after the boundary e0000004
	}{
		{"e0000009", "call_2", "e0000003", inside, 1},
		{"e0000006", "call_1", "e0000003", inside, 1},
		{"e0000004", "", "e0000004", nil, 0},
	} {
		var got coordinator.ContextAnswer
		h.mustOK("/v1/sessions/hand-orphans/context", map[string]any{"leaf_id": tc.leaf}, &got)
		want := coordinator.ContextAnswer{Mode: contextd.ModeLocal, LeafID: tc.leaf, Window: &wb, BoundaryEntryID: "e0000004",
			SliceFromEntryID: tc.slice, OrphanedToolResults: []string{}, HiddenSummaries: []coordinator.HiddenSummary{}, Problems: tc.problems,
			WindowNoteWrites: tc.notes, Projection: coordinator.Projection{StartAt: &bwb, Drop: []coordinator.MessageKey{}}}
		if tc.after != "" {
			// The assistant e0000003 by the id of its first call.
			want.Projection.StartAt = &coordinator.MessageKey{Role: "assistant", ToolCallID: "call_1"}
			want.Projection.Move = []coordinator.MoveStep{{Message: bwb, After: coordinator.MessageKey{Role: "toolResult", ToolCallID: tc.after, Occurrence: 1}}}
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("orphans at %s:\n got %+v\nwant %+v", tc.leaf, got, want)
		}
	}
}

// TestLocalOffMode: a session registered with mode off answers 409 with
// the sentence on every history and notes route.
func TestLocalOffMode(t *testing.T) {
	s := localBasic(t)
	r := s.register(localBasicSessionID, localBasicFile, contextd.ModeOff)
	if r.Status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	want := `context management is off for session "` + localBasicSessionID + `"; register it with mode local, tree or remote to use history and notes`
	for _, tc := range []struct {
		op   string
		args map[string]any
	}{
		{"history/list_windows", nil},
		{"history/list_items", nil},
		{"history/read_item", map[string]any{"window_id": lbW0, "item_id": "2623e50c"}},
		{"history/search_contents", map[string]any{"query": "x"}},
		{"notes/list_files_by_prefix", nil},
		{"notes/read_file", map[string]any{"path": "plan.md"}},
		{"notes/search_contents", map[string]any{"query": "x"}},
		{"notes/append_to_file", map[string]any{"path": "plan.md", "text": "x"}},
		{"notes/write_file", map[string]any{"path": "plan.md", "text": "x"}},
		{"notes/thread_hint", nil},
	} {
		r := s.codex(tc.op, localBasicSessionID, "", tc.args)
		if p := r.problem(t); r.Status != http.StatusConflict || p.Detail != want {
			t.Errorf("%s: %d %q", tc.op, r.Status, p.Detail)
		}
	}
	r = s.post("/v1/sessions/"+localBasicSessionID+"/windows", map[string]any{})
	if p := r.problem(t); r.Status != http.StatusConflict || p.Detail != want {
		t.Errorf("windows: %d %q", r.Status, p.Detail)
	}
	// The context answer says off and hides nothing.
	var ctx coordinator.ContextAnswer
	s.mustOK("/v1/sessions/"+localBasicSessionID+"/context", map[string]any{}, &ctx)
	if ctx.Mode != contextd.ModeOff || ctx.Window != nil || len(ctx.OrphanedToolResults) != 0 {
		t.Errorf("context in off mode: %+v", ctx)
	}
	// Back to local: the routes answer again.
	if r := s.register(localBasicSessionID, localBasicFile, contextd.ModeLocal); r.Status != http.StatusOK {
		t.Fatalf("re-register: %d %s", r.Status, r.Body)
	}
	s.codexOK("history/list_windows", localBasicSessionID, "", nil, nil)
}

// TestLocalHarnessSession: harness-local-mode.jsonl written by real Pi
// (e2e.GenSessions): images, code-point counting of emoji/CJK/combining
// text, and the ~2 MB item read back whole.
func TestLocalHarnessSession(t *testing.T) {
	t.Parallel() // slow (large files); independent of the other tests
	gen := t.TempDir()
	e2e.GenSessions(t, gen)
	var mf e2e.GenManifestFile
	for _, f := range e2e.ReadGenManifest(t, gen).Files {
		if f.File == "harness-local-mode.jsonl" {
			mf = f
		}
	}
	if mf.SessionID == "" {
		t.Fatal("manifest has no harness-local-mode.jsonl")
	}
	var winIDs []string
	if err := json.Unmarshal(mf.IDs["windowIds"], &winIDs); err != nil || len(winIDs) != 3 {
		t.Fatalf("windowIds: %v %v", winIDs, err)
	}
	s := newTestServer(t, serverOptions{}, fixture{Src: filepath.Join(gen, mf.File)})
	file := s.path(mf.File)
	sum := fileSHA256(t, file)
	sid := mf.SessionID
	read := func(window, id string, args map[string]any) *history.ItemBody {
		t.Helper()
		a := map[string]any{"window_id": window, "item_id": id}
		for k, v := range args {
			a[k] = v
		}
		var got history.ReadResult
		s.codexOK("history/read_item", sid, "", a, &got)
		if got.Item == nil {
			t.Fatalf("%s: item null", id)
		}
		return got.Item
	}

	// Window sizes, counted by hand from gen-sessions.mjs: window 0 has 12
	// items (user+image, note write call+result, read call+image result,
	// history call+result, note append call+result, reminder, new_context
	// call+result); window 1 has 13 (note read call+result, the unicode
	// user message, bash call + 2 MB result, note write and append
	// call+result each, list_windows call+result, new_context
	// call+result); window 2 has 6 (note write and append call+result
	// each, user, assistant).
	var wins history.WindowsResult
	s.codexOK("history/list_windows", sid, "", nil, &wins)
	if want := []history.WindowInfo{{WindowID: winIDs[0], ItemCount: 12}, {WindowID: winIDs[1], ItemCount: 13}, {WindowID: winIDs[2], ItemCount: 6}}; !reflect.DeepEqual(wins.Windows, want) {
		t.Errorf("windows %+v, want %+v", wins.Windows, want)
	}

	// Images render as [image <mimeType>] (docs/codex-contract.md "Local history"). UNICODE of
	// gen-sessions.mjs is "Café 👩‍💻 漢字テスト — ok" with a combining
	// accent and a ZWJ sequence: 20 code points.
	const unicode = "Cafe\u0301 👩\u200d💻 漢字テスト — ok"
	if n := utf8.RuneCountInString(unicode); n != 20 {
		t.Fatalf("UNICODE has %d code points", n)
	}
	if it := read(winIDs[0], mf.ID("userWithImage"), nil); it.Content != "Here is a screenshot of the bug: "+unicode+"\n[image image/png]" || it.TotalChars != 71 || it.Role != "user" {
		t.Errorf("user with image: %+v", it)
	}
	if it := read(winIDs[0], mf.ID("toolResultWithImage"), nil); it.Content != "Read image file [image/png]\n[image image/png]" || it.TotalChars != 45 || it.ToolName != "read" {
		t.Errorf("toolResult with image: %+v", it)
	}
	// The flat history router call is listed as list_items/history.
	if it := read(winIDs[0], mf.ID("historyResult0"), map[string]any{"limit_chars": 1}); it.ToolName != "list_items" || it.ToolNamespace != "history" || it.Role != "tool" {
		t.Errorf("history router result: %+v", it)
	}

	// userUnicode: "Now dump the logs. Ünïcödé check: " (34 code points,
	// precomposed letters) + UNICODE (20) + " e\u0301 " (4) + "👩\u200d💻"
	// (3) + " 漢字 " (4) + "line\u2028separator" (14) +
	// " paragraph\u2029separator" (20) = 99 code points (103 UTF-16 units,
	// 173 bytes); U+2028/U+2029 stay inside the one JSONL line.
	uid := mf.ID("userUnicode")
	var line struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	}
	if err := json.Unmarshal(jsonlEntry(t, file, uid), &line); err != nil {
		t.Fatal(err)
	}
	utext := line.Message.Content
	if n := utf8.RuneCountInString(utext); n != 99 {
		t.Fatalf("userUnicode decoded from the JSONL has %d code points, want 99", n)
	}
	var items history.ItemsResult
	s.codexOK("history/list_items", sid, "", map[string]any{"window_id": winIDs[1], "role": "user"}, &items)
	if len(items.Items) != 1 || items.Items[0].ItemID != uid || items.Items[0].ContentChars != 99 || items.Items[0].TruncatedContent != utext {
		t.Errorf("list userUnicode: %+v", items.Items)
	}
	// Pages of 1, 2 and 7 code points never split a code point: the pages
	// concatenate to the text and the page count is ceil(99/limit).
	for _, limit := range []int{1, 2, 7} {
		lim := limit
		pages := readAllPages(t, s, sid, winIDs[1], uid, &lim)
		if strings.Join(pages, "") != utext || len(pages) != (99+limit-1)/limit {
			t.Errorf("limit %d: %d pages, equal %v", limit, len(pages), strings.Join(pages, "") == utext)
		}
		if limit == 1 {
			for i, p := range pages {
				if r := []rune(utext); p != string(r[i]) {
					t.Errorf("page %d = %q, want %q", i, p, string(r[i]))
				}
			}
		}
	}
	// An offset inside the ZWJ sequence cuts between code points, never
	// inside one: UNICODE starts at code point 34, its 👩 is at 34+6.
	if it := read(winIDs[1], uid, map[string]any{"offset_chars": 41, "limit_chars": 2}); it.Content != "\u200d💻" {
		t.Errorf("offset 41: %q", it.Content)
	}
	// Search matches CJK and combining text byte-exactly.
	s.codexOK("history/search_contents", sid, "", map[string]any{"query": "e\u0301 👩\u200d💻 漢字 line", "role": "user"}, &items)
	if len(items.Items) != 1 || items.Items[0].ItemID != uid {
		t.Errorf("search combining text: %+v", itemIDs(items.Items))
	}

	// The ~2 MB bash result: 2,097,191 bytes, 2,080,097 code points
	// (bigLog() in gen-sessions.mjs, counted by hand), read back whole
	// through 8,000-code-point pages: 261 pages, the last of 97.
	bid := mf.ID("bigToolResult")
	big := toolResultText(t, jsonlEntry(t, file, bid))
	if len(big) != 2_097_191 || utf8.RuneCountInString(big) != 2_080_097 {
		t.Fatalf("big text: %d bytes, %d code points", len(big), utf8.RuneCountInString(big))
	}
	pages := readAllPages(t, s, sid, winIDs[1], bid, nil)
	if len(pages) != 261 || utf8.RuneCountInString(pages[260]) != 97 || strings.Join(pages, "") != big {
		t.Errorf("big item: %d pages, equal %v", len(pages), strings.Join(pages, "") == big)
	}
	if fileSHA256(t, file) != sum {
		t.Error("harness session file changed")
	}
}

// TestLocalReadRoutesKeepFile: every read route leaves the session file
// byte-identical (DESIGN §6 invariant 2), as do planned writes.
func TestLocalReadRoutesKeepFile(t *testing.T) {
	s := localBasic(t)
	file := s.path(localBasicFile)
	sum := fileSHA256(t, file)
	st, _ := os.Stat(file)
	const want = "501201183c67c0143202d47ec33f204bf5c1e1fc0415c8a84bcaf77e48a385b9" // expected.json fileStats.sha256
	if sum != want {
		t.Fatalf("copy sha256 %s, want %s", sum, want)
	}
	for _, tc := range []struct {
		op   string
		args map[string]any
	}{
		{"history/list_windows", nil},
		{"history/list_items", map[string]any{"limit": 25}},
		{"history/read_item", map[string]any{"window_id": lbW0, "item_id": "4f1722d3"}},
		{"history/search_contents", map[string]any{"query": "the"}},
		{"notes/list_files_by_prefix", nil},
		{"notes/read_file", map[string]any{"path": "plan.md"}},
		{"notes/search_contents", map[string]any{"query": "Checkpoint"}},
		{"notes/thread_hint", nil},
		{"notes/write_file", map[string]any{"path": "new.md", "text": "x"}},
		{"notes/append_to_file", map[string]any{"path": "plan.md", "text": "x"}},
	} {
		for _, leaf := range []string{"", "311c04e4"} {
			s.codexOK(tc.op, localBasicSessionID, leaf, tc.args, nil)
		}
	}
	s.mustOK("/v1/sessions/"+localBasicSessionID+"/windows", map[string]any{}, nil)
	s.mustOK("/v1/sessions/"+localBasicSessionID+"/context", map[string]any{"leaf_id": "311c04e4"}, nil)
	for _, p := range []string{"/v1/sessions", "/v1/sessions/" + localBasicSessionID, "/v1/sessions/" + localBasicSessionID + "/branch"} {
		if r := s.get(p); r.Status != http.StatusOK {
			t.Errorf("GET %s: %d", p, r.Status)
		}
	}
	if r := s.post("/v1/index/rebuild", nil); r.Status != http.StatusOK {
		t.Errorf("rebuild: %d %s", r.Status, r.Body)
	}
	st2, _ := os.Stat(file)
	if got := fileSHA256(t, file); got != want || !st2.ModTime().Equal(st.ModTime()) || st2.Size() != 263958 {
		t.Errorf("after reads: sha256 %s, mtime %v → %v, size %d", got, st.ModTime(), st2.ModTime(), st2.Size())
	}
}

// allFixtures are every fixture session file of testdata.
func allFixtures() []fixture {
	var fs []fixture
	for _, n := range []string{"before-compaction.jsonl", "compact.jsonl", "dexter-v3-pi-session.head.jsonl", "kimchi-dev-session.jsonl", "large-session.jsonl", "pi-mono-session.jsonl"} {
		fs = append(fs, piSessions(n))
	}
	for _, n := range []string{"local-basic.jsonl", "tree-bad-manifests-small.jsonl", "tree-basic.jsonl", "tree-manual-summary.jsonl", "tree-multi.jsonl"} {
		fs = append(fs, piTree(n))
	}
	return fs
}

// TestSessionsList: GET /v1/sessions over every fixture. Entry counts are
// the entry-type counts of testdata/pi-sessions/SOURCES.md (header not
// counted) and the pi-tree *.expected.json entryCount; compact.jsonl and
// pi-mono-session.jsonl each lose one unparseable line (1013 and 440,
// SOURCES.md), reported as skipped.
func TestSessionsList(t *testing.T) {
	t.Parallel() // slow (large files); independent of the other tests
	s := newTestServer(t, serverOptions{}, allFixtures()...)
	type row struct {
		file, id         string
		version, entries int
		bytes            int64
		leaf             string
		windows          int
		skipped          map[string]int
		problems         []coordinator.SessionProblem
	}
	none := map[string]int{}
	bad := map[string]int{"invalid_json": 1}
	want := []row{
		// message 990 + compaction 2 + thinking_level_change 5 + model_change 5; v1 ids are synthetic.
		{"before-compaction.jsonl", "ffae836b-9420-4060-ac13-7745215f90ff", 1, 1002, 2370492, "v1-00001003", 0, none, nil},
		// message 1010 + compaction 1; line 1013 unparseable.
		{"compact.jsonl", "2638daee-0588-4baa-bd33-68b4c002818e", 1, 1011, 1614570, "v1-00001012", 0, bad, []coordinator.SessionProblem{{Line: 1013, Reason: "invalid_json"}}},
		// message 909 + compaction 2 + model_change 1 + thinking_level_change 1.
		{"dexter-v3-pi-session.head.jsonl", "019ea92d-1182-7fe2-a214-9fc88c28832f", 3, 913, 1989906, "f6cc5c91", 0, none, nil},
		// message 122 + custom_message 12 + custom 6 + model_change 6 + thinking_level_change 1.
		{"kimchi-dev-session.jsonl", "019dcd91-86ff-737d-86b6-08c8e5ec7284", 3, 147, 356425, "6bb1d673", 0, none, nil},
		// message 914 + thinking_level_change 103 + model_change 1.
		{"large-session.jsonl", "d703a1a9-1b7b-4fb1-b512-c9738b1fe617", 1, 1018, 974031, "v1-00001019", 0, none, nil},
		{"local-basic.jsonl", localBasicSessionID, 3, 106, 263958, "588752ae", 3, none, nil},
		// message 452 + thinking_level_change 8 + compaction 1; line 440 unparseable.
		{"pi-mono-session.jsonl", "5fd1e58c-9635-410e-a644-133a96057c90", 1, 461, 946536, "v1-00000463", 0, bad, []coordinator.SessionProblem{{Line: 440, Reason: "invalid_json"}}},
		// Tree fixtures: one boundary on the active branch each (Tree mode keeps only the current one).
		// Its four invalid manifests are problems (the service always reads Tree
		// archives; details as coordinator TestTreeBadManifests, reasons in check order).
		{"tree-bad-manifests-small.jsonl", "019f4c92-9f78-7955-a120-9eba5b90f6f1", 3, 118, 232172, "4e9c24df", 1, none, []coordinator.SessionProblem{
			{Reason: "invalid_archive", Detail: "35464eaa: from_id_mismatch"},
			{Reason: "invalid_archive", Detail: "f7c8a7e6: parent_id_mismatch, boundary_not_in_archive"},
			{Reason: "invalid_archive", Detail: "f00a36d7: not_branch_summary"},
			{Reason: "invalid_archive", Detail: "fcf73426: from_id_mismatch, archived_leaf_missing"},
		}},
		{"tree-basic.jsonl", "019f3d67-b1fd-7c0a-87d5-9b46277407ba", 3, 62, 132680, "1d4fdaee", 1, none, nil},
		{"tree-manual-summary.jsonl", "019f46be-5b56-72a6-8c4f-6f0a4e282b1f", 3, 144, 276637, "e2d48416", 1, none, nil},
		{"tree-multi.jsonl", "019f429d-87f0-7841-b1ab-51687b222864", 3, 167, 369129, "3a57efd4", 1, none, nil},
	}
	// Entry counts and leaves of the pi-tree files against expected.json.
	for _, w := range want {
		if !strings.HasPrefix(w.file, "local-") && !strings.HasPrefix(w.file, "tree-") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(fixturePiTree, strings.TrimSuffix(w.file, ".jsonl")+".expected.json"))
		if err != nil {
			t.Fatal(err)
		}
		var exp struct {
			EntryCount int    `json:"entryCount"`
			LeafID     string `json:"leafId"`
			Header     struct {
				ID string `json:"id"`
			} `json:"header"`
			FileStats struct {
				Bytes int64 `json:"bytes"`
			} `json:"fileStats"`
		}
		if err := json.Unmarshal(raw, &exp); err != nil {
			t.Fatal(err)
		}
		if exp.EntryCount != w.entries || exp.LeafID != w.leaf || exp.Header.ID != w.id || exp.FileStats.Bytes != w.bytes {
			t.Fatalf("%s: expected.json says %+v", w.file, exp)
		}
	}
	// The skipped lines really are unparseable (SOURCES.md: two messages
	// concatenated on one line), and the lines before them parse.
	for _, c := range []struct {
		file string
		line int
	}{{"compact.jsonl", 1013}, {"pi-mono-session.jsonl", 440}} {
		var v any
		if json.Unmarshal(jsonlLine(t, s.path(c.file), c.line), &v) == nil || json.Unmarshal(jsonlLine(t, s.path(c.file), c.line-1), &v) != nil {
			t.Errorf("%s line %d parses, or line %d does not", c.file, c.line, c.line-1)
		}
	}
	// The first listing indexes nothing: each row is the file's header
	// (id, version), its size and the default mode, not indexed.
	got := s.sessionsList()
	if len(got) != len(want) {
		t.Fatalf("%d sessions, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.File != s.path(w.file) || g.SessionID != w.id || g.Version != w.version || g.Indexed || g.FileBytes != w.bytes || g.ModifiedAt == "" ||
			g.Entries != 0 || g.Bytes != 0 || g.Leaf != "" || g.State != "ok" || g.Mode != contextd.ModeLocal || len(g.Problems) != 0 {
			t.Errorf("%s before use:\n got %+v\nwant the header of %+v, not indexed", w.file, g, w)
		}
	}
	// …and wrote nothing to the index: no row, no text file, usage 0.
	if paths, err := s.Index.IndexedPaths(); err != nil || len(paths) != 0 {
		t.Errorf("indexed after the listing: %v %v, want none", paths, err)
	}
	if ents, err := os.ReadDir(filepath.Join(s.StateDir, "index", "texts")); err != nil || len(ents) != 0 {
		t.Errorf("index/texts after the listing: %d files, %v; want none", len(ents), err)
	}
	var usage IndexUsage
	s.getJSON("/v1/index", &usage)
	if usage.UsedBytes != 0 || usage.Sessions != 0 || usage.DiskBytes <= 0 {
		t.Errorf("GET /v1/index after the listing = %+v, want 0 bytes used, 0 sessions, the empty index.db on disk", usage)
	}
	// Once a route read each session, the listing summarizes it whole.
	for _, w := range want {
		if r := s.get("/v1/sessions/" + w.id); r.Status != http.StatusOK {
			t.Fatalf("GET %s: %d %s", w.id, r.Status, r.Body)
		}
	}
	got = s.sessionsList()
	if len(got) != len(want) {
		t.Fatalf("%d sessions, want %d", len(got), len(want))
	}
	s.getJSON("/v1/index", &usage)
	if usage.UsedBytes <= 0 || usage.Sessions != len(want) || usage.Evictions != 0 {
		t.Errorf("GET /v1/index after using every session = %+v, want %d sessions, bytes used, no eviction", usage, len(want))
	}
	for i, w := range want {
		g := got[i]
		problems := w.problems
		if problems == nil {
			problems = []coordinator.SessionProblem{}
		}
		// Unregistered: the default mode (local), except files holding
		// Tree archives, which show Tree mode (the registration may have
		// been lost with the state database).
		mode := contextd.ModeLocal
		if strings.HasPrefix(w.file, "tree-") {
			mode = contextd.ModeTree
		}
		if g.File != s.path(w.file) || g.SessionID != w.id || g.Version != w.version || g.Entries != w.entries || g.Bytes != w.bytes ||
			g.Leaf != w.leaf || g.Windows != w.windows || g.State != "ok" || g.Mode != mode || g.Registered || !g.Indexed || g.FileBytes != w.bytes ||
			!reflect.DeepEqual(g.Skipped, w.skipped) || !reflect.DeepEqual(g.Problems, problems) {
			t.Errorf("%s:\n got %+v\nwant %+v", w.file, g, w)
		}
	}
	// A registration shows up in the list (mode and registered).
	if r := s.register("019dcd91-86ff-737d-86b6-08c8e5ec7284", "kimchi-dev-session.jsonl", contextd.ModeOff); r.Status != http.StatusCreated {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	for _, g := range s.sessionsList() {
		if (g.SessionID == "019dcd91-86ff-737d-86b6-08c8e5ec7284") != (g.Registered && g.Mode == contextd.ModeOff) {
			t.Errorf("%s: registered %v mode %s", g.File, g.Registered, g.Mode)
		}
	}
}

// TestSessionsRefusals: requests without the token (401), with a foreign
// Host (421), with a non-JSON body (415), and a registration of a file
// outside the sessions directory (403) are refused, and none of them
// changes the index or the registrations.
func TestSessionsRefusals(t *testing.T) {
	s := newTestServer(t, serverOptions{}, piTree(localBasicFile), piSessions("kimchi-dev-session.jsonl"))
	snapshot := func() string {
		r := s.get("/v1/sessions")
		regs, err := s.State.Registrations(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(regs)
		return string(r.Body) + string(b)
	}
	before := snapshot()

	// A valid Pi session outside the sessions directory.
	outside := filepath.Join(filepath.Dir(s.Sessions), "outside.jsonl")
	b := newSessionBuilder("outside-session")
	b.user("hello")
	if err := os.WriteFile(outside, b.bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	regBody := func(file string) string {
		j, _ := json.Marshal(map[string]any{"session_file": file, "mode": "local"})
		return string(j)
	}
	listBody := `{"context":{"session_id":"` + localBasicSessionID + `"}}`
	for _, tc := range []struct {
		name, method, path string
		body               any
		hdr                http.Header
		status             int
		detail             string
	}{
		{"no token", "GET", "/v1/sessions", nil, http.Header{TokenHeader: {""}}, 401,
			"Missing or wrong X-Contextd-Token header; send the token from the file `token` in contextd's state directory."},
		{"wrong token", "POST", codexPath("history/list_windows"), listBody, http.Header{TokenHeader: {"nope"}}, 401,
			"Missing or wrong X-Contextd-Token header; send the token from the file `token` in contextd's state directory."},
		{"no token register", "PUT", "/v1/sessions/outside-session", regBody(outside), http.Header{TokenHeader: {""}}, 401,
			"Missing or wrong X-Contextd-Token header; send the token from the file `token` in contextd's state directory."},
		{"foreign host", "GET", "/v1/sessions", nil, http.Header{"Host": {"evil.example"}}, 421,
			`Host "evil.example" is not a loopback address; call contextd as 127.0.0.1 or localhost (or add the host with --allowed-hosts).`},
		{"foreign host with port", "POST", codexPath("notes/write_file"), `{"path":"x","text":"y","context":{"session_id":"` + localBasicSessionID + `"}}`,
			http.Header{"Host": {"contextd.attacker.test:8080"}}, 421,
			`Host "contextd.attacker.test:8080" is not a loopback address; call contextd as 127.0.0.1 or localhost (or add the host with --allowed-hosts).`},
		{"text/plain body", "POST", codexPath("notes/write_file"), `{"path":"x","text":"y","context":{"session_id":"` + localBasicSessionID + `"}}`,
			http.Header{"Content-Type": {"text/plain"}}, 415, `Content-Type "text/plain" is not supported; send the body as application/json.`},
		{"form body register", "PUT", "/v1/sessions/outside-session", "session_file=x", http.Header{"Content-Type": {"application/x-www-form-urlencoded"}}, 415,
			`Content-Type "application/x-www-form-urlencoded" is not supported; send the body as application/json.`},
		{"missing content type", "POST", "/v1/sessions/" + localBasicSessionID + "/windows", `{}`, http.Header{"Content-Type": {""}}, 415,
			`Content-Type "" is not supported; send the body as application/json.`},
		// An absolute path is what the extension registers (Pi's session
		// file): the message names Pi's folder, contextd's and the fixes.
		{"register outside (absolute)", "PUT", "/v1/sessions/outside-session", regBody(outside), nil, 403,
			fmt.Sprintf("Pi writes this session to %s, but contextd reads sessions only from %s; restart contextd with --sessions-dir %s, or start Pi with --session-dir %s (a contextd that sees Pi's files under another path, as in a container: --path-map HOST=CONTAINER)",
				filepath.Dir(outside), s.Index.Root(), filepath.Dir(outside), s.Index.Root())},
		{"register outside (Pi's layout)", "PUT", "/v1/sessions/outside-session", regBody("/home/u/.pi/agent/sessions/--home-u-proj--/2026_x.jsonl"), nil, 403,
			fmt.Sprintf("Pi writes this session to /home/u/.pi/agent/sessions/--home-u-proj--, but contextd reads sessions only from %s; restart contextd with --sessions-dir /home/u/.pi/agent/sessions, or start Pi with --session-dir %s (a contextd that sees Pi's files under another path, as in a container: --path-map HOST=CONTAINER)",
				s.Index.Root(), s.Index.Root())},
		{"register outside (relative)", "PUT", "/v1/sessions/outside-session", regBody("../outside.jsonl"), nil, 403,
			fmt.Sprintf("session_file %q is outside the sessions directory %s; pass a path under it, absolute or relative to it (e.g. \"--<cwd>--/<file>.jsonl\"), or start contextd with --path-map HOST=CONTAINER when Pi sees that directory under another path", "../outside.jsonl", s.Index.Root())},
		// A file that is not a Pi session gets no advice to serve its
		// folder: what a session file is and where Pi keeps them.
		{"register /etc/passwd", "PUT", "/v1/sessions/outside-session", regBody("/etc/passwd"), nil, 403,
			fmt.Sprintf("session_file \"/etc/passwd\" is not a Pi session file: Pi keeps each session as a .jsonl file, <timestamp>_<id>.jsonl, in ~/.pi/agent/sessions/--<cwd>--/ (or flat in the folder Pi's --session-dir names); register that file, which must be under contextd's sessions directory %s", s.Index.Root())},
		{"register a relative non-session", "PUT", "/v1/sessions/outside-session", regBody("../../etc/shadow"), nil, 403,
			fmt.Sprintf("session_file \"../../etc/shadow\" is not a Pi session file: Pi keeps each session as a .jsonl file, <timestamp>_<id>.jsonl, in ~/.pi/agent/sessions/--<cwd>--/ (or flat in the folder Pi's --session-dir names); register that file, which must be under contextd's sessions directory %s", s.Index.Root())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.request(tc.method, tc.path, tc.body, tc.hdr)
			if p := r.problem(t); r.Status != tc.status || p.Detail != tc.detail {
				t.Errorf("%d %q\nwant %d %q", r.Status, p.Detail, tc.status, tc.detail)
			}
		})
	}
	// A symlink inside the sessions directory that leads outside is refused
	// for registration and never listed.
	if err := os.Symlink(outside, s.path("link.jsonl")); err != nil {
		t.Fatal(err)
	}
	r := s.register("outside-session", "link.jsonl", contextd.ModeLocal)
	if p := r.problem(t); r.Status != http.StatusForbidden ||
		p.Detail != fmt.Sprintf("session_file %q is outside the sessions directory %s; pass a path under it, absolute or relative to it (e.g. \"--<cwd>--/<file>.jsonl\"), or start contextd with --path-map HOST=CONTAINER when Pi sees that directory under another path", "link.jsonl", s.Index.Root()) {
		t.Errorf("symlink out: %d %s", r.Status, r.Body)
	}
	if err := os.Remove(s.path("link.jsonl")); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(); after != before {
		t.Errorf("refused requests changed the index or registrations:\nbefore %s\nafter  %s", before, after)
	}
	r = s.codex("history/list_windows", "outside-session", "", nil)
	if r.Status != http.StatusNotFound {
		t.Errorf("outside session is reachable: %d %s", r.Status, r.Body)
	}
}

// TestLocalNotesSnapshotLimit: all note files together must fit one note
// snapshot of 10,000,000 bytes of JSON (docs/codex-contract.md "Local notes" "max snapshot").
//
// The snapshot data is {"protocol":1,"timestamp":T,"files":[{"path",
// "text","createdAt","updatedAt"},…]} (docs/codex-contract.md "Local notes"). Counted by hand, with
// 13-digit millisecond times: the frame is 38 bytes + 13 for T; a file is
// 43 bytes of keys and punctuation + its JSON path + its JSON text + 26
// for the two times, and files are joined by commas. Nine files
// /root/notes/fN.md (path 19 JSON bytes) of 1,000,000 ASCII bytes take
// 9 × 1,000,090 + 8 = 9,000,818; a tenth file /root/notes/f10.md (20) of
// n bytes adds 1 + 43 + 20 + (n + 2) + 26 = n + 92. Total 9,000,961 + n,
// so n = 999,039 fits exactly and 999,040 does not.
func TestLocalNotesSnapshotLimit(t *testing.T) {
	t.Parallel() // slow (large files); independent of the other tests
	b := newSessionBuilder("hand-snapshot")
	b.boundary(0, "w0", "w0", "")
	for i := 1; i <= 9; i++ {
		b.note("write", fmt.Sprintf("/root/notes/f%d.md", i), strings.Repeat("a", 1_000_000), 1785578400000+int64(i))
	}
	s := newTestServer(t, serverOptions{Clock: func() time.Time { return time.UnixMilli(1785578500000) }})
	s.writeFile("snapshot.jsonl", b.bytes())
	const msg = "Note files together exceed the 10,000,000-byte note snapshot limit; shorten or overwrite existing notes first"
	// The refusals first: a write that is planned counts for the writes
	// planned after it until its entry is in the file (docs/design.md §5.3.1).
	for _, op := range []string{"notes/write_file", "notes/append_to_file"} {
		r := s.codex(op, "hand-snapshot", "", map[string]any{"path": "f10.md", "text": strings.Repeat("b", 999_040)})
		if p := r.problem(t); r.Status != http.StatusRequestEntityTooLarge || p.Detail != msg || strings.Contains(string(r.Body), `"append"`) {
			t.Errorf("%s 999,040 bytes: %d %.300s", op, r.Status, r.Body)
		}
	}
	var w coordinator.NoteWrite
	s.codexOK("notes/write_file", "hand-snapshot", "", map[string]any{"path": "f10.md", "text": strings.Repeat("b", 999_039)}, &w)
	if w.File.Bytes != 999_039 || len(w.Append) != 1 {
		t.Errorf("999,039 bytes: %+v", w.File)
	}
}

// TestRegisterPiVersion: the extension reports the running Pi's version at
// registration; it is stored with the registration (and kept across
// re-registration), and a value that is not a semver is refused with 422.
func TestRegisterPiVersion(t *testing.T) {
	s := newTestServer(t, serverOptions{}, piTree(localBasicFile))
	file := filepath.Join(s.Sessions, localBasicFile)
	r := s.put("/v1/sessions/"+localBasicSessionID, map[string]any{"session_file": file, "mode": "local", "pi_version": "1.6.0"})
	if r.Status/100 != 2 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	reg, ok, err := s.State.Registration(t.Context(), localBasicSessionID)
	if err != nil || !ok || reg.PiVersion != "1.6.0" {
		t.Fatalf("stored registration = %+v (found %v, err %v), want pi_version 1.6.0", reg, ok, err)
	}
	r = s.put("/v1/sessions/"+localBasicSessionID, map[string]any{"session_file": file, "mode": "local", "pi_version": "one.six"})
	if r.Status != 422 || !strings.Contains(string(r.Body), "body.pi_version") {
		t.Fatalf("bad pi_version: %d %s, want 422 naming body.pi_version", r.Status, r.Body)
	}
	if reg, _, _ := s.State.Registration(t.Context(), localBasicSessionID); reg.PiVersion != "1.6.0" {
		t.Fatalf("refused registration changed pi_version to %q", reg.PiVersion)
	}
}

// TestRegisterBeforeFileExists: the extension registers at session_start,
// before Pi writes the file (0.85: first assistant message; 1.6: first user
// message, in a per-cwd folder that may not exist yet). The registration is
// accepted, /context answers a session without entries (awaiting_file,
// needs_boundary, nothing to project) and /windows answers window 0. Once
// Pi writes the file the session answers from it. A file that was indexed
// and then deleted stays 410.
func TestRegisterBeforeFileExists(t *testing.T) {
	s := newTestServer(t, serverOptions{})
	rel := filepath.Join("--home-dev--", "later.jsonl")
	r := s.put("/v1/sessions/later", map[string]any{"session_file": rel, "mode": "local", "pi_version": "0.85.1"})
	if r.Status != http.StatusCreated {
		t.Fatalf("register missing file: %d %s, want 201", r.Status, r.Body)
	}
	var ctx coordinator.ContextAnswer
	s.mustOK("/v1/sessions/later/context", map[string]any{}, &ctx)
	want := coordinator.ContextAnswer{Mode: contextd.ModeLocal, AwaitingFile: true, NeedsBoundary: true, OrphanedToolResults: []string{},
		HiddenSummaries: []coordinator.HiddenSummary{}, Projection: coordinator.Projection{Drop: []coordinator.MessageKey{}}}
	if !reflect.DeepEqual(ctx, want) {
		t.Fatalf("context before the file:\n got %+v\nwant %+v", ctx, want)
	}
	var win coordinator.WindowsAnswer
	s.mustOK("/v1/sessions/later/windows", map[string]any{}, &win)
	if !win.First || win.Window.WindowNumber != 0 || win.Window.FirstWindowID == "" || win.Window.FirstWindowID != win.Window.CurrentWindowID ||
		len(win.Append) != 1 || win.Append[0].Details.ContextManagement.CurrentWindowID != win.Window.CurrentWindowID {
		t.Fatalf("windows before the file: %+v", win)
	}
	// Pi writes the file: header, the boundary, a user message.
	b := newSessionBuilder("later")
	b.boundary(0, win.Window.CurrentWindowID, win.Window.CurrentWindowID, "") // e0000001
	b.user("hello")                                                           // e0000002
	if err := os.MkdirAll(filepath.Join(s.Sessions, "--home-dev--"), 0o700); err != nil {
		t.Fatal(err)
	}
	s.writeFile(rel, b.bytes())
	ctx = coordinator.ContextAnswer{}
	s.mustOK("/v1/sessions/later/context", map[string]any{}, &ctx)
	if ctx.AwaitingFile || ctx.NeedsBoundary || ctx.BoundaryEntryID != "e0000001" || ctx.LeafID != "e0000002" ||
		ctx.Projection.StartAt == nil || ctx.Projection.StartAt.WindowID != win.Window.CurrentWindowID {
		t.Fatalf("context after the file: %+v", ctx)
	}
	// Deleted after it was indexed: gone, not awaiting.
	if err := os.Remove(s.path(rel)); err != nil {
		t.Fatal(err)
	}
	if r := s.post("/v1/sessions/later/context", map[string]any{}); r.Status != http.StatusGone {
		t.Fatalf("context after delete: %d %s, want 410", r.Status, r.Body)
	}
	// Outside the sessions directory is still refused.
	if r := s.put("/v1/sessions/other", map[string]any{"session_file": "/tmp/nowhere/x.jsonl", "mode": "local"}); r.Status != http.StatusForbidden {
		t.Fatalf("missing file outside: %d %s, want 403", r.Status, r.Body)
	}
}

// TestRegisterRelativeToSessionsDir: docs/api.md's registration example
// names the file relative to the sessions directory (here "pi-tree/…",
// as with --sessions-dir ./testdata); it registers. A relative path that
// names no file is registered where contextd looked (the extension
// registers before Pi writes the file, docs/pi-facts.md "Session file"): the registration names
// that absolute path and /context answers awaiting_file. For a session
// whose file exists elsewhere, a path that names no file is a 409 (it
// would cut the session off its windows; TestSessionCopies).
func TestRegisterRelativeToSessionsDir(t *testing.T) {
	s := newTestServer(t, serverOptions{}, fixture{Src: filepath.Join(fixturePiTree, "local-basic.jsonl"), Name: "pi-tree/local-basic.jsonl"})
	if r := s.register(localBasicSessionID, "pi-tree/local-basic.jsonl", contextd.ModeLocal); r.Status != http.StatusCreated && r.Status != http.StatusOK {
		t.Fatalf("register pi-tree/local-basic.jsonl: %d %s", r.Status, r.Body)
	}
	if r := s.register(localBasicSessionID, "local-basic.jsonl", contextd.ModeLocal); r.Status != http.StatusConflict {
		t.Errorf("register the indexed session at a missing path: %d %s, want 409", r.Status, r.Body)
	}
	const later = "019f3776-0000-7000-8000-000000000001"
	r := s.register(later, "local-basic.jsonl", contextd.ModeLocal)
	var reg contextd.Registration
	r.decode(t, &reg)
	if r.Status != http.StatusCreated || reg.SessionFile != filepath.Join(s.Index.Root(), "local-basic.jsonl") {
		t.Errorf("%d %s\nwant 201 naming %s", r.Status, r.Body, filepath.Join(s.Index.Root(), "local-basic.jsonl"))
	}
	var ctx coordinator.ContextAnswer
	s.mustOK("/v1/sessions/"+later+"/context", map[string]any{}, &ctx)
	if !ctx.AwaitingFile {
		t.Errorf("context of a registration without its file: %+v, want awaiting_file", ctx)
	}
}

// TestRegisterModeIsLowercase: the mode field takes the mode names exactly
// as contextd.Modes spells them (lowercase, the one rule
// contextd.ParseMode, the settings and /contextd mode follow): "TREE" is
// refused with 422 naming body.mode and the registration stays local.
func TestRegisterModeIsLowercase(t *testing.T) {
	s := newTestServer(t, serverOptions{}, piTree(localBasicFile))
	file := filepath.Join(s.Sessions, localBasicFile)
	if r := s.put("/v1/sessions/"+localBasicSessionID, map[string]any{"session_file": file, "mode": "local"}); r.Status/100 != 2 {
		t.Fatalf("register: %d %s", r.Status, r.Body)
	}
	r := s.put("/v1/sessions/"+localBasicSessionID, map[string]any{"session_file": file, "mode": "TREE"})
	if r.Status != 422 || !strings.Contains(string(r.Body), "body.mode") {
		t.Fatalf("mode TREE: %d %s, want 422 naming body.mode", r.Status, r.Body)
	}
	if reg, _, _ := s.State.Registration(t.Context(), localBasicSessionID); reg.Mode != "local" {
		t.Fatalf("refused registration changed the mode to %q", reg.Mode)
	}
}
