package archive

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd/history"
	"contextd/session"
)

// The oracles are testdata/pi-tree/*.expected.json, written by the fixture
// generator next to files real Pi 0.85 code wrote (testdata/pi-tree/README.md).

var fixtureNames = []string{"local-basic", "tree-basic", "tree-multi", "tree-manual-summary", "tree-bad-manifests-small"}

type expected struct {
	LeafID          string   `json:"leafId"`
	ActiveBranchIDs []string `json:"activeBranchIds"`
	Manifests       []struct {
		ManifestEntryID  string   `json:"manifestEntryId"`
		OnActiveBranch   bool     `json:"onActiveBranch"`
		Valid            bool     `json:"valid"`
		Reasons          []string `json:"reasons"`
		ArchivedEntryIDs []string `json:"archivedEntryIds"`
		Data             Data     `json:"data"`
	} `json:"manifests"`
	ValidManifests []struct {
		ManifestEntryID  string   `json:"manifestEntryId"`
		WindowID         string   `json:"windowId"`
		ArchivedEntryIDs []string `json:"archivedEntryIds"`
	} `json:"validManifests"`
	TreeFilter struct {
		Hidden  []string `json:"hiddenSummaryEntryIds"`
		Visible []string `json:"visibleSummaryEntryIds"`
	} `json:"treeFilter"`
	BranchSummaries []struct {
		EntryID            string `json:"entryId"`
		OnActiveBranch     bool   `json:"onActiveBranch"`
		HasManifest        bool   `json:"hasManifest"`
		HiddenByTreeFilter bool   `json:"hiddenByTreeFilter"`
	} `json:"branchSummaries"`
}

func fixturePath(name string) string {
	return filepath.Join("..", "testdata", "pi-tree", name+".jsonl")
}

