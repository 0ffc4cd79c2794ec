package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"contextd/history"
	"contextd/session"
)

// View is a consistent read of one session's index: the tree, the item
// table and the files, as of one moment. It is only valid inside Read.
type View struct {
	s        *Session
	Path     string
	Tree     *session.Tree // nil when no header has been indexed
	Items    []ItemMeta    // by Seq
	names    []string      // the session's name table (ItemMeta.Role, ToolName, ToolNamespace)
	Stats    session.Stats
	State    FileState
	StateMsg string
	Bytes    int64 // bytes indexed (offset after the last complete line)
	FileSize int64 // file size at the last sync
	SyncedAt time.Time
	// InFlightTooLong is the length so far of an unterminated last line
	// already over the line limit (0 when there is none).
	InFlightTooLong int64
	text            *textSnap // the committed item text (nil: none)
	// filters is the search filters as of the snapshot (generation
	// and files).
	filters filterSnap
	// scanHeld: the reader holds a scan slot (ReadScan), so Search
	// takes none.
	scanHeld bool
	// coreHeld: the reader holds a scanCores token for all of its
	// callback (ReadScan), so Search reads without taking one per piece.
	coreHeld bool
	// gen is the snapshot's generation (Generation).
	gen uint64
}

// Generation is the number of the published snapshot v reads
// (snapshot.go): every publish of any session takes the next number of
// one process-wide counter, so it grows with each change of the session
// (an append, a rewrite, a reset, a rebuild, a new file state), and two
// views with the same generation read the same state (the same tree,
// items, bytes indexed, text and file state). ReadTree's preview view has
// a generation of its own. 0 before the session's first publish.
func (v *View) Generation() uint64 { return v.gen }

// Ref returns the history item reference of the entry at seq in window
// windowID (ok false when the entry is not an item). Key is the seq.
func (v *View) Ref(seq int, windowID string) (history.ItemRef, bool) {
	im := v.Items[seq]
	if !im.IsItem {
		return history.ItemRef{}, false
	}
	e := v.Tree.Entry(seq)
	return history.ItemRef{WindowID: windowID, ItemID: e.ID, Role: v.Name(im.Role), ToolName: v.Name(im.ToolName),
		ToolNamespace: v.Name(im.ToolNamespace), Summary: im.Summary, Chars: int(im.Chars), Key: int64(seq),
		BashExecution: e.Type == session.TypeMessage && e.Role == session.RoleBashExecution}, true
}

// Name is the name at index i of the session's name table ("" for 0 or
// an index the table does not hold).
func (v *View) Name(i NameID) string {
	if int(i) < len(v.names) {
		return v.names[i]
	}
	return ""
}

// hasText reports whether the item-text file holds a text for im: an
// item's, or a context_edit's replacement.
func (im *ItemMeta) hasText() bool { return im.IsItem || im.Edit == session.EditReplace }

// Refs returns the RefFunc of the history items as Pi's context edits
// among the entries scope (a branch, or an archived path) leave them, for
// rules (the rule sets before session.RulesPi16 know no edits: Ref itself). For each target
// id the last edit in scope order wins (Pi: "the latest edit on the active
// branch wins"; an edit that a later compaction summarized away still
// names what the model was last sent). An omitted target is not an item;
// a replaced user, assistant, tool result or custom (developer) item
// reads and searches as the replacement text (its Key is the edit's Seq,
// its ItemID stays the target's), and an assistant item takes the tool
// fields of the replacement's first toolCall. Other items (a bash
// execution, a branch summary) keep their own content, as Pi's
// projectContextEntry does.
func (v *View) Refs(scope []int, rules session.Rules) history.RefFunc {
	if rules < session.RulesPi16 {
		return v.Ref
	}
	var edits map[string]int
	for _, s := range scope {
		if v.Tree.Type(s) == session.TypeContextEdit && v.Items[s].Edit != session.EditNone {
			if edits == nil {
				edits = make(map[string]int)
			}
			edits[v.Tree.Entry(s).TargetID()] = s
		}
	}
	if edits == nil {
		return v.Ref
	}
	return func(seq int, windowID string) (history.ItemRef, bool) {
		r, ok := v.Ref(seq, windowID)
		if !ok {
			return r, false
		}
		e := v.Tree.Entry(seq)
		es, edited := edits[e.ID]
		if !edited {
			return r, true
		}
		em := &v.Items[es]
		if em.Edit == session.EditOmit {
			return history.ItemRef{}, false
		}
		switch {
		case e.Type == session.TypeCustomMessage:
		case e.Type == session.TypeMessage && (e.Role == session.RoleUser || e.Role == session.RoleToolResult || e.Role == session.RoleCustom):
		case e.Type == session.TypeMessage && e.Role == session.RoleAssistant:
			r.ToolName, r.ToolNamespace = v.Name(em.ToolName), v.Name(em.ToolNamespace)
		default:
			return r, true
		}
		r.Key, r.Chars = int64(es), int(em.Chars)
		return r, true
	}
}

