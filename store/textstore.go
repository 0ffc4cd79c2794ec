package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/s2"
)

// Item texts are stored compressed (docs/benchmarks.md): the session's item text is
// one stream of bytes (ItemMeta.TextOff/TextLen are offsets in it), cut
// into frames of frameSize bytes. Every complete frame is s2-compressed
// (klauspost/compress s2 block format) into texts/N.s2, one after the
// other (a large ingest writes its frames raw first and the filter
// builder's thread compresses them after it: rawframes.go); texts/N.s2x holds the end offset in N.s2 of each frame (uint64
// little-endian, frame f's bytes are [end[f-1], end[f]), end[-1] = 0). The
// bytes after the last complete frame, the tail (under frameSize bytes),
// are kept raw in the sessions row (text_tail), committed in the same
// transaction as text_bytes, so the committed text is always
// frames×frameSize + len(tail) bytes and a crash leaves at most frames
// beyond the committed ones, which load truncates away.
//
// Frames are cut from the stream at multiples of frameSize, whatever the
// ingest batches were: an index built in one pass and one built append by
// append store the same frames.
//
// Compressed, the text takes about a quarter of its raw size on the bench
// sessions (s2 on 16 KiB frames),
// which pays for the search frame filters (framefilter.go). Readers decompress
// the frames they touch; read_item and list_items keep recently decoded
// frames in the index's frameCache.
const frameSize = TextFrameSize

// TextFrameSize is the raw size of an item-text frame: the committed text
// of a session is text_bytes bytes, the last text_bytes mod TextFrameSize
// of them (text_tail) raw, the others in frames (texts/N.s2).
const TextFrameSize = 16 << 10

// frameIndexEntry is the size of one N.s2x record.
const frameIndexEntry = 8

func (s *Session) framePath() string { return s.textFiles().path("s2") }

func (s *Session) frameIndexPath() string { return s.textFiles().path("s2x") }

// textFiles is the generation of the session's files that syncs write
// (textfiles.go): s.files, or generation 0 of s.fileID before it is set.
func (s *Session) textFiles() *textFiles {
	if s.files != nil && s.files.fileID == s.fileID {
		return s.files
	}
	return s.x.textFilesOf(s.fileID, 0)
}

// textEpochs numbers every state of a session's item text that readers
// can see (each reset or load takes a new number), so that frameCache
// entries of a dropped text are never served for a new one.
var textEpochs atomic.Uint64

// textSnap is the committed item text as a view sees it: frames frames,
// the first len(ends) of them compressed in path, the others raw in raw
// (rawframes.go), then tail. ends and tail are never written once
// published (later frames are appended past len(ends)); path is never
// rewritten in place (a reset writes the next text under another name,
// textfiles.go), and raw is removed only once no reader holds it.
type textSnap struct {
	epoch  uint64
	path   string
	index  string // path's frame index
	ends   []int64
	raw    *rawFile // nil when frames == len(ends)
	frames int
	tail   []byte
}

// rawFile is t's raw file (nil: none, or t nil).
func (t *textSnap) rawFile() *rawFile {
	if t == nil {
		return nil
	}
	return t.raw
}

// size is the number of bytes of item text.
func (t *textSnap) size() int64 { return int64(t.frames)*frameSize + int64(len(t.tail)) }

// frameSpan returns the bytes of N.s2 that hold frame f.
func (t *textSnap) frameSpan(f int) (int64, int64) {
	start := int64(0)
	if f > 0 {
		start = t.ends[f-1]
	}
	return start, t.ends[f]
}

// errTextRange is returned for a read past the committed item text.
var errTextRange = errors.New("item text read past the end of the committed text")

// textReader reads a textSnap: ReadAt over the raw text, decompressing the
// frames it touches. It keeps the last two frames it read, in its own
// buffers (a search reads consecutive, overlapping pieces); cache (nil:
// none) shares decoded frames between requests, by copy, so a reader
// decodes a frame the cache holds for the cost of a 16 KiB copy and reads
// leave no garbage. Not safe for concurrent use.
type textReader struct {
	t     *textSnap
	f     *os.File
	rf    *os.File // the raw file, once a raw frame is read
	cache *frameCache
	keep  bool // put frames decoded here into cache
	comp  []byte
	last  [2]decodedFrame
	next  int // the slot of last to replace
}

