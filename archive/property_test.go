package archive

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd/session"
	"contextd/store"
)

// sessionGen writes a random Pi-like session: messages and notes, window
// boundaries, Tree rollovers as Pi and the extension write them
// (branchWithSummary: a branch_summary whose parentId is the boundary's
// parent and fromId the old leaf; then the manifest, the note snapshot and
// the next boundary, each the child of the previous entry), sometimes
// broken (a wrong manifest field, malformed data, a missing manifest,
// snapshot or boundary, a manifest appended twice), /tree navigations
// (Pi moves the leaf without writing, optionally writing a manual or
// foreign summary under the target), and a few entries Pi never writes (a
// parent written later, a repeated id) so that validity changes as the
// file grows.
type sessionGen struct {
	r     *rand.Rand
	ids   []string
	byID  map[string]genEntry
	leaf  string
	next  int
	lines [][]byte
}

type genEntry struct {
	parent   string
	boundary bool
	first    string
	window   string
	number   int
}

const ts = "2026-07-07T16:27:13.789Z"

func (g *sessionGen) id() string {
	g.next++
	return fmt.Sprintf("e%05d", g.next)
}

func (g *sessionGen) add(id, parent string, e genEntry, obj map[string]any) {
	obj["id"] = id
	if parent == "" {
		obj["parentId"] = nil
	} else {
		obj["parentId"] = parent
	}
	obj["timestamp"] = ts
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	g.lines = append(g.lines, append(b, '\n'))
	e.parent = parent
	if _, dup := g.byID[id]; !dup {
		g.ids = append(g.ids, id)
	}
	g.byID[id] = e
	g.leaf = id
}

func (g *sessionGen) message() {
	roles := []string{"user", "assistant", "toolResult"}
	role := roles[g.r.Intn(3)]
	msg := map[string]any{"role": role, "content": []any{map[string]any{"type": "text", "text": fmt.Sprintf("%s says %d", role, g.r.Intn(1000))}}, "timestamp": 1}
	if role == "toolResult" {
		msg["toolCallId"], msg["toolName"], msg["isError"] = "call", "read", false
	}
	g.add(g.id(), g.leaf, genEntry{}, map[string]any{"type": "message", "message": msg})
}

func (g *sessionGen) note() {
	g.add(g.id(), g.leaf, genEntry{}, map[string]any{"type": "custom", "customType": session.CustomTypeNote,
		"data": map[string]any{"protocol": 1, "action": "write", "path": "/root/notes/a.md", "text": "x", "timestamp": 1}})
}

// latestBoundary returns the latest boundary on the branch of the leaf.
func (g *sessionGen) latestBoundary() (string, bool) {
	seen := map[string]bool{}
	for cur := g.leaf; cur != "" && !seen[cur]; {
		seen[cur] = true
		e, ok := g.byID[cur]
		if !ok {
			return "", false
		}
		if e.boundary {
			return cur, true
		}
		cur = e.parent
	}
	return "", false
}

func (g *sessionGen) boundary(after string) string {
	e := genEntry{boundary: true}
	if b, ok := g.byID[after]; ok && after != "" {
		e.first, e.number = b.first, b.number+1
	}
	e.window = fmt.Sprintf("w%05d", g.next+1)
	if e.first == "" {
		e.first = e.window
	}
	cm := map[string]any{"protocol": 1, "kind": "window", "firstWindowId": e.first, "currentWindowId": e.window, "windowNumber": e.number}
	id := g.id()
	g.add(id, g.leaf, e, map[string]any{"type": "custom_message", "customType": session.CustomTypeWindow, "content": "window " + e.window,
		"display": true, "details": map[string]any{"protocol": 1, "id": "m" + id, "contextManagement": cm}})
	return id
}

func (g *sessionGen) randomID() string { return g.ids[g.r.Intn(len(g.ids))] }