func loadExpected(t *testing.T, name string) expected {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "pi-tree", name+".expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var e expected
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// coldBuild parses path from scratch (session.Each, no store) and builds
// the index from the decoded manifest data.
func coldBuild(t testing.TB, path string) (*session.Tree, *Index, map[int]history.Item) {
	t.Helper()
	data := map[int]json.RawMessage{}
	items := map[int]history.Item{}
	tr, err := session.Each(path, func(e *session.Entry, d *session.Decoded) error {
		if IsManifest(e) {
			data[e.Seq] = append(json.RawMessage(nil), d.Data...)
		}
		if it, ok := history.Render(e, d, nil); ok {
			items[e.Seq] = it
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	idx, err := Build(tr, func(seq int) (json.RawMessage, error) { return data[seq], nil })
	if err != nil {
		t.Fatal(err)
	}
	return tr, idx, items
}

func memRef(tr *session.Tree, items map[int]history.Item) history.RefFunc {
	return func(seq int, windowID string) (history.ItemRef, bool) {
		it, ok := items[seq]
		if !ok {
			return history.ItemRef{}, false
		}
		return history.ItemRef{WindowID: windowID, ItemID: tr.ID(seq), Role: it.Role, ToolName: it.ToolName,
			ToolNamespace: it.ToolNamespace, Summary: it.Summary, Chars: it.Chars, Key: int64(seq)}, true
	}
}

func ids(tr *session.Tree, seqs []int) []string {
	if seqs == nil {
		return nil
	}
	out := make([]string, len(seqs))
	for i, s := range seqs {
		out[i] = tr.ID(s)
	}
	return out
}

// fixtureReason maps the generator's reason names to ours. The generator
// checks the same rules with other words: "archivedLeafId-mismatch" is the
// summary's fromId disagreeing with archivedLeafId, "branchBaseId-mismatch"
// its parentId disagreeing with branchBaseId.
var fixtureReason = map[string]string{
	"archivedLeafId-mismatch":    ReasonFromIDMismatch,
	"branchBaseId-mismatch":      ReasonParentIDMismatch,
	"boundary-not-in-archive":    ReasonBoundaryNotInArchive,
	"summary-not-branch_summary": ReasonNotBranchSummary,
	"archivedLeaf-missing":       ReasonArchivedLeafMissing,
}

func TestFixtureManifests(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			exp := loadExpected(t, name)
			tr, idx, _ := coldBuild(t, fixturePath(name))
			if len(idx.Manifests) != len(exp.Manifests) {
				t.Fatalf("manifests: got %d, want %d", len(idx.Manifests), len(exp.Manifests))
			}
			branch, _, err := tr.Branch("")
			if err != nil {
				t.Fatal(err)
			}
			on := map[int]bool{}
			for _, s := range branch {
				on[s] = true
			}
			for i, want := range exp.Manifests {
				got := idx.Manifests[i]
				if got.EntryID != want.ManifestEntryID || got.Valid != want.Valid {
					t.Errorf("manifest %d: got %s valid=%v, want %s valid=%v", i, got.EntryID, got.Valid, want.ManifestEntryID, want.Valid)
				}
				var reasons []string
				for _, r := range want.Reasons {
					m, ok := fixtureReason[r]
					if !ok {
						t.Fatalf("unmapped fixture reason %q", r)
					}
					reasons = append(reasons, m)
				}
				if diff := cmp.Diff(reasons, got.Reasons); diff != "" {
					t.Errorf("%s reasons (-want +got):\n%s", got.EntryID, diff)
				}
				if diff := cmp.Diff(want.ArchivedEntryIDs, ids(tr, got.Archived)); diff != "" {
					t.Errorf("%s archived entries (-want +got):\n%s", got.EntryID, diff)
				}
				if got.Data != want.Data {
					t.Errorf("%s data: got %+v, want %+v", got.EntryID, got.Data, want.Data)
				}
				if on[got.Seq] != want.OnActiveBranch {
					t.Errorf("%s on branch: got %v", got.EntryID, on[got.Seq])
				}
			}
			var valid []string
			for _, m := range idx.Manifests {
				if m.Valid {
					valid = append(valid, m.EntryID)
				}
			}
			var wantValid []string
			for _, m := range exp.ValidManifests {
				wantValid = append(wantValid, m.ManifestEntryID)
			}
			if diff := cmp.Diff(wantValid, valid); diff != "" {
				t.Errorf("valid manifests (-want +got):\n%s", diff)
			}
			if idx.Valid() != len(wantValid) {
				t.Errorf("Valid() = %d, want %d", idx.Valid(), len(wantValid))
			}
		})
	}
}

// TestFixtureTreeFilter checks the summaries a branch hides against
// treeFilter and branchSummaries: hidden = the summaries of the branch's
// archives; every other branch summary on the branch stays visible.
func TestFixtureTreeFilter(t *testing.T) {
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			exp := loadExpected(t, name)
			tr, idx, items := coldBuild(t, fixturePath(name))
			branch, _, err := tr.Branch(exp.LeafID)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(exp.ActiveBranchIDs, ids(tr, branch)); diff != "" {
				t.Fatalf("active branch (-want +got):\n%s", diff)
			}
			br := idx.Branch(tr, branch, memRef(tr, items))
			hidden := []string{}
			for _, m := range br.Archives {
				hidden = append(hidden, tr.ID(m.SummarySeq))
			}
			visible := []string{}
			for _, s := range branch {
				if e := new(tr.Entry(s)); e.Type == session.TypeBranchSummary && !slices.Contains(hidden, e.ID) {
					visible = append(visible, e.ID)
				}
			}
			if diff := cmp.Diff(exp.TreeFilter.Hidden, hidden); diff != "" {
				t.Errorf("hidden (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(exp.TreeFilter.Visible, visible); diff != "" {
				t.Errorf("visible (-want +got):\n%s", diff)
			}
			for _, bs := range exp.BranchSummaries {
				owned := false
				for _, m := range idx.Manifests {
					if m.Valid && m.Data.SummaryEntryID == bs.EntryID {
						owned = true
					}
				}
				if bs.HiddenByTreeFilter != slices.Contains(hidden, bs.EntryID) {
					t.Errorf("summary %s hidden: want %v", bs.EntryID, bs.HiddenByTreeFilter)
				}
				// Manual and foreign summaries are never owned by a manifest.
				if !bs.HasManifest && owned {
					t.Errorf("summary %s has no manifest but is owned", bs.EntryID)
				}
			}
			if br.NeedsBoundary() {
				t.Errorf("NeedsBoundary = %v at the fixture's leaf", br.NeedsBoundary())
			}
		})
	}
}

