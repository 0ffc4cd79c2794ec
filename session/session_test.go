package session

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// expected is the part of testdata/pi-tree/*.expected.json (written by Pi
// 0.85.0's SessionManager, see testdata/pi-tree/README.md) that this package
// must reproduce.
type expected struct {
	LeafID          string   `json:"leafId"`
	ActiveBranchIDs []string `json:"activeBranchIds"`
	ContextMessages []struct {
		EntryID string `json:"entryId"`
		Role    string `json:"role"`
	} `json:"contextMessages"`
	EntryCount       int            `json:"entryCount"`
	EntryCountByType map[string]int `json:"entryCountByType"`
	Windows          []struct {
		EntryID        string `json:"entryId"`
		WindowID       string `json:"windowId"`
		WindowNumber   int    `json:"windowNumber"`
		OnActiveBranch bool   `json:"onActiveBranch"`
	} `json:"windows"`
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

func TestPiTreeFixtures(t *testing.T) {
	for _, name := range []string{"local-basic", "tree-basic", "tree-multi", "tree-manual-summary", "tree-bad-manifests-small"} {
		t.Run(name, func(t *testing.T) {
			want := loadExpected(t, name)
			tree, err := Each(filepath.Join("..", "testdata", "pi-tree", name+".jsonl"), nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := tree.Leaf(); got != want.LeafID {
				t.Errorf("leaf = %q, want %q", got, want.LeafID)
			}
			if got := tree.Len(); got != want.EntryCount {
				t.Errorf("entries = %d, want %d", got, want.EntryCount)
			}
			byType := map[string]int{}
			for _, e := range tree.All() {
				byType[e.Type]++
			}
			if d := cmp.Diff(want.EntryCountByType, byType); d != "" {
				t.Errorf("entry counts by type (-want +got):\n%s", d)
			}
			branch, cycle, err := tree.Branch("")
			if err != nil || cycle {
				t.Fatalf("branch: %v cycle=%v", err, cycle)
			}
			var ids []string
			for _, s := range branch {
				ids = append(ids, tree.ID(s))
			}
			if d := cmp.Diff(want.ActiveBranchIDs, ids); d != "" {
				t.Errorf("active branch (-want +got):\n%s", d)
			}
			var gotCtx, wantCtx []string
			for _, s := range tree.ContextEntriesUnder(branch, RulesPi085) {
				gotCtx = append(gotCtx, tree.ID(s)+":"+ContextRole(new(tree.Entry(s))))
			}
			for _, m := range want.ContextMessages {
				wantCtx = append(wantCtx, m.EntryID+":"+m.Role)
			}
			if d := cmp.Diff(wantCtx, gotCtx); d != "" {
				t.Errorf("context (-want +got):\n%s", d)
			}
			var gotWin []string
			for _, e := range tree.All() {
				if e.IsBoundary() {
					gotWin = append(gotWin, e.ID+"="+e.Window.CurrentWindowID)
				}
			}
			var wantWin []string
			for _, w := range want.Windows {
				wantWin = append(wantWin, w.EntryID+"="+w.WindowID)
			}
			if d := cmp.Diff(wantWin, gotWin); d != "" {
				t.Errorf("windows (-want +got):\n%s", d)
			}
		})
	}
}

// TestRealSessions pins entry counts and skipped lines of the real Pi files
// (numbers from testdata/pi-sessions/SOURCES.md: lines minus header minus
// unparseable lines).
func TestRealSessions(t *testing.T) {
	cases := []struct {
		file    string
		version int
		entries int
		skipped int
		compact int
	}{
		{"before-compaction.jsonl", 1, 1002, 0, 2},
		{"large-session.jsonl", 1, 1018, 0, 0},
		{"compact.jsonl", 1, 1011, 1, 1},
		{"pi-mono-session.jsonl", 1, 461, 1, 1},
		{"kimchi-dev-session.jsonl", 3, 147, 0, 0},
		{"dexter-v3-pi-session.head.jsonl", 3, 913, 0, 2},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("..", "testdata", "pi-sessions", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var p Parser
			tree, _, st, err := Feed(f, &p, nil, 0, -1, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tree.Header.Version != c.version {
				t.Errorf("version = %d, want %d", tree.Header.Version, c.version)
			}
			if tree.Len() != c.entries {
				t.Errorf("entries = %d, want %d", tree.Len(), c.entries)
			}
			if st.Skipped[SkipInvalidJSON] != c.skipped {
				t.Errorf("invalid lines = %d, want %d", st.Skipped[SkipInvalidJSON], c.skipped)
			}
			n := 0
			for _, e := range tree.All() {
				if e.Type == TypeCompaction {
					n++
					if e.FirstKeptEntryID() == "" {
						t.Errorf("compaction on line %d has no firstKeptEntryId", e.Line)
					}
				}
			}
			if n != c.compact {
				t.Errorf("compactions = %d, want %d", n, c.compact)
			}
		})
	}
}

// TestV1Mapping checks synthetic ids, the linear chain and the
// firstKeptEntryIndex mapping (index into parsed entries, header = 0).
func TestV1Mapping(t *testing.T) {
	src := strings.Join([]string{
		`{"type":"session","id":"s1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/x"}`,
		`{"type":"message","timestamp":"t1","message":{"role":"user","content":"a"}}`,
		`not json`,
		`{"type":"message","timestamp":"t2","message":{"role":"hookMessage","customType":"h","content":"b"}}`,
		`{"type":"compaction","timestamp":"t3","summary":"s","firstKeptEntryIndex":2,"tokensBefore":5}`,
		`{"type":"message","timestamp":"t4","message":{"role":"assistant","content":[]}}`,
	}, "\n") + "\n"
	var p Parser
	tree, next, st, err := Feed(bytes.NewReader([]byte(src)), &p, nil, 0, -1, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	if next != int64(len(src)) {
		t.Errorf("next = %d, want %d", next, len(src))
	}
	if st.Skipped[SkipInvalidJSON] != 1 {
		t.Errorf("skipped = %v", st.Skipped)
	}
	got := []string{}
	for _, e := range tree.All() {
		got = append(got, e.ID+"<"+e.ParentID+":"+e.Role+":"+e.FirstKeptEntryID())
	}
	want := []string{
		"v1-00000002<:user:",
		"v1-00000004<v1-00000002:custom:",
		// entries[2] of [header, line2, line4, ...] is line 4.
		"v1-00000005<v1-00000004::v1-00000004",
		"v1-00000006<v1-00000005:assistant:",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	branch, _, _ := tree.Branch("")
	ctx := tree.ContextEntriesUnder(branch, RulesPi085)
	var roles []string
	for _, s := range ctx {
		roles = append(roles, ContextRole(new(tree.Entry(s))))
	}
	if d := cmp.Diff([]string{"compactionSummary", "custom", "assistant"}, roles); d != "" {
		t.Errorf("context roles (-want +got):\n%s", d)
	}
}

func TestNotASession(t *testing.T) {
	for _, src := range []string{
		"{\"type\":\"message\",\"id\":\"a\"}\n{\"type\":\"session\",\"id\":\"s\"}\n",
		"[1,2]\n",
		"{\"type\":\"session\",\"id\":5}\n",
	} {
		var p Parser
		tree, _, _, err := Feed(bytes.NewReader([]byte(src)), &p, nil, 0, -1, 0, nil)
		if err != nil || !p.NotPi || tree != nil {
			t.Errorf("%q: NotPi=%v tree=%v err=%v, want NotPi and no tree", src, p.NotPi, tree, err)
		}
	}
}

func TestInFlightAndLongLines(t *testing.T) {
	long := `{"type":"message","id":"b","parentId":"a","message":{"role":"user","content":"` + strings.Repeat("x", 3<<20) + `"}}`
	src := `{"type":"session","version":3,"id":"s"}` + "\n" +
		`{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}` + "\r\n" +
		long + "\n" +
		`{"type":"message","id":"c","parentId":"b","message":{"role":"user","content":"partial`
	var p Parser
	tree, next, st, err := Feed(bytes.NewReader([]byte(src)), &p, nil, 0, -1, 1<<20, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tree.Len() != 1 || tree.ID(0) != "a" {
		t.Fatalf("entries = %+v", tree.Entries())
	}
	if st.Skipped[SkipTooLong] != 1 {
		t.Errorf("too long = %v", st.Skipped)
	}
	wantNext := int64(strings.LastIndex(src, "\n") + 1)
	if next != wantNext {
		t.Errorf("next = %d, want %d (the partial line stays in flight)", next, wantNext)
	}
	// With the default cap the 3 MiB line is an entry.
	var p2 Parser
	tree2, _, _, _ := Feed(bytes.NewReader([]byte(src)), &p2, nil, 0, -1, 0, nil)
	if tree2.Len() != 2 || tree2.Entry(1).Length != len(long) {
		t.Errorf("entries = %d", tree2.Len())
	}
}

// TestMistypedFieldsKept: Pi keeps every line JSON.parse accepts, whatever the
// types of its fields, so a field of an unexpected JSON type must not drop the
// line (nor, in the header, the whole file). Pi 0.85.1 gives this file the
// branch a1..a7 and the context a6/compactionSummary, a4/toolResult, a5/user,
// a7/assistant (checked against real Pi in e2e/parity_test.go).
func TestMistypedFieldsKept(t *testing.T) {
	src := strings.Join([]string{
		`{"type":"session","version":3,"id":"s1","timestamp":"t","cwd":"/x","parentSession":5}`,
		`{"type":"message","id":"a1","parentId":null,"timestamp":"t","message":{"role":"user","content":"hi"}}`,
		`{"type":"custom_message","id":"a2","parentId":"a1","timestamp":"t","customType":"c","content":"x","display":1}`,
		`{"type":"branch_summary","id":"a3","parentId":"a2","timestamp":"t","fromId":"a1","summary":"s","fromHook":"yes"}`,
		`{"type":"message","id":"a4","parentId":"a3","timestamp":"t","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","isError":"no","content":"x"}}`,
		`{"type":"message","id":"a5","parentId":"a4","timestamp":"t","message":{"role":"user","content":{"weird":1}}}`,
		`{"type":"compaction","id":"a6","parentId":"a5","timestamp":"t","summary":"s","firstKeptEntryId":"a4","firstKeptEntryIndex":"x","tokensBefore":1}`,
		`{"type":"message","id":"a7","parentId":"a6","timestamp":"t","customType":7,"message":{"role":"assistant","content":[],"stopReason":"stop"}}`,
	}, "\n") + "\n"
	var p Parser
	tree, _, st, err := Feed(bytes.NewReader([]byte(src)), &p, nil, 0, -1, 0, nil)
	if err != nil || p.NotPi || tree == nil {
		t.Fatalf("NotPi=%v tree=%v err=%v", p.NotPi, tree, err)
	}
	if len(st.Skipped) != 0 || tree.Len() != 7 {
		t.Fatalf("skipped %v, %d entries; want none skipped and 7", st.Skipped, tree.Len())
	}
	branch, _, err := tree.Branch("")
	if err != nil || len(branch) != 7 {
		t.Fatalf("branch %v %v", branch, err)
	}
	var got []string
	for _, s := range tree.ContextEntriesUnder(branch, RulesPi085) {
		got = append(got, tree.ID(s)+":"+ContextRole(new(tree.Entry(s))))
	}
	want := []string{"a6:compactionSummary", "a4:toolResult", "a5:user", "a7:assistant"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("context (-want +got):\n%s", d)
	}
	if a2 := tree.Get("a2"); a2.CustomType != "c" {
		t.Errorf("a2 customType %q", a2.CustomType)
	}
}

// TestRulesFor: below 0.86.0 (system messages) the 0.85 rules, 0.86.x the
// 0.86 rules, from 0.87.0 (context edits) on the 1.x rules; "" or an
// unreadable version the newest.
func TestRulesFor(t *testing.T) {
	for v, want := range map[string]Rules{
		"0.85.0": RulesPi085, "0.85.1": RulesPi085, "0.58.3": RulesPi085, "0.85.2-beta.1": RulesPi085,
		"0.86.0": RulesPi086, "0.86.1": RulesPi086, "0.86.9-rc.1": RulesPi086,
		"0.87.0": RulesPi16, "0.87.1": RulesPi16, "1.6.0": RulesPi16, "1.7.0": RulesPi16, "2.0.0+build": RulesPi16,
		"": NewestRules, "x.y": NewestRules,
	} {
		if got := RulesFor(v); got != want {
			t.Errorf("RulesFor(%q) = %s, want %s", v, got, want)
		}
	}
	if RulesPi085.String() != "pi-0.85" || RulesPi086.String() != "pi-0.86" || RulesPi16.String() != "pi-1.6" {
		t.Errorf("names %s %s %s", RulesPi085, RulesPi086, RulesPi16)
	}
}

// TestUntested: a version newer than NewestProvenPi (1.6.0) by
// MAJOR.MINOR.PATCH is untested; 1.6.0 itself, its pre-releases and
// builds, older versions, "" and unreadable versions are not.
func TestUntested(t *testing.T) {
	if NewestProvenPi != "1.6.0" {
		t.Fatalf("NewestProvenPi %s: update this table and docs/pi-versions.md together", NewestProvenPi)
	}
	for v, want := range map[string]bool{
		"1.6.1": true, "1.7.0": true, "2.0.0": true, "1.7.0-rc.1": true, "1.10.0": true, "1.6.10+b": true,
		"1.6.0": false, "1.6.0-beta.2": false, "1.6.0+build": false, "1.5.9": false, "0.99.1": false, "0.85.1": false,
		"": false, "1.7": false, "x.y.z": false,
	} {
		if got := Untested(v); got != want {
			t.Errorf("Untested(%q) = %v, want %v", v, got, want)
		}
	}
}

// TestProjectNestedCompaction pins the three rule sets on an older
// compaction (with a systemMessage) inside the newest compaction's kept
// range, values worked out from buildContextEntries and
// sessionEntryToContextMessages of Pi 0.85.1 and 0.86.1 and from
// buildSessionProjection of Pi 1.6.0: 0.85 sends its summary, 0.86 its
// system message then its summary, 1.6 nothing.
func TestProjectNestedCompaction(t *testing.T) {
	const file = `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}
{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"a"}}
{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"stopReason":"stop"}}
{"type":"compaction","id":"c1","parentId":"a1","summary":"x","firstKeptEntryId":"a1","systemMessage":{"role":"system","content":"sys"}}
{"type":"message","id":"u2","parentId":"c1","message":{"role":"user","content":"b"}}
{"type":"compaction","id":"c2","parentId":"u2","summary":"y","firstKeptEntryId":"u1"}
{"type":"message","id":"u3","parentId":"c2","message":{"role":"user","content":"c"}}
`
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	tree, err := Each(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	branch, _, err := tree.Branch("")
	if err != nil {
		t.Fatal(err)
	}
	for r, want := range map[Rules]string{
		RulesPi085: "c2:compactionSummary u1:user a1:assistant c1:compactionSummary u2:user u3:user",
		RulesPi086: "c2:compactionSummary u1:user a1:assistant c1:system c1:compactionSummary u2:user u3:user",
		RulesPi16:  "c2:compactionSummary u1:user a1:assistant u2:user u3:user",
	} {
		var out []string
		for _, m := range tree.Project(branch, r) {
			out = append(out, tree.ID(m.Seq)+":"+m.Role)
		}
		if got := strings.Join(out, " "); got != want {
			t.Errorf("%s: %s\nwant %s", r, got, want)
		}
	}
}

// TestProjectRules pins Project on a hand-written file under both rule
// sets (values worked out from Pi 1.6.0's projectContextEntry and
// buildContextEntries): edits that Pi's appendContextEdit would refuse to
// write (no replacement, a bare string, content of another type) are
// ignored, so an earlier valid edit of the same target stays in force; a
// null edit of the latest compaction removes its system message and its
// summary; 0.85 reads context_edit as an unknown type.
func TestProjectRules(t *testing.T) {
	const file = `{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}
{"type":"message","id":"u1","parentId":null,"message":{"role":"user","content":"a"}}
{"type":"message","id":"a1","parentId":"u1","message":{"role":"assistant","content":[],"stopReason":"stop"}}
{"type":"context_edit","id":"e1","parentId":"a1","targetId":"u1","replacement":{"content":"b"}}
{"type":"context_edit","id":"e2","parentId":"e1","targetId":"u1"}
{"type":"context_edit","id":"e3","parentId":"e2","targetId":"u1","replacement":"bare"}
{"type":"context_edit","id":"e4","parentId":"e3","targetId":"u1","replacement":{"content":5}}
{"type":"context_edit","id":"e5","parentId":"e4","targetId":"a1","replacement":null}
{"type":"message","id":"s1","parentId":"e5","message":{"role":"system","content":"sys"}}
{"type":"compaction","id":"c1","parentId":"s1","summary":"x","firstKeptEntryId":"u1","systemMessage":{"role":"system","content":"sys"}}
{"type":"message","id":"u2","parentId":"c1","message":{"role":"user","content":"c"}}
`
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(file), 0o600); err != nil {
		t.Fatal(err)
	}
	tree, err := Each(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	show := func(leaf string, r Rules) string {
		branch, _, err := tree.Branch(leaf)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range tree.Project(branch, r) {
			s := tree.ID(m.Seq) + ":" + m.Role
			if m.EditSeq >= 0 {
				s += "<" + tree.ID(m.EditSeq)
			}
			out = append(out, s)
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		leaf  string
		rules Rules
		want  string
	}{
		{"", RulesPi16, "c1:system c1:compactionSummary u1:user<e1 u2:user"},
		{"", RulesPi085, "c1:compactionSummary u1:user a1:assistant s1:system u2:user"},
		{"", RulesPi086, "c1:system c1:compactionSummary u1:user a1:assistant u2:user"},
		{"s1", RulesPi086, "u1:user a1:assistant s1:system"},
		{"s1", RulesPi16, "u1:user<e1 s1:system"},
		{"e1", RulesPi16, "u1:user<e1 a1:assistant"},
		{"a1", RulesPi16, "u1:user a1:assistant"},
	} {
		if got := show(c.leaf, c.rules); got != c.want {
			t.Errorf("leaf %q, %s: %s\nwant %s", c.leaf, c.rules, got, c.want)
		}
	}
	// A null edit of the compaction (appended after it) removes both its messages.
	if err := os.WriteFile(path, []byte(file+`{"type":"context_edit","id":"e6","parentId":"u2","targetId":"c1","replacement":null}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if tree, err = Each(path, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := show("", RulesPi16), "u1:user<e1 u2:user"; got != want {
		t.Errorf("compaction omitted: %s, want %s", got, want)
	}
	if e := tree.Get("e3"); e.Edit != EditNone || tree.Get("e5").Edit != EditOmit || tree.Get("e1").Edit != EditReplace || !tree.Get("c1").SystemMessage {
		t.Errorf("parsed edits: e1 %d e3 %d e5 %d, c1 systemMessage %v", tree.Get("e1").Edit, e.Edit, tree.Get("e5").Edit, tree.Get("c1").SystemMessage)
	}
}
