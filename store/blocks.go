package store

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
)

// Block filters (issue 16): a search with no match must not read the whole
// item-text file. The file is cut into blocks of blockSize bytes; block b
// gets a blockRecord-byte bit set (texts/N.blk, record b at b×blockRecord)
// with one bit set, by blockHash, for every trigram (3 consecutive bytes)
// that starts in [b×blockSize, (b+1)×blockSize+blockOverlap). A match of a
// query that starts in block b holds the trigrams of the query's first
// blockOverlap+2 bytes, all starting before (b+1)×blockSize+blockOverlap,
// so a block whose set lacks one of them holds no match start and is not
// read. A filter only ever skips bytes that cannot hold a match: answers are
// the same with or without it (a block without a record yet is read).
//
// The records are derived from the committed item text alone, so an index
// built in one pass and one built append by append have the same records.
// Block b is complete, and gets its record, once the text has
// (b+1)×blockSize+blockOverlap+2 bytes. Records are computed after a sync
// commits, in the background (a second phase: the first /branch answer
// does not wait for them); the last, incomplete block is always read.
//
// Size: 1 KiB per 128 KiB of item text (0.8%).
const (
	blockSize    = 128 << 10
	blockOverlap = 256
	blockBits    = 13
	blockRecord  = 1 << blockBits / 8
	// Searches over fewer bytes than this do not consult the filters.
	blockMinSearch = 2 * blockSize
)

// blockFilters is a session's filter state. done is how many records of the
// .blk file are valid (readers read no further); mu is held by the builder
// and by resets; gen changes on every reset so a builder working from an
// older text size stops.
type blockFilters struct {
	mu      sync.Mutex
	gen     atomic.Uint64
	done    atomic.Int64
	pending atomic.Bool
	running atomic.Bool
}

// blockHash maps a trigram (its three bytes, first byte highest) to a bit.
func blockHash(w uint32) uint32 { return (w * 0x9E3779B1) >> (32 - blockBits) }

// blocksComplete is the number of complete blocks of a text of n bytes.
func blocksComplete(n int64) int64 {
	if n < blockOverlap+2 {
		return 0
	}
	return (n - blockOverlap - 2) / blockSize
}

// fillBlock sets rec (blockRecord bytes, zeroed) to the record of a block
// whose bytes, with the blockOverlap+2 bytes after it, are text.
func fillBlock(rec []byte, text []byte) {
	for p := 0; p+3 <= len(text); p++ {
		x := blockHash(uint32(text[p])<<16 | uint32(text[p+1])<<8 | uint32(text[p+2]))
		rec[x>>3] |= 1 << (x & 7)
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
	if s.fileID == 0 {
		return nil
	}
	if err := os.Truncate(s.blockPath(), keep*blockRecord); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
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
	textSize, textPath, blockPath := s.textSize, s.textPath(), s.blockPath()
	s.mu.RUnlock()
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
	tf, err := os.Open(textPath)
	if err != nil {
		return err
	}
	defer tf.Close()
	bf, err := os.OpenFile(blockPath, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer bf.Close()
	const per = 4 // blocks read and written at a time
	buf := make([]byte, per*blockSize+blockOverlap+2)
	recs := make([]byte, per*blockRecord)
	for b < want {
		if s.blk.gen.Load() != g || s.x.closing.Load() {
			return nil
		}
		n := min(per, want-b)
		text := buf[:n*blockSize+blockOverlap+2]
		if _, err := tf.ReadAt(text, b*blockSize); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		clear(recs)
		for i := range n {
			fillBlock(recs[i*blockRecord:(i+1)*blockRecord], text[i*blockSize:(i+1)*blockSize+blockOverlap+2])
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
	if len(query) < 3 || end-off < blockMinSearch {
		return nil, nil
	}
	first, last := off/blockSize, min(s.blk.done.Load(), (end-1)/blockSize+1)
	if last <= first {
		return nil, nil
	}
	q := query[:min(len(query), blockOverlap+2)]
	bits := make([]uint32, 0, len(q)-2)
	for p := 0; p+3 <= len(q); p++ {
		bits = append(bits, blockHash(uint32(q[p])<<16|uint32(q[p+1])<<8|uint32(q[p+2])))
	}
	f, err := os.Open(s.blockPath())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	recs := make([]byte, (last-first)*blockRecord)
	if _, err := f.ReadAt(recs, first*blockRecord); err != nil {
		return nil, err
	}
	c := &candidates{first: first, read: make([]bool, last-first)}
	for i := range c.read {
		rec := recs[i*blockRecord : (i+1)*blockRecord]
		ok := true
		for _, x := range bits {
			if rec[x>>3]&(1<<(x&7)) == 0 {
				ok = false
				break
			}
		}
		c.read[i] = ok
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
