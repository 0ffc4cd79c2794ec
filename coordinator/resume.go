package coordinator

import (
	"fmt"
	"weak"

	"contextd"
	"contextd/history"
	"contextd/notes"
	"contextd/session"
	"contextd/store"
)

// The window chain of a branch without a current boundary, recovered from
// the session file (docs/design.md §4:
// "rebuild archive and notes indexes from JSONL; restore the latest active
// boundary identity"). The file is the source of truth; contextd's state
// database is not consulted, so this works with an empty or new state
// directory and for rollovers another process ran.

// Resume is where the window chain of a branch continues when the branch
// has no current window boundary.
type Resume struct {
	// Window is the identity the chain continues from: the window the
	// last rollover on the branch archived, or, on a broken parent chain,
	// the last window before the break. The next boundary opens
	// nextIdentity(Window).
	Window WindowIdentity
	// BoundaryEntryID is Window's boundary entry (not on the branch).
	BoundaryEntryID string
	// SummaryEntryID is the rollover's branch summary on the branch; ""
	// for a broken parent chain.
	SummaryEntryID string
	// Missing lists the customTypes of the rollover entries that are not
	// on the branch after the summary, in append order (manifest, note
	// snapshot, boundary); nil for a broken parent chain, and when the
	// file holds a boundary continuing Window elsewhere (the rollover
	// completed and the user navigated back to its summary).
	Missing []string
	// Recovery is the "Previous window history IDs" of the thread hint of
	// the next boundary: the archived window, its summary item and its
	// latest user items.
	Recovery *notes.Recovery
	// Broken, when set, is the problem of a branch whose root entry names a
	// parent that is not in the file.
	Broken *SessionProblem
	// notesFrom is the branch whose note state the next boundary's hint
	// uses: the active branch when it holds the rollover's note snapshot,
	// else the archived leaf's branch (the state settle would have
	// materialized).
	notesFrom []int
}

// resumeOf finds where b's window chain continues when b has no current
// window, or nil when it has one (or holds nothing to continue from: a new
// session). Two cases:
//
//   - A rollover cut short after navigation (Tree): walking the branch
//     back from the leaf, a branch_summary S comes before any window
//     boundary, and the latest boundary on the branch of S.fromId (the
//     archived leaf) has S's parentId as its own parentId (navigateTree to
//     a boundary lands on its parent; docs/design.md §5.3 step 3). Window is
//     that boundary's identity; the manifest and note snapshot after S on
//     the branch, if there, are noted, and what is absent is Missing.
//   - A broken parent chain: the branch's root entry names a parentId
//     that is not in the file (a torn append: a partial line fused with
//     the next entry). Broken names the entry, its line and the missing
//     parent; Window is the latest window boundary in file order before
//     that entry, so the identity is not reset silently.
//
// Cost: one backward walk of the branch (stopping at the first boundary)
// and, per branch_summary met, one branch walk from its fromId.
func (s *Service) resumeOf(b *Branch) *Resume {
	tr := b.V.Tree
	if len(b.Seqs) == 0 {
		return nil
	}
	for i := len(b.Seqs) - 1; i >= 0; i-- {
		sq := b.Seqs[i]
		if tr.IsBoundary(sq) {
			return nil
		}
		if tr.Type(sq) != session.TypeBranchSummary {
			continue
		}
		if e := tr.Entry(sq); e.FromID() != "" {
			if r := rolloverCut(b, i); r != nil {
				return r
			}
		}
	}
	root := tr.Entry(b.Seqs[0])
	if root.ParentID == "" || tr.Get(root.ParentID) != nil || b.Cycle {
		return nil
	}
	r := &Resume{Broken: &SessionProblem{Line: root.Line, Reason: "missing_parent",
		Detail: fmt.Sprintf("entry %s (line %d) names parent %s, which is not in the file (a torn or damaged line?): the branch of leaf %s starts there; contextd keeps the window of the last boundary before it", root.ID, root.Line, root.ParentID, b.Leaf)}}
	for sq := root.Seq - 1; sq >= 0; sq-- {
		if e := tr.Entry(sq); e.IsBoundary() {
			r.Window, r.BoundaryEntryID = identityOf(&e), e.ID
			r.Recovery = &notes.Recovery{WindowID: e.Window.CurrentWindowID}
			return r
		}
	}
	return r
}