type decodedFrame struct {
	f    int    // frame number + 1 (0: empty slot)
	data []byte // its bytes (frameSize), in this slot's own buffer
}

// readerPool keeps textReaders with their buffers (a compressed frame and
// two decoded ones): 32 searches at once would otherwise allocate them
// per request.
var readerPool = sync.Pool{New: func() any { return new(textReader) }}

func newTextReader(t *textSnap, cache *frameCache, keep bool) *textReader {
	r := readerPool.Get().(*textReader)
	r.t, r.cache, r.keep = t, cache, keep
	return r
}

// Close closes the frame file, if it was opened, and gives the reader
// back to the pool with its buffers: it must not be used after.
func (r *textReader) Close() error {
	var err error
	if r.f != nil {
		err = r.f.Close()
	}
	if r.rf != nil {
		err = errors.Join(err, r.rf.Close())
	}
	r.t, r.f, r.rf, r.cache, r.next = nil, nil, nil, nil, 0
	for i := range r.last {
		r.last[i].f = 0
	}
	readerPool.Put(r)
	return err
}

// ReadAt fills p with the text bytes at off; it fails with errTextRange
// when they are not all committed.
func (r *textReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off+int64(len(p)) > r.t.size() {
		return 0, errTextRange
	}
	n := 0
	for n < len(p) {
		pos := off + int64(n)
		f := int(pos / frameSize)
		if f >= r.t.frames {
			n += copy(p[n:], r.t.tail[pos-int64(r.t.frames)*frameSize:])
			continue
		}
		data, err := r.frame(f)
		if err != nil {
			return n, err
		}
		n += copy(p[n:], data[pos-int64(f)*frameSize:])
	}
	return n, nil
}

// frame returns the decoded bytes of frame f (frameSize bytes, valid
// until the reader reads two other frames; not to be modified).
func (r *textReader) frame(f int) ([]byte, error) {
	for _, d := range r.last {
		if d.f == f+1 {
			return d.data, nil
		}
	}
	slot := &r.last[r.next]
	r.next = 1 - r.next
	slot.f = 0
	if cap(slot.data) < frameSize {
		slot.data = make([]byte, frameSize)
	}
	key := frameKey{epoch: r.t.epoch, frame: f}
	if r.cache.get(key, slot.data[:frameSize]) {
		slot.f, slot.data = f+1, slot.data[:frameSize]
		return slot.data, nil
	}
	if f >= len(r.t.ends) {
		if err := r.readRaw(f, slot.data[:frameSize]); err != nil {
			return nil, err
		}
		slot.f, slot.data = f+1, slot.data[:frameSize]
		if r.keep {
			r.cache.put(key, slot.data)
		}
		return slot.data, nil
	}
	if r.f == nil {
		fh, err := openText(r.t.path)
		if err != nil {
			return nil, err
		}
		r.f = fh
	}
	start, end := r.t.frameSpan(f)
	if int64(cap(r.comp)) < end-start {
		r.comp = make([]byte, end-start)
	}
	comp := r.comp[:end-start]
	if _, err := r.f.ReadAt(comp, start); err != nil {
		return nil, fmt.Errorf("read item text frame %d: %w", f, err)
	}
	data, err := decodeFrame(slot.data, comp)
	if err != nil {
		return nil, fmt.Errorf("item text frame %d: %w", f, err)
	}
	slot.f, slot.data = f+1, data
	if r.keep {
		r.cache.put(key, data)
	}
	return data, nil
}

// readRaw reads frame f, one of the raw ones, into dst.
func (r *textReader) readRaw(f int, dst []byte) error {
	if r.rf == nil {
		fh, err := openText(r.t.raw.path)
		if err != nil {
			return err
		}
		r.rf = fh
	}
	return readRawFrame(r.rf, r.t.raw, f, dst)
}

// openText opens a file of the item text for reading; ErrFileChanged
// when it is gone: removed under a reader that does not hold its
// generation (Rebuild removes every file; textfiles.go).
func openText(path string) (*os.File, error) {
	fh, err := openDiskFile(path, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, ErrFileChanged
	}
	return fh, err
}

