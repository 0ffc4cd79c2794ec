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
	"time"

	"contextd/session"
)

// TestPiParityInvariant is docs/design.md §6 invariant 4 (Pi parity), on every Pi of ParityPis
// (RuleEdgePis: 0.85.1, 0.86.1, 0.87.0 and 1.6.0, the edges of the rule sets; or the Pis
// e2e/pi-versions.sh installs): for every fixture in testdata/pi-sessions and
// testdata/pi-tree, every file gen-sessions.mjs --own-compactions writes with any of these
// Pis (each with its own compactions and the entry kinds it supports), and the hand-written
// edge files, the active branch and the model-visible context computed by package session
// under the rules of that Pi equal what the Pi reports (getBranch, buildContextEntries, and
// buildSessionContext's messages tagged with their entries).
//
//   - v2/v3 files: the leaf id, the branch ids (root→leaf) and types, and the context messages
//     as (entryId, role, customType, stopReason, edit id, and for an edited message the first
//     80 code points of its replacement text), from Pi's default leaf and from every entry the
//     generators' manifests name; for the Pi 0.86+ files (harness-v16-*) and the
//     own-compaction files, from every entry.
//   - v1 files: Pi's migration draws random ids, so entries are matched by their position on
//     the branch (a v1 file is one chain in file order): the branch length and entry types, and
//     the context messages as (branch position, role, customType, stopReason), which pins the
//     roles sequence and where the compaction summaries are.
//
// Files written by one Pi are read by the others as well (the newest Pi's files by every older
// one): a user's Pi may be downgraded, and 0.85 and 0.86 read newer entries as unknown types. The fixture files must be byte-identical (sha256)
// and keep their mtime. TestRulesDiffer names the files where the two rule sets disagree.
func TestPiParityInvariant(t *testing.T) {
	c := loadParityCorpus(t)
	for _, pv := range c.pis {
		t.Run("pi-"+pv.Name, func(t *testing.T) { parityOn(t, pv, c) })
	}
	checkUnchanged(t, c.sumsBefore, c.allGlobs...)
	if after := mtimes(t, c.sumsBefore); !maps.Equal(c.mtimesBefore, after) {
		t.Errorf("fixture mtimes changed:\nbefore %v\nafter  %v", c.mtimesBefore, after)
	}
	for dir, sums := range c.genSums {
		checkUnchanged(t, sums, filepath.Join(dir, "*.jsonl"))
	}
}

// parityCorpus is every file the parity test compares, with package session's reading of it.
type parityCorpus struct {
	pis                        []PiVersion // ParityPis: each writes files and reads them all
	fixtures, generated, edges []string
	files                      []string
	label                      map[string]string // file → name in test output
	views                      map[string]*goView
	runs                       []leafRun // named leaves of the generated files
	sumsBefore                 map[string]string
	mtimesBefore               map[string]int64
	allGlobs                   []string
	genSums                    map[string]map[string]string
}

