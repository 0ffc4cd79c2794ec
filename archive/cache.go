package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sync"

	"contextd/history"
	"contextd/session"
	"contextd/store"
)

// Archives builds and caches the archive index of each session file and
// the Tree reading of a branch (Branch). It is safe for concurrent use.
//
// The cache holds, per session file, the last index built (valid for one
// tree and one tree length), the decoded `data` of each manifest entry and
// the SHA-256 of each summary text, both keyed by entry Seq and checked
// against the entry's id and file offset. Any change of the tree length
// rebuilds the index from the tree (Build), so an index is always the one
// a cold build of the same entries gives.
//
// Lock order: a file's cached.build, then mu. mu is held only for short
// reads and writes of the maps, never while entries are decoded or an
// index is built, so a build of one large file holds off no request of
// another file.
type Archives struct {
	invalid func(reason string) // called once per invalid manifest (nil: none)

	mu      sync.Mutex
	byPath  map[string]*cached // at most maxFiles, the least recently indexed dropped
	clock   uint64
	counted map[string]bool // path + "\x00" + manifest id: invalid manifests already counted
}

// maxFiles bounds the session files whose archive indexes are kept: a
// file not read for that many others' reads (deleted, renamed, idle) no
// longer holds its index, manifests and branch answers in memory.
const maxFiles = 32

type cached struct {
	// build is held while an index of the file is built (Index): one
	// build per file at a time, the others wait for it and take its
	// result. It guards data; the other fields are under Archives.mu.
	build sync.Mutex
	used  uint64        // Archives.clock at the last Index of the file
	tree  *session.Tree // the Lineage of the views' trees (entries are read from the view's)
	n     int
	idx   *Index
	data  map[int]rawAt
	sha   map[int]shaAt
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

// New returns an empty Archives. invalid, when not nil, is called once
// per invalid manifest the first time an index of its file lists it, with
// the manifest's first reason (Manifest.Reasons[0]); callers count them.
func New(invalid func(reason string)) *Archives {
	return &Archives{invalid: invalid, byPath: map[string]*cached{}, counted: map[string]bool{}}
}

// Index returns the archive index of v's tree, building it when the tree
// or its length changed since the last call for v's file. Errors are I/O
// errors reading manifest lines (store.ErrFileChanged when the file was
// rewritten after the last sync).
func (a *Archives) Index(v *store.View) (*Index, error) {
	if v.Tree == nil {
		return &Index{bySeq: map[int]int{}, boundary: map[int]bool{}}, nil
	}
	c, idx := a.entry(v)
	if idx != nil {
		return idx, nil
	}
	c.build.Lock()
	defer c.build.Unlock()
	if beforeBuild != nil {
		beforeBuild(v.Path)
	}
	a.mu.Lock()
	if c.idx != nil && c.n == v.Tree.Len() {
		// Built by the request this one waited for.
		idx := c.idx
		a.mu.Unlock()
		return idx, nil
	}
	a.mu.Unlock()
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
	a.mu.Lock()
	defer a.mu.Unlock()
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
		if a.invalid != nil {
			a.invalid(m.Reasons[0])
		}
	}
	return idx, nil
}

// beforeBuild, when set (tests), runs once Index holds a file's build
// lock, before it builds the file's index.
var beforeBuild func(path string)

// entry returns the cached state of v's file (a new one when the file
// was rewritten: another tree), marked as used, and its index when it is
// the one of v's tree length (nil: to build).
func (a *Archives) entry(v *store.View) (*cached, *Index) {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.byPath[v.Path]
	if c == nil || c.tree != v.Tree.Lineage() {
		c = &cached{tree: v.Tree.Lineage(), data: map[int]rawAt{}, sha: map[int]shaAt{}}
		a.byPath[v.Path] = c
	}
	a.clock++
	c.used = a.clock
	a.prune()
	if c.idx != nil && c.n == v.Tree.Len() {
		return c, c.idx
	}
	return c, nil
}

// SummarySHA returns the hex SHA-256 of the summary text of the
// branch_summary at seq (its `summary` string, UTF-8), cached per entry.
func (a *Archives) SummarySHA(v *store.View, seq int) (string, error) {
	e := &v.Tree.Entries[seq]
	a.mu.Lock()
	c := a.byPath[v.Path]
	if c != nil && c.tree == v.Tree.Lineage() {
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
	if c := a.byPath[v.Path]; c != nil && c.tree == v.Tree.Lineage() {
		c.sha[seq] = shaAt{id: e.ID, off: e.Offset, sha: h}
	}
	a.mu.Unlock()
	return h, nil
}

// Branch returns the Tree reading of the branch of leaf in v (Index.Branch):
// seqs are the branch's entry seqs, root first, and rules the Pi rules its
// context edits apply under. The answer
// is shared with other requests for the same state of the file and the same
// leaf (it is cached next to the index): callers must not modify it.
func (a *Archives) Branch(v *store.View, leaf string, seqs []int, rules session.Rules) (*Branch, error) {
	idx, err := a.Index(v)
	if err != nil {
		return nil, err
	}
	key := branchAt{idx: idx, leaf: leaf, items: len(v.Items), bytes: v.Bytes, rules: rules}
	same := func(e branchAt) bool {
		return e.idx == key.idx && e.leaf == key.leaf && e.items == key.items && e.bytes == key.bytes && e.rules == key.rules
	}
	a.mu.Lock()
	if c := a.byPath[v.Path]; c != nil && c.tree == v.Tree.Lineage() {
		for _, e := range c.branches {
			if same(e) {
				a.mu.Unlock()
				return e.br, nil
			}
		}
	}
	a.mu.Unlock()
	key.br = idx.BranchWith(v.Tree, seqs, func(scope []int) history.RefFunc { return v.Refs(scope, key.rules) })
	a.mu.Lock()
	if c := a.byPath[v.Path]; c != nil && c.tree == v.Tree.Lineage() && c.idx == idx {
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

// prune drops the least recently indexed files beyond maxFiles (a.mu
// held).
func (a *Archives) prune() {
	for len(a.byPath) > maxFiles {
		oldest := ""
		for p, c := range a.byPath {
			if oldest == "" || c.used < a.byPath[oldest].used {
				oldest = p
			}
		}
		delete(a.byPath, oldest)
	}
}