// share puts frame f into the cache when this reader has it decoded (a
// copy), so that the previews of the items a search found do not decode
// it again.
func (r *textReader) share(f int) {
	if r.cache == nil || r.keep {
		return
	}
	for _, d := range r.last {
		if d.f == f+1 {
			r.cache.put(frameKey{epoch: r.t.epoch, frame: f}, d.data)
			return
		}
	}
}

// errFrame is returned for a frame that does not decode to frameSize bytes.
var errFrame = errors.New("corrupt item text frame")

// decodeFrame decodes one compressed frame into dst (allocated when nil
// or too small). A frame must decode to exactly frameSize bytes.
func decodeFrame(dst, comp []byte) ([]byte, error) {
	n, err := s2.DecodedLen(comp)
	if err != nil || n != frameSize {
		return nil, errFrame
	}
	if cap(dst) < frameSize {
		dst = make([]byte, frameSize)
	}
	out, err := s2.Decode(dst[:frameSize], comp)
	if err != nil || len(out) != frameSize {
		return nil, errFrame
	}
	return out, nil
}

// frameKey names a decoded frame of one state of one session's text.
type frameKey struct {
	epoch uint64
	frame int
}

// frameCache keeps the most recently put decoded frames of all sessions
// (at most frameCacheFrames of them: 2 MiB), for read_item, list_items
// and the previews of search answers, which read a few KiB at a time from
// the same frames. Its buffers are its own, allocated once per slot and
// reused: put and get copy (a 16 KiB copy is about 1 µs, a decode of the
// same frame about 18 µs on the bench machine), so that readers need not
// hold a frame the cache may replace, and 32 searches at once leave no
// decoded frames behind for the garbage collector. Gets share mu (they
// only read slots), so concurrent searches copy out at the same time;
// a put takes it alone.
type frameCache struct {
	mu    sync.RWMutex
	m     map[frameKey]int // slot of each frame held
	slots []frameSlot      // a ring, replaced oldest first
	hand  int              // the slot to replace next
}

type frameSlot struct {
	key  frameKey
	data []byte // nil until first used
}

const frameCacheFrames = 128

func newFrameCache() *frameCache {
	return &frameCache{m: map[frameKey]int{}, slots: make([]frameSlot, frameCacheFrames)}
}

// get copies frame k into dst (frameSize bytes) and reports whether the
// cache holds it.
func (c *frameCache) get(k frameKey, dst []byte) bool {
	if c == nil {
		return false
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	i, ok := c.m[k]
	if ok {
		copy(dst, c.slots[i].data)
	}
	return ok
}

// put keeps a copy of data (frameSize bytes) as frame k, in place of the
// oldest frame put when the cache is full.
func (c *frameCache) put(k frameKey, data []byte) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[k]; ok {
		return
	}
	sl := &c.slots[c.hand]
	if sl.data != nil {
		delete(c.m, sl.key)
	} else {
		sl.data = make([]byte, frameSize)
	}
	copy(sl.data, data)
	sl.key = k
	c.m[k] = c.hand
	c.hand = (c.hand + 1) % len(c.slots)
}

// frameWriter appends item texts during an ingest batch: raw bytes go to
// buf (which starts as the committed tail) and each full frame is
// compressed and written to the frame file at end. Nothing it writes is
// visible before the batch commits (ends and buf are published then).
//
// The frames are compressed on the ingesting goroutine, as they fill. A
// second goroutine compressing them while the batch went on parsing cost
// more CPU than it saved wall time on the shared two-core bench machine:
// the first /context of a never-indexed 128 MiB session took 7-14% less
// CPU with it gone, and no more wall time under that load
// (docs/benchmarks.md, "Full index CPU").
//
// An ingest of rawIngestBytes or more writes its full frames raw instead,
// into a raw file (rawframes.go): rf is set, and the frames go to it from
// rawOff, nraw of them in this batch.
type frameWriter struct {
	f    io.WriterAt // the frame file (a sync's: opened at its first write)
	end  int64       // end of the frames in the frame file
	ends []int64     // ends of the frames written by this batch
	buf  []byte      // raw text after the last frame written (with rf: up to frameWriteBytes)
	enc  []byte
	out  []byte // frames not written yet, from outOff
	n    int64  // bytes written by this batch

	outOff int64

	rf     io.WriterAt // the raw file written (nil: frames are compressed)
	raw    *rawFile    // its raw file
	rawOff int64       // where its next frame goes
	nraw   int         // raw frames written by this batch
}

