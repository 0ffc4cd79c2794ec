package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"contextd/history"
)

// randFrameText is n bytes of a small alphabet with the needles written at
// the given offsets (later ones over earlier ones).
func randFrameText(r *rand.Rand, n int, needles map[int]string) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = "abcdefgh \n"[r.IntN(10)]
	}
	offs := make([]int, 0, len(needles))
	for off := range needles {
		offs = append(offs, off)
	}
	slices.Sort(offs)
	for _, off := range offs {
		copy(b[off:], needles[off])
	}
	return b
}

// filterSession is a session of index dir whose item-text file is text, cut
// into items at cuts (ascending offsets), with its frame filters built.
func filterSession(t *testing.T, dir string, fileID int64, text []byte, cuts []int) (*Session, *View) {
	t.Helper()
	x := &Index{dir: dir}
	if err := os.MkdirAll(x.textDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	s := &Session{x: x, fileID: fileID}
	writeFrames(t, s, text)
	if err := s.buildFrameFilters(); err != nil {
		t.Fatal(err)
	}
	v := &View{s: s, text: s.textSnap()}
	prev := 0
	for _, c := range append(cuts, len(text)) {
		v.Items = append(v.Items, ItemMeta{IsItem: true, Chars: int32(utf8.RuneCount(text[prev:c])), TextOff: int64(prev), TextLen: int32(c - prev)})
		prev = c
	}
	return s, v
}

// TestFrameFiltersSearch: with frame filters built, Search calls fn exactly
// as strings.Contains says, for matches that start just before a frame
// boundary, inside the overlap after it, queries longer than the overlap,
// matches straddling items (no match), and queries the filters rule out
// in most frames (which must then be skipped: the test checks that some
// are).
func TestFrameFiltersSearch(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	long := "needle(" + strings.Repeat("Z", filterOverlap+40) + ")"
	needles := map[int]string{
		frameSize - 4:                   "needle(Q)xyz-long-enough",
		2*frameSize - 1:                 "needle(Q)xyz-long-enough",
		3*frameSize + filterOverlap - 3: "needle(Q)xyz-long-enough",
		4*frameSize - 100:               long,
		5*frameSize - 3:                 "Q(xyz-012345",
		6*frameSize + 17:                "needle(Q)xyz-long-enough",
		7*frameSize + 5:                 "needle(Q)xyz-long-enough", // the last, incomplete frame
	}
	text := randFrameText(r, 7*frameSize+filterOverlap, needles)
	var cuts []int
	for c := r.IntN(5000); c < len(text); c += 1 + r.IntN(9000) {
		cuts = append(cuts, c)
	}
	// An item boundary through one needle: that one is no match.
	cuts = append(cuts, 6*frameSize+20)
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	s, v := filterSession(t, t.TempDir(), 1, text, cuts)
	if got, want := s.filters.done.Load(), int64(6); got != want {
		t.Fatalf("%d complete frames recorded, want %d (text of %d bytes)", got, want, len(text))
	}
	cs, err := s.filterCandidates(s.current().view.filters, "needle(Q)xyz-long-enough", 0, int64(len(text)))
	if err != nil || cs == nil {
		t.Fatalf("no candidates (%v)", err)
	}
	// Frames 0, 1, 2 (match starts), 5 (6*frameSize+17 is in frame 6...)
	// whatever the hash says, the frames with a match start must be read
	// and frame 4 (only "Q(xyz-012345" near its end, long needle starts in 3) has none.
	for _, b := range []int64{0, 1, 3, 6} {
		if !cs.reads(b) {
			t.Errorf("frame %d holds a match start of needle(Q) but is skipped", b)
		}
	}
	skipped := 0
	defer cs.release()
	read := readsAll(cs)
	for _, rd := range read {
		if !rd {
			skipped++
		}
	}
	if skipped == 0 {
		t.Errorf("the filters rule out no frame for needle(Q): %v", read)
	}
	texts := make([]string, len(v.Items))
	for i, im := range v.Items {
		texts[i] = string(text[im.TextOff : im.TextOff+int64(im.TextLen)])
	}
	ts := viewTexts{v: v, t: v.text}
	all := make([]history.ItemRef, len(v.Items))
	for i := range all {
		all[i] = history.ItemRef{ItemID: fmt.Sprint(i), Key: int64(i)}
	}
	queries := []string{"needle(Q)xyz-long-enough", long, "Q(xyz-012345", "ZZZZ)", "needle", "zzzz", "abc", "Q("}
	for _, p := range []struct {
		chunk int
		split int64
	}{{256 << 10, 8 << 20}, {4 << 10, 8 << 20}, {64 << 10, 0}} {
		func() {
			defer func(c int, s int64) { searchChunk, searchSplit = c, s }(searchChunk, searchSplit)
			searchChunk, searchSplit = p.chunk, p.split
			for name, refs := range map[string][]history.ItemRef{"file": all, "reversed": reversed(all), "sparse": subset(r, all, 3)} {
				for _, q := range queries {
					want := searchOracle(texts, refs, q, 0)
					var got []history.ItemRef
					if err := ts.Search(q, history.RefList(refs), 0, func(ref history.ItemRef) bool { got = append(got, ref); return true }); err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got, want) {
						t.Fatalf("chunk %d, refs %s, query %q: got %v, want %v", p.chunk, name, q, keys(got), keys(want))
					}
				}
			}
		}()
	}
}

