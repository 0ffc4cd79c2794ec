package coordinator

// The derive function of each kind the Service's memo holds (memo.go),
// and the requests' ways in: the branch of a leaf, its Local windows and
// their search order, the /branch projection, /context's pairing list,
// search_contents answers, modeHint's marks and the note state. Each
// derives from one view; the kinds that grow with the file (branch,
// windows, pairing list, marks, note state) start from a stored payload
// of an earlier state of the same tree when one is a prefix of what they
// derive.

import (
	"errors"
	"slices"
	"sync"
	"weak"

	"contextd/history"
	"contextd/notes"
	"contextd/session"
	"contextd/store"
)

// derivedFrom is what a payload derived from a branch was derived from: the
// view's tree (a snapshot), its item count and the branch. A later view
// of the same tree Lineage, no shorter, whose branch starts with seqs,
// holds the same entries and items for seqs (the tree and item table are
// append-only while the Lineage stays), so the payload is a base for
// extending to that branch.
type derivedFrom struct {
	tree  *session.Tree
	items int
	seqs  []int
}

// prefixOf reports whether o's branch is a prefix of b's (of length at
// most max(len(b.Seqs)-strict, 0)) in an earlier or the same state of b's
// tree: strict 1 asks for a shorter branch, 0 allows the same.
func (o *derivedFrom) prefixOf(b *Branch, strict int) bool {
	tr := b.V.Tree
	return o.tree.Lineage() == tr.Lineage() && o.tree.Len() <= tr.Len() && o.items <= len(b.V.Items) &&
		len(o.seqs) <= len(b.Seqs)-strict && slices.Equal(o.seqs, b.Seqs[:len(o.seqs)])
}

// branchVal is the branch of a leaf (kindBranch). seqs is shared,
// read-only up to its length; tail is the claim on its array's spare
// capacity (nil: none may be written).
type branchVal struct {
	tree  *session.Tree // the view's tree
	seqs  []int
	tail  *arrayTail
	cycle bool
	max   int // the largest of seqs (-1: none)
	// boundary is the index in seqs of the last boundary entry (-1:
	// none): /context reads it on every call.
	boundary int
}

// withCachedBranch is withBranch with the branch from the Service's memo:
// the requests that run before every model call (/context) and the
// history reads then cost no walk of the whole branch when a request
// already derived it for the same state of the session and leaf, or the
// branch of the leaf's parent for an earlier state of the same tree.
// b.Seqs is then shared, read-only, with other requests.
func (s *Service) withCachedBranch(t *Target, leafID string, fn func(b *Branch) error) error {
	if s.memo == nil {
		return s.withBranch(t, leafID, fn)
	}
	return t.read(func(v *store.View) error {
		if err := usable(v); err != nil {
			return err
		}
		leaf := leafID
		if leaf == "" {
			leaf = v.Tree.Leaf()
		}
		k, ok := keyOf(t, v, leaf, kindBranch)
		if !ok {
			return branchIn(t, v, leafID, fn)
		}
		bv, err := memoized(s.memo, k, func() (*branchVal, int, error) { return deriveBranch(s.memo, k, v.Tree) })
		var unk *session.ErrUnknownLeaf
		if errors.As(err, &unk) {
			return unknownLeaf(leafID, t.SessionID)
		}
		if err != nil {
			return err
		}
		return fn(&Branch{V: v, Leaf: leaf, Seqs: bv.seqs, Cycle: bv.cycle, Target: t, boundary: &bv.boundary})
	})
}

// deriveBranch derives kindBranch: the branch of k.leaf in tr, as the
// stored branch of its parent plus the leaf when the parent's branch is
// stored for an earlier state of the same tree (the usual case right
// after Pi appended an entry; extendBranch), else Tree.Branch. Errors:
// Tree.Branch's (*session.ErrUnknownLeaf).
func deriveBranch(m *memo, k memoKey, tr *session.Tree) (*branchVal, int, error) {
	if bv, ok := extendBranch(m, k, tr); ok {
		return bv, memoSize[int](len(bv.seqs)), nil
	}
	seqs, cycle, err := tr.Branch(k.leaf)
	if err != nil {
		return nil, 0, err
	}
	mx := -1
	if len(seqs) > 0 {
		mx = slices.Max(seqs)
	}
	return &branchVal{tree: tr, seqs: seqs, cycle: cycle, max: mx, boundary: lastBoundary(tr, seqs)}, memoSize[int](len(seqs)), nil
}