// write appends an item text to the frames.
func (w *frameWriter) write(s string) error { return appendText(w, s) }

// writeBytes appends an item text held in bytes (history.RenderTo's
// buffer) to the frames.
func (w *frameWriter) writeBytes(b []byte) error { return appendText(w, b) }

// appendText is write and writeBytes. buf gathers the text a frame at a
// time, each full frame compressed into out (flushFrame). A writer of raw
// frames gathers up to frameWriteBytes in buf and writes its whole frames
// from there (flushRaw), so each byte is copied once, not twice as into a
// compressed frame. Writing a long text's whole frames straight from the
// text, not copied at all, cost more system CPU than the copy saved:
// 1.06-1.20 against 0.81-0.93 s at the first /context of a 1 GiB session
// (docs/benchmarks.md, "Long lines read once").
func appendText[T ~string | ~[]byte](w *frameWriter, s T) error {
	w.n += int64(len(s))
	full := frameSize
	if w.rf != nil {
		full = frameWriteBytes
	}
	for len(s) > 0 {
		k := min(len(s), full-len(w.buf))
		w.buf = append(w.buf, s[:k]...)
		s = s[k:]
		if len(w.buf) < full {
			continue
		}
		if w.rf != nil {
			if err := w.flushRaw(); err != nil {
				return err
			}
			continue
		}
		if err := w.flushFrame(w.buf); err != nil {
			return err
		}
		w.buf = w.buf[:0]
	}
	return nil
}

// flushRaw writes buf's whole frames to the raw file at its next frame and
// keeps the rest (under a frame) at its start.
func (w *frameWriter) flushRaw() error {
	whole := len(w.buf) / frameSize * frameSize
	if whole == 0 {
		return nil
	}
	if _, err := w.rf.WriteAt(w.buf[:whole], w.rawOff); err != nil {
		return err
	}
	w.rawOff += int64(whole)
	w.nraw += whole / frameSize
	w.buf = w.buf[:copy(w.buf, w.buf[whole:])]
	return nil
}

// finish writes the frames of this batch not written yet (buf then holds
// the tail, under a frame).
func (w *frameWriter) finish() error {
	if w.rf != nil {
		return w.flushRaw()
	}
	return w.writeOut()
}

// frameWriteBytes is how many bytes are gathered per write: compressed
// frames in out, or raw frames in buf.
const frameWriteBytes = 256 << 10

// flushFrame compresses a full raw frame into the pending output, written
// to the frame file once frameWriteBytes are gathered (and by finish).
func (w *frameWriter) flushFrame(raw []byte) error {
	if need := frameEncodedMax; cap(w.enc) < need {
		w.enc = make([]byte, need)
	}
	enc := encodeFrame(w.enc[:cap(w.enc)], raw)
	if len(w.out) == 0 {
		w.outOff = w.end
	}
	w.out = append(w.out, enc...)
	w.end += int64(len(enc))
	w.ends = append(w.ends, w.end)
	if len(w.out) >= frameWriteBytes {
		return w.writeOut()
	}
	return nil
}

// encodeFrame is s2.Encode(dst, raw) for a full raw frame (frameSize
// bytes), made by a cheaper encoder; it decodes with s2.Decode to raw
// (TestEncodeFrameDecodes). s2 picks its block encoder by the input's
// length: from 16 KiB up one that clears a 64 KiB hash table per call,
// below it one with a 16 KiB table. On the bench session's item text the
// smaller one compressed a 16 KiB frame 1.6x faster and no larger (the
// frames' compression was a fifth of a cold index's CPU). So the frame's
// first frameSize-1 bytes are encoded as one block and its last byte
// appended as a literal: an S2 block, like a Snappy block, is the uvarint
// decoded length followed by elements, and a literal of one byte is the
// tag 0x00 and the byte (https://github.com/google/snappy/blob/main/format_description.txt,
// which S2 extends: https://github.com/klauspost/compress/tree/master/s2#format-extensions);
// the length is rewritten to frameSize. dst needs frameEncodedMax bytes.
func encodeFrame(dst, raw []byte) []byte {
	n := len(raw) - 1
	// The block of raw[:n], encoded after room for the longer length.
	var lb [binary.MaxVarintLen64]byte
	hdr := binary.PutUvarint(lb[:], uint64(len(raw)))
	enc := s2.Encode(dst[hdr:], raw[:n])
	_, short := binary.Uvarint(enc)
	out := dst[:0]
	out = binary.AppendUvarint(out, uint64(len(raw)))
	out = append(out, enc[short:]...) // overlaps forward: copy moves it correctly
	return append(out, 0x00, raw[n])
}

