package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"sync"

	"contextd/coordinator"
	"contextd/history"
	"contextd/session"
	"contextd/store"
)

// Archives builds and caches the archive index of each session file and
// answers the coordinator's Tree-mode hooks. It is safe for concurrent use.
//
// The cache holds, per session file, the last index built (valid for one
// tree and one tree length), the decoded `data` of each manifest entry and
// the SHA-256 of each summary text, both keyed by entry Seq and checked
// against the entry's id and file offset. Any change of the tree length
// rebuilds the index from the tree (Build), so an index is always the one
// a cold build of the same entries gives.
type Archives struct {
	metrics *coordinator.Metrics

	mu      sync.Mutex
	byPath  map[string]*cached
	counted map[string]bool // path + "\x00" + manifest id: invalid manifests already counted
}

type cached struct {
	tree *session.Tree
	n    int
	idx  *Index
	data map[int]rawAt
	sha  map[int]shaAt
	// branches are the last few Branch answers (newest first) over idx.
	branches []branchAt
}

// branchAt is one Branch answer and what it was computed from: the index
// (so the tree and its length), the leaf, the item count and the bytes
// indexed of the view. The branch of a leaf is a function of those.
type branchAt struct {
	idx   *Index
	leaf  string
	items int
	bytes int64
	rules session.Rules // context edits apply under the Pi 1.x rules only
	br    *Branch
}

// maxBranches is how many Branch answers are kept per session file.
const maxBranches = 2

type rawAt struct {
	id  string
	off int64
	raw json.RawMessage
}

type shaAt struct {
	id  string
	off int64
	sha string
}

// New returns an empty Archives. m may be nil (no metrics).
func New(m *coordinator.Metrics) *Archives {
	return &Archives{metrics: m, byPath: map[string]*cached{}, counted: map[string]bool{}}
}

// Install plugs the Tree-mode hooks into svc (TreeView, TreeContext,
// ArchiveCount) and returns the Archives behind them. Invalid manifests are
// counted in svc.Metrics.InvalidArchives.
func Install(svc *coordinator.Service) *Archives {
	a := New(svc.Metrics)
	svc.TreeView = a.TreeView
	svc.TreeContext = a.TreeContext
	svc.ArchiveCount = a.Count
	return a
}