// ErrFileChanged is returned when an entry's line is no longer where the
// index says it is (the file was rewritten after the last sync).
var ErrFileChanged = errors.New("the session file changed since it was indexed; retry the request")

// Decode reads the entry at seq from the JSONL file and decodes it.
func (v *View) Decode(seq int) (*session.Entry, *session.Decoded, error) {
	e := v.Tree.Entry(seq)
	// The file is opened confined to the sessions directory: a file
	// deleted, or swapped for a symlink leading out, since the last sync
	// fails cleanly as a changed file.
	f, err := v.s.x.openForRead(v.Path)
	if err != nil {
		return nil, nil, ErrFileChanged
	}
	defer f.Close()
	buf := make([]byte, e.Length)
	if _, err := f.ReadAt(buf, e.Offset); err != nil {
		return nil, nil, ErrFileChanged
	}
	h := v.Tree.Header
	p := session.Parser{Header: &h, NextLine: e.Line, NextSeq: e.Seq, LastV1ID: e.ParentID}
	got, d, skip := p.ParseLine(buf, e.Offset)
	if skip != session.SkipNone || got == nil || got.ID != e.ID {
		return nil, nil, ErrFileChanged
	}
	return got, d, nil
}

// Texts is the history.TextSource of this view: item texts are read from
// the session's item-text file.
func (v *View) Texts() history.TextSource {
	t := v.text
	if t == nil {
		t = &textSnap{}
	}
	var c *frameCache
	if v.s != nil && v.s.x != nil {
		c = v.s.x.frames
	}
	return viewTexts{v: v, t: t, cache: c}
}

// viewTexts reads item texts from t, the session's committed item text,
// at the offsets of v.Items.
type viewTexts struct {
	v     *View
	t     *textSnap
	cache *frameCache
}

func (t viewTexts) meta(ref history.ItemRef) (ItemMeta, error) {
	if ref.Key < 0 || int(ref.Key) >= len(t.v.Items) || !t.v.Items[ref.Key].hasText() {
		return ItemMeta{}, fmt.Errorf("item %q has no text", ref.ItemID)
	}
	return t.v.Items[ref.Key], nil
}

// textBuf is the size of textPool's buffers: the 4,000 bytes that hold
// the 1,000 code points of a preview, with room.
const textBuf = 8 << 10

var textPool = sync.Pool{New: func() any { b := make([]byte, textBuf); return &b }}

// text returns conv of the n bytes of item text at off, read into a
// pooled buffer when n ≤ textBuf (conv must not keep them): a preview
// costs one allocation, its string.
func (t viewTexts) text(off int64, n int, conv func(b []byte) string) (string, error) {
	if n == 0 {
		return conv(nil), nil
	}
	var buf []byte
	if n <= textBuf {
		bp := textPool.Get().(*[]byte)
		defer textPool.Put(bp)
		buf = (*bp)[:n]
	} else {
		buf = make([]byte, n)
	}
	r := newTextReader(t.t, t.cache, true)
	defer r.Close()
	if _, err := r.ReadAt(buf, off); err != nil {
		return "", err
	}
	return conv(buf), nil
}

func bytesString(b []byte) string { return string(b) }

