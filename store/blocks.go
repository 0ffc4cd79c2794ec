package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
)

// Block filters (issue 16): a search must not read the whole item text
// to find a phrase that few items hold. The text is cut into blocks of
// blockSize bytes (the frames of textstore.go); block b gets a
// blockRecord-byte Bloom filter (texts/N.blk, record b at b×blockRecord)
// of every blockGram-byte substring (12-gram) that starts in
// [b×blockSize, (b+1)×blockSize+blockOverlap). Each 12-gram sets three
// bits of one 64-byte line of the record (blockKey), so a probe touches
// one cache line. A match of a query (of blockGram bytes or more) that
// starts in block b holds the 12-grams at the query's first
// blockOverlap+1 positions, all starting before (b+1)×blockSize+
// blockOverlap, so a block whose filter lacks one of them holds no match
// start and is not read. A filter only ever skips bytes that cannot hold
// a match: answers are the same with or without it (a block without a
// record yet is read, and so is every block for a query shorter than
// blockGram).
//
// Measured on the bench's generated sessions (bench/README.md), a 16-byte
// query that few items hold leaves about as many candidate blocks as
// blocks that hold a match: whole 12-grams place the phrase, where
// trigrams or 8-grams are common everywhere.
//
// The records are derived from the committed item text alone, so an index
// built in one pass and one built append by append have the same records.
// Block b is complete, and gets its record, once the text has
// (b+1)×blockSize+blockOverlap+blockGram-1 bytes. Records are computed
// after a sync commits, in the background (a second phase: the first
// /branch answer does not wait for them); the blocks after the last
// record are always read.
//
// Size: 16 KiB per 64 KiB of item text (a quarter of the raw text; the
// compressed frames leave the room for it).
const (
	blockSize    = frameSize
	blockOverlap = 256
	blockGram    = 12
	blockRecord  = 16 << 10
	blockLines   = blockRecord / 64
	// Searches over fewer bytes than this do not consult the filters.
	blockMinSearch = 2 * blockSize
	// blockMaxKeys bounds the 12-grams of a query probed per block.
	blockMaxKeys = 8
)

// blockFilters is a session's filter state. done is how many records of the
// .blk file are valid (readers read no further); mu is held by the builder
// and by resets; gen changes on every reset so a builder working from an
// older text size stops. The records are read through a shared mapping of
// the .blk file (mapped, under mapMu: resets unmap it before truncating).
type blockFilters struct {
	mu      sync.Mutex
	gen     atomic.Uint64
	done    atomic.Int64
	pending atomic.Bool
	running atomic.Bool

	mapMu  sync.RWMutex
	mapped []byte
}

// blockKey is a 12-gram's hash: its line of a record (the top 8 bits)
// and three bit numbers in that line (three 9-bit fields).
func blockKey(g []byte) uint64 {
	a := binary.LittleEndian.Uint64(g)
	b := uint64(binary.LittleEndian.Uint32(g[8:]))
	h := (a ^ b<<29 ^ b>>7) * 0x9E3779B97F4A7C15
	h ^= h >> 31
	h *= 0xBF58476D1CE4E5B9
	return h ^ h>>29
}

// blockHas reports whether rec has the bits of key h.
func blockHas(rec []byte, h uint64) bool {
	line := rec[(h>>56)*64 : (h>>56)*64+64]
	for _, x := range [3]uint64{h & 511, h >> 9 & 511, h >> 18 & 511} {
		if line[x>>3]&(1<<(x&7)) == 0 {
			return false
		}
	}
	return true
}

// blocksComplete is the number of complete blocks of a text of n bytes.
func blocksComplete(n int64) int64 {
	if n < blockOverlap+blockGram-1 {
		return 0
	}
	return (n - blockOverlap - blockGram + 1) / blockSize
}