func (g *sessionGen) rollover() {
	b, ok := g.latestBoundary()
	if !ok {
		g.boundary("")
		return
	}
	old := g.leaf
	base := g.byID[b].parent
	sum := g.id()
	g.leaf = base
	g.add(sum, base, genEntry{}, map[string]any{"type": "branch_summary", "fromId": old, "summary": "summary " + sum, "fromHook": false})
	if g.r.Intn(10) == 0 {
		return // navigation done, commit never came
	}
	data := map[string]any{"protocol": 1, "strategy": Strategy, "windowId": g.byID[b].window, "boundaryEntryId": b,
		"summaryEntryId": sum, "archivedLeafId": old, "branchBaseId": base}
	if base == "" {
		data["branchBaseId"] = nil
	}
	if g.r.Intn(3) == 0 {
		switch g.r.Intn(10) {
		case 0:
			data["archivedLeafId"] = g.randomID()
		case 1:
			data["branchBaseId"] = g.randomID()
		case 2:
			data["boundaryEntryId"] = g.randomID()
		case 3:
			data["summaryEntryId"] = g.randomID()
		case 4:
			data["windowId"] = "bogus"
		case 5:
			data = map[string]any{"protocol": 2}
		case 6:
			data["archivedLeafId"] = fmt.Sprintf("e%05d", g.next+1+g.r.Intn(3)) // written later, maybe
		case 7:
			data["archivedLeafId"] = "gone"
		case 8:
			data["summaryEntryId"] = fmt.Sprintf("e%05d", g.next+1+g.r.Intn(3))
		case 9:
			data["summaryEntryId"] = "never"
		}
	}
	g.add(g.id(), g.leaf, genEntry{}, map[string]any{"type": "custom", "customType": session.CustomTypeTreeArchive, "data": data})
	if g.r.Intn(12) == 0 {
		g.add(g.id(), g.leaf, genEntry{}, map[string]any{"type": "custom", "customType": session.CustomTypeTreeArchive, "data": data})
	}
	if g.r.Intn(10) == 0 {
		return
	}
	g.add(g.id(), g.leaf, genEntry{}, map[string]any{"type": "custom", "customType": session.CustomTypeNoteSnapshot,
		"data": map[string]any{"protocol": 1, "timestamp": 1, "files": []any{}}})
	if g.r.Intn(10) == 0 {
		return
	}
	g.boundary(b)
}

func (g *sessionGen) navigate() {
	target := g.randomID()
	if g.r.Intn(3) == 0 {
		old := g.leaf
		g.leaf = target
		g.add(g.id(), target, genEntry{}, map[string]any{"type": "branch_summary", "fromId": old, "summary": "manual", "fromHook": g.r.Intn(2) == 0})
		return
	}
	g.leaf = target
}

func (g *sessionGen) oddity() {
	switch g.r.Intn(3) {
	case 0: // a parent written later: the next entry
		id := g.id()
		g.add(id, fmt.Sprintf("e%05d", g.next+1), genEntry{}, map[string]any{"type": "message",
			"message": map[string]any{"role": "user", "content": "orphan for now", "timestamp": 1}})
		g.message()
	case 2: // a parent never written
		g.add(g.id(), "ghost", genEntry{}, map[string]any{"type": "message",
			"message": map[string]any{"role": "user", "content": "orphan", "timestamp": 1}})
	case 1: // a repeated id: Pi's byId keeps the later entry
		g.add(g.randomID(), g.leaf, genEntry{}, map[string]any{"type": "message",
			"message": map[string]any{"role": "assistant", "content": []any{}, "timestamp": 1}})
	}
}

func (g *sessionGen) step() {
	switch n := g.r.Intn(100); {
	case len(g.ids) == 0 || n < 45:
		g.message()
	case n < 55:
		g.note()
	case n < 75:
		g.rollover()
	case n < 90:
		g.navigate()
	case n < 95:
		if _, ok := g.latestBoundary(); !ok {
			g.boundary("")
		} else {
			g.message()
		}
	default:
		g.oddity()
	}
}

// indexSnap is what the comparison sees of an index and a branch reading.
type indexSnap struct {
	Manifests []manifestSnap
	Windows   []windowSnap
	Archives  []string
	Current   int
	Stale     bool
}

type manifestSnap struct {
	Seq         int
	EntryID     string
	Data        Data
	Valid       bool
	Reasons     []string
	SummarySeq  int
	BoundarySeq int
	Archived    []int
}

type windowSnap struct {
	ID    string
	Items []itemSnap
}

type itemSnap struct {
	WindowID, ItemID, Role string
	Summary                bool
	Chars                  int
	Key                    int64
}

func snapOf(tr *session.Tree, idx *Index, br *Branch) indexSnap {
	var s indexSnap
	for _, m := range idx.Manifests {
		s.Manifests = append(s.Manifests, manifestSnap(m))
	}
	for _, w := range br.Windows {
		ws := windowSnap{ID: w.ID}
		for _, it := range w.Items {
			ws.Items = append(ws.Items, itemSnap{it.WindowID, it.ItemID, it.Role, it.Summary, it.Chars, it.Key})
		}
		s.Windows = append(s.Windows, ws)
	}
	for _, m := range br.Archives {
		s.Archives = append(s.Archives, m.EntryID)
	}
	s.Current, s.Stale = br.Current, br.Stale
	return s
}