// Prefix returns the first maxChars code points of the item's text (the
// whole text when maxChars < 0).
func (t viewTexts) Prefix(ref history.ItemRef, maxChars int) (string, error) {
	im, err := t.meta(ref)
	if err != nil {
		return "", err
	}
	return t.cut(im, 0, maxChars)
}

// Slice returns limitChars code points of the item's text starting at code
// point offsetChars (to the end when limitChars < 0; a negative offset
// counts as 0).
func (t viewTexts) Slice(ref history.ItemRef, offsetChars, limitChars int) (string, error) {
	im, err := t.meta(ref)
	if err != nil {
		return "", err
	}
	return t.cut(im, offsetChars, limitChars)
}

// cutBuf is the read size of cut's scan of a long non-ASCII text (a
// variable for tests).
var cutBuf = 256 << 10

var cutPool = sync.Pool{New: func() any { b := make([]byte, cutBuf); return &b }}

// cut returns the code points [off, off+n) of the item's text (n < 0: to
// the end; off < 0 counts as 0). Code points are counted as
// session.CharWidth steps them (an invalid byte is one, a lone surrogate
// one), the rule that gives ItemMeta.Chars.
func (t viewTexts) cut(im ItemMeta, off, n int) (string, error) {
	off = max(off, 0)
	size := int(im.TextLen)
	if int(im.Chars) == size {
		// Every code point is one byte (ASCII, or invalid bytes that count
		// as one each): code point offsets are byte offsets.
		i := min(off, size)
		j := size
		if n >= 0 && n < size-i {
			j = i + n
		}
		return t.text(im.TextOff+int64(i), j-i, bytesString)
	}
	// A code point takes at most 4 bytes: the first 4*(off+n) bytes hold
	// the range. Short enough, read them at once.
	if n >= 0 && off <= cutBuf && n <= cutBuf && 4*(off+n) < size {
		size = 4 * (off + n)
	}
	if size <= cutBuf {
		return t.text(im.TextOff, size, func(b []byte) string { return cutChars(b, off, n) })
	}
	f := newTextReader(t.t, t.cache, true)
	defer f.Close()
	i, j, err := charRange(f, im, off, n)
	if err != nil || i == j {
		return "", err
	}
	b := make([]byte, j-i)
	if _, err := f.ReadAt(b, im.TextOff+int64(i)); err != nil {
		return "", err
	}
	return string(b), nil
}

// charRange returns the byte range [i, j) of the code points [off, off+n)
// of the item's text (n < 0: to the end), reading it in cutBuf pieces.
func charRange(f io.ReaderAt, im ItemMeta, off, n int) (int, int, error) {
	bp := cutPool.Get().(*[]byte)
	defer cutPool.Put(bp)
	buf := *bp
	if len(buf) > cutBuf {
		buf = buf[:max(cutBuf, utf8.UTFMax)]
	}
	total := int(im.TextLen)
	base, have := 0, 0 // buf[:have] holds text[base:base+have]
	p, c := 0, 0       // byte p of the text is code point c
	start := -1
	for {
		if start < 0 && c == off {
			start = p
		}
		if p == total || (start >= 0 && n >= 0 && c-off == n) {
			if start < 0 {
				start = p
			}
			return start, p, nil
		}
		goal := off
		if start >= 0 {
			goal = math.MaxInt
			if n >= 0 {
				goal = off + n
			}
		}
		if p-base+utf8.UTFMax > have && base+have < total {
			base, have = p, min(len(buf), total-p)
			if _, err := f.ReadAt(buf[:have], im.TextOff+int64(base)); err != nil {
				return 0, 0, err
			}
		}
		k, m := advance(buf[p-base:have], goal-c, base+have == total)
		p, c = p+k, c+m
	}
}

// advance steps over at most n code points from the start of b and
// returns the bytes and code points stepped over. Unless final (b ends
// where the text ends) it stops where fewer than utf8.UTFMax bytes
// remain, so that no code point is decoded from a partial read.
func advance(b []byte, n int, final bool) (int, int) {
	stop := len(b)
	if !final {
		stop -= utf8.UTFMax - 1
	}
	i, c := 0, 0
	for c < n && i < stop {
		if i+8 <= stop && n-c >= 8 && binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 == 0 {
			i, c = i+8, c+8
			continue
		}
		if b[i] < utf8.RuneSelf {
			i++
		} else {
			i += session.CharWidth(b[i:])
		}
		c++
	}
	return i, c
}