func loadParityCorpus(t *testing.T) *parityCorpus {
	t.Helper()
	c := &parityCorpus{pis: ParityPis(t), label: map[string]string{}, views: map[string]*goView{}, genSums: map[string]map[string]string{}}
	for _, g := range []string{filepath.Join(piSessionsDir, "*.jsonl"), filepath.Join(piTreeDir, "*.jsonl")} {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		if len(m) == 0 {
			t.Fatalf("no fixtures match %s", g)
		}
		for _, f := range m {
			c.label[f] = filepath.Base(filepath.Dir(f)) + "/" + filepath.Base(f)
		}
		c.fixtures = append(c.fixtures, m...)
	}
	// Every file of both fixture directories (not only *.jsonl), hashed and stat'ed first.
	c.allGlobs = []string{filepath.Join(piSessionsDir, "*"), filepath.Join(piTreeDir, "*")}
	c.sumsBefore = sha256Files(t, c.allGlobs...)
	c.mtimesBefore = mtimes(t, c.sumsBefore)

	for _, pv := range c.pis {
		dir := t.TempDir()
		generated := GenParitySessions(t, pv, dir)
		man := ReadGenManifest(t, dir)
		want := append(pv.Generated(), OwnCompactionsFile)
		if len(generated) != len(want) || len(man.Files) != len(want) || man.PiVersion != pv.Name {
			t.Fatalf("gen-sessions with Pi %s wrote %d files, manifest lists %d (Pi %s), want %d", pv.Name, len(generated), len(man.Files), man.PiVersion, len(want))
		}
		for _, f := range generated {
			c.label[f] = "gen-" + pv.Name + "/" + filepath.Base(f)
			c.views[f] = loadGoView(t, f)
		}
		c.generated = append(c.generated, generated...)
		c.genSums[dir] = sha256Files(t, filepath.Join(dir, "*.jsonl"))
		// Named leaves (the manifest's "leaf" is the default leaf; "windowIds" are window
		// ids, not entry ids), and every entry of the Pi 0.86+ files and of the own-compaction
		// files.
		for _, mf := range man.Files {
			path := filepath.Join(dir, mf.File)
			v := c.views[path]
			if v == nil {
				t.Fatalf("manifest names %s, which gen-sessions did not report", mf.File)
			}
			seen := map[string]bool{mf.LeafID: true}
			for _, key := range slices.Sorted(maps.Keys(mf.IDs)) {
				id := mf.ID(key)
				if id == "" || seen[id] {
					continue
				}
				if v.tree.Get(id) == nil {
					t.Errorf("%s: manifest id %s=%s is not an entry", mf.File, key, id)
					continue
				}
				seen[id] = true
				c.runs = append(c.runs, leafRun{File: path, Key: key, Leaf: id})
			}
			if slices.Contains(pv.Extra, mf.File) || mf.File == OwnCompactionsFile {
				for _, e := range v.tree.All() {
					if !seen[e.ID] {
						seen[e.ID] = true
						c.runs = append(c.runs, leafRun{File: path, Key: "entry-" + e.ID, Leaf: e.ID})
					}
				}
			}
		}
	}

	// Hand-written edge files (see edgeSessions).
	edgeDir := t.TempDir()
	for _, name := range slices.Sorted(maps.Keys(edgeSessions)) {
		path := filepath.Join(edgeDir, name)
		if err := os.WriteFile(path, []byte(edgeSessions[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		c.label[path] = "edge/" + name
		c.edges = append(c.edges, path)
	}
	c.files = slices.Concat(c.fixtures, c.generated, c.edges)
	for _, f := range c.files {
		if c.views[f] == nil {
			c.views[f] = loadGoView(t, f)
		}
	}
	return c
}

// parityOn compares every file of c with the Pi pv.
func parityOn(t *testing.T, pv PiVersion, c *parityCorpus) {
	results := PiParityOn(t, pv, "", c.files...)
	var v1, v23 int
	for _, r := range results {
		t.Run(c.label[r.File], func(t *testing.T) {
			v := c.views[r.File]
			if r.Error != "" {
				t.Fatalf("Pi refused the file: %s", r.Error)
			}
			if v.tree.Header.Version != r.SourceVersion {
				t.Fatalf("header version %d, Pi read version %d from disk", v.tree.Header.Version, r.SourceVersion)
			}
			if r.SourceVersion < 2 {
				v1++
				compareV1(t, v, pv.Rules, r)
			} else {
				v23++
				compareByID(t, v, pv.Rules, "", r)
			}
		})
	}
	leafResults := piParityLeaves(t, pv, c.runs)
	// The batch runs pi-parity.mjs itself; one run through PiParityOn must give the same answer.
	if one := PiParityOn(t, pv, c.runs[0].Leaf, c.runs[0].File)[0]; !reflect.DeepEqual(one, leafResults[0]) {
		t.Fatalf("batched --leaf %s differs from PiParityOn:\n batch %+v\n   one %+v", c.runs[0].Leaf, leafResults[0], one)
	}
	t.Run("leaves", func(t *testing.T) {
		for i, lr := range c.runs {
			t.Run(c.label[lr.File]+"/"+lr.Key, func(t *testing.T) {
				r := leafResults[i]
				if r.Error != "" {
					t.Fatalf("Pi --leaf %s: %s", lr.Leaf, r.Error)
				}
				if r.File != lr.File {
					t.Fatalf("result for %s, want %s", r.File, lr.File)
				}
				compareByID(t, c.views[lr.File], pv.Rules, lr.Leaf, r)
			})
		}
	})
	t.Logf("Pi %s: compared %d files (%d v1, %d v2/v3; %d fixtures, %d generated, %d edge) from their default leaf, and %d named leaves of the generated files",
		pv.Name, len(results), v1, v23, len(c.fixtures), len(c.generated), len(c.edges), len(c.runs))
}

// TestRulesDiffer names the files where adjacent rule sets project differently (Pi 0.85's and
// 0.86's, Pi 0.86's and 1.6's), from the default leaf and every named leaf of every file of
// the parity corpus (the fixtures, every Pi's generated files, the edge files): package
// session's rule sets give the same context everywhere else, the committed fixtures included.
// TestPiParityInvariant checks each side against its Pi.
func TestRulesDiffer(t *testing.T) {
	c := loadParityCorpus(t)
	own := func(why string) map[string]string {
		m := map[string]string{}
		for _, pv := range c.pis {
			m["gen-"+pv.Name+"/"+OwnCompactionsFile] = why
		}
		return m
	}
	pairs := []struct {
		a, b session.Rules
		want map[string]string
	}{
		{session.RulesPi085, session.RulesPi086, mergeWhy(own("system messages, and compactions with a systemMessage (0.86+ files); 0.85 writes none: the kept range holds no system message"), map[string]string{
			"gen-0.85.1/" + OwnCompactionsFile:         "", // 0.85 writes no system message: the two agree
			"gen-0.86.1/harness-v16-compactions.jsonl": "a system message in the kept range, a compaction's systemMessage",
			"gen-0.87.0/harness-v16-compactions.jsonl": "the same file written by Pi 0.87",
			"gen-1.6.0/harness-v16-compactions.jsonl":  "the same file written by Pi 1.6",
			"edge/edge-v16-compaction-omitted.jsonl":   "a compaction with a systemMessage",
		})},
		{session.RulesPi086, session.RulesPi16, mergeWhy(own("an older compaction inside the newest one's kept range: 0.86 sends it, 1.6 not (with 0.87+ also context edits)"), map[string]string{
			"gen-0.85.1/harness-compaction-edge.jsonl":   "at leaves a4 and compaction2: the older compaction inside the kept range yields its summary in 0.86, nothing in 1.6",
			"gen-0.86.1/harness-compaction-edge.jsonl":   "the same file written by Pi 0.86",
			"gen-0.87.0/harness-compaction-edge.jsonl":   "the same file written by Pi 0.87",
			"gen-1.6.0/harness-compaction-edge.jsonl":    "the same file written by Pi 1.6",
			"gen-0.86.1/harness-v16-compactions.jsonl":   "the nested compaction's system message and summary",
			"gen-0.87.0/harness-v16-compactions.jsonl":   "the same, and edits before and after a compaction",
			"gen-1.6.0/harness-v16-compactions.jsonl":    "the same file written by Pi 1.6",
			"gen-0.87.0/harness-v16-context-edits.jsonl": "context_edit replacements and omissions (0.86 ignores context_edit)",
			"gen-1.6.0/harness-v16-context-edits.jsonl":  "the same file written by Pi 1.6",
			"gen-0.87.0/harness-v16-roots.jsonl":         "at leaf leafA: the edit of the full-UUID tool result",
			"gen-1.6.0/harness-v16-roots.jsonl":          "the same file written by Pi 1.6",
			"edge/edge-v16-projection.jsonl":             "context_edit targets of every role",
			"edge/edge-v16-compaction-omitted.jsonl":     "a null edit of a compaction with a systemMessage",
		})},
	}
	leaves := []leafRun{}
	for _, f := range c.files {
		leaves = append(leaves, leafRun{File: f})
	}
	for _, p := range pairs {
		t.Run(p.a.String()+"-"+p.b.String(), func(t *testing.T) {
			got := map[string]bool{}
			for _, lr := range slices.Concat(leaves, c.runs) {
				v := c.views[lr.File]
				branch := v.goBranch(t, lr.Leaf)
				key := func(s int) string { return v.tree.ID(s) }
				if !slices.Equal(v.goContext(branch, p.a, key), v.goContext(branch, p.b, key)) {
					got[c.label[lr.File]] = true
				}
			}
			for name := range got {
				if why, ok := p.want[name]; !ok || why == "" {
					t.Errorf("%s: the %s and %s rules differ, and the test does not name it", name, p.a, p.b)
				}
			}
			for name, why := range p.want {
				if why != "" && !got[name] {
					t.Errorf("%s: the %s and %s rules agree, want them to differ (%s)", name, p.a, p.b, why)
				}
			}
		})
	}
}

// mergeWhy is a with b's entries added (b wins).
func mergeWhy(a, b map[string]string) map[string]string {
	maps.Copy(a, b)
	return a
}

// edgeSessions are hand-written files for shapes Pi itself does not write but opens:
//   - mistyped-fields: fields of unexpected JSON types (header parentSession 5, display 1,
//     fromHook "yes", isError "no", object content, a string firstKeptEntryIndex in a v3
//     compaction, a top-level customType 7 on a message). Pi keeps every line JSON.parse
//     accepts, so each is an entry (Pi fields the harness decodes as strings stay strings).
//   - v2-hook-message: a version 2 file; Pi's migrateV2ToV3 turns role hookMessage into
//     custom (keeping customType) and keeps the ids.
//   - v16-projection: Pi 1.x context edits Pi's appendContextEdit would also write, on targets
//     of every role: a bashExecution and a system message (content replacements do not apply
//     to those roles), a branch summary omitted, a string replacement of a toolResult (one
//     text block), of a custom message (stays a string), blocks for a user and an assistant.
//   - v16-compaction-omitted: a null edit of the latest compaction (with a systemMessage)
//     removes both its messages.
var edgeSessions = map[string]string{
	"edge-v16-projection.jsonl": `{"type":"session","version":3,"id":"e3","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}
{"type":"message","id":"h1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"system","content":"sys","timestamp":1}}
{"type":"message","id":"u1","parentId":"h1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"hello","timestamp":2}}
{"type":"message","id":"b1","parentId":"u1","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"bashExecution","command":"ls","output":"a","exitCode":0,"cancelled":false,"truncated":false,"timestamp":3}}
{"type":"message","id":"a1","parentId":"b1","timestamp":"2026-01-01T00:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"answer"}],"stopReason":"stop","timestamp":4}}
{"type":"message","id":"t1","parentId":"a1","timestamp":"2026-01-01T00:00:05.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"result"}],"isError":false,"timestamp":5}}
{"type":"branch_summary","id":"s1","parentId":"t1","timestamp":"2026-01-01T00:00:06.000Z","fromId":"a1","summary":"side"}
{"type":"custom_message","id":"m1","parentId":"s1","timestamp":"2026-01-01T00:00:07.000Z","customType":"x","content":"note","display":true}
{"type":"context_edit","id":"d1","parentId":"m1","timestamp":"2026-01-01T00:00:08.000Z","targetId":"u1","replacement":{"content":[{"type":"text","text":"hello (edited)"}]}}
{"type":"context_edit","id":"d2","parentId":"d1","timestamp":"2026-01-01T00:00:09.000Z","targetId":"b1","replacement":{"content":"bash edited"}}
{"type":"context_edit","id":"d3","parentId":"d2","timestamp":"2026-01-01T00:00:10.000Z","targetId":"t1","replacement":{"content":"result edited"}}
{"type":"context_edit","id":"d4","parentId":"d3","timestamp":"2026-01-01T00:00:11.000Z","targetId":"s1","replacement":null}
{"type":"context_edit","id":"d5","parentId":"d4","timestamp":"2026-01-01T00:00:12.000Z","targetId":"h1","replacement":{"content":"sys edited"}}
{"type":"context_edit","id":"d6","parentId":"d5","timestamp":"2026-01-01T00:00:13.000Z","targetId":"m1","replacement":{"content":"note edited"}}
{"type":"context_edit","id":"d7","parentId":"d6","timestamp":"2026-01-01T00:00:14.000Z","targetId":"a1","replacement":{"content":[{"type":"thinking","thinking":"t"},{"type":"text","text":"answer edited"}]}}
{"type":"message","id":"u2","parentId":"d7","timestamp":"2026-01-01T00:00:15.000Z","message":{"role":"user","content":"continue","timestamp":15}}
`,
	"edge-v16-compaction-omitted.jsonl": `{"type":"session","version":3,"id":"e4","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}
{"type":"message","id":"h1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"system","content":"sys","timestamp":1}}
{"type":"message","id":"u1","parentId":"h1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"user","content":"hello","timestamp":2}}
{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"answer"}],"stopReason":"stop","timestamp":3}}
{"type":"compaction","id":"c1","parentId":"a1","timestamp":"2026-01-01T00:00:04.000Z","summary":"sum","firstKeptEntryId":"a1","tokensBefore":10,"systemMessage":{"role":"system","content":"sys","timestamp":4}}
{"type":"context_edit","id":"d1","parentId":"c1","timestamp":"2026-01-01T00:00:05.000Z","targetId":"c1","replacement":null}
{"type":"message","id":"u2","parentId":"d1","timestamp":"2026-01-01T00:00:06.000Z","message":{"role":"user","content":"next","timestamp":6}}
`,
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

// leafBatch runs pi-parity.mjs once per job (read from the file PARITY_LEAF_JOBS) inside one
// node process: it sets process.argv to `--leaf LEAF FILE` and imports the script again under
// a fresh URL (?job=i), so the script's top level runs again while Pi's package, already
// loaded, is reused (and, with PI_PARITY_REUSE=1, each file's SessionManager opened once).
// Each run prints its own JSON array.
const leafBatch = `
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const script = process.env.PARITY_SCRIPT;
const jobs = JSON.parse(readFileSync(process.env.PARITY_LEAF_JOBS, "utf8"));
for (const [i, job] of jobs.entries()) {
	process.argv = [process.argv[0], script, "--leaf", job.leaf, job.file];
	await import(pathToFileURL(script).href + "?job=" + i);
}
`

// piParityLeaves is PiParity(t, run.Leaf, run.File) for every run, in one node process instead
// of one per leaf: starting Node and loading Pi costs about a second of CPU per process, and
// --leaf takes a single id for every file of a run.
func piParityLeaves(t *testing.T, pv PiVersion, runs []leafRun) []ParityResult {
	t.Helper()
	jobs, err := json.Marshal(runs)
	if err != nil {
		t.Fatal(err)
	}
	// A file, not the environment: thousands of leaves exceed the kernel's limit on one
	// environment string (128 KiB).
	jobsFile := filepath.Join(t.TempDir(), "leaf-jobs.json")
	if err := os.WriteFile(jobsFile, jobs, 0o600); err != nil {
		t.Fatal(err)
	}
	// ParityTimeout per started thousand leaves: e2e/pi-versions.sh runs a dozen Pis' files.
	ctx, cancel := context.WithTimeout(context.Background(), ParityTimeout*time.Duration(1+len(runs)/1000))
	defer cancel()
	cmd := exec.CommandContext(ctx, NodeBinary(t), "--input-type=module", "-e", leafBatch)
	cmd.Env = append(os.Environ(),
		"PI_CODING_AGENT_DIR="+t.TempDir(), // as RunScriptEnv: keep Pi away from ~/.pi
		"PI_PARITY_LEAF=",
		"PI_PARITY_REUSE=1", // open each file once for all its leaves
		pv.Env(),
		"PARITY_SCRIPT="+filepath.Join(Dir(), "pi-parity.mjs"),
		"PARITY_LEAF_JOBS="+jobsFile)
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
	// editText: the first 80 code points of a context_edit's replacement text (a string
	// content, else its first text part), by Seq.
	editText map[int]string
}

func loadGoView(t *testing.T, path string) *goView {
	t.Helper()
	v := &goView{msgCustomType: map[int]string{}, editText: map[int]string{}}
	tree, err := session.Each(path, func(e *session.Entry, d *session.Decoded) error {
		if e.Type == session.TypeMessage && d.Message != nil && d.Message.CustomType != "" {
			v.msgCustomType[e.Seq] = d.Message.CustomType
		}
		if c := d.Replacement; c != nil {
			text := c.Text
			if !c.IsString {
				text = ""
				for _, p := range c.Parts {
					if p.Type == "text" {
						text = p.Text
						break
					}
				}
			}
			v.editText[e.Seq] = prefix80(text)
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
	Edit       string // the context_edit whose replacement the message carries
	EditText   string // its first 80 code points of text, for an edited message
}

// prefix80 is pi-parity.mjs's prefix: the first 80 code points.
func prefix80(s string) string {
	r := []rune(s)
	return string(r[:min(len(r), 80)])
}

func (m ctxMsg) String() string {
	s := m.Key + "/" + m.Role
	if m.Edit != "" {
		s += "{edit " + m.Edit + ": " + m.EditText + "}"
	}
	if m.CustomType != "" {
		s += "[" + m.CustomType + "]"
	}
	if m.StopReason != "" {
		s += "(" + m.StopReason + ")"
	}
	return s
}

// goContext lists the context messages package session derives for branch under rules; key
// names an entry.
func (v *goView) goContext(branch []int, rules session.Rules, key func(seq int) string) []ctxMsg {
	var out []ctxMsg
	for _, pm := range v.tree.Project(branch, rules) {
		s := pm.Seq
		e := new(v.tree.Entry(s))
		m := ctxMsg{Key: key(s), Role: pm.Role}
		if pm.Role == e.Role {
			m.StopReason = e.StopReason
		}
		switch e.Type {
		case session.TypeCustomMessage:
			m.CustomType = e.CustomType
		case session.TypeMessage:
			m.CustomType = v.msgCustomType[s]
		}
		if pm.EditSeq >= 0 {
			m.Edit, m.EditText = v.tree.ID(pm.EditSeq), v.editText[pm.EditSeq]
		}
		out = append(out, m)
	}
	return out
}

// piContext lists Pi's context messages; key maps Pi's entry id.
func piContext(r ParityResult, key func(id string) string) []ctxMsg {
	var out []ctxMsg
	for _, m := range r.Messages {
		cm := ctxMsg{Key: key(m.EntryID), Role: m.Role, CustomType: m.CustomType, StopReason: m.StopReason, Edit: m.EditID}
		if m.EditID != "" {
			cm.EditText = m.TextPrefix
		}
		out = append(out, cm)
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
func compareByID(t *testing.T, v *goView, rules session.Rules, leafID string, r ParityResult) {
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
		ids = append(ids, v.tree.ID(s))
		types = append(types, v.tree.Type(s))
	}
	if !slices.Equal(ids, r.BranchIDs) {
		t.Errorf("branch ids differ (%d vs Pi %d):\n got %v\n  Pi %v", len(ids), len(r.BranchIDs), ids, r.BranchIDs)
	}
	if !slices.Equal(types, r.BranchTypes) {
		t.Errorf("branch types differ:\n got %v\n  Pi %v", types, r.BranchTypes)
	}
	got := v.goContext(branch, rules, func(s int) string { return v.tree.ID(s) })
	want := piContext(r, func(id string) string { return id })
	diffContext(t, got, want)
}

// compareV1 compares a v1 file by position on the branch: Pi's migration ids are random.
func compareV1(t *testing.T, v *goView, rules session.Rules, r ParityResult) {
	t.Helper()
	branch := v.goBranch(t, "")
	if len(branch) != len(r.BranchIDs) || len(r.BranchTypes) != len(r.BranchIDs) {
		t.Fatalf("branch of %d entries, Pi %d (%d types)", len(branch), len(r.BranchIDs), len(r.BranchTypes))
	}
	if len(branch) > 0 && r.LeafID != r.BranchIDs[len(branch)-1] {
		t.Errorf("Pi's leaf %s does not end its branch", r.LeafID)
	}
	if len(branch) > 0 && v.tree.Leaf() != v.tree.ID(branch[len(branch)-1]) {
		t.Errorf("leaf %s does not end the branch", v.tree.Leaf())
	}
	var types []string
	goPos := map[int]int{} // Seq -> position on the branch
	for i, s := range branch {
		types = append(types, v.tree.Type(s))
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
	got := v.goContext(branch, rules, func(s int) string { return fmt.Sprintf("#%d", goPos[s]) })
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
