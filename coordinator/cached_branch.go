package coordinator

// The branch of a leaf and its Local windows and search order, served
// from the Service's cache (windowcache.go) when a request already
// derived them for the same state of the session.

import (
	"contextd/history"
	"contextd/session"
	"contextd/store"
)

// localWindows returns history.LocalWindows of b's branch. The windows are
// shared, read-only, with other requests: callers must not modify them.
//
// They come from the Service's cache when a request already built them for the
// same state of the session and the same leaf. Otherwise they are built,
// by extending the cached windows of an earlier branch of the same tree
// that is a prefix of this one (the usual case after Pi appended entries),
// else from scratch, and cached.
//
// Context edits (Branch.Refs) change how earlier items read: windows are
// extended only when the new part of the branch holds no context_edit,
// else built again from scratch.
func (s *Service) localWindows(b *Branch) []history.Window {
	k, ok := keyOf(b.Target, b.V, b.Leaf)
	if !ok || s.cache == nil {
		return history.LocalWindows(b.V.Tree, b.Seqs, b.Refs())
	}
	return s.cache.windows(k, b.Seqs, b.tail, b.Cycle, func(base []history.Window, from int) []history.Window {
		ref := b.Refs()
		if len(base) == 0 {
			// The prefix had no boundary: a boundary in the new part may
			// adopt its entries (history.LocalWindows).
			return history.LocalWindows(b.V.Tree, b.Seqs, ref)
		}
		for _, sq := range b.Seqs[from:] {
			if b.V.Tree.Entries[sq].Type == session.TypeContextEdit {
				return history.LocalWindows(b.V.Tree, b.Seqs, ref)
			}
		}
		return history.ExtendLocalWindows(base, b.V.Tree, b.Seqs[from:], ref)
	})
}

// localSearchOrder returns history.SearchOrder(view) for the Local view of
// b, cached with its windows (built on the first unfiltered search of a
// state of the session). Shared, read-only.
func (s *Service) localSearchOrder(b *Branch, view *history.View) history.ItemList {
	k, ok := keyOf(b.Target, b.V, b.Leaf)
	if !ok || s.cache == nil {
		return nil
	}
	return s.cache.searchOrder(k, func() history.ItemList { return history.SearchOrder(view) })
}

// withCachedBranch is withBranch with the branch taken from the Service's cache
// when a request already computed it for the same state of the session
// and the same leaf: the requests that run before every model call
// (/context) and the history reads then cost no walk of the whole branch.
// b.Seqs is then shared, read-only, with other requests.
func (s *Service) withCachedBranch(t *Target, leafID string, fn func(b *Branch) error) error {
	hit := false
	err := t.read(func(v *store.View) error {
		if err := usable(v); err != nil {
			return err
		}
		leaf := leafID
		if leaf == "" {
			leaf = v.Tree.Leaf()
		}
		k, ok := keyOf(t, v, leaf)
		if !ok || s.cache == nil {
			return nil
		}
		seqs, tail, cycle, ok := s.cache.branch(k)
		if !ok {
			if seqs, tail, ok = s.cache.extendBranch(k, v.Tree); !ok {
				return nil
			}
			s.cache.addBranch(k, seqs, tail, false, seqs[len(seqs)-1])
		}
		hit = true
		return fn(&Branch{V: v, Leaf: leaf, Seqs: seqs, Cycle: cycle, Target: t, tail: tail})
	})
	if hit || err != nil {
		return err
	}
	return s.withBranch(t, leafID, func(b *Branch) error {
		if k, ok := keyOf(t, b.V, b.Leaf); ok && s.cache != nil {
			s.cache.addBranch(k, b.Seqs, b.tail, b.Cycle, -1)
		}
		return fn(b)
	})
}
