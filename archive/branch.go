package archive

import (
	"slices"

	"contextd/history"
	"contextd/session"
)

// Branch is the Tree-mode reading of one active branch.
type Branch struct {
	// Archives are the valid manifests whose manifest entry and summary
	// entry are both on the branch, in branch order of the manifest entry.
	// Their summaries are the ones Tree mode hides (docs/design.md §4) and
	// their windows are the branch's archived windows.
	Archives []*Manifest
	// Windows are the history windows of the branch, in branch order (see
	// Index.Branch).
	Windows []history.Window
	// Current is the Seq of the boundary of the window still open at the
	// end of the branch, -1 when there is none.
	Current int
	// Stale is true when Current is the boundary of a window that a valid
	// manifest (anywhere in the file) archived: the leaf is inside an
	// archived interval, or continues from one, because the user navigated
	// there with /tree.
	Stale bool
	// Unresolved are the manifests whose manifest entry and summary are
	// both on the branch and whose only fault is ReasonArchivedLeafMissing,
	// in branch order: a copy Pi made with /clone or /fork holds the
	// active path only, and the archived entries may be in the file its
	// header names as parentSession (BranchResolved).
	Unresolved []*Manifest
}

// NeedsBoundary reports whether the branch needs a fresh window boundary
// before the next model call (docs/design.md §4: user navigation into an archived branch "initializes a
// fresh context boundary if required"). The rule: a Tree branch has a
// current window only when a window boundary follows the branch's last
// Tree cut (the last manifest of Archives) and that boundary's window was
// not itself archived. So NeedsBoundary is true when
//
//   - the branch has no boundary at all (a new session), or
//   - every boundary on it comes before its last Tree cut (the leaf sits
//     between a rollover's navigation and its commit, or a Local window
//     was cut by Tree archives), or
//   - the open window's boundary is the boundaryEntryId of a valid
//     manifest (Stale: the user navigated into an archived interval).
func (b *Branch) NeedsBoundary() bool { return b.Current < 0 || b.Stale }

// Branch reads the branch seqs (root to leaf) of t through x. ref gives an
// entry's history item in a window (store.View.Ref).
//
// Windows are built by one scan of the branch in order:
//
//   - the manifest entry of each of Archives adds an archived window, id
//     windowId, and closes the open window;
//   - a window boundary (session.Entry.IsBoundary) opens a window, id its
//     currentWindowId, as in Local mode (history.LocalWindows);
//   - every other entry that renders to an item joins the open window,
//     except the summaries of Archives (they belong to their archived
//     window); entries before the first boundary and after a Tree cut with
//     no boundary since belong to no window.
//
// For a branch Pi wrote in Tree mode this gives every archived window, in
// rollover order, then the current window (docs/design.md §4; docs/design.md
// §4).
//
// An archived window's items are its summary (role assistant, Summary
// true) followed by its archived entries (Manifest.Archived) that render
// to items, in chronological order. Window boundaries are never items, in
// archived windows as in Local ones: the archived interval starts with the
// window's own boundary, which the window's id already stands for.
//
// Only manifest-owned summaries are summary items (Summary true, searched
// first). Any other branch_summary — a manual /tree summary, one from
// another extension, one whose manifest is invalid — is an ordinary raw
// item (role assistant, Summary false) of the window that holds it, and
// never enters the archive index (docs/design.md §4).
func (x *Index) Branch(t *session.Tree, seqs []int, ref history.RefFunc) *Branch {
	return x.BranchWith(t, seqs, func([]int) history.RefFunc { return ref })
}

// BranchWith is Branch with the item references of each part taken from
// refs(scope): the current window's from refs(seqs), each archived
// window's from refs(its archived entries), so that the context edits Pi
// wrote on a path apply to the items of that path (store.View.Refs).
func (x *Index) BranchWith(t *session.Tree, seqs []int, refs func(scope []int) history.RefFunc) *Branch {
	return x.BranchResolved(t, seqs, refs, nil)
}

