package e2e

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const (
	piSessionsDir = "../testdata/pi-sessions"
	piTreeDir     = "../testdata/pi-tree"
)

// sha256Files hashes every file matching the globs.
func sha256Files(t *testing.T, globs ...string) map[string]string {
	t.Helper()
	sums := map[string]string{}
	for _, g := range globs {
		files, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			sums[f] = hex.EncodeToString(sum[:])
		}
	}
	return sums
}

// checkUnchanged fails if any fixture changed since before was taken.
func checkUnchanged(t *testing.T, before map[string]string, globs ...string) {
	t.Helper()
	after := sha256Files(t, globs...)
	if !reflect.DeepEqual(before, after) {
		t.Errorf("fixture files changed while Pi read them:\nbefore %v\nafter  %v", before, after)
	}
}

// rawEntry is the little the tests need from a session line.
type rawEntry struct {
	Type     string  `json:"type"`
	ID       string  `json:"id"`
	ParentID *string `json:"parentId"`
}

// readRaw parses a session file the way Pi does: skip blank and unparseable lines, header first.
func readRaw(t *testing.T, path string) (header rawEntry, entries []rawEntry) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	first := true
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var e rawEntry
		if json.Unmarshal(line, &e) != nil {
			continue
		}
		if first {
			header, first = e, false
			continue
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return header, entries
}

func firstRunes(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		r = r[:n]
	}
	return string(r)
}

func messageRoles(ms []ParityMessage) []string {
	var roles []string
	for _, m := range ms {
		roles = append(roles, m.Role)
	}
	return roles
}

// --- pi-tree fixtures: compare with NAME.expected.json ------------------------------------

type treeExpected struct {
	Header struct {
		Version   int    `json:"version"`
		ID        string `json:"id"`
		Timestamp string `json:"timestamp"`
		Cwd       string `json:"cwd"`
	} `json:"header"`
	LeafID          string   `json:"leafId"`
	ActiveBranchIDs []string `json:"activeBranchIds"`
	ContextMessages []struct {
		EntryID    string `json:"entryId"`
		Role       string `json:"role"`
		CustomType string `json:"customType"`
		StopReason string `json:"stopReason"`
		ToolName   string `json:"toolName"`
		Summary    string `json:"summary"`
		FromID     string `json:"fromId"`
	} `json:"contextMessages"`
	ContextSettings struct {
		ThinkingLevel string       `json:"thinkingLevel"`
		Model         *ParityModel `json:"model"`
	} `json:"contextSettings"`
	EntryCount       int               `json:"entryCount"`
	EntryCountByType map[string]int    `json:"entryCountByType"`
	Labels           map[string]string `json:"labels"`
	SessionName      *string           `json:"sessionName"`
	FileStats        struct {
		SHA256 string `json:"sha256"`
	} `json:"fileStats"`
}

func TestPiParityPiTree(t *testing.T) { forEachPi(t, testPiParityPiTree) }