// TestFixtureWindows checks the windows of the fixtures' active branches.
// The item counts were computed by testdata/tree_windows.py, an independent
// Python reading of the JSONL (the local-basic counts agree with
// history/testdata/local_basic_counts.py): an archived window has 1 summary item plus every
// archived entry (expected.json archivedEntryIds) of type message,
// custom_message or branch_summary except window boundaries; the current
// window has every such entry after its boundary, except the summaries of
// the branch's archives. E.g. tree-basic window 93e1557d: 35 archived
// entries, minus the boundary b3504875, minus 3 codex-context-note custom
// entries, plus the summary bae0cbce = 32.
func TestFixtureWindows(t *testing.T) {
	type win struct {
		ID    string
		Count int
		First string
		Last  string
	}
	want := map[string][]win{
		"local-basic": {
			{"e636b0b7-d739-4a87-ad1c-80eb5320dfff", 41, "2623e50c", "311c04e4"},
			{"058f6ded-97f5-4969-ade0-fa96ccce6093", 32, "56ee3191", "8f24378d"},
			{"3f758502-0c0f-4460-92e9-45bd32510d50", 20, "7517beb7", "588752ae"},
		},
		"tree-basic": {
			{"93e1557d-7342-47d3-970c-2383fd5384d7", 32, "bae0cbce", "42a59a75"},
			{"2d620c43-63c5-433c-9d31-9c51c7ca0e17", 20, "f0009d70", "1d4fdaee"},
		},
		"tree-multi": {
			{"bdeff54f-0701-4681-9db7-9f0d115b43c4", 28, "13499824", "71a889ca"},
			{"d1c44683-21c8-4917-a80b-8705bb83f024", 31, "0bcc4862", "121a7588"},
			{"9de03076-a794-4eb5-9b34-9caa9cf93339", 33, "903e9593", "c78abc2d"},
			{"3cfecbd3-b23e-4cc0-885b-33b00f1619ef", 29, "7b988e15", "03f60577"},
			{"fa330d3b-2daf-4e2b-9ab9-6c1693644497", 21, "c3f29ab3", "3a57efd4"},
		},
		"tree-manual-summary": {
			{"e1babcb0-ddad-41f2-b514-31632441e870", 23, "34cd52a5", "212204a6"},
			{"722de4b6-7d94-445f-84bc-7bd50315aee8", 45, "1af1a0b4", "dcf0555d"},
			{"21831903-3553-4f41-b578-b0e547b5467e", 34, "d601d6e6", "e2d48416"},
		},
		"tree-bad-manifests-small": {
			{"13772f29-d378-45cf-828c-10d6ebc7448c", 16, "602fdec9", "93ac1a51"},
			{"00f008ae-d1f2-45b3-b18a-661280edc9fa", 12, "55a5b73d", "4e9c24df"},
		},
	}
	for _, name := range fixtureNames {
		t.Run(name, func(t *testing.T) {
			tr, idx, items := coldBuild(t, fixturePath(name))
			branch, _, _ := tr.Branch("")
			br := idx.Branch(tr, branch, memRef(tr, items))
			var got []win
			for _, w := range br.Windows {
				got = append(got, win{w.ID, len(w.Items), w.Items[0].ItemID, w.Items[len(w.Items)-1].ItemID})
				for i, it := range w.Items {
					if it.WindowID != w.ID {
						t.Errorf("item %s window %s in window %s", it.ItemID, it.WindowID, w.ID)
					}
					// Only an archive's first item is a summary item.
					if it.Summary != (i == 0 && len(br.Archives) > 0 && isArchive(br, w.ID)) {
						t.Errorf("window %s item %d (%s) summary=%v", w.ID, i, it.ItemID, it.Summary)
					}
				}
			}
			if diff := cmp.Diff(want[name], got); diff != "" {
				t.Errorf("windows (-want +got):\n%s", diff)
			}
		})
	}
}