// BranchResolved is BranchWith where each manifest of resolved (by
// manifest seq; one of Branch.Unresolved) counts as a valid archive whose
// window is the one given: the archived window read from the parent
// session that holds its entries. Its summary is then hidden and owned
// like any archive's.
func (x *Index) BranchResolved(t *session.Tree, seqs []int, refs func(scope []int) history.RefFunc, resolved map[int]history.Window) *Branch {
	ref := refs(seqs)
	pos := make(map[int]int, len(seqs))
	for i, s := range seqs {
		pos[s] = i
	}
	out := &Branch{Current: -1}
	at := map[int]*Manifest{} // manifest seq → archive on the branch
	owned := map[int]bool{}   // summary seqs of Archives
	for i := range x.Manifests {
		m := &x.Manifests[i]
		_, okM := pos[m.Seq]
		_, okS := pos[m.SummarySeq]
		if !okM || !okS {
			continue
		}
		_, isResolved := resolved[m.Seq]
		switch {
		case m.Valid || isResolved:
			at[m.Seq] = m
			owned[m.SummarySeq] = true
		case len(m.Reasons) == 1 && m.Reasons[0] == ReasonArchivedLeafMissing:
			out.Unresolved = append(out.Unresolved, m)
		}
	}
	slices.SortFunc(out.Unresolved, func(a, b *Manifest) int { return pos[a.Seq] - pos[b.Seq] })
	open := -1
	var before []int // entries ahead of the first window (adoption)
	for _, s := range seqs {
		e := t.Entry(s)
		if m, ok := at[s]; ok {
			out.Archives = append(out.Archives, m)
			if w, ok := resolved[s]; ok {
				out.Windows = append(out.Windows, w)
			} else {
				out.Windows = append(out.Windows, archivedWindow(t, m, refs))
			}
			open, out.Current, before = -1, -1, nil
			continue
		}
		if e.IsBoundary() {
			out.Windows = append(out.Windows, history.Window{ID: e.Window.CurrentWindowID})
			open, out.Current = len(out.Windows)-1, s
			if len(out.Windows) == 1 {
				for _, a := range history.Adopted(t, before, e.Window.StartEntryID) {
					if r, ok := rawRef(a, e.Window.CurrentWindowID, ref); ok && !owned[a] {
						out.Windows[open].Items = append(out.Windows[open].Items, r)
					}
				}
			}
			before = nil
			continue
		}
		if len(out.Windows) == 0 {
			before = append(before, s)
			continue
		}
		if open < 0 || owned[s] {
			continue
		}
		if r, ok := rawRef(s, out.Windows[open].ID, ref); ok {
			out.Windows[open].Items = append(out.Windows[open].Items, r)
		}
	}
	out.Stale = out.Current >= 0 && x.ArchivedBoundary(out.Current)
	return out
}

// ArchivedWindow is the window of the valid manifest m of t, the items
// from refs(scope) (Index.Branch's archived windows).
func ArchivedWindow(t *session.Tree, m *Manifest, refs func(scope []int) history.RefFunc) history.Window {
	return archivedWindow(t, m, refs)
}

// archivedWindow is the window of a valid manifest: summary, then raw
// archived items. When the archived boundary adopted earlier entries
// (StartEntryID, docs/design.md §4 "Adoption"), the entries from its start
// to the boundary's parent come first among the raw items: the rollover
// navigated to the boundary, so they stay on the branch (and in the
// model's context) as well.
func archivedWindow(t *session.Tree, m *Manifest, refs func(scope []int) history.RefFunc) history.Window {
	scope := m.Archived
	if m.BoundarySeq >= 0 {
		if be := t.Entry(m.BoundarySeq); be.Window != nil && be.Window.StartEntryID != "" {
			if pre := startWalk(t, be.ParentID, be.Window.StartEntryID); len(pre) > 0 {
				scope = append(pre, m.Archived...)
			}
		}
	}
	ref := refs(scope)
	w := history.Window{ID: m.Data.WindowID, Items: make([]history.ItemRef, 0, len(scope)+1)}
	if r, ok := ref(m.SummarySeq, w.ID); ok {
		r.Summary = true
		w.Items = append(w.Items, r)
	}
	for _, s := range scope {
		if t.Entry(s).IsBoundary() {
			continue
		}
		if r, ok := rawRef(s, w.ID, ref); ok {
			w.Items = append(w.Items, r)
		}
	}
	return w
}

// rawRef is the item of a raw entry: never a summary item.
func rawRef(s int, windowID string, ref history.RefFunc) (history.ItemRef, bool) {
	r, ok := ref(s, windowID)
	r.Summary = false
	return r, ok
}

// startWalk returns the seqs from the entry start down to the entry
// leafID, in chronological order, walking parents from leafID at most
// MaxDepth steps; nil when start is not reached (a missing parent, a
// cycle, a root first).
func startWalk(t *session.Tree, leafID, start string) []int {
	var out []int
	id := leafID
	for range MaxDepth {
		s, ok := t.Lookup(id)
		if !ok {
			return nil
		}
		out = append(out, s)
		if id == start {
			slices.Reverse(out)
			return out
		}
		id = t.ParentID(s)
		if id == "" {
			return nil
		}
	}
	return nil
}
