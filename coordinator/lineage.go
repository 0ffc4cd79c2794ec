package coordinator

import (
	"context"
	"slices"
	"sync"
	"time"

	"contextd"
	"contextd/archive"
	"contextd/history"
	"contextd/session"
	"contextd/store"
)

// Clones and forks (docs/design.md §4 "Clones and forks"): Pi's /clone and
// /fork copy the active path only (SessionManager.createBranchedSession),
// so a Tree copy holds the manifests and summaries of its archived windows
// but not the archived entries, which stay in the file its header names as
// parentSession. Such a manifest (Branch.Unresolved: its only fault is
// archived_leaf_missing) is read through the parent when the parent holds
// the same manifest, valid, with the same data, and the same summary text;
// a parent that is itself a copy passes the question on to its own parent.

// maxLineage bounds how many parent sessions are followed (a clone of a
// clone of …).
const maxLineage = 8

// parentsOf returns the parent sessions of t's file, nearest first: the
// file its header names as parentSession, then that file's parent, and so
// on, at most maxLineage. A parent is followed only when it lies under the
// sessions directory (store.Index.Resolve: after symlinks), syncs, and its
// header timestamp is strictly earlier than its child's (Pi writes a copy
// after its original): so the chain has no cycle and withLineage always
// locks older files first, whatever session a request names.
func (s *Service) parentsOf(ctx context.Context, t *Target) []*store.Session {
	if t.Session == nil || t.Mode != contextd.ModeTree {
		return nil
	}
	var h session.Header
	_ = t.read(func(v *store.View) error {
		if v.Tree != nil {
			h = v.Tree.Header
		}
		return nil
	})
	var out []*store.Session
	seen := map[string]bool{t.Session.Path(): true}
	for len(out) < maxLineage && h.ParentSession != "" {
		path, err := s.Index.Resolve(h.ParentSession)
		if err != nil || seen[path] {
			break
		}
		seen[path] = true
		ps := s.Index.Session(path)
		if ps.Sync(ctx) != nil {
			break
		}
		var ph session.Header
		ok := false
		_ = ps.Read(func(v *store.View) error {
			if v.Tree != nil && usable(v) == nil {
				ph, ok = v.Tree.Header, true
			}
			return nil
		})
		if !ok || !earlier(ph.Timestamp, h.Timestamp) {
			break
		}
		out = append(out, ps)
		h = ph
	}
	return out
}

// earlier reports whether RFC 3339 timestamp a is strictly before b
// (false when either does not parse).
func earlier(a, b string) bool {
	ta, err := time.Parse(time.RFC3339Nano, a)
	if err != nil {
		return false
	}
	tb, err := time.Parse(time.RFC3339Nano, b)
	return err == nil && ta.Before(tb)
}

// holdLineage sets t.parents to views of t's parent sessions
// (parentsOf), nearest first, each held by a Session.Read that lasts until
// the returned release is called (then t.parents is nil again). The
// parents are read-locked oldest first, always before their child (a
// parent is strictly older): so two requests never wait on each other's
// files in opposite orders. Without parents it holds nothing.
func (s *Service) holdLineage(ctx context.Context, t *Target) (release func()) {
	parents := s.parentsOf(ctx, t)
	if len(parents) == 0 {
		return func() {}
	}
	done := make(chan struct{})
	var held sync.WaitGroup
	views := make([]*store.View, len(parents))
	for i := len(parents) - 1; i >= 0; i-- {
		got := make(chan *store.View)
		held.Add(1)
		go func() {
			defer held.Done()
			_ = parents[i].Read(func(v *store.View) error {
				got <- v
				<-done
				return nil
			})
		}()
		views[i] = <-got
	}
	t.parents = views
	return func() {
		t.parents = nil
		close(done)
		held.Wait()
	}
}