func testPiParityPiTree(t *testing.T, pv PiVersion) {
	var index struct {
		Files []struct {
			File     string `json:"file"`
			Expected string `json:"expected"`
		} `json:"files"`
	}
	data, err := os.ReadFile(filepath.Join(piTreeDir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Files) != 5 {
		t.Fatalf("index.json lists %d files, want 5", len(index.Files))
	}
	var files []string
	expected := map[string]treeExpected{}
	for _, f := range index.Files {
		path := filepath.Join(piTreeDir, f.File)
		files = append(files, path)
		data, err := os.ReadFile(filepath.Join(piTreeDir, f.Expected))
		if err != nil {
			t.Fatal(err)
		}
		var exp treeExpected
		if err := json.Unmarshal(data, &exp); err != nil {
			t.Fatalf("%s: %v", f.Expected, err)
		}
		expected[path] = exp
	}
	glob := filepath.Join(piTreeDir, "*.jsonl")
	before := sha256Files(t, glob)
	for path, exp := range expected {
		if before[path] != exp.FileStats.SHA256 {
			t.Errorf("%s: sha256 %s, expected.json says %s", path, before[path], exp.FileStats.SHA256)
		}
	}

	results := PiParityOn(t, pv, "", files...)
	checkUnchanged(t, before, glob)

	for _, r := range results {
		exp := expected[r.File]
		t.Run(filepath.Base(r.File), func(t *testing.T) {
			if r.Error != "" {
				t.Fatalf("Pi error: %s", r.Error)
			}
			if r.SourceVersion != 3 || r.Header == nil || r.Header.Version != 3 {
				t.Errorf("sourceVersion %d header %+v, want v3", r.SourceVersion, r.Header)
			} else if r.Header.ID != exp.Header.ID || r.Header.Cwd != exp.Header.Cwd || r.Header.Timestamp != exp.Header.Timestamp {
				t.Errorf("header %+v, want %+v", *r.Header, exp.Header)
			}
			if r.LeafID != exp.LeafID {
				t.Errorf("leafId %q, want %q", r.LeafID, exp.LeafID)
			}
			if !slices.Equal(r.BranchIDs, exp.ActiveBranchIDs) {
				t.Errorf("branchIds (%d) differ from activeBranchIds (%d):\n got %v\nwant %v", len(r.BranchIDs), len(exp.ActiveBranchIDs), r.BranchIDs, exp.ActiveBranchIDs)
			}
			if len(r.BranchTypes) != len(r.BranchIDs) {
				t.Errorf("%d branchTypes for %d branchIds", len(r.BranchTypes), len(r.BranchIDs))
			}
			if len(r.Messages) != len(exp.ContextMessages) {
				t.Errorf("%d messages, want %d\n got %v", len(r.Messages), len(exp.ContextMessages), messageRoles(r.Messages))
			}
			for i := range min(len(r.Messages), len(exp.ContextMessages)) {
				got, want := r.Messages[i], exp.ContextMessages[i]
				if got.EntryID != want.EntryID || got.Role != want.Role {
					t.Errorf("message %d: %s/%s, want %s/%s", i, got.EntryID, got.Role, want.EntryID, want.Role)
					continue
				}
				if got.CustomType != want.CustomType || got.StopReason != want.StopReason || got.ToolName != want.ToolName || got.FromID != want.FromID {
					t.Errorf("message %d (%s): customType/stopReason/toolName/fromId = %q/%q/%q/%q, want %q/%q/%q/%q", i, got.EntryID,
						got.CustomType, got.StopReason, got.ToolName, got.FromID, want.CustomType, want.StopReason, want.ToolName, want.FromID)
				}
				if want.Summary != "" && got.SummaryPrefix != firstRunes(want.Summary, 80) {
					t.Errorf("message %d (%s): summaryPrefix %q, want prefix of %q", i, got.EntryID, got.SummaryPrefix, firstRunes(want.Summary, 80))
				}
			}
			if r.ThinkingLevel != exp.ContextSettings.ThinkingLevel || !reflect.DeepEqual(r.Model, exp.ContextSettings.Model) {
				t.Errorf("thinkingLevel/model %q/%+v, want %q/%+v", r.ThinkingLevel, r.Model, exp.ContextSettings.ThinkingLevel, exp.ContextSettings.Model)
			}
			if r.EntryCount != exp.EntryCount || !reflect.DeepEqual(r.EntryCountByType, exp.EntryCountByType) {
				t.Errorf("entryCount %d %v, want %d %v", r.EntryCount, r.EntryCountByType, exp.EntryCount, exp.EntryCountByType)
			}
			if len(r.Labels)+len(exp.Labels) > 0 && !reflect.DeepEqual(r.Labels, exp.Labels) {
				t.Errorf("labels %v, want %v", r.Labels, exp.Labels)
			}
			if !reflect.DeepEqual(r.SessionName, exp.SessionName) {
				t.Errorf("sessionName %v, want %v", r.SessionName, exp.SessionName)
			}
		})
	}
	// The documented numbers for tree-basic, spelled out.
	for _, r := range results {
		if filepath.Base(r.File) == "tree-basic.jsonl" && (r.LeafID != "1d4fdaee" || len(r.BranchIDs) != 27 || len(r.Messages) != 22) {
			t.Errorf("tree-basic: leaf %s, %d branch entries, %d messages; want 1d4fdaee, 27, 22", r.LeafID, len(r.BranchIDs), len(r.Messages))
		}
	}
}

// TestPiParityLeaf checks --leaf: Pi's branch from an archived leaf is the parentId walk.
func TestPiParityLeaf(t *testing.T) { forEachPi(t, testPiParityLeaf) }

func testPiParityLeaf(t *testing.T, pv PiVersion) {
	path := filepath.Join(piTreeDir, "tree-basic.jsonl")
	const oldLeaf = "42a59a75" // the leaf archived by the rollover (tree-basic.expected.json)
	r := PiParityOn(t, pv, oldLeaf, path)[0]
	if r.Error != "" {
		t.Fatal(r.Error)
	}
	_, entries := readRaw(t, path)
	byID := map[string]rawEntry{}
	for _, e := range entries {
		byID[e.ID] = e
	}
	var walk []string
	for id := oldLeaf; id != ""; {
		e, ok := byID[id]
		if !ok {
			break
		}
		walk = append(walk, id)
		id = ""
		if e.ParentID != nil {
			id = *e.ParentID
		}
	}
	slices.Reverse(walk)
	if r.LeafID != oldLeaf || !slices.Equal(r.BranchIDs, walk) {
		t.Errorf("leaf %s branch %v, want %s %v", r.LeafID, r.BranchIDs, oldLeaf, walk)
	}
	if len(r.Messages) == 0 || r.Messages[len(r.Messages)-1].EntryID != oldLeaf {
		t.Errorf("context does not end at %s: %v", oldLeaf, r.Messages)
	}

	if bad := PiParityOn(t, pv, "no-such-id", path)[0]; bad.Error == "" {
		t.Errorf("--leaf no-such-id: want an error, got %+v", bad)
	}
}

// --- real pi-sessions fixtures: facts from testdata/pi-sessions/SOURCES.md ----------------

func TestPiParityPiSessions(t *testing.T) { forEachPi(t, testPiParityPiSessions) }

func testPiParityPiSessions(t *testing.T, pv PiVersion) {
	type fact struct {
		sha256        string
		sourceVersion int
		byType        map[string]int
		compaction    bool
	}
	facts := map[string]fact{
		"before-compaction.jsonl": {"56f9cf221541c09091cf082ad2ed0c4b4931ef5e8857a42dc623afae35a2e59c", 1,
			map[string]int{"message": 990, "compaction": 2, "thinking_level_change": 5, "model_change": 5}, true},
		"compact.jsonl": {"ba20fd0beb5d9cd6c05188da2840461f02dd0ce611424623aa40f0c6796211f7", 1,
			map[string]int{"message": 1010, "compaction": 1}, true}, // the bad line 1013 is dropped
		"dexter-v3-pi-session.head.jsonl": {"c78ad4aa093a07d597b92fa884884ed8ed28fdf5a291e8d39985d3cbe6cd212b", 3,
			map[string]int{"message": 909, "compaction": 2, "model_change": 1, "thinking_level_change": 1}, true},
		"kimchi-dev-session.jsonl": {"cb08b4a3cd9ad2a5f92abf1d045e7bcfac3d91593256fdf6a6d7ee42a4acc654", 3,
			map[string]int{"message": 122, "custom_message": 12, "custom": 6, "model_change": 6, "thinking_level_change": 1}, false},
		"large-session.jsonl": {"cf73261911d2357108adc2d599751e0f19480e0af5a56e20c1e7a7e72aff41fe", 1,
			map[string]int{"message": 914, "thinking_level_change": 103, "model_change": 1}, false},
		"pi-mono-session.jsonl": {"e7a11b187b926727690f8bb6bc8a8e51c10b52c82ccb70850265eadb22141cce", 1,
			map[string]int{"message": 452, "thinking_level_change": 8, "compaction": 1}, true}, // bad line 440 dropped
	}
	glob := filepath.Join(piSessionsDir, "*.jsonl")
	files, _ := filepath.Glob(glob)
	if len(files) != len(facts) {
		t.Fatalf("found %d fixture files in %s, want %d", len(files), piSessionsDir, len(facts))
	}
	before := sha256Files(t, glob)
	for _, f := range files {
		if want := facts[filepath.Base(f)].sha256; before[f] != want {
			t.Errorf("%s: sha256 %s, SOURCES.md says %s", f, before[f], want)
		}
	}

	results := PiParityOn(t, pv, "", files...)
	checkUnchanged(t, before, glob)

	for _, r := range results {
		fc := facts[filepath.Base(r.File)]
		t.Run(filepath.Base(r.File), func(t *testing.T) {
			if r.Error != "" {
				t.Fatalf("Pi error: %s", r.Error)
			}
			header, raw := readRaw(t, r.File)
			if r.SourceVersion != fc.sourceVersion || r.Header == nil || r.Header.Version != 3 || r.Header.ID != header.ID {
				t.Errorf("sourceVersion %d header %+v; want source v%d, migrated to v3, id %s", r.SourceVersion, r.Header, fc.sourceVersion, header.ID)
			}
			if !reflect.DeepEqual(r.EntryCountByType, fc.byType) || r.EntryCount != len(raw) {
				t.Errorf("entries %d %v, want %d %v", r.EntryCount, r.EntryCountByType, len(raw), fc.byType)
			}
			// All six are single linear chains: the branch is every entry.
			if len(r.BranchIDs) != r.EntryCount || r.BranchTypes[0] != raw[0].Type || r.BranchTypes[len(r.BranchTypes)-1] != raw[len(raw)-1].Type {
				t.Errorf("branch of %d entries (%s..%s), want all %d", len(r.BranchIDs), r.BranchTypes[0], r.BranchTypes[len(r.BranchTypes)-1], r.EntryCount)
			}
			if fc.sourceVersion == 3 {
				// v3 ids are stable: the leaf is the last entry, the branch is file order.
				var ids []string
				for _, e := range raw {
					ids = append(ids, e.ID)
				}
				if r.LeafID != ids[len(ids)-1] || !slices.Equal(r.BranchIDs, ids) {
					t.Errorf("leaf %s, want %s; branch in file order: %v", r.LeafID, ids[len(ids)-1], slices.Equal(r.BranchIDs, ids))
				}
			}
			if fc.compaction {
				if r.Messages[0].Role != "compactionSummary" || r.Messages[0].SummaryPrefix == "" || len(r.ContextEntryIDs) >= r.EntryCount {
					t.Errorf("compacted session: first message %+v, %d context entries of %d", r.Messages[0], len(r.ContextEntryIDs), r.EntryCount)
				}
			} else {
				wantMsgs := fc.byType["message"] + fc.byType["custom_message"]
				if !slices.Equal(r.ContextEntryIDs, r.BranchIDs) || len(r.Messages) != wantMsgs {
					t.Errorf("uncompacted session: %d context entries, %d messages; want the whole branch and %d", len(r.ContextEntryIDs), len(r.Messages), wantMsgs)
				}
			}
			for i, m := range r.Messages {
				if m.EntryID == "" || (m.ContentKind != "string" && m.ContentKind != "parts" && m.ContentKind != "none") {
					t.Fatalf("message %d malformed: %+v", i, m)
				}
			}
		})
	}
}

// --- generated sessions ------------------------------------------------------------------

func TestGenSessions(t *testing.T) {
	dir := t.TempDir()
	paths := GenSessions(t, dir)
	var names []string
	for _, p := range paths {
		names = append(names, filepath.Base(p))
		if filepath.Dir(p) != dir {
			t.Errorf("%s not in %s", p, dir)
		}
	}
	if !slices.Equal(names, GeneratedFiles) {
		t.Fatalf("generated %v, want %v", names, GeneratedFiles)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != len(GeneratedFiles)+1 { // + manifest.json, no staging leftovers
		t.Errorf("%d entries in %s, want %d", len(left), dir, len(GeneratedFiles)+1)
	}
	man := ReadGenManifest(t, dir)
	if man.PiVersion != "0.85.1" || !man.Deterministic || len(man.Files) != len(GeneratedFiles) {
		t.Fatalf("manifest: %+v", man)
	}
	byName := map[string]GenManifestFile{}
	for _, f := range man.Files {
		byName[f.File] = f
	}

	// Same bytes on a second run.
	again := t.TempDir()
	GenSessions(t, again)
	for _, n := range append(slices.Clone(GeneratedFiles), "manifest.json") {
		a, _ := os.ReadFile(filepath.Join(dir, n))
		b, _ := os.ReadFile(filepath.Join(again, n))
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Errorf("%s differs between two runs (%d vs %d bytes)", n, len(a), len(b))
		}
	}

	results := PiParity(t, "", paths...)
	res := map[string]ParityResult{}
	for _, r := range results {
		name := filepath.Base(r.File)
		res[name] = r
		mf := byName[name]
		if r.Error != "" || r.LeafID != mf.LeafID || r.EntryCount != mf.EntryCount || r.Header == nil || r.Header.ID != mf.SessionID || r.SourceVersion != 3 {
			t.Errorf("%s: Pi reports error %q leaf %s entries %d header %+v; manifest says leaf %s entries %d id %s",
				name, r.Error, r.LeafID, r.EntryCount, r.Header, mf.LeafID, mf.EntryCount, mf.SessionID)
		}
		if !reflect.DeepEqual(r.SessionName, mf.SessionName) {
			t.Errorf("%s: sessionName %v, manifest %v", name, r.SessionName, mf.SessionName)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	id := func(file, key string) string {
		v := byName[file].ID(key)
		if v == "" {
			t.Fatalf("%s: manifest has no id %q", file, key)
		}
		return v
	}
	findMsg := func(r ParityResult, entryID string) (ParityMessage, bool) {
		for _, m := range r.Messages {
			if m.EntryID == entryID {
				return m, true
			}
		}
		return ParityMessage{}, false
	}

	t.Run("branches", func(t *testing.T) {
		f := "harness-branches.jsonl"
		r := res[f]
		m, ok := findMsg(r, id(f, "summaryHook"))
		if !ok || m.Role != "branchSummary" || m.FromID != id(f, "leafC") {
			t.Errorf("hook summary in context: %+v %v", m, ok)
		}
		if !slices.Contains(r.BranchIDs, id(f, "leafA")) || slices.Contains(r.BranchIDs, id(f, "leafB")) {
			t.Errorf("active branch should run through leafA, not leafB: %v", r.BranchIDs)
		}
		c := PiParity(t, id(f, "leafC"), filepath.Join(dir, f))[0]
		m, ok = findMsg(c, id(f, "summaryC"))
		if c.Error != "" || !ok || m.FromID != id(f, "leafB") || c.Messages[len(c.Messages)-1].EntryID != id(f, "leafC") {
			t.Errorf("--leaf leafC: %+v", c)
		}
	})
	t.Run("branch-roots", func(t *testing.T) {
		f := "harness-branch-roots.jsonl"
		r := res[f]
		if r.BranchIDs[0] != id(f, "rootSummary") || r.ThinkingLevel != "off" {
			t.Errorf("branch starts at %s (thinking %s), want the null-parent summary", r.BranchIDs[0], r.ThinkingLevel)
		}
		if _, ok := findMsg(r, id(f, "emptySummary")); ok || !slices.Contains(r.ContextEntryIDs, id(f, "emptySummary")) {
			t.Errorf("an empty branch summary is a context entry without a message")
		}
	})
	t.Run("labels", func(t *testing.T) {
		f := "harness-labels.jsonl"
		want := map[string]string{id(f, "u1"): "start-renamed", id(f, "uSide"): "side-label"}
		if !reflect.DeepEqual(res[f].Labels, want) {
			t.Errorf("labels %v, want %v", res[f].Labels, want)
		}
	})
	t.Run("session-info", func(t *testing.T) {
		if r := res["harness-session-info.jsonl"]; r.SessionName == nil || *r.SessionName != "Side branch name" {
			t.Errorf("sessionName %v", r.SessionName)
		}
	})
	t.Run("compactions", func(t *testing.T) {
		f := "harness-compactions.jsonl"
		r := res[f]
		want := []string{"compactionSummary", "user", "assistant", "user", "assistant"}
		if !slices.Equal(messageRoles(r.Messages), want) || r.ContextEntryIDs[0] != id(f, "compaction2") || r.Messages[1].EntryID != id(f, "u5") {
			t.Errorf("context %v / %v", r.ContextEntryIDs, r.Messages)
		}
	})
	t.Run("compaction-edge", func(t *testing.T) {
		f := "harness-compaction-edge.jsonl"
		if r := res[f]; len(r.Messages) != 3 || r.ContextEntryIDs[0] != id(f, "compaction3") {
			t.Errorf("unknown firstKeptEntryId: context %v", r.ContextEntryIDs)
		}
		r := PiParity(t, id(f, "a4"), filepath.Join(dir, f))[0]
		m, ok := findMsg(r, id(f, "compaction1"))
		if r.ContextEntryIDs[0] != id(f, "compaction2") || !ok || m.Role != "compactionSummary" || r.Messages[1].EntryID != id(f, "u1") {
			t.Errorf("--leaf a4: compaction1 should be kept inside compaction2's range: %v", r.Messages)
		}
	})
	t.Run("custom", func(t *testing.T) {
		f := "harness-custom.jsonl"
		r := res[f]
		hidden, ok := findMsg(r, id(f, "hidden"))
		if !ok || hidden.Role != "custom" || hidden.Display == nil || *hidden.Display || hidden.ContentKind != "string" {
			t.Errorf("display:false custom message: %+v", hidden)
		}
		img, ok := findMsg(r, id(f, "withImage"))
		if !ok || !slices.Equal(img.PartTypes, []string{"text", "image"}) {
			t.Errorf("custom message with image: %+v", img)
		}
		for _, key := range []string{"stateBefore", "state1", "noData", "leaf"} {
			if _, ok := findMsg(r, id(f, key)); ok || !slices.Contains(r.BranchIDs, id(f, key)) {
				t.Errorf("custom entry %s must be on the branch but not in context", key)
			}
		}
	})
	t.Run("errors", func(t *testing.T) {
		f := "harness-errors.jsonl"
		r := res[f]
		e, _ := findMsg(r, id(f, "errored"))
		a, _ := findMsg(r, id(f, "aborted"))
		if e.StopReason != "error" || e.ErrorMessage == "" || a.StopReason != "aborted" || a.ErrorMessage != "Request was aborted" {
			t.Errorf("errored %+v aborted %+v", e, a)
		}
	})
	t.Run("unknown-type", func(t *testing.T) {
		r := res["harness-unknown-type.jsonl"]
		n := 0
		for _, typ := range r.BranchTypes {
			if typ == "future_kind" {
				n++
			}
		}
		if n != 2 || r.LeafID != "f0f0f002" || len(r.Messages) != 4 {
			t.Errorf("branch types %v leaf %s messages %d", r.BranchTypes, r.LeafID, len(r.Messages))
		}
	})
	t.Run("local-mode", func(t *testing.T) {
		f := "harness-local-mode.jsonl"
		r := res[f]
		var windows []string
		for _, m := range r.Messages {
			if m.CustomType == "codex-context-window" && strings.HasPrefix(m.TextPrefix, "<context_window_guidance>") {
				windows = append(windows, m.EntryID)
			}
		}
		if want := []string{id(f, "boundary0"), id(f, "boundary1"), id(f, "boundary2")}; !slices.Equal(windows, want) {
			t.Errorf("window boundaries %v, want %v", windows, want)
		}
		u, _ := findMsg(r, id(f, "userWithImage"))
		tr, _ := findMsg(r, id(f, "toolResultWithImage"))
		if !slices.Equal(u.PartTypes, []string{"text", "image"}) || !slices.Equal(tr.PartTypes, []string{"text", "image"}) {
			t.Errorf("image parts: user %v toolResult %v", u.PartTypes, tr.PartTypes)
		}
		if !strings.Contains(u.TextPrefix, "e\u0301 👩\u200d💻 漢字") {
			t.Errorf("unicode text prefix %q", u.TextPrefix)
		}
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() < 2<<20 {
			t.Errorf("local-mode file should hold a ~2 MB tool result: %v %v", st, err)
		}
		notes := 0
		for _, typ := range r.BranchTypes {
			if typ == "custom" {
				notes++
			}
		}
		if notes != 6 {
			t.Errorf("%d codex-context-note entries on the branch, want 6 (write+append in 3 windows)", notes)
		}
	})
}
