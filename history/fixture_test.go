package history

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"contextd/session"
)

// localView builds the Local view of a fixture the way docs/codex-contract.md "Local history" describes,
// with LocalWindows over the active branch (Pi's getBranch from the default
// leaf): each window boundary (Entry.IsBoundary) opens a window and the
// entries after it, up to the next boundary, belong to it; entries before
// the first boundary are ignored; every entry that Render accepts is an
// item. Tool calls are recorded in file order so that results find their
// call.
func localView(t *testing.T, path string) (*View, *session.Tree, map[string]Item) {
	t.Helper()
	calls := map[string]Call{}
	lookup := func(id string) (Call, bool) { c, ok := calls[id]; return c, ok }
	items := map[string]Item{}
	tree, err := session.Each(path, func(e *session.Entry, d *session.Decoded) error {
		for _, c := range Calls(d) {
			calls[c.ID] = c.Call
		}
		if it, ok := Render(e, d, lookup); ok {
			items[e.ID] = it
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	branch, cycle, err := tree.Branch("")
	if err != nil || cycle {
		t.Fatal(err, cycle)
	}
	texts := MemTexts{}
	v := &View{Texts: texts}
	v.Windows = LocalWindows(tree, branch, func(seq int, windowID string) (ItemRef, bool) {
		e := new(tree.Entry(seq))
		it, ok := items[e.ID]
		if !ok {
			return ItemRef{}, false
		}
		texts[int64(seq)] = it.Text
		return ItemRef{WindowID: windowID, ItemID: e.ID, Role: it.Role, ToolName: it.ToolName,
			ToolNamespace: it.ToolNamespace, Summary: it.Summary, Chars: it.Chars, Key: int64(seq)}, true
	})
	return v, tree, items
}

// Expected values for local-basic come from history/testdata/local_basic_counts.py
// (an independent Python rendering over expected.json activeBranchIds and
// windows), run from /work/main:
//
//	e636b0b7-… items 41 chars 119047 first 2623e50c last 311c04e4
//	058f6ded-… items 32 chars 18803 first 56ee3191 last 8f24378d
//	3f758502-… items 20 chars 12227 first 7517beb7 last 588752ae
//	search 'npx vitest run': 15 hits: de10da7e d0e62bbd 9251a52e d8643913 1dd62eb3 ba0c2428 65a117fc d6ee75d5 eeb21aab 85c40257 dc8dd239 34ee1813 82611342 6de635f0 588752ae
//	search cap: kept 10, total 7676 (preview sizes in the test)
//	notes / read_file items with their preview JSON sizes (window 1 notes: 8 items, 4,478 chars)
//	search 'date-fns': 4 hits: 873ba1dd d6ee75d5 eeb21aab 82611342
//
// By hand from the file: 91 message entries + 5 custom_messages − 3
// boundaries = 93 = 41 + 32 + 20 items; window 0 holds 3 user, 16
// assistant, 20 toolResult, 1 bashExecution and 1 reminder.
func TestLocalBasicFixture(t *testing.T) {
	const dir = "../testdata/pi-tree/"
	v, tree, items := localView(t, dir+"local-basic.jsonl")

	var exp struct {
		ActiveBranchIDs []string `json:"activeBranchIds"`
		Windows         []struct {
			EntryID  string `json:"entryId"`
			WindowID string `json:"windowId"`
		} `json:"windows"`
	}
	raw, err := os.ReadFile(dir + "local-basic.expected.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	branch, _, _ := tree.Branch("")
	if len(branch) != len(exp.ActiveBranchIDs) {
		t.Fatalf("branch %d entries, expected %d", len(branch), len(exp.ActiveBranchIDs))
	}
	for i, seq := range branch {
		if tree.ID(seq) != exp.ActiveBranchIDs[i] {
			t.Fatalf("branch[%d] = %s, want %s", i, tree.ID(seq), exp.ActiveBranchIDs[i])
		}
	}

	res, err := v.ListWindows(ListWindowsArgs{})
	if err != nil {
		t.Fatal(err)
	}
	want := []WindowInfo{
		{"e636b0b7-d739-4a87-ad1c-80eb5320dfff", 41},
		{"058f6ded-97f5-4969-ade0-fa96ccce6093", 32},
		{"3f758502-0c0f-4460-92e9-45bd32510d50", 20},
	}
	if len(res.Windows) != len(want) || len(exp.Windows) != len(want) {
		t.Fatalf("windows %+v", res.Windows)
	}
	for i := range want {
		if res.Windows[i] != want[i] || exp.Windows[i].WindowID != want[i].WindowID {
			t.Errorf("window %d = %+v, want %+v (expected.json %s)", i, res.Windows[i], want[i], exp.Windows[i].WindowID)
		}
	}
	wantChars := []int{119047, 18803, 12227}
	wantEnds := [][2]string{{"2623e50c", "311c04e4"}, {"56ee3191", "8f24378d"}, {"7517beb7", "588752ae"}}
	for i, w := range v.Windows {
		sum := 0
		items := w.All()
		for _, r := range items {
			sum += r.Chars
		}
		if sum != wantChars[i] {
			t.Errorf("window %d: %d chars, want %d", i, sum, wantChars[i])
		}
		if items[0].ItemID != wantEnds[i][0] || items[len(items)-1].ItemID != wantEnds[i][1] {
			t.Errorf("window %d: items %s…%s", i, items[0].ItemID, items[len(items)-1].ItemID)
		}
	}

	// Flat notes router: call and result listed under the action.
	if it := items["d0e62bbd"]; it.Role != "assistant" || it.ToolName != "write_file" || it.ToolNamespace != "notes" {
		t.Errorf("notes call: %+v", it)
	}
	if it := items["6ee61fe7"]; it.Role != "tool" || it.ToolName != "write_file" || it.ToolNamespace != "notes" {
		t.Errorf("notes result: %+v", it)
	}
	// A plain tool result and the user's `!git status`.
	if it := items["0ae5ea70"]; it.Role != "tool" || it.ToolName != "read" || it.ToolNamespace != "" {
		t.Errorf("read result: %+v", it)
	}
	bash := items["f7de1fa0"]
	if bash.Role != "user" || !strings.HasPrefix(bash.Text, "Ran `git status`\n```\nOn branch feat/alert-lookup\n") || !strings.HasSuffix(bash.Text, "\n```") {
		t.Errorf("bash: %+v", bash)
	}
	// The reminder custom_message is a developer item; boundaries are not items of a window.
	if it := items["82e29e2d"]; it.Role != "developer" || !strings.HasPrefix(it.Text, "<context_window_reminder>\n14% remaining.") {
		t.Errorf("reminder: %+v", it)
	}

	got, _ := v.ListItems(ListItemsArgs{ToolNamespace: sp("notes"), WindowID: sp("058f6ded-97f5-4969-ade0-fa96ccce6093"), Limit: ip(25)})
	if s := ids(got); s != "56ee3191,eeb21aab,8ea9e91d,becf5541,46d06431,dcbd1e1e,34ee1813,ebd30e92" {
		t.Errorf("notes items in window 1: %s", s)
	}
	got, _ = v.ListItems(ListItemsArgs{ToolName: sp("read_file")})
	if s := ids(got); s != "56ee3191,eeb21aab,7517beb7,82611342" {
		t.Errorf("read_file items: %s", s)
	}
	for i, size := range []int{395, 925, 395, 1222} { // preview JSON sizes from the script
		if i < len(got.Items) && PreviewJSONChars(got.Items[i]) != size {
			t.Errorf("read_file item %d: preview %d chars, want %d", i, PreviewJSONChars(got.Items[i]), size)
		}
	}
	// 15 items contain "npx vitest run"; with limit 25 the 8,000-char cap
	// keeps the first 10 (7,676 chars; the 11th, dc8dd239, would pass 8,000).
	got, _ = v.Search(SearchArgs{Query: "npx vitest run", Limit: ip(25)})
	wantSizes := []struct {
		id   string
		size int
	}{{"de10da7e", 524}, {"d0e62bbd", 711}, {"9251a52e", 649}, {"d8643913", 391}, {"1dd62eb3", 687},
		{"ba0c2428", 993}, {"65a117fc", 997}, {"d6ee75d5", 919}, {"eeb21aab", 925}, {"85c40257", 880}}
	if len(got.Items) != len(wantSizes) {
		t.Errorf("search vitest: %s", ids(got))
	} else {
		for i, w := range wantSizes {
			if p := got.Items[i]; p.ItemID != w.id || PreviewJSONChars(p) != w.size {
				t.Errorf("search vitest [%d] = %s size %d, want %s %d", i, p.ItemID, PreviewJSONChars(p), w.id, w.size)
			}
		}
	}
	got, _ = v.Search(SearchArgs{Query: "npx vitest run", WindowID: sp("3f758502-0c0f-4460-92e9-45bd32510d50"), RecentFirst: bp(true)})
	if s := ids(got); s != "588752ae,6de635f0,82611342" {
		t.Errorf("search vitest window 2 recent first: %s", s)
	}
	got, _ = v.Search(SearchArgs{Query: "date-fns"})
	if s := ids(got); s != "873ba1dd,d6ee75d5,eeb21aab,82611342" {
		t.Errorf("search date-fns: %s", s)
	}
	// Read the largest item of window 0 in pages.
	var big ItemRef
	for _, r := range v.Windows[0].All() {
		if r.Chars > big.Chars {
			big = r
		}
	}
	var sb strings.Builder
	off := 0
	for {
		r, err := v.ReadItem(ReadItemArgs{ItemID: big.ItemID[4:], WindowID: big.WindowID, OffsetChars: &off})
		if err != nil || r.Item == nil || r.Item.ItemID != big.ItemID {
			t.Fatalf("read %s: %v %+v", big.ItemID, err, r.Item)
		}
		sb.WriteString(r.Item.Content)
		if r.Item.NextOffsetChars == nil {
			break
		}
		off = *r.Item.NextOffsetChars
	}
	if sb.String() != items[big.ItemID].Text {
		t.Errorf("pages of %s do not rebuild the text", big.ItemID)
	}
}