// extendBranch returns the branch of k's leaf as the stored branch of its
// parent plus the leaf. It declines (false) unless the leaf comes after
// every entry of that branch, so that the leaf cannot already be on it (a
// parent cycle) and the walk from the leaf is exactly the leaf, then the
// parent's walk. The result shares the parent branch's array when it
// claims its tail (appendOwned), else copies.
func extendBranch(m *memo, k memoKey, tr *session.Tree) (*branchVal, bool) {
	ls, ok := tr.Lookup(k.leaf)
	if !ok {
		return nil, false
	}
	parent := tr.ParentID(ls)
	if parent == "" {
		return nil, false
	}
	var base *branchVal
	for _, c := range memoBases[*branchVal](m, k, kindBranch) {
		b := c.val
		if c.key.leaf == parent && !b.cycle && b.tree.Lineage() == tr.Lineage() && b.tree.Len() <= tr.Len() &&
			(base == nil || b.tree.Len() > base.tree.Len()) {
			base = b
		}
	}
	if base == nil || len(base.seqs) == 0 || ls <= base.max {
		return nil, false
	}
	seqs, tail := appendOwned(base.seqs, base.tail, ls)
	bound := base.boundary
	if tr.IsBoundary(ls) {
		bound = len(seqs) - 1
	}
	return &branchVal{tree: tr, seqs: seqs, tail: tail, max: ls, boundary: bound}, true
}

// windowsVal is history.LocalWindows of a branch (kindWindows).
type windowsVal struct {
	derivedFrom
	wins []history.Window
}

// localWindows returns history.LocalWindows of b's branch. The windows are
// shared, read-only, with other requests: callers must not modify them.
//
// They come from the Service's memo when a request already derived them for
// the same state of the session and the same leaf (deriveWindows).
func (s *Service) localWindows(b *Branch) []history.Window {
	k, ok := keyOf(b.Target, b.V, b.Leaf, kindWindows)
	if !ok || s.memo == nil {
		return history.LocalWindows(b.V.Tree, b.Seqs, b.Refs())
	}
	wv, _ := memoized(s.memo, k, func() (*windowsVal, int, error) {
		wv := deriveWindows(s.memo, k, b)
		size := memoSize[history.Window](len(wv.wins))
		for i := range wv.wins {
			size += memoSize[packedItemSize](wv.wins[i].Len())
		}
		return wv, size, nil
	})
	return wv.wins
}

// packedItemSize stands for one item of a Local window in memoSize (a
// history packedItem: three int32 and two uint32).
type packedItemSize [20]byte

// deriveWindows derives kindWindows: the windows of b's branch, by
// extending the stored windows of the longest earlier branch of the same
// tree that is a prefix of this one (the usual case after Pi appended
// entries), else from scratch.
//
// Context edits (Branch.Refs) change how earlier items read: windows are
// extended only when the new part of the branch holds no context_edit,
// else built again from scratch; so is a branch whose prefix had no
// boundary (a boundary in the new part may adopt its entries,
// history.LocalWindows).
func deriveWindows(m *memo, k memoKey, b *Branch) *windowsVal {
	wv := &windowsVal{derivedFrom: derivedFrom{tree: b.V.Tree, items: len(b.V.Items), seqs: b.Seqs}}
	var base *windowsVal
	for _, c := range memoBases[*windowsVal](m, k, kindWindows) {
		if w := c.val; (base == nil || len(w.seqs) > len(base.seqs)) && w.prefixOf(b, 0) {
			base = w
		}
	}
	ref := b.Refs()
	if base == nil || len(base.wins) == 0 {
		wv.wins = history.LocalWindows(b.V.Tree, b.Seqs, ref)
		return wv
	}
	for _, sq := range b.Seqs[len(base.seqs):] {
		if b.V.Tree.Type(sq) == session.TypeContextEdit {
			wv.wins = history.LocalWindows(b.V.Tree, b.Seqs, ref)
			return wv
		}
	}
	wv.wins = history.ExtendLocalWindows(base.wins, b.V.Tree, b.Seqs[len(base.seqs):], ref)
	return wv
}

