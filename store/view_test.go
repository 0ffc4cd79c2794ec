package store

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"contextd/history"
)

// memTexts writes texts to an item-text file, one item per text in order
// (item i has Key i), and returns their viewTexts.
func memTexts(tb testing.TB, texts []string) viewTexts {
	tb.Helper()
	var all []byte
	v := &View{}
	for _, s := range texts {
		v.Items = append(v.Items, ItemMeta{IsItem: true, Chars: int32(utf8.RuneCountInString(s)),
			TextOff: int64(len(all)), TextLen: int32(len(s))})
		all = append(all, s...)
	}
	s := &Session{x: &Index{dir: tb.TempDir()}, fileID: 1}
	writeFrames(tb, s, all)
	v.text = s.textSnap()
	return viewTexts{v: v, t: v.text, cache: newFrameCache()}
}

// oldSlice and oldPrefix are the earlier implementation: read at most
// 4*(offset+limit) bytes from the start of the text, then count code
// points with utf8.DecodeRune. The new one must agree with them exactly.
func oldSlice(text string, off, limit int) string {
	n := len(text)
	if limit >= 0 && off >= 0 && 4*(off+limit) < n {
		n = 4 * (off + limit)
	}
	return cutChars([]byte(text[:n]), off, limit)
}

func oldPrefix(text string, maxChars int) string {
	n := len(text)
	if maxChars >= 0 && 4*maxChars < n {
		n = 4 * maxChars
	}
	return cutChars([]byte(text[:n]), 0, maxChars)
}

// randText is n bytes drawn from kind: ascii, utf8 (1-4 byte code points),
// or bad (UTF-8 with invalid and truncated sequences).
func randText(r *rand.Rand, kind string, n int) string {
	var b strings.Builder
	for b.Len() < n {
		switch {
		case kind == "ascii" || r.IntN(3) > 0:
			b.WriteByte(byte(' ' + r.IntN(95)))
		case kind == "utf8" || r.IntN(2) == 0:
			b.WriteRune([]rune{'é', 'ж', '→', '世', '😀', 'ß', '\u00a0', '\U0010FFFF'}[r.IntN(8)])
		default:
			// Invalid: a lone continuation byte, a truncated sequence, a
			// surrogate, an overlong form, a byte never valid.
			b.WriteString([]string{"\x80", "\xe4\xb8", "\xed\xa0\x80", "\xc0\xaf", "\xff", "\xf0\x9f\x98"}[r.IntN(6)])
		}
	}
	return b.String()
}