// frameEncodedMax bounds encodeFrame's output and is the room it needs.
var frameEncodedMax = binary.MaxVarintLen64 + s2.MaxEncodedLen(frameSize)

// writeOut writes the pending frames.
func (w *frameWriter) writeOut() error {
	if len(w.out) == 0 {
		return nil
	}
	_, err := w.f.WriteAt(w.out, w.outOff)
	w.out = w.out[:0]
	return err
}

// writeFrameIndex appends the ends of frames [from, from+len(ends)) to the
// frame index file.
func (s *Session) writeFrameIndex(from int, ends []int64) error {
	return writeFrameIndexTo(s.frameIndexPath(), from, ends)
}

// writeFrameIndexTo is writeFrameIndex to the frame index file at path.
func writeFrameIndexTo(path string, from int, ends []int64) error {
	if len(ends) == 0 {
		return nil
	}
	f, err := openDiskFile(path, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	b := make([]byte, frameIndexEntry*len(ends))
	for i, e := range ends {
		binary.LittleEndian.PutUint64(b[i*frameIndexEntry:], uint64(e))
	}
	_, err = f.WriteAt(b, int64(from)*frameIndexEntry)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// loadFrames finds the n committed frames: the first k ≤ n compressed,
// their ends read from the frame index, and the rest raw, in the raw file
// it returns (nil when k = n; rawframes.go). It truncates the frame files
// to them (dropping frames of a batch that never committed) and removes
// the other raw files. ok is false when the files hold fewer than n
// frames. For n = 0 it removes them. Only a load calls it: no reader
// holds the generation of files a load finds (textfiles.go).
func (s *Session) loadFrames(n int) (ends []int64, raw *rawFile, ok bool, err error) {
	if n == 0 {
		for _, p := range []string{s.framePath(), s.frameIndexPath()} {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, nil, false, err
			}
		}
		_, _, err := loadRawFrames(s.textFiles(), 0, 0)
		return nil, nil, err == nil, err
	}
	b, err := os.ReadFile(s.frameIndexPath())
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, false, err
	}
	var size int64
	if fi, err := os.Stat(s.framePath()); err == nil {
		size = fi.Size()
	}
	// The compressed frames: the longest prefix of the index whose ends
	// rise and lie in the frame file, at most n.
	k := min(n, len(b)/frameIndexEntry)
	ends = make([]int64, 0, n+n/4+16)
	prev := int64(0)
	for i := range k {
		e := int64(binary.LittleEndian.Uint64(b[i*frameIndexEntry:]))
		if e <= prev || e > size {
			break
		}
		ends, prev = append(ends, e), e
	}
	k = len(ends)
	raw, ok, err = loadRawFrames(s.textFiles(), k, n)
	if err != nil || !ok {
		return nil, nil, false, err
	}
	if size > prev {
		if err := os.Truncate(s.framePath(), prev); err != nil {
			return nil, nil, false, err
		}
	}
	if len(b) > k*frameIndexEntry {
		if err := os.Truncate(s.frameIndexPath(), int64(k)*frameIndexEntry); err != nil {
			return nil, nil, false, err
		}
	}
	return ends, raw, true, nil
}

// legacyTextPath is the raw item-text file of indexes before migration
// 0005 (removed when found).
func (s *Session) legacyTextPath() string { return s.legacyTextPathOf(s.fileID) }

// legacyTextPathOf is legacyTextPath of fileID.
func (s *Session) legacyTextPathOf(fileID int64) string {
	return filepath.Join(s.x.textDir(), fmt.Sprintf("%d.txt", fileID))
}

var _ io.ReaderAt = (*textReader)(nil)