// cutChars returns the code points [off, off+n) of b (n < 0: to the end).
func cutChars(b []byte, off, n int) string {
	i := 0
	for c := 0; c < off && i < len(b); c++ {
		i += session.CharWidth(b[i:])
	}
	if n < 0 {
		return string(b[i:])
	}
	j := i
	for c := 0; c < n && j < len(b); c++ {
		j += session.CharWidth(b[j:])
	}
	return string(b[i:j])
}

// Search reads the item-text file in pieces of searchChunk bytes (more for
// a very long query). Texts to search that are at most searchGap bytes
// apart in the file are read in one piece, the bytes between them
// included. When more than searchSplit bytes are to be searched, two
// goroutines search one half each. (Variables for tests.)
var (
	searchChunk       = 256 << 10
	searchGap   int64 = 32 << 10
	searchSplit int64 = 8 << 20
)

// scanSlots bounds the searches that scan item text at once to the
// number of cores (at least 2); the others wait for a slot in the order
// they came. The scan is CPU work, so more at once only share the cores
// and make each as slow as the slowest; the searches behind one wait for
// it instead (docs/benchmarks.md, "Bounded scans": 32 clients on 2 cores,
// p99 ≤ 25 ms). A search that reads every frame (a 1- or 2-byte query,
// about 1 s at 1 GiB) holds its slot that long.
var scanSlots = make(chan struct{}, max(2, runtime.GOMAXPROCS(0)))

// scanCores bounds the cores that read item text without frame filters
// (a 1- or 2-byte query, or frames whose filters are not built yet: every
// frame of the spans is read) to one less than GOMAXPROCS, at least one.
// A search of an UnfilteredQuery holds a token for all of its work
// (Session.ReadScan); another scan without filters takes a token for each
// piece it reads and gives it back after. The long scans share the tokens,
// and a core is
// left for the requests that hold no scan: /context, which runs before
// every model call, and the sync of an appended line. Without it, two
// slots' scans of two goroutines each kept both cores, and a /context
// waited for a core for as long as a few pieces took (docs/benchmarks.md,
// the "/context p99 under 4 clients of 1-byte searches" row). The Go
// scheduler has no priorities; this is the priority.
var scanCores = make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1))

// UnfilteredQuery reports whether a search for query reads every frame of
// the text it searches: the frame filters hold no n-gram shorter than
// shortGram bytes (framefilter.go), so a 1- or 2-byte query is ruled out
// of no frame. Such a search holds a scanCores token for all of its work
// (Session.ReadScan).
func UnfilteredQuery(query string) bool { return len(query) < shortGram }

var searchPool = sync.Pool{New: func() any { b := make([]byte, searchChunk); return &b }}

// spanPool holds Search's span lists (up to maxPooledSpans spans each).
var spanPool = sync.Pool{New: func() any { return new([]span) }}

const maxPooledSpans = 1 << 20

// makeSpans returns the spans of refs' texts (items without text, or with
// an empty one, have none) in file order, the text of an item named twice
// once; inOrder says whether refs name them in file order (spans[i].ref
// ascending with i), total is the bytes they cover. spans is appended to.
func makeSpans(spans []span, refs history.ItemList, items []ItemMeta) ([]span, bool, int64) {
	if spans == nil {
		spans = make([]span, 0, refs.Len())
	}
	spans, inOrder, total := appendSpans(spans, refs, 0, items)
	if !inOrder {
		slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.off, b.off) })
		// The same text named twice (the same item in two refs) is
		// searched once: matched marks every ref by Key.
		spans = slices.CompactFunc(spans, func(a, b span) bool { return a.off == b.off })
	}
	return spans, inOrder, total
}

