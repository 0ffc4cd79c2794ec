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
func LocalWindows(t *session.Tree, branch []int, ref RefFunc) []Window {
	var out []Window
	for _, s := range branch {
		e := &t.Entries[s]
		if e.IsBoundary() {
			out = append(out, Window{ID: e.Window.CurrentWindowID})
			continue
		}
		if len(out) == 0 {
			continue
		}
		w := &out[len(out)-1]
		if r, ok := ref(s, w.ID); ok {
			w.Items = append(w.Items, r)
		}
	}
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