func isArchive(b *Branch, windowID string) bool {
	for _, m := range b.Archives {
		if m.Data.WindowID == windowID {
			return true
		}
	}
	return false
}

// TestManualSummaryIsRawItem: in tree-manual-summary the manual summary
// 7b747b22 lies inside archived window 722de4b6, and the manual summary
// 722a1281 and the foreign (fromHook) summary 95ec8f29 lie in the current
// window. All three are raw assistant items, never summary items.
func TestManualSummaryIsRawItem(t *testing.T) {
	tr, idx, items := coldBuild(t, fixturePath("tree-manual-summary"))
	branch, _, _ := tr.Branch("")
	br := idx.Branch(tr, branch, memRef(tr, items))
	found := map[string]string{}
	for _, w := range br.Windows {
		for _, it := range w.Items {
			switch it.ItemID {
			case "7b747b22", "722a1281", "95ec8f29":
				if it.Summary || it.Role != history.RoleAssistant {
					t.Errorf("%s: summary=%v role=%s", it.ItemID, it.Summary, it.Role)
				}
				found[it.ItemID] = w.ID
			}
		}
	}
	want := map[string]string{
		"7b747b22": "722de4b6-7d94-445f-84bc-7bd50315aee8",
		"722a1281": "21831903-3553-4f41-b578-b0e547b5467e",
		"95ec8f29": "21831903-3553-4f41-b578-b0e547b5467e",
	}
	if diff := cmp.Diff(want, found); diff != "" {
		t.Errorf("windows of the manual summaries (-want +got):\n%s", diff)
	}
}

func TestParseData(t *testing.T) {
	good := `{"protocol":1,"strategy":"codex-context-tree","windowId":"w","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l","branchBaseId":"p"}`
	d, ok := ParseData(json.RawMessage(good))
	if !ok || d != (Data{Protocol: 1, Strategy: Strategy, WindowID: "w", BoundaryEntryID: "b", SummaryEntryID: "s", ArchivedLeafID: "l", BranchBaseID: "p"}) {
		t.Fatalf("good: %+v %v", d, ok)
	}
	for _, c := range []struct {
		raw string
		ok  bool
	}{
		{`{"protocol":1,"strategy":"codex-context-tree","windowId":"w","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l","branchBaseId":null}`, true},
		{`{"protocol":1,"strategy":"codex-context-tree","windowId":"w","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l"}`, true},
		{`{"protocol":1,"strategy":"codex-context-tree","windowId":"w","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l","branchBaseId":"p","compactionEntryId":"c"}`, true},
		{``, false},
		{`null`, false},
		{`[]`, false},
		{`"x"`, false},
		{`{"protocol":2,"strategy":"codex-context-tree","windowId":"w","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l"}`, false},
		{`{"protocol":1.5,"strategy":"codex-context-tree","windowId":"w","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l"}`, false},
		{`{"protocol":"1","strategy":"codex-context-tree","windowId":"w","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l"}`, false},
		{`{"strategy":"codex-context-tree","windowId":"w","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l"}`, false},
		{`{"protocol":1,"strategy":"codex-context-window","windowId":"w","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l"}`, false},
		{`{"protocol":1,"strategy":"codex-context-tree","windowId":"","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l"}`, false},
		{`{"protocol":1,"strategy":"codex-context-tree","windowId":"w","boundaryEntryId":7,"summaryEntryId":"s","archivedLeafId":"l"}`, false},
		{`{"protocol":1,"strategy":"codex-context-tree","windowId":"w","boundaryEntryId":"b","summaryEntryId":null,"archivedLeafId":"l"}`, false},
		{`{"protocol":1,"strategy":"codex-context-tree","windowId":"w","boundaryEntryId":"b","summaryEntryId":"s"}`, false},
		{`{"protocol":1,"strategy":"codex-context-tree","windowId":"w","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l","branchBaseId":3}`, false},
		{`{"protocol":1,"strategy":"codex-context-tree","windowId":"w","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l","compactionEntryId":{}}`, false},
	} {
		if _, ok := ParseData(json.RawMessage(c.raw)); ok != c.ok {
			t.Errorf("ParseData(%s) ok=%v, want %v", c.raw, ok, c.ok)
		}
	}
}

