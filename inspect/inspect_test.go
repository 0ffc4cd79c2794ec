package inspect

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"contextd/session"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// treeFixtures are the Local/Tree sessions written by real Pi 0.85
// (testdata/pi-tree/README.md gives each scenario).
var treeFixtures = []string{"local-basic", "tree-basic", "tree-multi", "tree-manual-summary", "tree-bad-manifests-small"}

// TestTreeGolden compares `inspect --tree` on every Tree fixture with its
// golden drawing in testdata/NAME.tree.txt. The goldens were written by
// -update and then checked by hand against the fixture README and
// NAME.expected.json: the checks of TestTreeFacts below pin the facts each
// drawing must show.
func TestTreeGolden(t *testing.T) {
	for _, name := range treeFixtures {
		t.Run(name, func(t *testing.T) {
			got := drawTree(t, name, TreeOptions{})
			golden := filepath.Join("testdata", name+".tree.txt")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("inspect --tree %s.jsonl differs from %s:\n%s", name, golden, got)
			}
		})
	}
}

func drawTree(t *testing.T, name string, opt TreeOptions) []byte {
	t.Helper()
	f, err := Load(filepath.Join("..", "testdata", "pi-tree", name+".jsonl"), session.DefaultMaxLineBytes)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Tree(&out, f, opt); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// expected is the part of NAME.expected.json (written by the Pi corpus
// generator, testdata/pi-tree/README.md) that a drawing must show.
type expected struct {
	LeafID          string   `json:"leafId"`
	EntryCount      int      `json:"entryCount"`
	ActiveBranchIDs []string `json:"activeBranchIds"`
	Windows         []struct {
		EntryID      string `json:"entryId"`
		WindowID     string `json:"windowId"`
		WindowNumber int    `json:"windowNumber"`
	} `json:"windows"`
	Manifests []struct {
		ID      string   `json:"manifestEntryId"`
		Valid   bool     `json:"valid"`
		Reasons []string `json:"reasons"`
	} `json:"manifests"`
	TreeFilter struct {
		Hidden  []string `json:"hiddenSummaryEntryIds"`
		Visible []string `json:"visibleSummaryEntryIds"`
	} `json:"treeFilter"`
	Labels map[string]string `json:"labels"`
}

// generatorReasons maps the corpus generator's manifest reasons to the
// archive package's (archive/index.go Reason* constants).
var generatorReasons = map[string]string{
	"archivedLeafId-mismatch":    "from_id_mismatch",
	"branchBaseId-mismatch":      "parent_id_mismatch",
	"boundary-not-in-archive":    "boundary_not_in_archive",
	"summary-not-branch_summary": "not_branch_summary",
	"archivedLeaf-missing":       "archived_leaf_missing",
}

// TestTreeFacts checks each drawing against the facts the Pi corpus
// generator recorded for the fixture: the "*" column marks exactly the
// active branch; each window boundary shows its number and id; each
// manifest is ✓ or ✗ with the generator's reasons; Tree summaries are
// hidden and the others are not; labels sit on their targets; the leaf is
// marked. With Expand every entry is drawn exactly once.
func TestTreeFacts(t *testing.T) {
	for _, name := range treeFixtures {
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("..", "testdata", "pi-tree", name+".expected.json"))
			if err != nil {
				t.Fatal(err)
			}
			var x expected
			if err := json.Unmarshal(b, &x); err != nil {
				t.Fatal(err)
			}
			for _, opt := range []TreeOptions{{}, {Expand: true}} {
				lines := map[string]string{} // entry id → its line
				count := 0
				for _, l := range strings.Split(string(drawTree(t, name, opt)), "\n")[3:] {
					id, ok := lineID(l)
					if !ok {
						if l != "" && opt.Expand {
							t.Errorf("expanded drawing has a line that is not one entry: %q", l)
						}
						continue
					}
					if _, dup := lines[id]; dup {
						t.Errorf("entry %s drawn twice", id)
					}
					lines[id] = l
					count++
				}
				if opt.Expand && count != x.EntryCount {
					t.Errorf("expanded drawing has %d entry lines, want %d", count, x.EntryCount)
				}
				active := map[string]bool{}
				for _, id := range x.ActiveBranchIDs {
					active[id] = true
				}
				for id, l := range lines {
					if strings.HasPrefix(l, "* ") != active[id] {
						t.Errorf("active mark of %s: line %q, on the active branch: %v", id, l, active[id])
					}
				}
				for _, w := range x.Windows {
					if want := fmt.Sprintf("── window #%d %s (boundary)", w.WindowNumber, w.WindowID); !strings.Contains(lines[w.EntryID], want) {
						t.Errorf("boundary %s: line %q lacks %q", w.EntryID, lines[w.EntryID], want)
					}
				}
				for _, m := range x.Manifests {
					want := "archive ✓ window"
					if !m.Valid {
						rs := make([]string, len(m.Reasons))
						for i, r := range m.Reasons {
							rs[i] = generatorReasons[r]
						}
						want = "archive ✗ invalid: " + strings.Join(rs, ", ")
					}
					if l := lines[m.ID]; (m.Valid && !strings.Contains(l, want)) || (!m.Valid && !strings.HasSuffix(l, want)) {
						t.Errorf("manifest %s: line %q lacks %q", m.ID, l, want)
					}
				}
				for _, id := range x.TreeFilter.Hidden {
					if !strings.Contains(lines[id], "(hidden from the model)") {
						t.Errorf("Tree summary %s not drawn as hidden: %q", id, lines[id])
					}
				}
				for _, id := range x.TreeFilter.Visible {
					if l, ok := lines[id]; !ok || strings.Contains(l, "hidden") {
						t.Errorf("visible summary %s: line %q", id, l)
					}
				}
				for target, label := range x.Labels {
					if want := fmt.Sprintf("[label %q]", label); !strings.Contains(lines[target], want) {
						t.Errorf("label target %s: line %q lacks %s", target, lines[target], want)
					}
				}
				if !strings.HasSuffix(lines[x.LeafID], "← leaf") {
					t.Errorf("leaf %s: line %q", x.LeafID, lines[x.LeafID])
				}
			}
		})
	}
}

