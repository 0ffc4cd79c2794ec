package store

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
)

// Frame filters: the search filters of a session's item text. Terms
// (docs/design.md, "Terms of our own"): a frame is one frameSize-byte
// (16 KiB) piece of the item text (textstore.go), the unit a search reads
// or skips; a frame filter, or record, is the filterRecord-byte (10 KiB)
// Bloom filter of one frame, written here. An entry block (entryblock.go)
// is unrelated.
//
// # What a frame's filter holds
//
// The filter of frame f covers every position p in
// [f×frameSize, (f+1)×frameSize+filterOverlap) of the text:
//
//   - the long filter (longWords 64-bit words, 8 KiB): the 12 bytes at p
//     (the 12-gram) choose one word and set two bits in it, and the 16
//     bytes at p (the 16-gram) set two more bits in that same word
//     (longKey), so filling sets one word per position and a probe reads
//     one word;
//   - the short filter (shortWords words, 2 KiB): triWords words with one
//     bit for the trigram at p (shortKey), then fiveWords words with one
//     bit for the 5-gram at p (fiveKey).
//
// A query of longGram (12) bytes or more probes the long filter with the
// n-grams at up to filterMaxKeys of its first filterOverlap+1 positions
// (queryKeys); a query of 3 to 11 bytes (identifiers, error codes, file
// names) probes the short filter with up to filterMaxKeys of its 5-grams,
// then of its trigrams (shortKeys); a query of 1 or 2 bytes reads every
// frame. A match that starts in frame f has each probed n-gram at a
// position before (f+1)×frameSize+filterOverlap, inside the range, so a
// frame whose filter lacks the bits of one of them holds no match start
// and is not read. A filter only ever skips bytes that cannot hold a
// match: answers are the same with or without it, and a frame without a
// record yet is read.
//
// Frame f is complete, and gets its record, once the text has
// (f+1)×frameSize+filterOverlap+15 bytes (framesFilterable). The records
// are derived from the committed item text alone, so an index built in one
// pass and one built append by append have the same records. They are
// built by the index's one filter builder (filterbuilder.go), to which a
// sync queues its session when it ends (kickFilters); no commit and no
// answer waits for it. The measurements behind the n-grams, the sizes and
// when the builder runs are in docs/benchmarks.md ("Frame filters").
//
// # On-disk format
//
// Two files per session and text generation under texts/ (names in
// textfiles.go: N.blk and N.blkn for generation 0, N.G.blk and N.G.blkn
// for generation G ≥ 1). Like index.db they are derived: built from the
// committed text alone, and dropped with it.
//
//   - N.blkn: 8 bytes, the little-endian uint64 n, the number of frames
//     whose records N.blk holds; written after the records it counts.
//   - N.blk: the records of frames 0 to n-1, word-major by segments of
//     filterSeg (64) frames: segment s is the filterSegBytes (640 KiB) at
//     offset s×filterSegBytes, and word w of frame s×filterSeg+j is the
//     little-endian uint64 at offset (w×filterSeg+j)×8 in the segment
//     (words 0 to longWords-1 the long filter, then the short filter), so
//     a probe of one key reads 512 contiguous bytes per segment. The last
//     segment is written whole; its words of frames from n on are zero or
//     stale, and nothing reads them.
//
// A count without its .blk file, or a .blk file shorter than
// segments(n)×filterSegBytes (records of an earlier, smaller size: 8 KiB
// before the short filter, 9 KiB before its 5-grams), counts as no record
// (filtersRecorded): the filters are built again. The bits are those of
// longKey, shortKey and fiveKey: a change to their hashes, their n-grams
// or the layout makes existing files wrong at the same size, so it needs
// an index migration that re-indexes every session (load then removes the
// count and truncates the filters; docs/index-and-search.md).
const (
	filterOverlap = 256
	longGram      = 12 // the shortest query the long filter serves
	longGramMax   = 16 // the 16-gram bits
	shortGram     = 3  // the shortest query the short filter serves
	fiveGram      = 5  // the n-gram of the short filter's second bitmap
	// A record is the long filter (longWords words: 12- and
	// 16-grams) followed by the short filter (shortWords words:
	// triWords of trigrams, then fiveWords of 5-grams).
	longWords    = 1 << 10
	triWords     = 1 << 7
	fiveWords    = 1 << 7
	shortWords   = triWords + fiveWords
	filterWords  = longWords + shortWords
	filterRecord = filterWords * 8
	longWordBit  = 54 // a long key's word is its hash >> longWordBit (10 bits)
	shortWordBit = 57 // a short key's word is its bitmap's first word + its hash >> shortWordBit (7 bits)
	// Searches over fewer bytes than this do not consult the filters.
	filterMinSearch = 2 * frameSize
	// filterMaxKeys bounds the n-grams of a query probed per frame.
	filterMaxKeys = 8
	// The .blk file's segments (format above): a probe of one key reads
	// filterSeg words in a row (512 bytes) per segment instead of one
	// word (and page) per record.
	filterSeg      = 64
	filterSegBytes = filterSeg * filterRecord
)

