package history

import (
	"maps"
	"math"
	"slices"

	"contextd/session"
)

// RefFunc returns the item reference of the entry at seq, in window
// windowID, or false when the entry renders to no item.
type RefFunc func(seq int, windowID string) (ItemRef, bool)

// packedItem is one item of a Local window as LocalWindows keeps it: 20
// bytes and no pointer, against 104 for an ItemRef with five strings (a
// quarter-million items at 1 GiB: 5 MB the garbage collector never scans,
// instead of 26 MB it scans on every cycle; docs/benchmarks.md). The ItemRef is
// built again by packTable.ref: ItemID is the entry's id (seq), WindowID
// the window's (win), the role and tool fields and flags one of the
// table's kinds. A ref that does not fit this form (another ItemID or
// WindowID than the entry's and window's, a Key or Chars outside int32)
// is kept whole in the table's extras, kind = extraItem|index.
type packedItem struct {
	seq, key, chars int32
	win, kind       uint32
}

// extraItem marks a packedItem whose ref is packTable.extras[kind&^extraItem].
const extraItem = 1 << 31

// itemKind is what an ItemRef holds besides its identity, length and key.
type itemKind struct {
	role, toolName, toolNamespace string
	summary, bash                 bool
}

// packTable is what the packed items of the windows built by one
// LocalWindows or ExtendLocalWindows call refer to: the tree (ItemID),
// the IDs of all windows so far in order (win), the kinds and the extras.
// A table is never changed once its call returns; an extension copies the
// table of the base's last window and appends, so the table of a later
// window holds an earlier window's table as a prefix and serves its items
// too.
type packTable struct {
	tree   *session.Tree
	wins   []string
	kinds  []itemKind
	kindOf map[itemKind]uint32
	extras []ItemRef
}

// ref is the ItemRef of p.
func (t *packTable) ref(p packedItem) ItemRef {
	if p.kind&extraItem != 0 {
		return t.extras[p.kind&^extraItem]
	}
	k := &t.kinds[p.kind]
	return ItemRef{WindowID: t.wins[p.win], ItemID: t.tree.ID(int(p.seq)), Role: k.role, ToolName: k.toolName,
		ToolNamespace: k.toolNamespace, Summary: k.summary, BashExecution: k.bash, Chars: int(p.chars), Key: int64(p.key)}
}

// pack returns r, the ref of entry seq in window win (ID id), packed.
func (t *packTable) pack(seq int, win int, id string, r ItemRef) packedItem {
	fits := func(v int64) bool { return v >= 0 && v <= math.MaxInt32 }
	if r.WindowID != id || seq > math.MaxInt32 || r.ItemID != t.tree.ID(seq) || !fits(r.Key) || !fits(int64(r.Chars)) || len(t.extras) >= extraItem-1 {
		t.extras = append(t.extras, r)
		return packedItem{seq: int32(min(seq, math.MaxInt32)), kind: extraItem | uint32(len(t.extras)-1)}
	}
	k := itemKind{role: r.Role, toolName: r.ToolName, toolNamespace: r.ToolNamespace, summary: r.Summary, bash: r.BashExecution}
	i, ok := t.kindOf[k]
	if !ok {
		i = uint32(len(t.kinds))
		t.kinds = append(t.kinds, k)
		t.kindOf[k] = i
	}
	return packedItem{seq: int32(seq), key: int32(r.Key), chars: int32(r.Chars), win: uint32(win), kind: i}
}

// Len is the number of items of w.
func (w *Window) Len() int {
	if w.tab != nil {
		return len(w.packed)
	}
	return len(w.Items)
}

// At is item i of w (0 ≤ i < Len), built from its packed form for a
// window of LocalWindows (no allocation).
func (w *Window) At(i int) ItemRef {
	if w.tab != nil {
		return w.tab.ref(w.packed[i])
	}
	return w.Items[i]
}

// All returns the items of w as a slice: Items, or for a window of
// LocalWindows a new slice of Len refs (tests, rare paths).
func (w *Window) All() []ItemRef {
	if w.tab == nil {
		return w.Items
	}
	out := make([]ItemRef, len(w.packed))
	for i, p := range w.packed {
		out[i] = w.tab.ref(p)
	}
	return out
}

// LocalWindows builds the Local-mode windows of a branch (docs/codex-contract.md "Local history"
// "Windows"): scanning the branch in order, each window boundary
// (session.Entry.IsBoundary) opens a window whose ID is the boundary's
// currentWindowId; the entries after it, up to the next boundary, are its
// items. The boundary itself belongs to no window, nor do the entries
// before the first boundary, unless that boundary's StartEntryID names one
// of them (adoption, docs/design.md §4 "Adoption"): its window then holds
// them too, from that entry on, before the entries after the boundary.
//
// The windows hold their items packed (20 bytes, no pointer; Items is
// nil): read them with Window.Len and Window.At. The packed items of all
// windows share one backing array, each window's slice capped at its
// length, so appending to one never writes into another.
func LocalWindows(t *session.Tree, branch []int, ref RefFunc) []Window {
	return ExtendLocalWindows(nil, t, branch, ref)
}