// appendSpans appends to spans the spans of refs[from:], unsorted;
// inOrder says whether they follow spans' last and each other in file
// order, total is the bytes they cover.
func appendSpans(spans []span, refs history.ItemList, from int, items []ItemMeta) ([]span, bool, int64) {
	inOrder := true // spans strictly ascending in refs order
	var total int64
	for i, n := from, refs.Len(); i < n; i++ {
		key := refs.Key(i)
		if key < 0 || int(key) >= len(items) || !items[key].hasText() || items[key].TextLen == 0 {
			continue
		}
		im := &items[key]
		s := span{off: im.TextOff, n: uint32(im.TextLen), ref: int32(i)}
		if n := len(spans); n > 0 && spans[n-1].off >= s.off {
			inOrder = false
		}
		spans = append(spans, s)
		total += int64(im.TextLen)
	}
	return spans, inOrder, total
}

// spanCacheMin is the number of refs from which a search keeps its spans
// for the next search over the same refs.
const spanCacheMin = 4096

// spanCache is the session's cache of the spans of the last large refs
// list searched (nil for a small list or a view of no session).
func (t viewTexts) spanCache() *spanCache {
	if t.v.s == nil {
		return nil
	}
	return &t.v.s.spans
}

// spanCache keeps the spans of one refs list: the coordinator hands every
// unfiltered search of a leaf the same cached SearchOrder slice, so 32
// clients searching one session build its spans (a quarter-million items
// at 1 GiB) once. The list is kept, so its identity (history.SameList)
// names it while it is cached; items of a text epoch never change.
//
// The list of the next leaf, after an append, begins with the cached one
// (history.Extends): its spans are the cached ones and those of the new
// refs, appended in place when the array has room. That is safe because
// only get appends, under mu, always at the end of spans, which it then
// keeps: spans is the longest slice of its array ever handed out, and
// every search reading an earlier one reads only within its own length.
type spanCache struct {
	mu      sync.Mutex
	refs    history.ItemList
	epoch   uint64
	spans   []span
	inOrder bool
	total   int64
}

// get returns makeSpans(refs) for the text of epoch, from the cache when
// it holds them or the list they were made for begins refs. The spans
// returned are shared: read only.
func (c *spanCache) get(refs history.ItemList, epoch uint64, items []ItemMeta) ([]span, bool, int64) {
	if refs.Len() < spanCacheMin {
		return makeSpans(nil, refs, items)
	}
	c.mu.Lock()
	if c.epoch == epoch && c.refs != nil {
		if history.SameList(c.refs, refs) {
			defer c.mu.Unlock()
			return c.spans, c.inOrder, c.total
		}
		if c.inOrder && history.Extends(c.refs, refs) {
			spans, inOrder, more := appendSpans(c.spans, refs, c.refs.Len(), items)
			if inOrder {
				defer c.mu.Unlock()
				c.refs, c.spans, c.total = refs, spans, c.total+more
				return c.spans, true, c.total
			}
			// Out of order: what was appended lies past every slice
			// handed out; the spans are made again below.
		}
	}
	c.mu.Unlock()
	// Room for the appends of the next leaves (a window's worth at 1 GiB).
	spans, inOrder, total := makeSpans(make([]span, 0, refs.Len()+refs.Len()/16), refs, items)
	c.mu.Lock()
	c.refs, c.epoch, c.spans, c.inOrder, c.total = refs, epoch, spans, inOrder, total
	c.mu.Unlock()
	return spans, inOrder, total
}

// span is the text of one item to search: bytes [off, off+n) of the
// item text, ref the index in refs of the first ref naming it (16 bytes: a
// quarter-million of them are kept per large session, spanCache).
type span struct {
	off int64
	n   uint32
	ref int32
}

func (s span) end() int64 { return s.off + int64(s.n) }