// localSearchOrder returns history.SearchOrder(view) for the Local view of
// b (kindOrder: derived on the first unfiltered search of a state of the
// session). Shared, read-only.
func (s *Service) localSearchOrder(b *Branch, view *history.View) history.ItemList {
	k, ok := keyOf(b.Target, b.V, b.Leaf, kindOrder)
	if !ok || s.memo == nil {
		return nil
	}
	o, _ := memoized(s.memo, k, func() (history.ItemList, int, error) {
		o := history.SearchOrder(view)
		return o, memoSize[int64](o.Len()), nil
	})
	return o
}

// projection returns Tree.Project of b's branch under rules (kindProjection:
// what /branch lists), shared, read-only.
func (s *Service) projection(b *Branch, rules session.Rules) []session.ContextMessage {
	project := func() []session.ContextMessage { return b.V.Tree.Project(b.Seqs, rules) }
	k, ok := keyOf(b.Target, b.V, b.Leaf, kindProjection)
	if !ok || s.memo == nil || rules != k.rules {
		return project()
	}
	msgs, _ := memoized(s.memo, k, func() ([]session.ContextMessage, int, error) {
		msgs := project()
		return msgs, memoSize[session.ContextMessage](len(msgs)), nil
	})
	return msgs
}

// pairsVal is /context's pairing list of a branch (kindPairs), and the
// pairing rule's walk of it (pairing).
type pairsVal struct {
	derivedFrom
	pc *pairCache

	mu sync.Mutex
	// walk is planPairing of pc.pairs (nil until a /context asks);
	// base, until then, that of the list pc extends (nil: none kept),
	// for the walk to go on from.
	walk, base *pairingState
}

// pairing returns planPairing of pv's list from start, shared,
// read-only: walked once per list and start, and, for a list extended
// from another whose walk is kept, over the appended messages only.
func (pv *pairsVal) pairing(start int) *pairingState {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	if pv.walk == nil || pv.walk.start != start {
		pv.walk, pv.base = planPairing(pv.pc.pairs, start, pv.base), nil
	}
	return pv.walk
}

// derivePairs derives kindPairs: the pairing list of b's branch from
// window from, by extending the stored list of the longest shorter branch
// of the same tree that is a prefix of this one by the messages of the
// entries added (extendPairs; the pairing walk of that list, when kept,
// goes on over them), else from the whole branch (buildPairs).
func derivePairs(m *memo, k memoKey, b *Branch, rules session.Rules) (*pairsVal, int, error) {
	pv := &pairsVal{derivedFrom: derivedFrom{tree: b.V.Tree, items: len(b.V.Items), seqs: b.Seqs}}
	var base *pairsVal
	for _, c := range memoBases[*pairsVal](m, k, kindPairs) {
		if p := c.val; c.key.from == k.from && (base == nil || len(p.seqs) > len(base.seqs)) && p.prefixOf(b, 1) {
			base = p
		}
	}
	var err error
	ok := false
	if base != nil {
		pv.pc, ok, err = extendPairs(b, rules, base.pc, b.Seqs[len(base.seqs):])
	}
	if ok {
		base.mu.Lock()
		pv.base = base.walk
		base.mu.Unlock()
	}
	if !ok && err == nil {
		pv.pc, err = buildPairs(b, rules, k.from)
	}
	if err != nil {
		return nil, 0, err
	}
	return pv, memoSize[PairMessage](len(pv.pc.pairs)), nil
}