// rolloverCut reads the branch_summary at b.Seqs[i] as a rollover cut
// short (see resumeOf), or returns nil when it is not one.
func rolloverCut(b *Branch, i int) *Resume {
	tr := b.V.Tree
	se := tr.Entry(b.Seqs[i])
	from, cycle, err := tr.Branch(se.FromID())
	if err != nil || cycle {
		return nil
	}
	bi := -1
	for j := len(from) - 1; j >= 0; j-- {
		if tr.Entry(from[j]).IsBoundary() {
			bi = j
			break
		}
	}
	if bi < 0 {
		return nil
	}
	be := tr.Entry(from[bi])
	if be.ParentID != se.ParentID {
		return nil // a manual /tree summary, not a rollover's navigation to a boundary
	}
	r := &Resume{Window: identityOf(&be), BoundaryEntryID: be.ID, SummaryEntryID: se.ID, notesFrom: from}
	// The rollover's entries follow the summary in this order (docs/design.md
	// §5.3 step 4); the boundary is absent, or resumeOf would have stopped.
	want := []string{session.CustomTypeTreeArchive, session.CustomTypeNoteSnapshot}
	k := 0
	for _, sq := range b.Seqs[i+1:] {
		e := tr.Entry(sq)
		if k < len(want) && e.Type == session.TypeCustom && e.CustomType == want[k] {
			if want[k] == session.CustomTypeNoteSnapshot {
				r.notesFrom = b.Seqs
			}
			k++
		}
	}
	r.Missing = append(append([]string(nil), want[k:]...), session.CustomTypeWindow)
	for j := range tr.Len() {
		if e := tr.Entry(j); e.IsBoundary() && e.Window.PreviousWindowID == be.Window.CurrentWindowID && e.Window.FirstWindowID == be.Window.FirstWindowID {
			// The rollover completed on another branch: the user navigated
			// back to its summary. Nothing is incomplete.
			r.Missing = nil
			break
		}
	}
	r.Recovery = &notes.Recovery{WindowID: be.Window.CurrentWindowID, SummaryItemID: se.ID}
	if wins := history.LocalWindows(tr, from, b.V.Ref); len(wins) > 0 {
		r.Recovery.UserItemIDs = history.UserItemIDs(wins[len(wins)-1], notes.HintUserItemIDs)
	}
	return r
}

// resumeHint is the thread hint of the boundary that continues r: the note
// state r names and r's recovery ids.
func resumeHint(b *Branch, r *Resume) (string, error) {
	nb := b
	if r.notesFrom != nil {
		nb = &Branch{V: b.V, Leaf: b.Leaf, Seqs: r.notesFrom, Target: b.Target}
	}
	st, err := noteState(nb)
	if err != nil {
		return "", err
	}
	return notes.ThreadHint(st, r.Recovery), nil
}

// modeHint is the mode an unregistered session is served in, recovered
// from its file (the registration may have been lost with the state
// database): ModeTree when the file holds a Tree archive manifest or a
// note snapshot (only Tree rollovers append them); ModeLocal when the
// default is off but the file holds a window boundary (the session was
// managed); otherwise def. A Tree session before its first rollover holds
// only boundaries and so keeps def.
func modeHint(v *store.View, def contextd.Mode) contextd.Mode {
	return modeHintFrom(v, def, nil, nil)
}

// treeMarks is what modeHint reads of a tree's first n entries: whether
// one is a Tree archive or note snapshot, whether one is a boundary.
type treeMarks struct {
	tree              weak.Pointer[session.Tree] // the Lineage scanned (held weakly: a cache of marks keeps no tree alive)
	n                 int
	archive, boundary bool
}

// scan extends m over the entries of tr from m.n on (from 0 when m is for
// another tree). A tree keeps its Lineage only while entries are
// appended to it (a rewrite builds a new one).
func (m *treeMarks) scan(tr *session.Tree) {
	if lineage := weak.Make(tr.Lineage()); m.tree != lineage || m.n > tr.Len() {
		*m = treeMarks{tree: lineage}
	}
	for i := m.n; i < tr.Len() && !m.archive; i++ {
		e := tr.Entry(i)
		if e.Type == session.TypeCustom && (e.CustomType == session.CustomTypeTreeArchive || e.CustomType == session.CustomTypeNoteSnapshot) {
			m.archive = true
		}
		m.boundary = m.boundary || e.IsBoundary()
	}
	m.n = tr.Len()
}

// modeHintFrom is modeHint with the scan of the tree kept in the memo m
// (nil: none) for sess, v's session (marksOf), so that a request after Pi
// appended entries reads only those.
func modeHintFrom(v *store.View, def contextd.Mode, m *memo, sess *store.Session) contextd.Mode {
	if v.Tree == nil || def == contextd.ModeRemote {
		return def
	}
	if sess == nil {
		m = nil
	}
	marks := marksOf(m, sess, v.Generation(), v.Tree)
	if marks.archive {
		return contextd.ModeTree
	}
	if marks.boundary && def == contextd.ModeOff {
		return contextd.ModeLocal
	}
	return def
}