// storeSnap syncs sess and reads the index through a (cached, built after
// each sync) and the branch of leaf.
func storeSnap(t *testing.T, a *Archives, sess *store.Session, leaf string) indexSnap {
	t.Helper()
	if err := sess.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	var out indexSnap
	err := sess.Read(func(v *store.View) error {
		idx, err := a.Index(v)
		if err != nil {
			return err
		}
		seqs, _, err := v.Tree.Branch(leaf)
		if err != nil {
			return err
		}
		out = snapOf(v.Tree, idx, idx.Branch(v.Tree, seqs, v.Ref))
		// The Branch hook (cached per leaf and state) answers the same,
		// built or cached.
		id := leaf
		if id == "" {
			id = v.Tree.Leaf()
		}
		for range 2 {
			br, err := a.Branch(v, id, seqs, session.NewestRules)
			if err != nil {
				return err
			}
			if diff := cmp.Diff(out, snapOf(v.Tree, idx, br)); diff != "" {
				t.Errorf("Archives.Branch differs from Index.Branch (-want +got):\n%s", diff)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIncrementalEqualsCold: for random sessions written line by line
// (some lines in two writes, with a sync in between that must not see the
// unfinished line), the index built through the store after each step
// (incremental ingest, cached manifest data) equals the index built from
// scratch by parsing the file so far; at the end it also equals the one a
// fresh store and a fresh Archives build.
func TestIncrementalEqualsCold(t *testing.T) {
	ctx := t.Context()
	seeds := 8
	if testing.Short() {
		seeds = 2
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			root := t.TempDir()
			x, err := store.OpenIndex(ctx, root, filepath.Join(t.TempDir(), "index"), store.Options{BatchBytes: 4 << 10})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			path := filepath.Join(root, "s.jsonl")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			fmt.Fprintf(f, `{"type":"session","version":3,"id":"prop-%d","timestamp":%q,"cwd":"/tmp"}`+"\n", seed, ts)
			rp, err := x.Resolve(path)
			if err != nil {
				t.Fatal(err)
			}
			sess := x.Session(rp)
			a := New(nil)
			g := &sessionGen{r: rand.New(rand.NewSource(int64(seed))), byID: map[string]genEntry{}}
			valid, invalid := 0, 0
			for range 100 {
				g.step()
				for _, line := range g.lines {
					if g.r.Intn(4) == 0 && len(line) > 2 {
						cut := 1 + g.r.Intn(len(line)-2)
						if _, err := f.Write(line[:cut]); err != nil {
							t.Fatal(err)
						}
						storeSnap(t, a, sess, "")
						line = line[cut:]
					}
					if _, err := f.Write(line); err != nil {
						t.Fatal(err)
					}
				}
				g.lines = nil
				got := storeSnap(t, a, sess, g.leaf)
				tr, idx, items := coldBuild(t, path)
				seqs, _, err := tr.Branch(g.leaf)
				if err != nil {
					t.Fatal(err)
				}
				want := snapOf(tr, idx, idx.Branch(tr, seqs, memRef(tr, items)))
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("after %d entries (-cold +incremental):\n%s", tr.Len(), diff)
				}
				valid, invalid = idx.Valid(), len(idx.Manifests)-idx.Valid()
			}
			// A fresh store and a fresh Archives over the final file.
			x2, err := store.OpenIndex(ctx, root, filepath.Join(t.TempDir(), "index2"), store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer x2.Close()
			cold := storeSnap(t, New(nil), x2.Session(rp), g.leaf)
			if diff := cmp.Diff(cold, storeSnap(t, a, sess, g.leaf)); diff != "" {
				t.Fatalf("final (-fresh store +incremental):\n%s", diff)
			}
			t.Logf("seed %d: %d valid, %d invalid manifests, %d windows", seed, valid, invalid, len(cold.Windows))
		})
	}
}

// TestGeneratorCoverage guards the property test's generator: over the
// seeds it produces valid archives, each kind of invalid one and stale
// windows, so the comparison above is not vacuous.
func TestGeneratorCoverage(t *testing.T) {
	reasons := map[string]int{}
	valid, stale := 0, 0
	for seed := range 30 {
		g := &sessionGen{r: rand.New(rand.NewSource(int64(seed))), byID: map[string]genEntry{}}
		path := filepath.Join(t.TempDir(), "s.jsonl")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, `{"type":"session","version":3,"id":"cov","timestamp":%q,"cwd":"/tmp"}`+"\n", ts)
		for i := range 120 {
			g.step()
			for _, l := range g.lines {
				f.Write(l)
			}
			g.lines = nil
			if i%20 != 19 {
				continue
			}
			tr, idx, items := coldBuild(t, path)
			if seqs, _, err := tr.Branch(g.leaf); err == nil && idx.Branch(tr, seqs, memRef(tr, items)).Stale {
				stale++
			}
		}
		f.Close()
		_, idx, _ := coldBuild(t, path)
		valid += idx.Valid()
		for _, m := range idx.Manifests {
			for _, r := range m.Reasons {
				reasons[r]++
			}
		}
	}
	t.Logf("valid %d, stale leaves %d, reasons %v", valid, stale, reasons)
	for _, r := range []string{ReasonMalformed, ReasonSummaryMissing, ReasonNotBranchSummary, ReasonFromIDMismatch,
		ReasonParentIDMismatch, ReasonArchivedLeafMissing, ReasonMissingParent, ReasonCycle, ReasonBoundaryNotInArchive,
		ReasonWindowIDMismatch, ReasonDuplicateSummary} {
		if reasons[r] == 0 {
			t.Errorf("no manifest with reason %s", r)
		}
	}
	if valid == 0 || stale == 0 {
		t.Errorf("valid %d, stale %d", valid, stale)
	}
}