// Search calls fn, in the order of refs, for each ref whose text contains
// query as a byte substring (case-sensitive literal), until fn returns
// false. The texts are read from the item-text file in file order, in
// pieces, and scanned for the query's rarest byte (byteRank), each hit
// checked against the query; a match counts only if it lies inside one
// item. When refs are in file order, fn is called as the matches are
// found, so a search stops reading once fn has had enough; otherwise the
// matches are collected first. Large searches run on two goroutines.
func (t viewTexts) Search(query string, refs history.ItemList, limit int, fn func(ref history.ItemRef) bool) error {
	if refs.Len() == 0 || query == "" {
		return nil
	}
	if !t.v.scanHeld {
		scanSlots <- struct{}{}
		defer func() { <-scanSlots }()
	}
	items := t.v.Items
	var spans []span
	var inOrder bool
	var total int64
	if c := t.spanCache(); c != nil {
		spans, inOrder, total = c.get(refs, t.t.epoch, items)
	} else {
		sp := spanPool.Get().(*[]span)
		defer func() {
			if cap(*sp) <= maxPooledSpans {
				spanPool.Put(sp)
			}
		}()
		spans, inOrder, total = makeSpans((*sp)[:0], refs, items)
		defer func() { *sp = spans[:0] }()
	}
	if len(spans) == 0 {
		return nil
	}
	// Each goroutine scanning has its own reader (textSource): frames
	// are decoded into its own buffers, shared frames only looked up.
	newSrc := func() *textSource { return &textSource{r: newTextReader(t.t, t.cache, false)} }
	src := newSrc()
	defer src.r.Close()
	fd := newFinder(query)
	var cs *candidates
	if t.v.s != nil {
		var err error
		if cs, err = t.v.s.filterCandidates(t.v.filters, query, spans[0].off, spans[len(spans)-1].end()); err != nil {
			return err
		}
		if cs != nil {
			defer cs.release()
		}
	}

	var matched []bool // by Key, when !inOrder
	var emit func(i int) bool
	// The frame where a found item's text starts is likely decoded
	// already: it goes to the shared cache for the item's preview.
	if inOrder {
		emit = func(i int) bool { src.r.share(int(spans[i].off / frameSize)); return fn(refs.At(int(spans[i].ref))) }
	} else {
		matched = make([]bool, len(items))
		emit = func(i int) bool {
			src.r.share(int(spans[i].off / frameSize))
			matched[refs.Key(int(spans[i].ref))] = true
			return true
		}
	}

	// With frame filters the bytes read are few: a second goroutine would
	// only scan ahead for matches a limited search does not need (and
	// compete with other searches for the cores). A search that holds a
	// scan core for all of its work (coreHeld) keeps to that one core: a
	// second goroutine would wait for a token of its own, and with every
	// token held by such searches it waited forever (on three cores or
	// more, four concurrent 1-byte searches hung).
	if total <= searchSplit || cap(scanCores) < 2 || cs != nil || t.v.coreHeld {
		if _, err := scanSpans(src, fd, cs, spans, nil, t.v.coreHeld, emit); err != nil {
			return err
		}
	} else {
		// Two halves of about the same size; the second is scanned by
		// another goroutine that records its matches, the first by this
		// one, and the second half's matches are emitted after the
		// first's, so fn is called in order and never concurrently.
		half, acc := 0, int64(0)
		for half < len(spans)-1 && acc < total/2 {
			acc += spans[half].end() - spans[half].off
			half++
		}
		var stop atomic.Bool
		var hits []int
		var err2 error
		done := make(chan struct{})
		src2 := newSrc()
		go func() {
			defer close(done)
			defer src2.r.Close()
			_, err2 = scanSpans(src2, fd, cs, spans[half:], &stop, false, func(i int) bool {
				hits = append(hits, half+i)
				return true
			})
		}()
		more, err := scanSpans(src, fd, cs, spans[:half], nil, t.v.coreHeld, emit)
		if !more || err != nil {
			stop.Store(true)
		}
		<-done
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		if err2 != nil {
			return err2
		}
		for _, i := range hits {
			if !emit(i) {
				return nil
			}
		}
	}
	if !inOrder {
		for i, n := 0, refs.Len(); i < n; i++ {
			if k := refs.Key(i); k >= 0 && int(k) < len(matched) && matched[k] {
				if !fn(refs.At(i)) {
					return nil
				}
			}
		}
	}
	return nil
}