// lineID returns the entry id of a drawn entry line (not a collapsed run):
// the first word after the mark column and the tree drawing.
func lineID(l string) (string, bool) {
	if len(l) < 2 {
		return "", false
	}
	rest := strings.TrimLeft(l[2:], " │├└─")
	id, _, ok := strings.Cut(rest, "  ")
	if !ok || strings.HasPrefix(id, "…") || strings.Contains(id, " ") {
		return "", false
	}
	return id, true
}

// TestTreeCollapses pins the collapsing rule on tree-basic: the 33
// ordinary entries of window 0 after its boundary (91061913 … 720d6a83,
// counted by hand from the fixture: 14 tool results, 12 assistant
// messages, 3 notes, 3 user messages, 1 reminder) are one line, and the
// archived leaf 42a59a75 (the summary's fromId) stays on its own line.
func TestTreeCollapses(t *testing.T) {
	out := string(drawTree(t, "tree-basic", TreeOptions{}))
	for _, want := range []string{
		"  │  … 33 entries 91061913..720d6a83: toolResult 14, assistant 12, note 3, user 3, reminder 1\n",
		"  │  42a59a75  toolResult\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("drawing lacks %q:\n%s", want, out)
		}
	}
}

// TestNotASession: a file whose first line is not a session header, and
// an empty file, are ErrNotSession (the command exits 1 on them).
func TestNotASession(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"notes.jsonl": `{"hello":"world"}` + "\n",
		"empty.jsonl": "",
		"text.jsonl":  "not json at all\n",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o600)
		if _, err := Load(p, session.DefaultMaxLineBytes); !errors.Is(err, ErrNotSession) {
			t.Errorf("%s: err = %v, want ErrNotSession", name, err)
		}
	}
}

// TestSummaryManifests: the summary lists every manifest of
// tree-bad-manifests-small with the reasons GET /v1/sessions reports for
// it (the README's sessions table: "35464eaa: from_id_mismatch").
func TestSummaryManifests(t *testing.T) {
	f, err := Load(filepath.Join("..", "testdata", "pi-tree", "tree-bad-manifests-small.jsonl"), session.DefaultMaxLineBytes)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Summary(&out, f); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"archive manifest 0d55058b (line 23): valid, window 13772f29-d378-45cf-828c-10d6ebc7448c, summary 602fdec9, 18 entries archived\n",
		"archive manifest 35464eaa (line 46): invalid: from_id_mismatch\n",
		"invalid: parent_id_mismatch, boundary_not_in_archive\n",
		"invalid: not_branch_summary\n",
		"invalid: from_id_mismatch, archived_leaf_missing\n",
		"archives:  1 valid, 4 invalid",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, out.String())
		}
	}
}

// TestTreeOrphanOnItsOwnLine: an entry whose parent is not in the file
// (a cut or hand-edited file) stays on its own line naming the missing
// parent; collapsed into a run's "… N entries" line it said nothing of it
// unless --expand was given. File written by hand: a header, model_change
// c0000001 and user/assistant 00000001..00000002 on the active path, then
// six user messages o0000001..o0000006 whose first names parent gone0000.
func TestTreeOrphanOnItsOwnLine(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"01a23300-0000-7000-8000-000000000001","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}` + "\n")
	b.WriteString(`{"type":"model_change","id":"c0000001","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","provider":"p","modelId":"m"}` + "\n")
	msg := func(id, parent, role string) {
		fmt.Fprintf(&b, `{"type":"message","id":%q,"parentId":%q,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":%q,"content":"x","timestamp":0}}`+"\n", id, parent, role)
	}
	parent := "gone0000"
	for i := 1; i <= 6; i++ {
		id := fmt.Sprintf("o%07d", i)
		msg(id, parent, "user")
		parent = id
	}
	msg("00000001", "c0000001", "user")
	msg("00000002", "00000001", "assistant")
	path := filepath.Join(t.TempDir(), "orphan.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Load(path, session.DefaultMaxLineBytes)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Tree(&out, f, TreeOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  o0000001  user (parent gone0000 missing)\n",
		"  … 4 entries o0000002..o0000005: user 4\n",
		"  o0000006  user\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("drawing lacks %q:\n%s", want, out.String())
		}
	}
}
