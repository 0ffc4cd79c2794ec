package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"contextd/session"
)

// TestPiParityInvariant is DESIGN.md §6 invariant 4 (Pi parity): for every fixture in
// testdata/pi-sessions and testdata/pi-tree and every file gen-sessions.mjs writes, the active
// branch and the model-visible context computed by package session equal what real Pi 0.85.1
// reports (getBranch, buildContextEntries + sessionEntryToContextMessages).
//
//   - v2/v3 files: the leaf id, the branch ids (root→leaf) and types, and the context messages
//     as (entryId, role, customType, stopReason), from Pi's default leaf and, for the generated
//     files, from every entry the manifest names (pi-parity.mjs --leaf).
//   - v1 files: Pi's migration draws random ids, so entries are matched by their position on
//     the branch (a v1 file is one chain in file order): the branch length and entry types, and
//     the context messages as (branch position, role, customType, stopReason), which pins the
//     roles sequence and where the compaction summaries are.
//
// Pi runs once on all files for the default leaves (PiParity), and once more for all the named
// leaves (piParityLeaves). The fixture files must be byte-identical (sha256) and keep their
// mtime.
func TestPiParityInvariant(t *testing.T) {
	fixtureGlobs := []string{filepath.Join(piSessionsDir, "*.jsonl"), filepath.Join(piTreeDir, "*.jsonl")}
	var fixtures []string
	for _, g := range fixtureGlobs {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) == 0 {
			t.Fatalf("no fixtures match %s", g)
		}
		fixtures = append(fixtures, m...)
	}
	// Every file of both fixture directories (not only *.jsonl), hashed and stat'ed first.
	allGlobs := []string{filepath.Join(piSessionsDir, "*"), filepath.Join(piTreeDir, "*")}
	sumsBefore := sha256Files(t, allGlobs...)
	mtimesBefore := mtimes(t, sumsBefore)

	genDir := t.TempDir()
	generated := GenSessions(t, genDir)
	man := ReadGenManifest(t, genDir)
	if len(generated) != len(GeneratedFiles) || len(man.Files) != len(GeneratedFiles) {
		t.Fatalf("gen-sessions wrote %d files, manifest lists %d, want %d", len(generated), len(man.Files), len(GeneratedFiles))
	}
	genSums := sha256Files(t, filepath.Join(genDir, "*.jsonl"))

	// Hand-written edge files, compared in the same Pi run (see edgeSessions).
	edgeDir := t.TempDir()
	var edges []string
	for _, name := range slices.Sorted(maps.Keys(edgeSessions)) {
		path := filepath.Join(edgeDir, name)
		if err := os.WriteFile(path, []byte(edgeSessions[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		edges = append(edges, path)
	}

	files := slices.Concat(fixtures, generated, edges)
	views := map[string]*goView{}
	for _, f := range files {
		views[f] = loadGoView(t, f)
	}

	results := PiParity(t, "", files...)
	var v1, v23 int
	for _, r := range results {
		t.Run(filepath.Base(r.File), func(t *testing.T) {
			v := views[r.File]
			if r.Error != "" {
				t.Fatalf("Pi refused the file: %s", r.Error)
			}
			if v.tree.Header.Version != r.SourceVersion {
				t.Fatalf("header version %d, Pi read version %d from disk", v.tree.Header.Version, r.SourceVersion)
			}
			if r.SourceVersion < 2 {
				v1++
				compareV1(t, v, r)
			} else {
				v23++
				compareByID(t, v, "", r)
			}
		})
	}

	// Named leaves of the generated files. The manifest's "leaf" is the default leaf, already
	// compared above; "windowIds" are window ids, not entry ids.
	var runs []leafRun
	for _, mf := range man.Files {
		path := filepath.Join(genDir, mf.File)
		if views[path] == nil {
			t.Fatalf("manifest names %s, which gen-sessions did not report", mf.File)
		}
		for _, key := range slices.Sorted(maps.Keys(mf.IDs)) {
			id := mf.ID(key)
			if id == "" || id == mf.LeafID {
				continue
			}
			if views[path].tree.Get(id) == nil {
				t.Errorf("%s: manifest id %s=%s is not an entry", mf.File, key, id)
				continue
			}
			runs = append(runs, leafRun{File: path, Key: key, Leaf: id})
		}
	}
	if len(runs) < len(man.Files) {
		t.Fatalf("only %d named leaves in the manifest", len(runs))
	}
	leafResults := piParityLeaves(t, runs)
	// The batch runs pi-parity.mjs itself; one run through PiParity must give the same answer.
	if one := PiParity(t, runs[0].Leaf, runs[0].File)[0]; !reflect.DeepEqual(one, leafResults[0]) {
		t.Fatalf("batched --leaf %s differs from PiParity:\n batch %+v\n   one %+v", runs[0].Leaf, leafResults[0], one)
	}
	t.Run("leaves", func(t *testing.T) {
		for i, lr := range runs {
			t.Run(filepath.Base(lr.File)+"/"+lr.Key, func(t *testing.T) {
				r := leafResults[i]
				if r.Error != "" {
					t.Fatalf("Pi --leaf %s: %s", lr.Leaf, r.Error)
				}
				if r.File != lr.File {
					t.Fatalf("result for %s, want %s", r.File, lr.File)
				}
				compareByID(t, views[lr.File], lr.Leaf, r)
			})
		}
	})

	checkUnchanged(t, sumsBefore, allGlobs...)
	if after := mtimes(t, sumsBefore); !maps.Equal(mtimesBefore, after) {
		t.Errorf("fixture mtimes changed:\nbefore %v\nafter  %v", mtimesBefore, after)
	}
	checkUnchanged(t, genSums, filepath.Join(genDir, "*.jsonl"))
	t.Logf("compared %d files (%d v1, %d v2/v3; %d fixtures, %d generated, %d edge) from their default leaf, and %d named leaves of the generated files",
		len(results), v1, v23, len(fixtures), len(generated), len(edges), len(runs))
}

// edgeSessions are hand-written files for shapes Pi itself does not write but opens:
//   - mistyped-fields: fields of unexpected JSON types (header parentSession 5, display 1,
//     fromHook "yes", isError "no", object content, a string firstKeptEntryIndex in a v3
//     compaction, a top-level customType 7 on a message). Pi keeps every line JSON.parse
//     accepts, so each is an entry (Pi fields the harness decodes as strings stay strings).
//   - v2-hook-message: a version 2 file; Pi's migrateV2ToV3 turns role hookMessage into
//     custom (keeping customType) and keeps the ids.
var edgeSessions = map[string]string{
	"edge-mistyped-fields.jsonl": `{"type":"session","version":3,"id":"e1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x","parentSession":5}
{"type":"message","id":"a1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}
{"type":"custom_message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02.000Z","customType":"c","content":"x","display":1}
{"type":"branch_summary","id":"a3","parentId":"a2","timestamp":"2026-01-01T00:00:03.000Z","fromId":"a1","summary":"s","fromHook":"yes"}
{"type":"message","id":"a4","parentId":"a3","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","isError":"no","content":"x"}}
{"type":"message","id":"a5","parentId":"a4","timestamp":"2026-01-01T00:00:05.000Z","message":{"role":"user","content":{"weird":1}}}
{"type":"compaction","id":"a6","parentId":"a5","timestamp":"2026-01-01T00:00:06.000Z","summary":"s","firstKeptEntryId":"a4","firstKeptEntryIndex":"x","tokensBefore":1}
{"type":"message","id":"a7","parentId":"a6","timestamp":"2026-01-01T00:00:07.000Z","customType":7,"message":{"role":"assistant","content":[],"stopReason":"stop"}}
`,
	"edge-v2-hook-message.jsonl": `{"type":"session","version":2,"id":"e2","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}
{"type":"message","id":"b1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"hi"}}
{"type":"message","id":"b2","parentId":"b1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"ok"}],"stopReason":"stop"}}
{"type":"message","id":"b3","parentId":"b2","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"hookMessage","customType":"h","content":"hook","display":true}}
{"type":"message","id":"b4","parentId":"b2","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"user","content":"side"}}
{"type":"branch_summary","id":"b5","parentId":"b3","timestamp":"2026-01-01T00:00:05.000Z","fromId":"b4","summary":"went sideways"}
{"type":"message","id":"b6","parentId":"b5","timestamp":"2026-01-01T00:00:06.000Z","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"boom"}}
`,
}

// leafRun is one pi-parity.mjs --leaf run: the manifest key names the leaf.
type leafRun struct {
	File string `json:"file"`
	Key  string `json:"-"`
	Leaf string `json:"leaf"`
}

// leafBatch runs pi-parity.mjs once per job inside one node process: it sets process.argv to
// `--leaf LEAF FILE` and imports the script again under a fresh URL (?job=i), so the script's
// top level runs again while Pi's package, already loaded, is reused. Each run prints its own
// JSON array.
const leafBatch = `
import { pathToFileURL } from "node:url";
const script = process.env.PARITY_SCRIPT;
const jobs = JSON.parse(process.env.PARITY_LEAF_JOBS);
for (const [i, job] of jobs.entries()) {
	process.argv = [process.argv[0], script, "--leaf", job.leaf, job.file];
	await import(pathToFileURL(script).href + "?job=" + i);
}
`

// piParityLeaves is PiParity(t, run.Leaf, run.File) for every run, in one node process instead
// of one per leaf: starting Node and loading Pi costs about a second of CPU per process, and
// --leaf takes a single id for every file of a run.
func piParityLeaves(t *testing.T, runs []leafRun) []ParityResult {
	t.Helper()
	jobs, err := json.Marshal(runs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ParityTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, NodeBinary(t), "--input-type=module", "-e", leafBatch)
	cmd.Env = append(os.Environ(),
		"PI_CODING_AGENT_DIR="+t.TempDir(), // as runScript: keep Pi away from ~/.pi
		"PI_PARITY_LEAF=",
		"PARITY_SCRIPT="+filepath.Join(Dir(), "pi-parity.mjs"),
		"PARITY_LEAF_JOBS="+string(jobs))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pi-parity.mjs batch of %d leaves: %v (ctx %v)\nstderr:\n%s", len(runs), err, ctx.Err(), stderr.String())
	}
	var out []ParityResult
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var rs []ParityResult
		if err := dec.Decode(&rs); err != nil {
			t.Fatalf("decoding pi-parity.mjs batch output: %v", err)
		}
		if len(rs) != 1 {
			t.Fatalf("pi-parity.mjs batch: %d results in one run, want 1", len(rs))
		}
		out = append(out, rs[0])
	}
	if len(out) != len(runs) {
		t.Fatalf("pi-parity.mjs batch: %d results for %d leaves", len(out), len(runs))
	}
	return out
}