// frameFilters is a session's filter state. done is how many records of the
// .blk file are valid (readers read no further); mu is held by the builder
// and by resets; gen changes on every reset so a builder working from an
// older text size stops; queued is set while the session waits in the
// index's filter queue (filterbuilder.go). The records are read through a
// shared mapping of the .blk file (mapped, under mapMu). A reset to no
// text moves to the next generation's .blk file (textfiles.go) and only
// unmaps the replaced one; a load truncates the .blk file of its own
// generation, which no reader has mapped, to the records still valid.
type frameFilters struct {
	mu     sync.Mutex
	gen    atomic.Uint64
	done   atomic.Int64
	queued atomic.Bool

	mapMu  sync.RWMutex
	mapped []byte
}

// longKey is the word (index into the filter) and the bits of the
// n-grams at the start of g: the 12-gram's two bits, and the 16-gram's two
// when g has 16 bytes or more.
func longKey(g []byte) (int, uint64) {
	a := binary.LittleEndian.Uint64(g) * filterK1
	c := uint64(binary.LittleEndian.Uint32(g[8:]))
	h12 := filterHash(a, c*filterK2)
	m := uint64(1)<<(h12&63) | uint64(1)<<(h12>>6&63)
	if len(g) >= longGramMax {
		h16 := filterHash(a, binary.LittleEndian.Uint64(g[8:])*filterK3)
		m |= uint64(1)<<(h16&63) | uint64(1)<<(h16>>6&63)
	}
	return int(h12 >> longWordBit), m
}

// shortKey is the word and bit of the trigram of x's low 3 bytes (x the
// little-endian word at the trigram's position) in the short filter.
func shortKey(x uint64) (int, uint64) {
	h := (x & 0xFFFFFF) * filterK2
	return longWords + int(h>>shortWordBit), uint64(1) << (h >> 51 & 63)
}

// fiveKey is the word and bit of the 5-gram of x's low 5 bytes (x the
// little-endian word at the 5-gram's position) in the short filter.
func fiveKey(x uint64) (int, uint64) {
	h := (x & 0xFF_FFFF_FFFF) * filterK3
	return longWords + triWords + int(h>>shortWordBit), uint64(1) << (h >> 51 & 63)
}

// The multipliers of filterHash's inputs (odd 64-bit constants).
const (
	filterK1 = 0x9E3779B97F4A7C15
	filterK2 = 0xBF58476D1CE4E5B9
	filterK3 = 0x94D049BB133111EB
)

// filterHash mixes the products of an n-gram's two words: their sum's top
// bits depend on every input bit, and the xor-shift brings them down to
// the bit numbers.
func filterHash(x, y uint64) uint64 {
	h := x + y
	return h ^ h>>29
}

// framesFilterable is the number of complete frames of a text of n bytes.
func framesFilterable(n int64) int64 {
	if n < filterOverlap+longGramMax-1 {
		return 0
	}
	return (n - filterOverlap - longGramMax + 1) / frameSize
}

// filterText is how many bytes of text fill a frame's record: the frame and
// the filterOverlap+15 bytes after it.
const filterText = frameSize + filterOverlap + longGramMax - 1