// cachedSearch returns the search_contents answer of sk for b (kindSearch):
// stored, or computed by run once while concurrent requests for the same
// answer wait for it. Errors are not kept. Callers get their own copy of
// the items.
func (s *Service) cachedSearch(b *Branch, sk searchKey, run func() (history.ItemsResult, error)) (history.ItemsResult, error) {
	k, ok := keyOf(b.Target, b.V, b.Leaf, kindSearch)
	if !ok || s.memo == nil {
		return run()
	}
	k.search = sk
	res, err := memoized(s.memo, k, func() (history.ItemsResult, int, error) {
		res, err := run()
		size := len(sk.query)
		for _, it := range res.Items {
			size += 128 + len(it.WindowID) + len(it.ItemID) + len(it.TruncatedContent)
		}
		return res, size, err
	})
	if err != nil {
		return history.ItemsResult{}, err
	}
	return history.ItemsResult{Source: res.Source, Items: slices.Clone(res.Items)}, nil
}

// marksOf returns modeHint's marks of tr, the tree of sess's view of
// generation gen (kindMarks, keyed by the session and generation alone): extended from the stored marks of an
// earlier state of the same tree when there are some, so that a request
// after Pi appended entries reads only those (a first scan of a 1 GiB
// session reads a quarter-million entries).
func marksOf(m *memo, sess *store.Session, gen uint64, tr *session.Tree) treeMarks {
	k := memoKey{sess: sess, gen: gen, kind: kindMarks}
	mk, _ := memoized(m, k, func() (treeMarks, int, error) {
		var out treeMarks
		lineage := weak.Make(tr.Lineage())
		for _, c := range memoBases[treeMarks](m, k, kindMarks) {
			if b := c.val; b.tree == lineage && b.n <= tr.Len() && b.n > out.n {
				out = b
			}
		}
		out.scan(tr)
		return out, memoSize[treeMarks](1), nil
	})
	return mk
}

// noteVal is the note state of a branch (kindNotes), read-only once
// stored.
type noteVal struct {
	derivedFrom
	st *notes.State
}

// cachedNoteState is noteState(b) through the Service's memo: the same
// state of the session and leaf reuses it, and a branch that extends a
// stored one (Pi appended entries) applies only the note entries after
// it to a copy of its state (deriveNotes). Before, every notes operation
// and every settle replayed the whole branch's note entries: 79 ms on the
// 512 MiB bench session's 2,554 (docs/benchmarks.md, "Notes and settle on
// a long session"). The state is shared, read-only, with other requests:
// callers must not Apply to it (Clone first).
func (s *Service) cachedNoteState(b *Branch) (*notes.State, error) {
	k, ok := keyOf(b.Target, b.V, b.Leaf, kindNotes)
	if !ok || s.memo == nil {
		return noteState(b)
	}
	nv, err := memoized(s.memo, k, func() (*noteVal, int, error) {
		nv, err := deriveNotes(s.memo, k, b)
		if err != nil {
			return nil, 0, err
		}
		return nv, memoSize[noteVal](1) + nv.st.SnapshotBytes(), nil
	})
	if err != nil {
		return nil, err
	}
	return nv.st, nil
}

// deriveNotes derives kindNotes: the note state of b's branch, from the
// stored state of the longest earlier branch of the same tree that is a
// prefix of this one, with the note entries after it applied to a copy
// (replayNotes, which starts again from an empty state at a snapshot),
// else from scratch (noteState).
func deriveNotes(m *memo, k memoKey, b *Branch) (*noteVal, error) {
	nv := &noteVal{derivedFrom: derivedFrom{tree: b.V.Tree, items: len(b.V.Items), seqs: b.Seqs}}
	var base *noteVal
	for _, c := range memoBases[*noteVal](m, k, kindNotes) {
		if v := c.val; (base == nil || len(v.seqs) > len(base.seqs)) && v.prefixOf(b, 0) {
			base = v
		}
	}
	var err error
	if base == nil {
		nv.st, err = noteState(b)
		return nv, err
	}
	nv.st, err = replayNotes(b, base.st.Clone(), b.Seqs[len(base.seqs):])
	return nv, err
}
