package history

import "contextd/session"

// RefFunc returns the item reference of the entry at seq, in window
// windowID, or false when the entry renders to no item.
type RefFunc func(seq int, windowID string) (ItemRef, bool)

// LocalWindows builds the Local-mode windows of a branch (reference §3.3
// "Windows"): scanning the branch in order, each window boundary
// (session.Entry.IsBoundary) opens a window whose ID is the boundary's
// currentWindowId; the entries after it, up to the next boundary, are its
// items. The boundary itself and entries before the first boundary belong
// to no window.
//
// The items of all windows share one backing array, each window's Items
// capped at its length, so appending to one never writes into another.
func LocalWindows(t *session.Tree, branch []int, ref RefFunc) []Window {
	return ExtendLocalWindows(nil, t, branch, ref)
}

// ExtendLocalWindows returns LocalWindows(t, prefix+branch, ref) given wins
// = LocalWindows(t, prefix, ref): the entries of branch continue the
// windows of the prefix. wins is not modified (its last window's items are
// copied before they grow), so it may be shared with concurrent readers.
func ExtendLocalWindows(wins []Window, t *session.Tree, branch []int, ref RefFunc) []Window {
	// Each entry gives at most one item: one array holds every new item.
	var buf []ItemRef
	if len(branch) > 0 {
		buf = make([]ItemRef, 0, len(branch))
	}
	var out []Window
	if len(wins) > 0 {
		out = make([]Window, len(wins), len(wins)+1)
		copy(out, wins)
		last := &out[len(out)-1]
		last.Items = last.Items[:len(last.Items):len(last.Items)]
	}
	start := len(buf) // start in buf of the items of the last window opened here
	opened := false   // the last window was opened by this call
	// The windows opened here take their items from buf in order, each
	// slice's capacity running to the end of buf: so the items of
	// consecutive windows lie back to back in one array, and SearchOrder
	// takes them as one slice instead of copying (a quarter-million items
	// at 1 GiB). Only the last window may grow, in a later call, which
	// copies it first (above).
	closeLast := func() {
		if opened {
			w := &out[len(out)-1]
			if n := len(buf) - start; n > 0 {
				w.Items = buf[start:]
			}
		}
	}
	for _, s := range branch {
		e := &t.Entries[s]
		if e.IsBoundary() {
			closeLast()
			out = append(out, Window{ID: e.Window.CurrentWindowID})
			start, opened = len(buf), true
			continue
		}
		if len(out) == 0 {
			continue
		}
		w := &out[len(out)-1]
		r, ok := ref(s, w.ID)
		if !ok {
			continue
		}
		if opened {
			buf = append(buf, r)
		} else {
			// Continues the last window of wins (a fresh copy: see above).
			w.Items = append(w.Items, r)
		}
	}
	closeLast()
	return out
}

// UserItemIDs returns the item ids of the user messages of w, newest
// first, at most max (the thread hint's user_item_ids, reference §3.5).
// A bashExecution item (role user, ItemRef.BashExecution) is not a user
// message and is skipped.
func UserItemIDs(w Window, max int) []string {
	var ids []string
	for i := len(w.Items) - 1; i >= 0 && len(ids) < max; i-- {
		if w.Items[i].Role == RoleUser && !w.Items[i].BashExecution {
			ids = append(ids, w.Items[i].ItemID)
		}
	}
	return ids
}