// fillFilter sets f to the record of a frame (word w of the record is
// f[w]) whose bytes, with the filterOverlap+15 bytes after it, are text
// (filterText bytes): longKey, shortKey and fiveKey of every position,
// inlined (TestFillFilterIsKeys). Written for instruction throughput,
// which bounds it (about 37 instructions per position): the multipliers
// come from variables, so they stay in registers (constants are
// rematerialized at every position), and a key's two bits come from
// filterTwoBits rather than shifts and bit sets (BenchmarkFillFilter;
// docs/benchmarks.md, "Frame filters").
func fillFilter(f *[filterWords]uint64, text []byte) {
	clear(f[:])
	text = text[:filterText]
	two := &filterTwoBits
	k1, k2, k3 := filterMul[0], filterMul[1], filterMul[2]
	for p := 0; p < frameSize+filterOverlap; p++ {
		g := text[p : p+longGramMax]
		x := binary.LittleEndian.Uint64(g)
		a := x * k1
		c := binary.LittleEndian.Uint64(g[8:])
		h12 := filterHash(a, uint64(uint32(c))*k2)
		h16 := filterHash(a, c*k3)
		f[h12>>longWordBit&(longWords-1)] |= two[h12&4095] | two[h16&4095]
		w3, b3 := shortKey(x)
		f[w3] |= b3
		w5, b5 := fiveKey(x)
		f[w5] |= b5
	}
}

// filterMul holds filterK1, filterK2 and filterK3 for fillFilter.
var filterMul = [3]uint64{filterK1, filterK2, filterK3}

// filterTwoBits[h&4095] is the two bits a key of hash h sets in its word,
// 1<<(h&63) | 1<<(h>>6&63) (32 KiB).
var filterTwoBits = func() (t [4096]uint64) {
	for h := range t {
		t[h] = 1<<(h&63) | 1<<(h>>6&63)
	}
	return t
}()

func (s *Session) filterPath() string { return s.textFiles().path("blk") }

func (s *Session) filterCountPath() string { return s.textFiles().path("blkn") }

// filtersRecorded reads the number of frames recorded in the .blk file (0
// when unknown).
func (s *Session) filtersRecorded() int64 {
	b, err := os.ReadFile(s.filterCountPath())
	if err != nil || len(b) != 8 {
		return 0
	}
	n := int64(binary.LittleEndian.Uint64(b))
	if fi, err := os.Stat(s.filterPath()); err != nil || fi.Size() < segments(n)*filterSegBytes {
		return 0
	}
	return n
}

// writeFiltersRecorded writes n as the number of frames recorded to path
// (the session's filterCountPath, taken by the caller where the file id is
// stable).
func writeFiltersRecorded(path string, n int64) error {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(n))
	return os.WriteFile(path, b[:], 0o600)
}

// segments is the number of segments that n frames take.
func segments(n int64) int64 { return (n + filterSeg - 1) / filterSeg }

// resetFilters keeps the records still valid for a committed text of
// textSize bytes (none for 0) and truncates the file to them, then
// publishes a snapshot of the new generation (searches of the snapshots
// before consult none of its filters). Callers hold syncMu.
func (s *Session) resetFilters(textSize int64) error {
	err := s.resetFilterFiles(textSize)
	s.publish()
	return err
}