// TestCutMatchesOld: Prefix and Slice (ASCII fast path, whole-read path
// and the streaming path for long non-ASCII texts, with a small read
// buffer so code points straddle reads) give what the earlier
// implementation gave, for ASCII, UTF-8 and invalid UTF-8 texts.
func TestCutMatchesOld(t *testing.T) {
	for _, buf := range []int{256 << 10, 7} {
		t.Run(fmt.Sprint("buf", buf), func(t *testing.T) {
			defer func(old int) { cutBuf = old }(cutBuf)
			cutBuf = buf
			r := rand.New(rand.NewPCG(1, uint64(buf)))
			var texts []string
			for _, kind := range []string{"ascii", "utf8", "bad"} {
				for _, n := range []int{0, 1, 3, 5, 17, 200, 5000, 300 << 10} {
					texts = append(texts, randText(r, kind, n))
				}
			}
			ts := memTexts(t, texts)
			for key, text := range texts {
				ref := history.ItemRef{ItemID: fmt.Sprint(key), Key: int64(key)}
				chars := utf8.RuneCountInString(text)
				offs := []int{-3, 0, 1, 2, chars / 3, chars / 2, chars - 1, chars, chars + 1, r.IntN(chars + 1)}
				lims := []int{-1, 0, 1, 2, 3, 7, 8000, chars, r.IntN(chars + 1)}
				for _, off := range offs {
					for _, lim := range lims {
						got, err := ts.Slice(ref, off, lim)
						if err != nil {
							t.Fatal(err)
						}
						if want := oldSlice(text, off, lim); got != want {
							t.Fatalf("item %d (%d bytes, %d chars): Slice(%d, %d) = %d bytes %q…, want %d bytes %q…",
								key, len(text), chars, off, lim, len(got), trunc(got), len(want), trunc(want))
						}
					}
				}
				for _, m := range []int{-1, 0, 1, 2, 1000, chars, chars + 5} {
					got, err := ts.Prefix(ref, m)
					if err != nil {
						t.Fatal(err)
					}
					if want := oldPrefix(text, m); got != want {
						t.Fatalf("item %d: Prefix(%d) = %q…, want %q…", key, m, trunc(got), trunc(want))
					}
				}
			}
		})
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

// searchOracle is what Search must call fn with: the refs, in order,
// whose text contains q, until fn has returned false (stop matches).
func searchOracle(texts []string, refs []history.ItemRef, q string, stop int) []history.ItemRef {
	var out []history.ItemRef
	for _, r := range refs {
		if r.Key < 0 || int(r.Key) >= len(texts) || !strings.Contains(texts[r.Key], q) {
			continue
		}
		out = append(out, r)
		if len(out) == stop {
			break
		}
	}
	return out
}

// TestSearchMatchesOracle: Search over texts of a small alphabet (many
// near-matches), with refs in file order, reversed, shuffled, with
// duplicates, unknown keys and subsets, small read pieces (matches
// straddle pieces), gaps between searched texts, the two-goroutine split,
// and early stops, calls fn exactly as strings.Contains says.
func TestSearchMatchesOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var texts []string
	for i := 0; i < 400; i++ {
		n := r.IntN(300)
		if i%50 == 7 {
			n = 40 << 10
		}
		var b strings.Builder
		for b.Len() < n {
			b.WriteByte("abcab\nQ("[r.IntN(8)])
			if r.IntN(500) == 0 {
				b.WriteString("needle")
			}
		}
		texts = append(texts, b.String())
	}
	ts := memTexts(t, texts)
	ts.v.Items[5].IsItem = false // not an item: never searched
	texts[5] = ""
	all := make([]history.ItemRef, len(texts))
	for i := range all {
		all[i] = history.ItemRef{ItemID: fmt.Sprint(i), Key: int64(i)}
	}
	orders := map[string][]history.ItemRef{
		"file":     all,
		"reversed": reversed(all),
		"shuffled": shuffled(r, all),
		"subset":   subset(r, all, 3),
		"sparse":   subset(r, all, 40),
		"dups":     append(append([]history.ItemRef{all[9], all[3]}, all[:20]...), all[3], all[len(all)-1], history.ItemRef{ItemID: "x", Key: 99999}, history.ItemRef{ItemID: "y", Key: -1}),
	}
	queries := []string{"needle", "Q(", "ab", "a", "\nQ", "bca\nQ(a", "zzz", "needleneedle", strings.Repeat("ab", 40)}
	type params struct {
		chunk       int
		gap, split  int64
		description string
	}
	for _, p := range []params{
		{256 << 10, 32 << 10, 8 << 20, "default"},
		{64, 0, 8 << 20, "tiny pieces, no gap"},
		{100, 1 << 10, 1 << 10, "small pieces, split"},
		{4 << 10, 32 << 10, 0, "split"},
	} {
		func() {
			defer func(c int, g, s int64) { searchChunk, searchGap, searchSplit = c, g, s }(searchChunk, searchGap, searchSplit)
			searchChunk, searchGap, searchSplit = p.chunk, p.gap, p.split
			for name, refs := range orders {
				for _, q := range queries {
					for _, stop := range []int{0, 1, 3} {
						want := searchOracle(texts, refs, q, stop)
						var got []history.ItemRef
						err := ts.Search(q, history.RefList(refs), stop, func(ref history.ItemRef) bool {
							got = append(got, ref)
							return stop == 0 || len(got) < stop
						})
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(got, want) {
							t.Fatalf("%s, refs %s, query %q, stop %d: got %d refs %v, want %d %v",
								p.description, name, q, stop, len(got), keys(got), len(want), keys(want))
						}
					}
				}
			}
		}()
	}
}

func reversed(refs []history.ItemRef) []history.ItemRef {
	out := slices.Clone(refs)
	slices.Reverse(out)
	return out
}

func shuffled(r *rand.Rand, refs []history.ItemRef) []history.ItemRef {
	out := slices.Clone(refs)
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	return out
}

func subset(r *rand.Rand, refs []history.ItemRef, every int) []history.ItemRef {
	var out []history.ItemRef
	for _, ref := range refs {
		if r.IntN(every) == 0 {
			out = append(out, ref)
		}
	}
	return out
}

func keys(refs []history.ItemRef) []int64 {
	out := make([]int64, len(refs))
	for i, r := range refs {
		out[i] = r.Key
	}
	return out
}

// TestSearchStraddle: a match across the end of one text and the start of
// the next is no match.
func TestSearchStraddle(t *testing.T) {
	texts := []string{"xneedl", "e", "ne", "edle", "needle", "n", "eedlex", "Q", "(", "aQ(", "Q(Q"}
	ts := memTexts(t, texts)
	var refs []history.ItemRef
	for i := range texts {
		refs = append(refs, history.ItemRef{ItemID: fmt.Sprint(i), Key: int64(i)})
	}
	for _, chunk := range []int{256 << 10, 12, 7} {
		defer func(c int) { searchChunk = c }(searchChunk)
		searchChunk = chunk
		for _, q := range []string{"needle", "Q(", "e", "dlexQ", "(aQ"} {
			for _, rs := range [][]history.ItemRef{refs, reversed(refs)} {
				want := searchOracle(texts, rs, q, 0)
				var got []history.ItemRef
				if err := ts.Search(q, history.RefList(rs), 0, func(r history.ItemRef) bool { got = append(got, r); return true }); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("chunk %d, query %q: got %v, want %v", chunk, q, keys(got), keys(want))
				}
			}
		}
	}
}