// scanSpans finds which of spans (ascending, disjoint) contain fd's query
// and calls emit(i) for each, in order. It returns false when emit did
// (and stops then), or when stop was set. Frames that cs (nil: none) rules
// out are not read.
func scanSpans(src *textSource, fd *finder, cs *candidates, spans []span, stop *atomic.Bool, coreHeld bool, emit func(i int) bool) (bool, error) {
	bp := searchPool.Get().(*[]byte)
	defer searchPool.Put(bp)
	buf := *bp
	if len(buf) > searchChunk {
		buf = buf[:searchChunk]
	}
	nq := int64(len(fd.q))
	if int64(len(buf)) < 4*nq {
		buf = make([]byte, 4*nq)
	}
	cur := 0 // the first span that may still match
	pos := int64(0)
	core := false // a scanCores token is held (cs == nil)
	defer func() {
		if core {
			<-scanCores
		}
	}()
	for cur < len(spans) {
		if stop != nil && stop.Load() {
			return false, nil
		}
		// A match from pos on ends at pos+len(q) or later.
		cur = spanAfter(spans, cur, pos+nq)
		if cur == len(spans) {
			break
		}
		pos = max(pos, spans[cur].off)
		if cs != nil {
			// No match starts in a frame the filters rule out.
			if p := cs.skip(pos); p > pos {
				pos = p
				continue
			}
		}
		// Read up to the end of the run of close spans from cur, at most
		// one buffer.
		k, runEnd := cur+1, spans[cur].end()
		for k < len(spans) && runEnd-pos < int64(len(buf)) && spans[k].off-runEnd <= searchGap {
			runEnd = max(runEnd, spans[k].end())
			k++
		}
		end := min(runEnd, pos+int64(len(buf)))
		if cs != nil {
			end = min(end, cs.limit(pos, nq, end))
		}
		// Yield the core between pieces (a piece is at most searchChunk
		// bytes, well under a millisecond): a search that reads every
		// frame would otherwise keep a P until the scheduler preempts it
		// (10 ms), while /context and other short requests wait for one.
		// A scan without frame filters reads each piece holding a
		// scanCores token.
		if core {
			<-scanCores
			core = false
		}
		if !yieldToUrgent() {
			runtime.Gosched()
		}
		if cs == nil && !coreHeld {
			scanCores <- struct{}{}
			core = true
		}
		chunk, err := src.at(buf[:end-pos], pos)
		if err != nil {
			return false, err
		}
		for i := 0; i+len(fd.q) <= len(chunk); {
			j := fd.index(chunk[i:])
			if j < 0 {
				break
			}
			p := pos + int64(i+j)
			cur = spanAfter(spans, cur, p+nq)
			if cur == len(spans) {
				return true, nil
			}
			if spans[cur].off <= p {
				if !emit(cur) {
					return false, nil
				}
				cur++
				if cur == len(spans) {
					return true, nil
				}
			}
			// Go on at the next position, or at the start of the next
			// span when that is further.
			i = int(max(int64(i+j+1), spans[cur].off-pos))
		}
		if end == runEnd {
			// Every span of the run has been read whole.
			cur, pos = max(cur, k), end
		} else {
			// Overlap by len(q)-1 so a match across pieces is seen once.
			pos = end - nq + 1
		}
	}
	return true, nil
}

// spanAfter returns the first index from cur of a span of spans
// (ascending, disjoint) that ends at end or later (len(spans): none). A
// few steps are taken one by one (the next span usually qualifies), then
// it searches by halves: after the frame filters skip far ahead, a
// linear walk would visit every span in between (a quarter-million at
// 1 GiB, about 50 µs per search).
func spanAfter(spans []span, cur int, end int64) int {
	for k := 0; k < 8; k++ {
		if cur == len(spans) || spans[cur].end() >= end {
			return cur
		}
		cur++
	}
	i, _ := slices.BinarySearchFunc(spans[cur:], end, func(s span, e int64) int {
		if s.end() < e {
			return -1
		}
		return 1
	})
	return cur + i
}

// textSource gives scanSpans the bytes of the item text.
type textSource struct {
	r *textReader
}

// at returns the len(buf) bytes at off.
func (t *textSource) at(buf []byte, off int64) ([]byte, error) {
	_, err := t.r.ReadAt(buf, off)
	return buf, err
}

// finder finds a byte string by its rarest byte: bytes.IndexByte for
// that byte (which skips text at memory speed), then a check of the whole
// string around each hit. It falls back to bytes.Index when hits turn out
// too common.
type finder struct {
	q     []byte
	rare  int // index in q of the rarest byte (byteRank)
	rare2 int // index of the next rarest, checked first on each hit
}

