package store

import (
	"slices"
	"testing"

	"contextd/history"
)

// TestSpanCacheExtends: the spans the cache gives for a refs list are
// makeSpans' for it (the definition) whether they were made whole, taken
// from the cache, or extended from the list of the leaf before an append;
// and no span list handed out earlier changes when a later one is made
// from its array (a sibling list after an extension, an out-of-order
// extension).
func TestSpanCacheExtends(t *testing.T) {
	// Item k's text is bytes [100k, 100k+10) of the text file; every
	// seventh item has no text.
	items := make([]ItemMeta, 9000)
	for k := range items {
		items[k] = ItemMeta{TextOff: int64(100 * k), TextLen: 10, IsItem: k%7 != 0}
	}
	keys := func(from, to int) history.RefList {
		var l history.RefList
		for k := from; k < to; k++ {
			l = append(l, history.ItemRef{Key: int64(k)})
		}
		return l
	}
	cat := func(ls ...history.RefList) history.RefList { return slices.Concat(ls...) }
	base := keys(0, 5000)
	lists := []history.RefList{
		base,
		cat(base, keys(5000, 5010)), // one append
		cat(base, keys(5000, 5010), keys(5010, 5020)), // another
		cat(base, keys(5100, 5130)),                   // a sibling of the first
		cat(base, keys(5100, 5130), keys(10, 11)),     // an item of an earlier text
		keys(3000, 8000),                              // another branch
	}
	var c spanCache
	type handed struct {
		spans []span
		copy  []span
	}
	var out []handed
	for i, refs := range lists {
		for _, again := range []bool{false, true} {
			got, inOrder, total := c.get(refs, 1, items)
			want, wantIn, wantTotal := makeSpans(nil, refs, items)
			if !slices.Equal(got, want) || inOrder != wantIn || total != wantTotal {
				t.Fatalf("list %d (again %v): %d spans, in order %v, %d bytes; want %d, %v, %d", i, again, len(got), inOrder, total, len(want), wantIn, wantTotal)
			}
			out = append(out, handed{got, slices.Clone(got)})
		}
	}
	for i, h := range out {
		if !slices.Equal(h.spans, h.copy) {
			t.Fatalf("the spans handed out for get %d changed after later gets", i)
		}
	}
	// The cache extended in place: the spans of the second list share
	// the first list's array.
	if &out[2].spans[0] != &out[0].spans[0] {
		t.Fatal("the list of one append was not made from the cached spans")
	}
}