// Index returns the archive index of v's tree, building it when the tree
// or its length changed since the last call for v's file. Errors are I/O
// errors reading manifest lines (store.ErrFileChanged when the file was
// rewritten after the last sync).
func (a *Archives) Index(v *store.View) (*Index, error) {
	if v.Tree == nil {
		return &Index{bySeq: map[int]int{}, boundary: map[int]bool{}}, nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.byPath[v.Path]
	if c == nil || c.tree != v.Tree {
		c = &cached{tree: v.Tree, data: map[int]rawAt{}, sha: map[int]shaAt{}}
		a.byPath[v.Path] = c
	}
	if c.idx != nil && c.n == v.Tree.Len() {
		return c.idx, nil
	}
	t := v.Tree
	idx, err := Build(t, func(seq int) (json.RawMessage, error) {
		e := &t.Entries[seq]
		if r, ok := c.data[seq]; ok && r.id == e.ID && r.off == e.Offset {
			return r.raw, nil
		}
		_, d, err := v.Decode(seq)
		if err != nil {
			return nil, err
		}
		c.data[seq] = rawAt{id: e.ID, off: e.Offset, raw: d.Data}
		return d.Data, nil
	})
	if err != nil {
		return nil, err
	}
	c.idx, c.n = idx, t.Len()
	for i := range idx.Manifests {
		m := &idx.Manifests[i]
		if m.Valid {
			continue
		}
		key := v.Path + "\x00" + m.EntryID
		if a.counted[key] {
			continue
		}
		a.counted[key] = true
		if a.metrics != nil {
			a.metrics.InvalidArchives.WithLabelValues(m.Reasons[0]).Inc()
		}
	}
	return idx, nil
}

// summarySHA returns the hex SHA-256 of the summary text of the
// branch_summary at seq (its `summary` string, UTF-8), cached per entry.
func (a *Archives) summarySHA(v *store.View, seq int) (string, error) {
	e := &v.Tree.Entries[seq]
	a.mu.Lock()
	c := a.byPath[v.Path]
	if c != nil && c.tree == v.Tree {
		if s, ok := c.sha[seq]; ok && s.id == e.ID && s.off == e.Offset {
			a.mu.Unlock()
			return s.sha, nil
		}
	}
	a.mu.Unlock()
	_, d, err := v.Decode(seq)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256([]byte(d.Summary))
	h := hex.EncodeToString(sum[:])
	a.mu.Lock()
	if c := a.byPath[v.Path]; c != nil && c.tree == v.Tree {
		c.sha[seq] = shaAt{id: e.ID, off: e.Offset, sha: h}
	}
	a.mu.Unlock()
	return h, nil
}

// Branch returns the Tree reading of b's branch (Index.Branch). The answer
// is shared with other requests for the same state of the file and the same
// leaf (it is cached next to the index): callers must not modify it.
func (a *Archives) Branch(b *coordinator.Branch) (*Branch, error) {
	idx, err := a.Index(b.V)
	if err != nil {
		return nil, err
	}
	key := branchAt{idx: idx, leaf: b.Leaf, items: len(b.V.Items), bytes: b.V.Bytes, rules: b.Target.Rules()}
	same := func(e branchAt) bool {
		return e.idx == key.idx && e.leaf == key.leaf && e.items == key.items && e.bytes == key.bytes && e.rules == key.rules
	}
	a.mu.Lock()
	if c := a.byPath[b.V.Path]; c != nil && c.tree == b.V.Tree {
		for _, e := range c.branches {
			if same(e) {
				a.mu.Unlock()
				return e.br, nil
			}
		}
	}
	a.mu.Unlock()
	key.br = idx.BranchWith(b.V.Tree, b.Seqs, func(scope []int) history.RefFunc { return b.V.Refs(scope, key.rules) })
	a.mu.Lock()
	if c := a.byPath[b.V.Path]; c != nil && c.tree == b.V.Tree && c.idx == idx {
		// Answers over an older index are never asked for again.
		keep := []branchAt{key}
		for _, e := range c.branches {
			if e.idx == idx && !same(e) && len(keep) < maxBranches {
				keep = append(keep, e)
			}
		}
		c.branches = keep
	}
	a.mu.Unlock()
	return key.br, nil
}

// TreeView is the coordinator's TreeView hook: the history view of b's
// branch, its windows as Index.Branch builds them (archived windows, then
// the current one) and item texts from the store.
func (a *Archives) TreeView(b *coordinator.Branch, agent string) (*history.View, error) {
	br, err := a.Branch(b)
	if err != nil {
		return nil, err
	}
	return &history.View{Agent: agent, Windows: br.Windows, Texts: b.V.Texts()}, nil
}

// TreeContext is the coordinator's TreeContext hook. It sets
// out.HiddenSummaries to the signatures of the summaries of the branch's
// archives (Branch.Archives: valid manifests whose manifest entry and
// summary are both on the branch), in branch order: summary entry id,
// fromId, hex SHA-256 of the summary text, the summary's timestamp, the
// manifest entry id and the window id (SEED "Filtering" step 4). Manual
// summaries, summaries of other extensions and summaries of invalid
// manifests are never listed, so they stay in the provider context. It
// sets out.NeedsBoundary by Branch.NeedsBoundary; out.Window and
// out.BoundaryEntryID keep naming the latest boundary on the branch, the
// identity a fresh boundary continues from.
func (a *Archives) TreeContext(b *coordinator.Branch, out *coordinator.ContextAnswer) error {
	br, err := a.Branch(b)
	if err != nil {
		return err
	}
	out.HiddenSummaries = make([]coordinator.HiddenSummary, 0, len(br.Archives))
	for _, m := range br.Archives {
		se := &b.V.Tree.Entries[m.SummarySeq]
		sha, err := a.summarySHA(b.V, m.SummarySeq)
		if err != nil {
			return err
		}
		out.HiddenSummaries = append(out.HiddenSummaries, coordinator.HiddenSummary{
			EntryID: se.ID, FromID: se.FromID(), SummarySHA: sha, Timestamp: se.Timestamp,
			ManifestID: m.EntryID, WindowID: m.Data.WindowID,
		})
	}
	out.NeedsBoundary = br.NeedsBoundary()
	return nil
}

// Count is the coordinator's ArchiveCount hook: the number of valid
// manifests in v's file and one problem {reason "invalid_archive", detail
// "<manifest entry id>: <reason>[, <reason>…]"} per invalid manifest, in
// file order. An index that cannot be built (I/O error) gives one problem
// {reason "invalid_archive", detail "index: <error>"}.
func (a *Archives) Count(v *store.View) (int, []coordinator.SessionProblem) {
	if v.Tree == nil {
		return 0, nil
	}
	idx, err := a.Index(v)
	if err != nil {
		return 0, []coordinator.SessionProblem{{Reason: "invalid_archive", Detail: "index: " + err.Error()}}
	}
	var probs []coordinator.SessionProblem
	for i := range idx.Manifests {
		m := &idx.Manifests[i]
		if !m.Valid {
			probs = append(probs, coordinator.SessionProblem{Reason: "invalid_archive", Detail: m.EntryID + ": " + strings.Join(m.Reasons, ", ")})
		}
	}
	return idx.Valid(), probs
}