// memTree builds a tree from "id<parent" specs: "b<a" is entry b with
// parent a, "a<" a root. Types: ids starting with "B" are window boundaries
// of window "w"+id, "S" branch summaries (fromId after a second "<"), "M"
// manifests; everything else is a user message.
func memTree(specs ...string) *session.Tree {
	tr := session.NewTree(session.Header{Version: 3, ID: "mem"})
	for i, sp := range specs {
		parts := strings.Split(sp, "<")
		e := session.Entry{Seq: i, ID: parts[0], ParentID: parts[1], Type: session.TypeMessage, Role: session.RoleUser}
		switch parts[0][0] {
		case 'B':
			e.Type, e.Role, e.CustomType = session.TypeCustomMessage, "", session.CustomTypeWindow
			e.Window = &session.WindowMarker{Kind: "window", CurrentWindowID: "w" + parts[0], FirstWindowID: "w" + parts[0]}
		case 'S':
			e.Type, e.Role = session.TypeBranchSummary, ""
			e.SetRefs(session.EntryRefs{FromID: parts[2]})
		case 'M':
			e.Type, e.Role, e.CustomType = session.TypeCustom, "", session.CustomTypeTreeArchive
		}
		tr.Add(e)
	}
	return tr
}

func manifestData(window, boundary, summary, leaf, base string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"protocol": 1, "strategy": Strategy, "windowId": window, "boundaryEntryId": boundary,
		"summaryEntryId": summary, "archivedLeafId": leaf, "branchBaseId": base})
	return b
}