// TestShortFilterFiveGrams: an 8-byte query whose six trigrams all occur
// in a frame, but never together, is ruled out there by the short
// filter's 5-grams, while the frame that holds the query is read; a
// 4-byte query (trigrams only) still reads the frame of its trigram, and
// Search answers as strings.Contains does. The filler is "ab" text, so
// the frames hold few 5-grams and no filter bit of the query's is set by
// chance (checked: the probe of frame 0 rules it out, deterministically).
func TestShortFilterFiveGrams(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	text := make([]byte, 3*frameSize+filterOverlap+longGramMax)
	for i := range text {
		text[i] = "ab"[r.IntN(2)]
	}
	const q = "QRSTUVWX"
	// Frame 0: each trigram of q, apart.
	for i, tri := range []string{"QRS", "RST", "STU", "TUV", "UVW", "VWX"} {
		copy(text[1000+100*i:], tri+".")
	}
	copy(text[frameSize+5000:], q) // frame 1: the query
	s, v := filterSession(t, t.TempDir(), 1, text, []int{frameSize, 2 * frameSize})
	if got, want := s.filters.done.Load(), int64(3); got != want {
		t.Fatalf("%d frames recorded, want %d", got, want)
	}
	cs, err := s.filterCandidates(s.current().view.filters, q, 0, int64(len(text)))
	if err != nil || cs == nil {
		t.Fatalf("no candidates (%v)", err)
	}
	if got, want := readsAll(cs), []bool{false, true, false}; !slices.Equal(got, want) {
		t.Errorf("frames read for %q: %v, want %v (frame 0 has its trigrams, not its 5-grams)", q, got, want)
	}
	cs.release()
	cs, err = s.filterCandidates(s.current().view.filters, "QRS.", 0, int64(len(text)))
	if err != nil || cs == nil {
		t.Fatalf("no candidates (%v)", err)
	}
	if got, want := readsAll(cs), []bool{true, false, false}; !slices.Equal(got, want) {
		t.Errorf("frames read for %q: %v, want %v", "QRS.", got, want)
	}
	cs.release()
	ts := viewTexts{v: v, t: v.text}
	refs := []history.ItemRef{{ItemID: "0", Key: 0}, {ItemID: "1", Key: 1}, {ItemID: "2", Key: 2}}
	for _, c := range []struct {
		q    string
		want []string
	}{{q, []string{"1"}}, {"QRS.", []string{"0"}}, {"STUVW", []string{"1"}}, {"TUV", []string{"0", "1"}}, {"RSTU.", nil}} {
		var got []string
		if err := ts.Search(c.q, history.RefList(refs), 0, func(ref history.ItemRef) bool { got = append(got, ref.ItemID); return true }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("search %q: items %v, want %v", c.q, got, c.want)
		}
	}
}

// TestFrameFiltersIncremental: records built as the text grows (in steps
// that end inside frames and inside the overlap) are byte for byte the
// records built once over the whole text, and resetFilters keeps exactly
// the records of the complete frames of a shorter committed text.
func TestFrameFiltersIncremental(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	text := randFrameText(r, 5*frameSize+1000, map[int]string{frameSize + 9: "needle"})
	dir := t.TempDir()
	once, _ := filterSession(t, dir, 1, text, nil)
	grown, _ := filterSession(t, dir, 2, text[:1000], nil)
	for _, n := range []int{frameSize, frameSize + filterOverlap + 1, frameSize + filterOverlap + 2, 3*frameSize + 5, len(text)} {
		writeFrames(t, grown, text[:n])
		if err := grown.buildFrameFilters(); err != nil {
			t.Fatal(err)
		}
		if got, want := grown.filters.done.Load(), framesFilterable(int64(n)); got != want {
			t.Fatalf("text of %d bytes: %d records, want %d", n, got, want)
		}
	}
	a, err := os.ReadFile(once.filterPath())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(grown.filterPath())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+filterRecord <= min(len(a), len(b)); i += filterRecord {
		if !bytes.Equal(a[i:i+filterRecord], b[i:i+filterRecord]) {
			t.Errorf("record %d differs", i/filterRecord)
		}
	}
	if len(a) != filterSegBytes || !bytes.Equal(a, b) {
		t.Fatalf("records built once (%d bytes) and built growing (%d bytes) differ", len(a), len(b))
	}
	if err := grown.resetFilters(2*frameSize + filterOverlap + 1); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(grown.filterPath()); err != nil || fi.Size() != filterSegBytes || grown.filters.done.Load() != 1 {
		t.Fatalf("after a reset to a text of 2 frames + overlap + 1 byte: %v records, %v", grown.filters.done.Load(), err)
	}
}