// mtimes returns the modification time of every file in sums.
func mtimes(t *testing.T, sums map[string]string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for f := range sums {
		st, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = st.ModTime().UnixNano()
	}
	return out
}

// goView is package session's reading of one file.
type goView struct {
	tree *session.Tree
	// msgCustomType: message.customType of message entries, by Seq (Pi copies the stored
	// message, so a migrated hookMessage keeps its customType).
	msgCustomType map[int]string
}

func loadGoView(t *testing.T, path string) *goView {
	t.Helper()
	v := &goView{msgCustomType: map[int]string{}}
	tree, err := session.Each(path, func(e *session.Entry, d *session.Decoded) error {
		if e.Type == session.TypeMessage && d.Message != nil && d.Message.CustomType != "" {
			v.msgCustomType[e.Seq] = d.Message.CustomType
		}
		return nil
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if tree == nil {
		t.Fatalf("%s: no session header", path)
	}
	v.tree = tree
	return v
}

// ctxMsg is one context message in the form both sides are compared in. Key is the entry id
// (v2/v3) or the entry's position on the branch (v1).
type ctxMsg struct {
	Key        string
	Role       string
	CustomType string
	StopReason string
}

func (m ctxMsg) String() string {
	s := m.Key + "/" + m.Role
	if m.CustomType != "" {
		s += "[" + m.CustomType + "]"
	}
	if m.StopReason != "" {
		s += "(" + m.StopReason + ")"
	}
	return s
}

// goContext lists the context messages package session derives for branch; key names an entry.
func (v *goView) goContext(branch []int, key func(seq int) string) []ctxMsg {
	var out []ctxMsg
	for _, s := range v.tree.ContextEntries(branch) {
		e := &v.tree.Entries[s]
		m := ctxMsg{Key: key(s), Role: session.ContextRole(e), StopReason: e.StopReason}
		switch e.Type {
		case session.TypeCustomMessage:
			m.CustomType = e.CustomType
		case session.TypeMessage:
			m.CustomType = v.msgCustomType[s]
		}
		out = append(out, m)
	}
	return out
}

// piContext lists Pi's context messages; key maps Pi's entry id.
func piContext(r ParityResult, key func(id string) string) []ctxMsg {
	var out []ctxMsg
	for _, m := range r.Messages {
		out = append(out, ctxMsg{Key: key(m.EntryID), Role: m.Role, CustomType: m.CustomType, StopReason: m.StopReason})
	}
	return out
}

// goBranch returns package session's branch to leafID ("" = default leaf), failing on error.
func (v *goView) goBranch(t *testing.T, leafID string) []int {
	t.Helper()
	branch, cycle, err := v.tree.Branch(leafID)
	if err != nil {
		var unknown *session.ErrUnknownLeaf
		if errors.As(err, &unknown) {
			t.Fatalf("leaf %s is not in package session's tree", leafID)
		}
		t.Fatal(err)
	}
	if cycle {
		t.Errorf("package session found a parent cycle")
	}
	return branch
}

// compareByID compares a v2/v3 file by entry id; leafID "" means the default leaf.
func compareByID(t *testing.T, v *goView, leafID string, r ParityResult) {
	t.Helper()
	wantLeaf := leafID
	if wantLeaf == "" {
		wantLeaf = v.tree.Leaf()
	}
	if r.LeafID != wantLeaf {
		t.Errorf("leaf %q, Pi %q", wantLeaf, r.LeafID)
	}
	branch := v.goBranch(t, leafID)
	var ids, types []string
	for _, s := range branch {
		ids = append(ids, v.tree.Entries[s].ID)
		types = append(types, v.tree.Entries[s].Type)
	}
	if !slices.Equal(ids, r.BranchIDs) {
		t.Errorf("branch ids differ (%d vs Pi %d):\n got %v\n  Pi %v", len(ids), len(r.BranchIDs), ids, r.BranchIDs)
	}
	if !slices.Equal(types, r.BranchTypes) {
		t.Errorf("branch types differ:\n got %v\n  Pi %v", types, r.BranchTypes)
	}
	got := v.goContext(branch, func(s int) string { return v.tree.Entries[s].ID })
	want := piContext(r, func(id string) string { return id })
	diffContext(t, got, want)
}

// compareV1 compares a v1 file by position on the branch: Pi's migration ids are random.
func compareV1(t *testing.T, v *goView, r ParityResult) {
	t.Helper()
	branch := v.goBranch(t, "")
	if len(branch) != len(r.BranchIDs) || len(r.BranchTypes) != len(r.BranchIDs) {
		t.Fatalf("branch of %d entries, Pi %d (%d types)", len(branch), len(r.BranchIDs), len(r.BranchTypes))
	}
	if len(branch) > 0 && r.LeafID != r.BranchIDs[len(branch)-1] {
		t.Errorf("Pi's leaf %s does not end its branch", r.LeafID)
	}
	if len(branch) > 0 && v.tree.Leaf() != v.tree.Entries[branch[len(branch)-1]].ID {
		t.Errorf("leaf %s does not end the branch", v.tree.Leaf())
	}
	var types []string
	goPos := map[int]int{} // Seq -> position on the branch
	for i, s := range branch {
		types = append(types, v.tree.Entries[s].Type)
		goPos[s] = i
	}
	if !slices.Equal(types, r.BranchTypes) {
		t.Errorf("branch types differ:\n got %v\n  Pi %v", types, r.BranchTypes)
	}
	piPos := map[string]int{}
	ambiguous := false
	for i, id := range r.BranchIDs {
		if _, dup := piPos[id]; dup {
			// Pi's migrateV1ToV2 never records the ids it drew, so two entries can get the same
			// random id (about 1 in 10^4 runs for a 1000-entry file); positions are then
			// ambiguous, and only the role sequence below is compared.
			ambiguous = true
		}
		piPos[id] = i
	}
	got := v.goContext(branch, func(s int) string { return fmt.Sprintf("#%d", goPos[s]) })
	want := piContext(r, func(id string) string {
		if p, ok := piPos[id]; ok {
			return fmt.Sprintf("#%d", p)
		}
		return "off-branch:" + id
	})
	if !ambiguous {
		diffContext(t, got, want)
	}
	// The roles sequence and the compaction-summary positions, spelled out (implied by the above).
	roles := func(ms []ctxMsg) (rs []string, comp []int) {
		for i, m := range ms {
			rs = append(rs, m.Role)
			if m.Role == "compactionSummary" {
				comp = append(comp, i)
			}
		}
		return rs, comp
	}
	gr, gc := roles(got)
	wr, wc := roles(want)
	if !slices.Equal(gr, wr) || !slices.Equal(gc, wc) {
		t.Errorf("context roles differ: compaction summaries at %v, Pi %v", gc, wc)
	}
}

// diffContext reports the first differences between two context message lists.
func diffContext(t *testing.T, got, want []ctxMsg) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	t.Errorf("context differs: %d messages, Pi %d", len(got), len(want))
	shown := 0
	for i := range max(len(got), len(want)) {
		var g, w string
		if i < len(got) {
			g = got[i].String()
		}
		if i < len(want) {
			w = want[i].String()
		}
		if g != w {
			t.Errorf("  message %d: %s, Pi %s", i, g, w)
			if shown++; shown == 10 {
				t.Errorf("  ...")
				break
			}
		}
	}
}