func newFinder(query string) *finder {
	f := &finder{q: []byte(query)}
	for i := range f.q {
		if byteRank[f.q[i]] < byteRank[f.q[f.rare]] {
			f.rare = i
		}
	}
	f.rare2 = -1
	for i := range f.q {
		if i != f.rare && (f.rare2 < 0 || byteRank[f.q[i]] < byteRank[f.q[f.rare2]]) {
			f.rare2 = i
		}
	}
	if f.rare2 < 0 {
		f.rare2 = f.rare
	}
	return f
}

// index returns the index of the first instance of the query in s, or -1.
func (f *finder) index(s []byte) int {
	q, k := f.q, f.rare
	n := len(q)
	if n > len(s) {
		return -1
	}
	b, b2, k2 := q[k], q[f.rare2], f.rare2
	last := len(s) - n + k // the rare byte of a match starting at len(s)-n
	fails := 0
	for i := k; i <= last; {
		j := bytes.IndexByte(s[i:last+1], b)
		if j < 0 {
			return -1
		}
		i += j
		st := i - k
		if s[st+k2] == b2 && bytes.Equal(s[st:st+n], q) {
			return st
		}
		i++
		fails++
		// Like bytes.Index: when the rare byte is not rare here, the
		// generic search is faster.
		if fails > 4+(i>>4) && i < last {
			r := bytes.Index(s[st+1:], q)
			if r < 0 {
				return -1
			}
			return st + 1 + r
		}
	}
	return -1
}

// byteRank orders bytes by their frequency in typical item texts (source
// code in several languages, JSON, English prose): 0 is the rarest, 255
// the most common (the space).
var byteRank = [256]uint8{
	0, 1, 22, 2, 3, 4, 5, 6, 7, 231, 245, 8, 37, 173, 53, 54, // 0x0-0xf
	9, 10, 11, 12, 13, 14, 15, 16, 23, 17, 18, 50, 24, 25, 19, 26, // 0x10-0x1f
	255, 168, 246, 186, 159, 164, 172, 210, 226, 225, 207, 174, 239, 227, 237, 230, // 0x20-0x2f
	234, 223, 220, 208, 206, 203, 201, 192, 200, 194, 236, 190, 169, 222, 180, 165, // 0x30-0x3f
	167, 215, 185, 204, 193, 216, 189, 181, 179, 209, 162, 171, 202, 191, 199, 197, // 0x40-0x4f
	198, 163, 205, 214, 218, 183, 178, 182, 166, 170, 160, 196, 184, 195, 161, 221, // 0x50-0x5f
	188, 247, 228, 243, 242, 254, 233, 232, 235, 249, 187, 213, 244, 238, 252, 251, // 0x60-0x6f
	241, 176, 250, 248, 253, 240, 219, 217, 229, 224, 177, 212, 175, 211, 151, 20, // 0x70-0x7f
	157, 154, 153, 144, 125, 98, 93, 85, 126, 108, 106, 127, 139, 84, 67, 96, // 0x80-0x8f
	92, 76, 78, 102, 150, 100, 83, 109, 90, 138, 94, 72, 129, 113, 79, 130, // 0x90-0x9f
	89, 119, 74, 88, 147, 115, 105, 104, 122, 114, 99, 128, 91, 82, 112, 110, // 0xa0-0xaf
	145, 111, 124, 116, 121, 141, 95, 117, 148, 120, 132, 123, 140, 142, 146, 133, // 0xb0-0xbf
	69, 47, 131, 149, 80, 66, 58, 77, 64, 63, 70, 51, 87, 73, 136, 81, // 0xc0-0xcf
	158, 152, 57, 62, 61, 56, 68, 60, 52, 59, 45, 28, 55, 36, 46, 44, // 0xd0-0xdf
	48, 107, 156, 155, 101, 143, 134, 135, 137, 97, 86, 103, 118, 75, 34, 71, // 0xe0-0xef
	65, 42, 40, 49, 27, 33, 30, 35, 41, 32, 43, 38, 39, 31, 29, 21, // 0xf0-0xff
}