// readsAll is whether each frame of [cs.first, cs.last) is read.
func readsAll(cs *candidates) []bool {
	var out []bool
	for b := cs.first; b < cs.last; b++ {
		out = append(out, cs.reads(b))
	}
	return out
}

// wordText is n bytes of words from a small vocabulary (so that 12-grams
// and 16-grams repeat across frames, as in real item text).
func wordText(r *rand.Rand, n int) []byte {
	words := []string{"return ", "err ", "nil", " != ", "func ", "(ctx", ")", "{\n", "}\n", "if ", "the ", "cache ", "value", ".go", "test ", "ok ", "\t", "x", "y", "z", "0", "1", "2"}
	b := make([]byte, 0, n+16)
	for len(b) < n {
		b = append(b, words[r.IntN(len(words))]...)
	}
	return b[:n]
}

// TestFrameFiltersNeverMiss: over a text of more than two segments of
// frames, grown in steps (frames, filters and their segments built
// incremental, a step ending inside frames, overlaps and segments), then
// cut back and grown again with other bytes, Search finds exactly what
// strings.Contains finds in every item, for phrases planted across frame
// and segment boundaries, inside the overlap, in the last incomplete
// frame and the tail, phrases cut by an item boundary, substrings of the
// text of 12 to 40 bytes, short queries of 3 to 11 bytes (the short
// filter: pieces of the planted phrase, which then start across the same
// boundaries, and substrings of the text) and queries of 1 and 2 bytes
// (no filter); and the filters do rule out frames for long and for short
// queries (the test is not vacuous).
func TestFrameFiltersNeverMiss(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	n := (2*filterSeg+5)*frameSize + 3000
	needle := "NEEDLE-across-the-boundary!"
	text := wordText(r, n)
	plant := []int{frameSize - 10, filterSeg*frameSize - 13, filterSeg*frameSize + filterOverlap - 5, 3*frameSize + filterOverlap + 2, (2*filterSeg)*frameSize - 1, n - 2000, n - 40}
	for _, p := range plant {
		copy(text[p:], needle)
	}
	var cuts []int
	for c := r.IntN(5000); c < n; c += 1 + r.IntN(20000) {
		cuts = append(cuts, c)
	}
	cuts = append(cuts, 5*frameSize+3) // an item boundary through a planted copy
	copy(text[5*frameSize-5:], needle)
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)

	dir := t.TempDir()
	s := &Session{x: &Index{dir: dir}, fileID: 1}
	check := func(text []byte, upto int) {
		t.Helper()
		writeFrames(t, s, text[:upto])
		if err := s.buildFrameFilters(); err != nil {
			t.Fatal(err)
		}
		if got, want := s.filters.done.Load(), framesFilterable(int64(upto)); got != want {
			t.Fatalf("text of %d bytes: %d frames recorded, want %d", upto, got, want)
		}
		v := &View{s: s, text: s.textSnap()}
		prev := 0
		for _, c := range append(slices.Clone(cuts), upto) {
			if c > upto || c <= prev {
				continue
			}
			v.Items = append(v.Items, ItemMeta{IsItem: true, Chars: int32(c - prev), TextOff: int64(prev), TextLen: int32(c - prev)})
			prev = c
		}
		texts := make([]string, len(v.Items))
		all := make([]history.ItemRef, len(v.Items))
		for i, im := range v.Items {
			texts[i] = string(text[im.TextOff : im.TextOff+int64(im.TextLen)])
			all[i] = history.ItemRef{ItemID: fmt.Sprint(i), Key: int64(i)}
		}
		queries := []string{needle, needle[:12], needle[3:19], "-across-the-", "NEEDLE", "return err", "nothing-like-this-here",
			"NEE", "EDLE-acr", "-the-boun", "ndary!", "y!", "N", "zzQ", "nothing-li"}
		for range 40 {
			l := 12 + r.IntN(29)
			p := r.IntN(upto - l)
			queries = append(queries, string(text[p:p+l]))
		}
		for range 40 {
			l := shortGram + r.IntN(longGram-shortGram)
			p := r.IntN(upto - l)
			queries = append(queries, string(text[p:p+l]))
		}
		for range 10 { // pieces of a planted copy, 3 to 11 bytes
			l := shortGram + r.IntN(longGram-shortGram)
			p := r.IntN(len(needle) - l + 1)
			queries = append(queries, needle[p:p+l])
		}
		skipped, shortSkipped := false, false
		ts := viewTexts{v: v, t: v.text}
		for _, q := range queries {
			if cs, err := s.filterCandidates(s.current().view.filters, q, 0, int64(upto)); err != nil {
				t.Fatal(err)
			} else if cs != nil {
				if slices.Contains(readsAll(cs), false) {
					skipped = true
					shortSkipped = shortSkipped || len(q) < longGram
				}
				cs.release()
			}
			for name, refs := range map[string][]history.ItemRef{"file": all, "reversed": reversed(all)} {
				want := searchOracle(texts, refs, q, 0)
				var got []history.ItemRef
				if err := ts.Search(q, history.RefList(refs), 0, func(ref history.ItemRef) bool { got = append(got, ref); return true }); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("text of %d bytes, refs %s, query %q: got %v, want %v", upto, name, q, keys(got), keys(want))
				}
			}
		}
		if (!skipped || !shortSkipped) && upto > 4*frameSize {
			t.Fatalf("text of %d bytes: the filters ruled out no frame for any query (%v) or any short query (%v)", upto, skipped, shortSkipped)
		}
	}
	for _, upto := range []int{3*frameSize + 100, filterSeg*frameSize + filterOverlap + 7, (filterSeg+3)*frameSize - 1, 2*filterSeg*frameSize + filterOverlap + 15, n} {
		check(text, upto)
	}
	// Cut back into the first segment (a rewrite of the session file),
	// then grow again with other bytes: no record of the old text is used.
	other := wordText(r, n)
	for _, p := range plant {
		copy(other[p+1:], needle)
	}
	if err := s.resetFilters(filterSeg/2*frameSize + 5); err != nil {
		t.Fatal(err)
	}
	copy(other, text[:filterSeg/2*frameSize+5])
	for _, upto := range []int{filterSeg*frameSize + 9, n} {
		check(other, upto)
	}
}