// resetFilterFiles is resetFilters' work on the files.
func (s *Session) resetFilterFiles(textSize int64) error {
	s.filters.gen.Add(1)
	s.filters.mu.Lock()
	defer s.filters.mu.Unlock()
	keep := int64(0)
	if s.fileID != 0 && textSize > 0 {
		keep = min(s.filtersRecorded(), framesFilterable(textSize))
	}
	s.filters.done.Store(keep)
	s.filters.unmap()
	if s.fileID == 0 {
		return nil
	}
	// Lines of frames past keep in the last segment stay until rebuilt:
	// nothing reads them.
	if err := os.Truncate(s.filterPath(), segments(keep)*filterSegBytes); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if keep == 0 {
		if err := os.Remove(s.filterCountPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return writeFiltersRecorded(s.filterCountPath(), keep)
}

// unmap drops the mapping of the .blk file (before it is truncated or
// removed).
func (f *frameFilters) unmap() {
	f.mapMu.Lock()
	defer f.mapMu.Unlock()
	if f.mapped != nil {
		_ = syscall.Munmap(f.mapped)
		f.mapped = nil
	}
}

// records returns the mapped segments of the records [0, n) (at least;
// readers read no further), mapping the .blk file again when it has grown,
// and the function that gives the mapping back (resets wait for it). nil
// when a reset unmapped it meanwhile.
func (s *Session) records(b filterSnap, n int64) ([]byte, func(), error) {
	f := &s.filters
	size := segments(n) * filterSegBytes
	f.mapMu.RLock()
	if int64(len(f.mapped)) < size {
		f.mapMu.RUnlock()
		f.mapMu.Lock()
		if int64(len(f.mapped)) < size {
			if f.mapped != nil {
				_ = syscall.Munmap(f.mapped)
				f.mapped = nil
			}
			if s.filters.gen.Load() != b.gen {
				// A reset since b: the file may be another text's
				// (resets advance gen before they unmap).
				f.mapMu.Unlock()
				return nil, nil, nil
			}
			fh, err := os.Open(b.path)
			if err != nil {
				f.mapMu.Unlock()
				return nil, nil, err
			}
			// Room for growth: pages past the end of the file are never
			// touched (readers read only the records done says are
			// written).
			m, err := syscall.Mmap(int(fh.Fd()), 0, int(size+size/2), syscall.PROT_READ, syscall.MAP_SHARED)
			fh.Close()
			if err != nil {
				f.mapMu.Unlock()
				return nil, nil, err
			}
			f.mapped = m
		}
		f.mapMu.Unlock()
		f.mapMu.RLock()
	}
	if int64(len(f.mapped)) < size {
		f.mapMu.RUnlock()
		return nil, nil, nil // unmapped by a reset meanwhile: no records to consult
	}
	return f.mapped[:size], f.mapMu.RUnlock, nil
}

// kickFilters queues s for the index's filter builder (filterbuilder.go)
// when the committed text now allows records not built yet or has raw
// frames to compress (rawframes.go), unless s is queued already (the builder then builds them with the rest). The
// syncing goroutine calls it when a sync ends; it costs an atomic load
// when there is nothing new.
func (s *Session) kickFilters() {
	if (framesFilterable(s.textSize) <= s.filters.done.Load() && s.frames == len(s.frameEnds)) || s.x.closing.Load() || s.forgotten.Load() {
		return
	}
	if s.filters.queued.CompareAndSwap(false, true) {
		s.x.queueFilters(s)
	}
}

// builderScratch is buildFrameFilters' memory (about 0.7 MiB), reused across runs.
type builderScratch struct {
	seg   [filterSegBytes]byte
	words [filterWords]uint64
	buf   [filterText]byte
}

var builderPool = sync.Pool{New: func() any { return new(builderScratch) }}

// buildFrameFilters writes the records of every complete frame of the committed
// text (as of its start) not written yet, a segment at a time, and
// publishes each segment's (done, .blkn) once it is written. A reset
// (gen) or Close stops it at the next segment.
func (s *Session) buildFrameFilters() error {
	if s.forgotten.Load() {
		return nil // Index.Forget: nothing of it is kept
	}
	g := s.filters.gen.Load()
	c, release := s.hold()
	defer release()
	v := &c.view
	snap, filterPath, countPath := v.text, v.filters.path, v.filters.count
	if snap == nil || v.filters.gen != g {
		return nil // a reset published since: its own sync kicks a build
	}
	textSize := snap.size()
	s.filters.mu.Lock()
	defer s.filters.mu.Unlock()
	if s.filters.gen.Load() != g {
		return nil
	}
	want := framesFilterable(textSize)
	b := s.filters.done.Load()
	if b >= want {
		return nil
	}
	tf := newTextReader(snap, nil, false)
	defer tf.Close()
	bf, err := os.OpenFile(filterPath, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	defer bf.Close()
	// One segment at a time: the words of the segment's frames recorded
	// before are read back, the new frames' words set, the segment
	// written whole.
	sc := builderPool.Get().(*builderScratch)
	defer builderPool.Put(sc)
	seg, words, buf := sc.seg[:], &sc.words, sc.buf[:]
	// A reset (Session.clear: the text files rewritten) may take the text
	// from under the build: that is no failure, the reset keeps only the
	// records still valid.
	fail := func(err error) error {
		if s.filters.gen.Load() != g {
			return nil
		}
		return err
	}
	for b < want {
		if s.filters.gen.Load() != g || s.x.closing.Load() {
			return nil
		}
		sg, j0 := b/filterSeg, b%filterSeg
		jn := min(int64(filterSeg), want-sg*filterSeg)
		clear(seg)
		if j0 > 0 {
			if _, err := bf.ReadAt(seg, sg*filterSegBytes); err != nil {
				return fail(err)
			}
		}
		for j := j0; j < jn; j++ {
			// Yield the P between frames (each a fraction of a
			// millisecond): the builder runs for seconds after a large
			// session is indexed, and a /context runnable meanwhile
			// would otherwise wait until the scheduler preempts it
			// (10 ms).
			if !yieldToUrgent() {
				runtime.Gosched()
			}
			if _, err := tf.ReadAt(buf, (sg*filterSeg+j)*frameSize); err != nil {
				return fail(err)
			}
			fillFilter(words, buf)
			for w, v := range words {
				binary.LittleEndian.PutUint64(seg[(int64(w)*filterSeg+j)*8:], v)
			}
		}
		if _, err := bf.WriteAt(seg, sg*filterSegBytes); err != nil {
			return err
		}
		b = sg*filterSeg + jn
		if err := writeFiltersRecorded(countPath, b); err != nil {
			return err
		}
		s.filters.done.Store(b)
	}
	return nil
}

// candidates are the frames a search must read: frames [first, last) have
// records, and a frame among them is read when its record holds every key
// of the query; every other frame is read. The records are probed lazily,
// a segment at a time as the scan reaches it, so a search that stops at
// its limit early probes few. Not safe for concurrent use; release gives
// the records' mapping back.
type candidates struct {
	first, last int64
	keys        []filterKey
	recs        []byte   // the mapped records (valid until release)
	masks       []uint64 // by segment from first/filterSeg: the frames to read
	known       []bool   // whether masks[i] is computed
	unmap       func()   // gives the mapping back
}

// candPool keeps candidates with their masks (about 9 KiB at 1 GiB), which
// every search of a large text would otherwise allocate.
var candPool = sync.Pool{New: func() any { return new(candidates) }}

// release gives the records' mapping back, and c to the pool: c must not
// be used after.
func (c *candidates) release() {
	c.unmap()
	c.recs, c.keys, c.unmap = nil, nil, nil
	candPool.Put(c)
}

// filterCandidates consults the records for a search of query over text
// bytes [off, end); nil when there are none to consult. The caller must
// call release on a non-nil result.
func (s *Session) filterCandidates(b filterSnap, query string, off, end int64) (*candidates, error) {
	if len(query) < shortGram || end-off < filterMinSearch {
		return nil, nil
	}
	first, last := off/frameSize, min(s.filters.done.Load(), (end-1)/frameSize+1)
	if last <= first {
		return nil, nil
	}
	recs, release, err := s.records(b, last)
	if err != nil || recs == nil {
		return nil, err
	}
	if s.filters.gen.Load() != b.gen {
		// Filters of another text (a reset since the snapshot): none
		// to consult. A reset advances gen before it waits for the
		// mapping, which release gives back: while it is held, the
		// records are those of b.gen.
		release()
		return nil, nil
	}
	n := (last-1)/filterSeg - first/filterSeg + 1
	c := candPool.Get().(*candidates)
	c.first, c.last, c.keys, c.recs, c.unmap = first, last, queryKeys(query), recs, release
	c.masks, c.known = slices.Grow(c.masks[:0], int(n))[:n], slices.Grow(c.known[:0], int(n))[:n]
	clear(c.known)
	return c, nil
}

// segment returns the mask of the frames to read among segment sg's
// (bit j: frame sg×filterSeg+j), probing it on first use: the first key
// over every frame of the segment (a branch-free pass over one 512-byte
// row), the others over the frames still in.
func (c *candidates) segment(sg int64) uint64 {
	i := sg - c.first/filterSeg
	if c.known[i] {
		return c.masks[i]
	}
	base := sg * filterSegBytes
	lo, hi := max(c.first-sg*filterSeg, 0), min(c.last-sg*filterSeg, filterSeg)
	k := c.keys[0]
	row := c.recs[base+int64(k.word)*filterSeg*8 : base+int64(k.word+1)*filterSeg*8]
	var m uint64
	for j := lo; j < hi; j++ {
		x := binary.LittleEndian.Uint64(row[j*8:])&k.bits ^ k.bits
		m |= ((x|-x)>>63 ^ 1) << j // 1 when x == 0
	}
	for _, k := range c.keys[1:] {
		if m == 0 {
			break
		}
		row := c.recs[base+int64(k.word)*filterSeg*8 : base+int64(k.word+1)*filterSeg*8]
		for r := m; r != 0; r &= r - 1 {
			j := bits.TrailingZeros64(r)
			if binary.LittleEndian.Uint64(row[j*8:])&k.bits != k.bits {
				m &^= 1 << j
			}
		}
	}
	c.masks[i], c.known[i] = m, true
	return m
}

// filterKey is what a probe checks: the bits in one word of a record.
type filterKey struct {
	word int
	bits uint64
}

// queryKeys returns the keys a search for query probes: for a query of
// longGram (12) bytes or more, the long filter's keys of its n-grams at
// positions [0, min(len-12, filterOverlap)], at most filterMaxKeys of them
// spread over that range, a position with 16 bytes of query from it with
// the 16-gram's bits too; for 3 to 11 bytes, shortKeys; none for 1 or 2.
func queryKeys(query string) []filterKey {
	if len(query) < shortGram {
		return nil
	}
	if len(query) < longGram {
		return shortKeys(query)
	}
	span := min(len(query)-longGram, filterOverlap)
	k := min(span+1, filterMaxKeys)
	keys := make([]filterKey, 0, k)
	for i := range k {
		p := 0
		if k > 1 {
			p = i * span / (k - 1)
		}
		w, b := longKey([]byte(query[p:min(len(query), p+longGramMax)]))
		keys = append(keys, filterKey{w, b})
	}
	return keys
}

// shortKeys returns the short filter's keys of query (3 to 11 bytes): the
// 5-grams first (the rarer, probed first), then the trigrams, at most
// filterMaxKeys of each, spread over its positions. Every position of a
// match that starts in a frame lies within the frame's first
// frameSize+filterOverlap positions, which the short filter records.
func shortKeys(query string) []filterKey {
	keys := make([]filterKey, 0, 2*filterMaxKeys)
	keys = appendGramKeys(keys, query, fiveGram, fiveKey)
	return appendGramKeys(keys, query, shortGram, shortKey)
}

// appendGramKeys appends the keys (key of the little-endian word holding
// the n bytes) of query's n-grams, at most filterMaxKeys of them spread
// over its positions; none when query is shorter than n.
func appendGramKeys(keys []filterKey, query string, n int, key func(x uint64) (int, uint64)) []filterKey {
	span := len(query) - n
	if span < 0 {
		return keys
	}
	k := min(span+1, filterMaxKeys)
	for i := range k {
		p := 0
		if k > 1 {
			p = i * span / (k - 1)
		}
		var g [8]byte
		copy(g[:], query[p:p+n])
		w, b := key(binary.LittleEndian.Uint64(g[:]))
		keys = append(keys, filterKey{w, b})
	}
	return keys
}

// reads reports whether frame b must be read.
func (c *candidates) reads(b int64) bool {
	if b < c.first || b >= c.last {
		return true
	}
	return c.segment(b/filterSeg)>>(b%filterSeg)&1 != 0
}

// skip returns the first position at or after pos in a frame to read.
func (c *candidates) skip(pos int64) int64 {
	b := pos / frameSize
	for b >= c.first && b < c.last {
		m := c.segment(b/filterSeg) >> (b % filterSeg) // the frames from b on in b's segment
		if m != 0 {
			b += int64(bits.TrailingZeros64(m))
			break
		}
		b = min((b/filterSeg+1)*filterSeg, c.last) // frames from last on are read
	}
	return max(pos, b*frameSize)
}

// limit returns where reading from pos (in a frame to read) up to end
// may stop for a query of nq bytes: nq-1 bytes past the start of the next
// frame not to read, if it starts before end (else math.MaxInt64). Frames
// from end on are not probed.
func (c *candidates) limit(pos, nq, end int64) int64 {
	for b := max(pos/frameSize+1, c.first); b < c.last && b*frameSize < end; b++ {
		if !c.reads(b) {
			return b*frameSize + nq - 1
		}
	}
	return 1<<63 - 1
}