// TestFinder: finder.index agrees with bytes.Index on texts where the rare
// byte is common (the fallback) and rare.
func TestFinder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 3000; i++ {
		alpha := []string{"ab", "abQ", "xyz(W9", "aaaaaaaaaaaaaaaaaaQ"}[i%4]
		s := make([]byte, r.IntN(600))
		for j := range s {
			s[j] = alpha[r.IntN(len(alpha))]
		}
		q := make([]byte, 1+r.IntN(6))
		for j := range q {
			q[j] = alpha[r.IntN(len(alpha))]
		}
		if r.IntN(3) == 0 && len(s) > len(q) {
			copy(s[r.IntN(len(s)-len(q)):], q)
		}
		f := newFinder(string(q))
		if got, want := f.index(s), strings.Index(string(s), string(q)); got != want {
			t.Fatalf("index(%q, %q) = %d, want %d", s, q, got, want)
		}
	}
}

// TestSpanAfter: spanAfter finds the first span from cur ending at or
// after end, by steps and by halves, as a linear walk does: spans of 10
// bytes every 20 bytes (span i is [20i, 20i+10)), every cur and end.
func TestSpanAfter(t *testing.T) {
	spans := make([]span, 100)
	for i := range spans {
		spans[i] = span{off: int64(20 * i), n: 10, ref: int32(i)}
	}
	for cur := 0; cur <= len(spans); cur++ {
		for end := int64(0); end <= 2010; end += 3 {
			want := cur
			for want < len(spans) && spans[want].end() < end {
				want++
			}
			if got := spanAfter(spans, cur, end); got != want {
				t.Fatalf("spanAfter(cur %d, end %d) = %d, want %d", cur, end, got, want)
			}
		}
	}
	if got := spanAfter(spans, 0, 1005); got != 50 {
		t.Errorf("spanAfter(0, 1005) = %d, want 50 (span 50 is [1000, 1010))", got)
	}
}