// TestFrameFiltersBuiltAfterIngest: while one sync indexes a file in many
// batches, no record is built (the builder is kicked when the sync ends,
// so it never takes a core from the batches the first answer waits for);
// once the sync has ended the builder records every complete frame, and
// the .blk file is byte for byte the one a single buildFrameFilters over the
// final text writes.
func TestFrameFiltersBuiltAfterIngest(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	genSession(t, path, 5)
	x, err := OpenIndex(context.Background(), root, filepath.Join(t.TempDir(), "index"), Options{BatchBytes: 192 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	s := x.Session(path)
	var batches int
	afterBatchCommit = func(s *Session) {
		batches++
		if d := s.filters.done.Load(); d != 0 {
			t.Errorf("batch %d: %d records while the sync goes on, want 0", batches, d)
		}
		if s.filters.queued.Load() {
			t.Errorf("batch %d: the session is queued for the filter builder while the sync goes on", batches)
		}
	}
	defer func() { afterBatchCommit = nil }()
	if err := s.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	afterBatchCommit = nil
	x.filtersIdle()
	final := framesFilterable(s.textSize)
	if batches < 10 || final < 2*filterSeg {
		t.Fatalf("%d batches, %d complete frames: want at least 10 batches and %d frames", batches, final, 2*filterSeg)
	}
	if got := s.filters.done.Load(); got != final {
		t.Fatalf("%d records after the sync, want %d", got, final)
	}
	// The same records as one build over the final text.
	s.mu.Lock()
	snap := s.textSnap()
	s.mu.Unlock()
	text := make([]byte, snap.size())
	tr := newTextReader(snap, nil, false)
	_, err = tr.ReadAt(text, 0)
	tr.Close()
	if err != nil {
		t.Fatal(err)
	}
	once, _ := filterSession(t, t.TempDir(), 1, text, nil)
	a, err := os.ReadFile(once.filterPath())
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(s.filterPath())
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != int(segments(final)*filterSegBytes) || !bytes.Equal(a, b) {
		t.Fatalf("records built after the ingest (%d bytes) differ from one build (%d bytes)", len(b), len(a))
	}
	if n := once.filtersRecorded(); n != final || s.filtersRecorded() != final {
		t.Fatalf(".blkn says %d and %d records, want %d", s.filtersRecorded(), n, final)
	}
}

// TestFrameFiltersResetWhileBuilding: a rewritten file cut back to a shorter
// committed text (the frames rewritten, then resetFilters, as Session.clear
// and load do) while the background builder is running: once the reset
// returns, no record past the shorter text's complete frames is kept or
// written, the builder logs nothing, and growing the text again with
// other bytes gives exactly the records of one build over the new text.
func TestFrameFiltersResetWhileBuilding(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	n := 3*filterSeg*frameSize + 500
	text := wordText(r, n)
	var logged bytes.Buffer
	x := &Index{dir: t.TempDir(), log: slog.New(slog.NewTextHandler(&logged, nil))}
	s := &Session{x: x, fileID: 1}
	if err := os.MkdirAll(x.textDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	cut := filterSeg/2*frameSize + 5
	setText := func(b []byte) {
		s.filters.gen.Add(1) // what clear does before it rewrites the text files
		s.mu.Lock()
		writeFrames(t, s, b)
		s.mu.Unlock()
	}
	for _, wait := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond} {
		setText(text)
		if err := s.resetFilters(0); err != nil {
			t.Fatal(err)
		}
		s.kickFilters()
		time.Sleep(wait)
		setText(text[:cut])
		if err := s.resetFilters(int64(cut)); err != nil {
			t.Fatal(err)
		}
		if d, max := s.filters.done.Load(), framesFilterable(int64(cut)); d > max {
			t.Fatalf("after the reset (builder given %v): %d records, want at most %d", wait, d, max)
		}
		x.filtersIdle()
		if d, max := s.filters.done.Load(), framesFilterable(int64(cut)); d > max || s.filtersRecorded() > max {
			t.Fatalf("builder given %v: %d records (%d in .blkn) once it stopped, want at most %d", wait, d, s.filtersRecorded(), max)
		}
	}
	if logged.Len() > 0 {
		t.Errorf("the builder stopped by a reset logged: %s", logged.String())
	}
	other := wordText(r, n)
	copy(other, text[:cut])
	setText(other)
	s.kickFilters()
	x.filtersIdle()
	once, _ := filterSession(t, t.TempDir(), 1, other, nil)
	a, _ := os.ReadFile(once.filterPath())
	b, _ := os.ReadFile(s.filterPath())
	if s.filters.done.Load() != framesFilterable(int64(n)) || len(a) == 0 || !bytes.Equal(a, b) {
		t.Fatalf("regrown: %d records, %d bytes; one build: %d bytes; equal %v", s.filters.done.Load(), len(b), len(a), bytes.Equal(a, b))
	}
}

// TestFilterBuilderStopsOnClose: a builder started once the index is
// closing writes no record.
func TestFilterBuilderStopsOnClose(t *testing.T) {
	text := wordText(rand.New(rand.NewPCG(15, 16)), 2*filterSeg*frameSize)
	s := &Session{x: &Index{dir: t.TempDir()}, fileID: 1}
	if err := os.MkdirAll(s.x.textDir(), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFrames(t, s, text)
	s.x.closing.Store(true)
	s.kickFilters()
	s.x.filtersIdle()
	if d := s.filters.done.Load(); d != 0 || s.filtersRecorded() != 0 {
		t.Fatalf("%d records (%d in .blkn) built while closing, want 0", d, s.filtersRecorded())
	}
}

// TestFillFilterIsKeys: fillFilter's record is exactly the bits a probe
// checks (longKey of the 16 bytes at every position of the frame and its
// overlap, shortKey of the trigram and fiveKey of the 5-gram there), on
// word text, random bytes and runs of one byte.
func TestFillFilterIsKeys(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	random := make([]byte, filterText)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	runs := bytes.Repeat([]byte("        ====\n"), filterText/13+1)[:filterText]
	for name, text := range map[string][]byte{"words": wordText(r, filterText), "random": random, "runs": runs} {
		var want [filterWords]uint64
		for p := range frameSize + filterOverlap {
			w, b := longKey(text[p : p+longGramMax])
			want[w] |= b
			w, b = shortKey(binary.LittleEndian.Uint64(text[p:]))
			want[w] |= b
			w, b = fiveKey(binary.LittleEndian.Uint64(text[p:]))
			want[w] |= b
		}
		var got [filterWords]uint64
		got[3] = 1 // fillFilter clears what it is given
		fillFilter(&got, text)
		if got != want {
			t.Errorf("%s: fillFilter's record differs from the probes' keys", name)
		}
	}
}