// TestValidateRules covers each rule of Validate on small in-memory trees.
// The base tree is r ← B0 ← u1 ← u2 (archived) and r ← S ← M (cut).
func TestValidateRules(t *testing.T) {
	base := []string{"r<", "B0<r", "u1<B0", "u2<u1", "S<r<u2", "M<S"}
	cases := []struct {
		name    string
		specs   []string
		data    json.RawMessage
		reasons []string
		archive []string
	}{
		{"valid", base, manifestData("wB0", "B0", "S", "u2", "r"), nil, []string{"B0", "u1", "u2"}},
		{"malformed", base, json.RawMessage(`{"protocol":1}`), []string{ReasonMalformed}, nil},
		{"summary missing", base, manifestData("wB0", "B0", "nope", "u2", "r"), []string{ReasonSummaryMissing}, nil},
		{"not a branch summary", base, manifestData("wB0", "B0", "u1", "u2", "r"), []string{ReasonNotBranchSummary}, nil},
		{"from id mismatch", base, manifestData("wB0", "B0", "S", "u1", "r"), []string{ReasonFromIDMismatch}, nil},
		{"parent id mismatch", base, manifestData("wB0", "B0", "S", "u2", ""), []string{ReasonParentIDMismatch}, nil},
		{"summary not ancestor", []string{"r<", "B0<r", "u1<B0", "u2<u1", "S<r<u2", "M<u2"}, manifestData("wB0", "B0", "S", "u2", "r"),
			[]string{ReasonSummaryNotAncestor}, nil},
		{"null base walks to the root", []string{"B0<", "u1<B0", "u2<u1", "S<<u2", "M<S"}, manifestData("wB0", "B0", "S", "u2", ""), nil, []string{"B0", "u1", "u2"}},
		{"base not ancestor", []string{"r<", "x<", "B0<r", "u1<B0", "u2<u1", "S<x<u2", "M<S"}, manifestData("wB0", "B0", "S", "u2", "x"),
			[]string{ReasonBaseNotAncestor}, nil},
		{"archived leaf missing", []string{"r<", "B0<r", "u1<B0", "S<r<gone", "M<S"}, manifestData("wB0", "B0", "S", "gone", "r"),
			[]string{ReasonArchivedLeafMissing}, nil},
		{"missing parent", []string{"r<", "B0<ghost", "u1<B0", "u2<u1", "S<r<u2", "M<S"}, manifestData("wB0", "B0", "S", "u2", "r"),
			[]string{ReasonMissingParent}, nil},
		{"cycle", []string{"r<", "B0<u2", "u1<B0", "u2<u1", "S<r<u2", "M<S"}, manifestData("wB0", "B0", "S", "u2", "r"),
			[]string{ReasonCycle}, nil},
		{"self parent", []string{"r<", "B0<B0", "S<r<B0", "M<S"}, manifestData("wB0", "B0", "S", "B0", "r"),
			[]string{ReasonCycle}, nil},
		{"boundary not in archive", base, manifestData("wB0", "B0", "S", "u2", "B0"),
			[]string{ReasonParentIDMismatch, ReasonBoundaryNotInArchive}, nil},
		{"boundary is the base", []string{"r<", "B0<r", "u1<B0", "u2<u1", "S<B0<u2", "M<S"}, manifestData("wB0", "B0", "S", "u2", "B0"),
			[]string{ReasonBoundaryNotInArchive}, nil},
		{"not a boundary", base, manifestData("wB0", "u1", "S", "u2", "r"), []string{ReasonNotABoundary}, nil},
		{"window id mismatch", base, manifestData("other", "B0", "S", "u2", "r"), []string{ReasonWindowIDMismatch}, nil},
		{"summary in archive", []string{"r<", "B0<r", "S<r<u2", "u2<S", "M<S"}, manifestData("wB0", "B0", "S", "u2", "r"),
			[]string{ReasonSummaryInArchive, ReasonBoundaryNotInArchive}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := memTree(c.specs...)
			seq, _ := tr.Lookup("M")
			m := validateOne(tr, seq, c.data)
			if diff := cmp.Diff(c.reasons, m.Reasons); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
			if m.Valid != (c.reasons == nil) {
				t.Errorf("valid = %v", m.Valid)
			}
			if diff := cmp.Diff(c.archive, ids(tr, m.Archived)); diff != "" {
				t.Errorf("archived (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDepthBound: a chain of MaxDepth archived entries is valid; one more
// entry exceeds the bound.
func TestDepthBound(t *testing.T) {
	for _, n := range []int{MaxDepth, MaxDepth + 1} {
		specs := []string{"r<", "B0<r"}
		prev := "B0"
		for i := 1; i < n; i++ {
			id := fmt.Sprintf("u%d", i)
			specs = append(specs, id+"<"+prev)
			prev = id
		}
		specs = append(specs, "S<r<"+prev, "M<S")
		tr := memTree(specs...)
		seq, _ := tr.Lookup("M")
		m := validateOne(tr, seq, manifestData("wB0", "B0", "S", prev, "r"))
		if n == MaxDepth {
			if !m.Valid || len(m.Archived) != MaxDepth {
				t.Errorf("n=%d: valid=%v reasons=%v archived=%d", n, m.Valid, m.Reasons, len(m.Archived))
			}
		} else if diff := cmp.Diff([]string{ReasonDepthExceeded}, m.Reasons); diff != "" {
			t.Errorf("n=%d reasons (-want +got):\n%s", n, diff)
		}
	}
}

// TestBudget: once the build's parent steps are spent, later manifests
// are unavailable (index_budget_exceeded). The tree r ← B0 ← u1 ← u2 is
// archived by five manifests, each with its own summary S<i> (child of r)
// and manifest M<i> (child of S<i>). Each check spends 1 ancestry step
// (M<i> → S<i>) and 3 walk steps (u2, u1, B0): with a budget of 10,
// manifests 0 and 1 spend 8; manifest 2 spends its ancestry step and 1
// walk step and runs out; manifests 3 and 4 run out at once.
func TestBudget(t *testing.T) {
	specs := []string{"r<", "B0<r", "u1<B0", "u2<u1"}
	for i := range 5 {
		specs = append(specs, fmt.Sprintf("S%d<r<u2", i), fmt.Sprintf("M%d<S%d", i, i))
	}
	tr := memTree(specs...)
	idx, err := build(tr, func(seq int) (json.RawMessage, error) {
		n := strings.TrimPrefix(tr.ID(seq), "M")
		return manifestData("wB0", "B0", "S"+n, "u2", "r"), nil
	}, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, m := range idx.Manifests {
		got = append(got, m.Reasons)
	}
	want := [][]string{nil, nil, {ReasonBudgetExceeded}, {ReasonBudgetExceeded}, {ReasonBudgetExceeded}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reasons (-want +got):\n%s", diff)
	}
	if idx.Valid() != 2 {
		t.Errorf("valid = %d, want 2", idx.Valid())
	}
}

// TestDuplicateSummary: a second manifest for the same summary (a commit
// appended twice) is invalid; the first one keeps the window.
func TestDuplicateSummary(t *testing.T) {
	tr := memTree("r<", "B0<r", "u1<B0", "S<r<u1", "M<S", "M2<M")
	idx, err := Build(tr, func(int) (json.RawMessage, error) { return manifestData("wB0", "B0", "S", "u1", "r"), nil })
	if err != nil {
		t.Fatal(err)
	}
	if !idx.Manifests[0].Valid || idx.Manifests[1].Valid || idx.Manifests[1].Reasons[0] != ReasonDuplicateSummary || idx.Valid() != 1 {
		t.Errorf("got %+v", idx.Manifests)
	}
	b, _ := tr.Lookup("B0")
	if !idx.ArchivedBoundary(b) {
		t.Error("B0 is not an archived boundary")
	}
}

// TestDataMarshalJSON: a manifest's data is written in the seed's key order
// (docs/codex-contract.md "Tree archive" "Manifest"), branchBaseId null for a root position and
// compactionEntryId only when set; ParseData reads it back unchanged.
func TestDataMarshalJSON(t *testing.T) {
	for _, tc := range []struct {
		d    Data
		want string
	}{
		{Data{Protocol: 1, Strategy: Strategy, WindowID: "w<1>", BoundaryEntryID: "b", SummaryEntryID: "s", ArchivedLeafID: "l", BranchBaseID: "p"},
			`{"protocol":1,"strategy":"codex-context-tree","windowId":"w<1>","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l","branchBaseId":"p"}`},
		{Data{Protocol: 1, Strategy: Strategy, WindowID: "w", BoundaryEntryID: "b", SummaryEntryID: "s", ArchivedLeafID: "l", CompactionEntryID: "c"},
			`{"protocol":1,"strategy":"codex-context-tree","windowId":"w","boundaryEntryId":"b","summaryEntryId":"s","archivedLeafId":"l","branchBaseId":null,"compactionEntryId":"c"}`},
	} {
		got, err := json.Marshal(tc.d)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != strings.ReplaceAll(strings.ReplaceAll(tc.want, "<", `\u003c`), ">", `\u003e`) {
			t.Errorf("json.Marshal = %s, want %s", got, tc.want)
		}
		back, ok := ParseData(got)
		if !ok || back != tc.d {
			t.Errorf("ParseData(%s) = %+v, %v; want %+v", got, back, ok, tc.d)
		}
	}
}

// validateOne validates one manifest with its own MaxSteps budget.
func validateOne(t *session.Tree, seq int, raw json.RawMessage) Manifest {
	budget := MaxSteps
	return validate(t, seq, raw, &budget)
}
