package coordinator

// Clones and forks (lineage.go): a Tree copy made by Pi's /clone holds the
// active path of testdata/pi-tree/tree-basic.jsonl (27 entries: the
// summary, manifest a3f14c63, note snapshot and boundary, then window 1),
// not window 0's archived entries; its header names the original as
// parentSession. The copy must answer history and /context as the
// original does at the same leaf.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd/history"
)

const (
	tbSession = "019f3d67-b1fd-7c0a-87d5-9b46277407ba" // tree-basic header id
	tbLeaf    = "1d4fdaee"                             // its last entry
)

// copyOf writes, in dir, a copy of the active path of the session file
// orig ending at leaf, as createBranchedSession writes it: a header with
// id, timestamp ts and parentSession parent, then the path's lines. edit,
// when not nil, may change a line (decoded) before it is written.
func copyOf(t *testing.T, dir, name, orig, leaf, id, ts, parent string, edit func(e map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(orig)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
		var e map[string]any
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatal(err)
		}
		byID[e["id"].(string)] = e
	}
	var path []map[string]any
	for cur := leaf; cur != ""; {
		e := byID[cur]
		path = append([]map[string]any{e}, path...)
		cur, _ = e["parentId"].(string)
	}
	hdr, _ := json.Marshal(map[string]any{"type": "session", "version": 3, "id": id, "timestamp": ts, "cwd": "/home/dev/src/ledger-svc", "parentSession": parent})
	out := []string{string(hdr)}
	for _, e := range path {
		if edit != nil {
			edit(e)
		}
		l, _ := json.Marshal(e)
		out = append(out, string(l))
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(strings.Join(out, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// treeAnswers are the history and context answers compared between a
// copy and its original.
type treeAnswers struct {
	Windows history.WindowsResult
	Items   history.ItemsResult
	Search  history.ItemsResult
	// Short is a 1-byte search, which reads every frame: in a copy it
	// searches the parent's archived window under the copy's scan core
	// (store.View.ShareScan; with two CPUs there is one core, and the
	// search would wait for itself).
	Short  history.ItemsResult
	Read   history.ReadResult
	Hidden []HiddenSummary
}

func treeAnswersOf(t *testing.T, svc *Service, sessionID, leaf string) treeAnswers {
	t.Helper()
	ctx := t.Context()
	cc := CallContext{SessionID: sessionID, LeafID: leaf}
	var a treeAnswers
	var err error
	if a.Windows, err = svc.ListWindows(ctx, cc, history.ListWindowsArgs{}); err != nil {
		t.Fatal(err)
	}
	w0 := a.Windows.Windows[0].WindowID
	if a.Items, err = svc.ListItems(ctx, cc, history.ListItemsArgs{WindowID: &w0}); err != nil {
		t.Fatal(err)
	}
	if a.Search, err = svc.SearchHistory(ctx, cc, history.SearchArgs{Query: "test", WindowID: &w0}); err != nil {
		t.Fatal(err)
	}
	if a.Short, err = svc.SearchHistory(ctx, cc, history.SearchArgs{Query: "t", WindowID: &w0}); err != nil {
		t.Fatal(err)
	}
	if len(a.Items.Items) > 1 {
		it := a.Items.Items[1]
		if a.Read, err = svc.ReadItem(ctx, cc, history.ReadItemArgs{ItemID: it.ItemID, WindowID: it.WindowID}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := svc.Context(ctx, sessionID, ContextRequest{LeafID: leaf})
	if err != nil {
		t.Fatal(err)
	}
	a.Hidden = c.HiddenSummaries
	return a
}

// TestCloneReadsParentArchives: a copy, a copy of the copy, and the copy
// after the original grew all answer as the original; a copy whose
// summary text differs from the parent's, a copy whose parent is outside
// the sessions directory and a copy older than its parent keep the
// manifest unresolved: one window, the summary not hidden.
func TestCloneReadsParentArchives(t *testing.T) {
	svc, dir := localService(t, map[string][]byte{"tree-basic.jsonl": readFixture(t, "tree-basic.jsonl")})
	ctx := t.Context()
	orig := filepath.Join(dir, "tree-basic.jsonl")
	outside := filepath.Join(t.TempDir(), "tree-basic.jsonl")
	if err := os.WriteFile(outside, readFixture(t, "tree-basic.jsonl"), 0o600); err != nil {
		t.Fatal(err)
	}
	copyOf(t, dir, "copy.jsonl", orig, tbLeaf, "copy-1", "2026-07-07T17:00:00.000Z", orig, nil)
	copyOf(t, dir, "copy2.jsonl", filepath.Join(dir, "copy.jsonl"), tbLeaf, "copy-2", "2026-07-07T18:00:00.000Z", filepath.Join(dir, "copy.jsonl"), nil)
	copyOf(t, dir, "edited.jsonl", orig, tbLeaf, "edited", "2026-07-07T17:00:00.000Z", orig, func(e map[string]any) {
		if e["type"] == "branch_summary" {
			e["summary"] = "another summary"
		}
	})
	copyOf(t, dir, "outside.jsonl", orig, tbLeaf, "outside", "2026-07-07T17:00:00.000Z", outside, nil)
	copyOf(t, dir, "older.jsonl", orig, tbLeaf, "older", "2026-07-07T16:00:00.000Z", orig, nil)
	for _, id := range []string{tbSession, "copy-1", "copy-2", "edited", "outside", "older"} {
		file := map[string]string{tbSession: "tree-basic.jsonl", "copy-1": "copy.jsonl", "copy-2": "copy2.jsonl", "edited": "edited.jsonl", "outside": "outside.jsonl", "older": "older.jsonl"}[id]
		if _, _, err := svc.Register(ctx, id, RegisterRequest{SessionFile: file, Mode: "tree"}); err != nil {
			t.Fatal(err)
		}
	}
	want := treeAnswersOf(t, svc, tbSession, tbLeaf)
	if len(want.Windows.Windows) != 2 || len(want.Hidden) != 1 || len(want.Search.Items) == 0 || len(want.Short.Items) == 0 || want.Read.Item == nil {
		t.Fatalf("original: %+v", want)
	}
	for _, id := range []string{"copy-1", "copy-2"} {
		if diff := cmp.Diff(want, treeAnswersOf(t, svc, id, tbLeaf)); diff != "" {
			t.Errorf("%s answers differ from the original's (-original +copy):\n%s", id, diff)
		}
	}
	// GET /v1/sessions/{id}: the copy counts the archive, with no problem.
	st, err := svc.SessionStateOf(ctx, "copy-1")
	if err != nil {
		t.Fatal(err)
	}
	if st.Archives != 1 || len(st.Problems) != 0 {
		t.Errorf("copy state: archives %d, problems %+v; want 1 archive, no problem", st.Archives, st.Problems)
	}
	// The original grew after the copy was made.
	f, err := os.OpenFile(orig, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"type":"message","id":"99990001","parentId":"1d4fdaee","timestamp":"2026-07-07T17:30:00.000Z","message":{"role":"user","content":"more","timestamp":1}}` + "\n")
	f.Close()
	if diff := cmp.Diff(want, treeAnswersOf(t, svc, "copy-1", tbLeaf)); diff != "" {
		t.Errorf("copy after the original grew (-original +copy):\n%s", diff)
	}
	for _, id := range []string{"edited", "outside", "older"} {
		cc := CallContext{SessionID: id}
		lw, err := svc.ListWindows(ctx, cc, history.ListWindowsArgs{})
		if err != nil {
			t.Fatal(err)
		}
		c, err := svc.Context(ctx, id, ContextRequest{})
		if err != nil {
			t.Fatal(err)
		}
		st, err := svc.SessionStateOf(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if len(lw.Windows) != 1 || len(c.HiddenSummaries) != 0 || st.Archives != 0 ||
			!cmp.Equal(st.Problems, []SessionProblem{{Reason: "invalid_archive", Detail: "a3f14c63: archived_leaf_missing"}}) {
			t.Errorf("%s: windows %+v, hidden %+v, archives %d, problems %+v; want the manifest unresolved", id, lw.Windows, c.HiddenSummaries, st.Archives, st.Problems)
		}
	}
}