// fillBlock sets rec (blockRecord bytes, zeroed) to the record of a block
// whose bytes, with the blockOverlap+blockGram-1 bytes after it, are text.
func fillBlock(rec []byte, text []byte) {
	for p := 0; p+blockGram <= len(text); p++ {
		h := blockKey(text[p:])
		line := rec[(h>>56)*64 : (h>>56)*64+64]
		for _, x := range [3]uint64{h & 511, h >> 9 & 511, h >> 18 & 511} {
			line[x>>3] |= 1 << (x & 7)
		}
	}
}

func (s *Session) blockPath() string {
	return filepath.Join(s.x.textDir(), fmt.Sprintf("%d.blk", s.fileID))
}

// resetBlocks keeps the records still valid for a committed text of
// textSize bytes (none for 0) and truncates the file to them. Callers hold
// syncMu.
func (s *Session) resetBlocks(textSize int64) error {
	s.blk.gen.Add(1)
	s.blk.mu.Lock()
	defer s.blk.mu.Unlock()
	keep := int64(0)
	if s.fileID != 0 && textSize > 0 {
		if fi, err := os.Stat(s.blockPath()); err == nil {
			keep = min(fi.Size()/blockRecord, blocksComplete(textSize))
		}
	}
	s.blk.done.Store(keep)
	s.blk.unmap()
	if s.fileID == 0 {
		return nil
	}
	if err := os.Truncate(s.blockPath(), keep*blockRecord); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// unmap drops the mapping of the .blk file (before it is truncated or
// removed).
func (f *blockFilters) unmap() {
	f.mapMu.Lock()
	defer f.mapMu.Unlock()
	if f.mapped != nil {
		_ = syscall.Munmap(f.mapped)
		f.mapped = nil
	}
}

// records calls fn with the mapped records [0, n) (at least; fn reads no
// further), mapping the .blk file again when it has grown.
func (s *Session) records(n int64, fn func(recs []byte)) (bool, error) {
	f := &s.blk
	f.mapMu.RLock()
	if int64(len(f.mapped)) < n*blockRecord {
		f.mapMu.RUnlock()
		f.mapMu.Lock()
		if int64(len(f.mapped)) < n*blockRecord {
			if f.mapped != nil {
				_ = syscall.Munmap(f.mapped)
				f.mapped = nil
			}
			fh, err := os.Open(s.blockPath())
			if err != nil {
				f.mapMu.Unlock()
				return false, err
			}
			// Room for growth: pages past the end of the file are never
			// touched (fn reads only the records done says are written).
			m, err := syscall.Mmap(int(fh.Fd()), 0, int(n*blockRecord*3/2), syscall.PROT_READ, syscall.MAP_SHARED)
			fh.Close()
			if err != nil {
				f.mapMu.Unlock()
				return false, err
			}
			f.mapped = m
		}
		f.mapMu.Unlock()
		f.mapMu.RLock()
	}
	defer f.mapMu.RUnlock()
	if int64(len(f.mapped)) < n*blockRecord {
		return false, nil // unmapped by a reset meanwhile: no records to consult
	}
	fn(f.mapped[:n*blockRecord])
	return true, nil
}

// kickBlocks starts the background builder of the records the committed
// text now allows, unless one is running (it then goes on with them).
func (s *Session) kickBlocks() {
	if blocksComplete(s.textSize) <= s.blk.done.Load() {
		return
	}
	s.blk.pending.Store(true)
	if !s.blk.running.CompareAndSwap(false, true) {
		return
	}
	s.x.bg.Add(1)
	go func() {
		defer s.x.bg.Done()
		for {
			for s.blk.pending.Swap(false) {
				if err := s.buildBlocks(); err != nil && !s.x.closing.Load() {
					s.x.log.Warn("search block filters not built; searches read the whole text", "path", s.path, "err", err)
				}
			}
			s.blk.running.Store(false)
			if !s.blk.pending.Load() || !s.blk.running.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// buildBlocks writes the records of every complete block not written yet.
func (s *Session) buildBlocks() error {
	g := s.blk.gen.Load()
	s.mu.RLock()
	snap, blockPath := s.textSnap(), s.blockPath()
	s.mu.RUnlock()
	textSize := snap.size()
	s.blk.mu.Lock()
	defer s.blk.mu.Unlock()
	if s.blk.gen.Load() != g {
		return nil
	}
	want := blocksComplete(textSize)
	b := s.blk.done.Load()
	if b >= want {
		return nil
	}
	tf := newTextReader(snap, nil, false)
	defer tf.Close()
	bf, err := os.OpenFile(blockPath, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer bf.Close()
	const per = 4 // blocks read and written at a time
	buf := make([]byte, per*blockSize+blockOverlap+blockGram-1)
	recs := make([]byte, per*blockRecord)
	for b < want {
		if s.blk.gen.Load() != g || s.x.closing.Load() {
			return nil
		}
		n := min(per, want-b)
		text := buf[:n*blockSize+blockOverlap+blockGram-1]
		if _, err := tf.ReadAt(text, b*blockSize); err != nil {
			return err
		}
		clear(recs)
		for i := range n {
			fillBlock(recs[i*blockRecord:(i+1)*blockRecord], text[i*blockSize:(i+1)*blockSize+blockOverlap+blockGram-1])
		}
		if _, err := bf.WriteAt(recs[:n*blockRecord], b*blockRecord); err != nil {
			return err
		}
		b += n
		s.blk.done.Store(b)
	}
	return nil
}

// candidates are the blocks a search must read: blocks [first, first+len(read))
// have records, read[i] says whether block first+i may hold a match start;
// every other block is read.
type candidates struct {
	first int64
	read  []bool
}

// blockCandidates consults the records for a search of query over text
// bytes [off, end); nil when there are none to consult.
func (s *Session) blockCandidates(query string, off, end int64) (*candidates, error) {
	if len(query) < blockGram || end-off < blockMinSearch {
		return nil, nil
	}
	first, last := off/blockSize, min(s.blk.done.Load(), (end-1)/blockSize+1)
	if last <= first {
		return nil, nil
	}
	// The keys: the 12-grams at positions [0, min(len-12, overlap)], at
	// most blockMaxKeys of them spread over that range.
	span := min(len(query)-blockGram, blockOverlap)
	var keys []uint64
	for i := range min(span+1, blockMaxKeys) {
		p := 0
		if k := min(span+1, blockMaxKeys); k > 1 {
			p = i * span / (k - 1)
		}
		keys = append(keys, blockKey([]byte(query[p:p+blockGram])))
	}
	c := &candidates{first: first, read: make([]bool, last-first)}
	ok, err := s.records(last, func(recs []byte) {
		for i := range c.read {
			b := first + int64(i)
			rec := recs[b*blockRecord : (b+1)*blockRecord]
			ok := true
			for _, h := range keys {
				if !blockHas(rec, h) {
					ok = false
					break
				}
			}
			c.read[i] = ok
		}
	})
	if err != nil || !ok {
		return nil, err
	}
	return c, nil
}

// reads reports whether the block holding pos must be read.
func (c *candidates) reads(b int64) bool {
	i := b - c.first
	return i < 0 || i >= int64(len(c.read)) || c.read[i]
}

// skip returns the first position at or after pos in a block to read.
func (c *candidates) skip(pos int64) int64 {
	b := pos / blockSize
	for !c.reads(b) {
		b++
	}
	return max(pos, b*blockSize)
}

// limit returns where reading from pos (in a block to read) may stop for a
// query of nq bytes: nq-1 bytes past the start of the next block not to
// read (math.MaxInt64 when there is none).
func (c *candidates) limit(pos, nq int64) int64 {
	b := pos/blockSize + 1
	for ; b < c.first+int64(len(c.read)); b++ {
		if !c.reads(b) {
			return b*blockSize + nq - 1
		}
	}
	return 1<<63 - 1
}