// ExtendLocalWindows returns LocalWindows(t, prefix+branch, ref) given wins
// = LocalWindows(t, prefix, ref): the entries of branch continue the
// windows of the prefix. wins is not modified (its last window's items are
// copied before they grow), so it may be shared with concurrent readers.
// wins must come from LocalWindows or ExtendLocalWindows on the same tree.
func ExtendLocalWindows(wins []Window, t *session.Tree, branch []int, ref RefFunc) []Window {
	tab := &packTable{tree: t, kindOf: map[itemKind]uint32{}}
	if n := len(wins); n > 0 && wins[n-1].tab != nil {
		old := wins[n-1].tab
		tab.wins, tab.kinds, tab.extras = slices.Clone(old.wins), slices.Clone(old.kinds), slices.Clone(old.extras)
		tab.kindOf = maps.Clone(old.kindOf)
	} else {
		for i := range wins {
			tab.wins = append(tab.wins, wins[i].ID)
		}
	}
	// Each entry gives at most one item: one array holds every new item.
	var buf []packedItem
	if len(branch) > 0 {
		buf = make([]packedItem, 0, len(branch))
	}
	var out []Window
	if len(wins) > 0 {
		out = make([]Window, len(wins), len(wins)+1)
		copy(out, wins)
		last := &out[len(out)-1]
		if last.tab == nil {
			// Not built here (cannot happen for wins of LocalWindows):
			// pack its items into the new table.
			items := last.Items
			last.Items, last.packed = nil, make([]packedItem, 0, len(items))
			for _, r := range items {
				tab.extras = append(tab.extras, r)
				last.packed = append(last.packed, packedItem{kind: extraItem | uint32(len(tab.extras)-1)})
			}
		}
		last.packed = last.packed[:len(last.packed):len(last.packed)]
		last.tab = tab
	}
	start := len(buf) // start in buf of the items of the last window opened here
	opened := false   // the last window was opened by this call
	// The windows opened here take their items from buf in order, each
	// slice's capacity running to the end of buf: so the items of
	// consecutive windows lie back to back in one array, and SearchOrder
	// takes them as one list instead of copying (a quarter-million items
	// at 1 GiB). Only the last window may grow, in a later call, which
	// copies it first (above).
	closeLast := func() {
		if opened {
			w := &out[len(out)-1]
			if n := len(buf) - start; n > 0 {
				w.packed = buf[start:]
			}
		}
	}
	// before holds the entries ahead of the branch's first boundary (only
	// when wins is empty: a base with windows already passed it).
	var before []int
	add := func(s int) {
		wi := len(out) - 1
		w := &out[wi]
		r, ok := ref(s, w.ID)
		if !ok {
			return
		}
		p := tab.pack(s, wi, w.ID, r)
		if opened {
			buf = append(buf, p)
		} else {
			// Continues the last window of wins (a fresh copy: see above).
			w.packed = append(w.packed, p)
		}
	}
	for _, s := range branch {
		e := t.Entry(s)
		if e.IsBoundary() {
			closeLast()
			out = append(out, Window{ID: e.Window.CurrentWindowID, tab: tab})
			tab.wins = append(tab.wins, e.Window.CurrentWindowID)
			start, opened = len(buf), true
			if len(out) == 1 && len(wins) == 0 {
				for _, b := range Adopted(t, before, e.Window.StartEntryID) {
					add(b)
				}
			}
			before = nil
			continue
		}
		if len(out) == 0 {
			if len(wins) == 0 {
				before = append(before, s)
			}
			continue
		}
		add(s)
	}
	closeLast()
	return out
}

// Adopted returns the entries of before (seqs of t, in branch order,
// ahead of the branch's first boundary) from the one whose id is start on;
// nil when start is "" or names none of them. These are the entries an
// adoption boundary's window holds ahead of it (session.WindowMarker
// StartEntryID; docs/design.md §4 "Adoption").
func Adopted(t *session.Tree, before []int, start string) []int {
	if start == "" {
		return nil
	}
	for i, s := range before {
		if t.ID(s) == start {
			return before[i:]
		}
	}
	return nil
}

// UserItemIDs returns the item ids of the user messages of w, newest
// first, at most max (the thread hint's user_item_ids, docs/codex-contract.md "Local notes").
// A bashExecution item (role user, ItemRef.BashExecution) is not a user
// message and is skipped.
func UserItemIDs(w Window, max int) []string {
	var ids []string
	for i := w.Len() - 1; i >= 0 && len(ids) < max; i-- {
		if r := w.At(i); r.Role == RoleUser && !r.BashExecution {
			ids = append(ids, r.ItemID)
		}
	}
	return ids
}

// Collect returns the refs of l in order, in a new slice (tests and rare
// paths; nil for an empty or nil list).
func Collect(l ItemList) []ItemRef {
	if l == nil || l.Len() == 0 {
		return nil
	}
	out := make([]ItemRef, l.Len())
	for i := range out {
		out[i] = l.At(i)
	}
	return out
}