// resolveParents reads the manifests of br.Unresolved through the parent
// views of b's target: for each, the nearest parent holding the manifest
// entry valid, with equal data, and a summary of the same text. It
// returns the archived windows by manifest seq (of b's file) and the text
// source of each resolved window's items (by window id).
func (a *treeArchives) resolveParents(b *Branch, br *archive.Branch) (map[int]history.Window, map[string]history.TextSource, error) {
	wins := map[int]history.Window{}
	texts := map[string]history.TextSource{}
	for _, m := range br.Unresolved {
		sha, err := a.SummarySHA(b.V, m.SummarySeq)
		if err != nil {
			return nil, nil, err
		}
		for _, pv := range b.Target.parents {
			pidx, err := a.Index(pv)
			if err != nil {
				return nil, nil, err
			}
			ps, ok := pv.Tree.Lookup(m.EntryID)
			if !ok {
				continue
			}
			pm := pidx.Manifest(ps)
			if pm == nil || !pm.Valid || pm.Data != m.Data || pv.Tree.ID(pm.SummarySeq) != m.Data.SummaryEntryID {
				continue
			}
			psha, err := a.SummarySHA(pv, pm.SummarySeq)
			if err != nil {
				return nil, nil, err
			}
			if psha != sha {
				continue
			}
			rules := b.Target.Rules()
			wins[m.Seq] = archive.ArchivedWindow(pv.Tree, pm, func(scope []int) history.RefFunc { return pv.Refs(scope, rules) })
			texts[m.Data.WindowID] = pv.Texts()
			break
		}
	}
	return wins, texts, nil
}

// windowTexts is a history.TextSource that reads the items of some
// windows (by window id) from other sources (the parent sessions of a
// copy), and every other item from base.
type windowTexts struct {
	base     history.TextSource
	byWindow map[string]history.TextSource
}

func (w windowTexts) of(r history.ItemRef) history.TextSource {
	if t, ok := w.byWindow[r.WindowID]; ok {
		return t
	}
	return w.base
}

// sourceKey names the source of r: its window id when byWindow holds it,
// else "" (base).
func (w windowTexts) sourceKey(r history.ItemRef) string {
	if _, ok := w.byWindow[r.WindowID]; ok {
		return r.WindowID
	}
	return ""
}

// Prefix implements history.TextSource.
func (w windowTexts) Prefix(r history.ItemRef, maxChars int) (string, error) {
	return w.of(r).Prefix(r, maxChars)
}

// Slice implements history.TextSource.
func (w windowTexts) Slice(r history.ItemRef, offsetChars, limitChars int) (string, error) {
	return w.of(r).Slice(r, offsetChars, limitChars)
}

// Search implements history.TextSource: each run of consecutive refs
// with one source is searched by that source, in order, until fn stops or
// limit matches were found.
func (w windowTexts) Search(query string, refs history.ItemList, limit int, fn func(history.ItemRef) bool) error {
	found, stop := 0, false
	for i := 0; i < refs.Len() && !stop; {
		src, key := w.of(refs.At(i)), w.sourceKey(refs.At(i))
		var run history.RefList
		for ; i < refs.Len() && w.sourceKey(refs.At(i)) == key; i++ {
			run = append(run, refs.At(i))
		}
		left := 0
		if limit > 0 {
			left = limit - found
		}
		if err := src.Search(query, run, left, func(r history.ItemRef) bool {
			found++
			if !fn(r) || (limit > 0 && found >= limit) {
				stop = true
				return false
			}
			return true
		}); err != nil {
			return err
		}
	}
	return nil
}

// countParentArchives counts in sum the manifests of b's branch that are
// read through a parent session (their archived entries are there): each
// is an archive, and its invalid_archive problem (archived_leaf_missing,
// from treeArchives.count) is dropped.
func (s *Service) countParentArchives(b *Branch, sum *SessionSummary) {
	br, _, err := s.tree.branch(b)
	if err != nil {
		return
	}
	for _, m := range br.Archives {
		if m.Valid {
			continue
		}
		sum.Archives++
		sum.Problems = slices.DeleteFunc(sum.Problems, func(p SessionProblem) bool {
			return p.Reason == "invalid_archive" && p.Detail == m.EntryID+": "+archive.ReasonArchivedLeafMissing
		})
	}
}
