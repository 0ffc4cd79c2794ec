package store

import (
	"context"
	"database/sql"
	"hash/crc32"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
)

// Detecting a change to bytes already indexed (docs/reliability.md). The index
// resumes at the byte offset after the last complete line (Session.next);
// a file whose indexed bytes changed must be re-indexed whole instead.
// Every request syncs first and /context runs before every model call, so
// the check must cost next to nothing in the common cases:
//
//   - size, mtime, ctime, device and inode unchanged: no read at all
//     (nothing is detected: a write that restores mtime and ctime cannot
//     be done without privileges, a clock change aside);
//   - the file grew (Pi appended): the first line is compared (SHA-256,
//     as before) and the CRC-32C of the tail window, the TailWindow bytes
//     before next (ending with the "\n" of the last indexed line), is
//     compared with the one taken when those bytes were indexed. Detected:
//     any change inside the first line or the tail window, so a file that
//     shrank and grew again past the old size, and any rewrite whose bytes
//     differ near the resume point. Not detected: a change to bytes
//     between the first line and the tail window of a file that also grew
//     since the last sync;
//   - same size, but mtime or ctime moved, and the size has not grown
//     since (appending: an append caught between setting the mtime and
//     extending the size takes the growth rule above): the CRC-32C of all of
//     [0, next) is computed and compared with the running CRC taken while
//     indexing (one sequential read of the file: ~40 ms for 128 MiB,
//     BenchmarkContentCheck). Detected: any change except one that keeps
//     the CRC-32C (a deliberate collision); a same-size rewrite of the
//     bytes after next only (the in-flight line) is not a change of
//     indexed bytes;
//   - shrunk, another inode or a new first line: re-indexed as before.
//
// The CRCs and the times are stored with the resume state (sessions row),
// in the transaction of each batch, so a restart keeps them.

// TailWindow is how many bytes before the resume offset the growth check
// compares (or all of them when fewer are indexed).
const TailWindow = 64 << 10

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// contentCheck is the change-detection state of one session file.
type contentCheck struct {
	known bool   // false: a row of an older index; taken at the next sync
	crc   uint32 // CRC-32C of [0, next)
	tail  uint32 // CRC-32C of [max(0, next-TailWindow), next)
	mtime int64  // ns
	ctime int64  // ns
}

// times returns the mtime and ctime (ns) of fi.
func times(fi fs.FileInfo) (mtime, ctime int64) {
	return fi.ModTime().UnixNano(), statusChangeTime(fi)
}

// crcRange extends crc over [from, to) of r.
func crcRange(r io.ReaderAt, crc uint32, from, to int64) (uint32, error) {
	return crcRangeBuf(r, crc, from, to, nil)
}

// readPool holds the change checks' read buffers (TailWindow bytes: a
// tail check in one read; a whole-file check reads in pieces of it; the
// first line's hash reads 4 KiB at a time). Every sync of an appended
// line reads a tail window or two and the first line, and a buffer each
// time made most of a sync's garbage.
var readPool = sync.Pool{New: func() any { b := make([]byte, TailWindow); return &b }}

// checkReads counts the reads of indexed bytes for change checks
// (crcRangeBuf, tailCRCKept; tests).
var checkReads atomic.Int64

// crcRangeBuf is crcRange reading into buf when it is not empty, else
// into a pooled buffer.
func crcRangeBuf(r io.ReaderAt, crc uint32, from, to int64, buf []byte) (uint32, error) {
	if len(buf) == 0 {
		if to <= from {
			return crc, nil
		}
		p := readPool.Get().(*[]byte)
		defer readPool.Put(p)
		buf = *p
	}
	checkReads.Add(1)
	for off := from; off < to; {
		n := int64(len(buf))
		if to-off < n {
			n = to - off
		}
		got, err := r.ReadAt(buf[:n], off)
		crc = crc32.Update(crc, castagnoli, buf[:got])
		off += int64(got)
		if int64(got) < n {
			if err == nil {
				err = io.ErrUnexpectedEOF
			}
			return crc, err
		}
	}
	return crc, nil
}

// tailCRC is the CRC-32C of the tail window before next.
func tailCRC(r io.ReaderAt, next int64) (uint32, error) {
	return crcRange(r, 0, max(0, next-TailWindow), next)
}

// checkedTail is the tail window a sync's growth check read and found as
// indexed (Session.checked): [from, from+len(*buf)), in a readPool buffer.
// The first batch of the sync takes the new tail window's bytes before
// the batch from it (batchCheck.finish) instead of reading them again:
// a 64 KiB read less per appended line, and the bytes the new tail CRC
// covers are those the check compared.
type checkedTail struct {
	buf  *[]byte
	n    int
	from int64
}

// bytes returns [from, to) of the checked tail when it holds them all.
func (k *checkedTail) bytes(from, to int64) ([]byte, bool) {
	if k == nil || k.buf == nil || from < k.from || to > k.from+int64(k.n) || from > to {
		return nil, false
	}
	return (*k.buf)[from-k.from : to-k.from], true
}

// tailCRCKept is tailCRC keeping the bytes read in s.checked, for this
// sync's first batch (dropChecked gives the buffer back).
func (s *Session) tailCRCKept(r io.ReaderAt, next int64) (uint32, error) {
	s.dropChecked()
	from := max(0, next-TailWindow)
	p := readPool.Get().(*[]byte)
	buf := (*p)[:next-from]
	checkReads.Add(1)
	n, err := r.ReadAt(buf, from)
	if n < len(buf) {
		readPool.Put(p)
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return 0, err
	}
	s.checked = checkedTail{buf: p, n: n, from: from}
	return crc32.Update(0, castagnoli, buf), nil
}

// dropChecked gives s.checked's buffer back to readPool.
func (s *Session) dropChecked() {
	if s.checked.buf != nil {
		readPool.Put(s.checked.buf)
	}
	s.checked = checkedTail{}
}

// changedInPlace reports whether the bytes [0, s.next) of f (same device
// and inode as indexed, first line unchanged, size >= s.next) changed
// since they were indexed, by the rules above. grown says the file is
// larger than s.next. It also brings the check's times up to date (and an
// unknown check from an older index is taken now, detecting nothing).
func (s *Session) changedInPlace(ctx context.Context, db *DB, f io.ReaderAt, fi fs.FileInfo, grown bool) (bool, error) {
	mtime, ctime := times(fi)
	c := s.check
	switch {
	case s.next == 0:
		return false, nil
	case !c.known:
		crc, err := crcRange(f, 0, 0, s.next)
		if err != nil {
			return false, err
		}
		tail, err := tailCRC(f, s.next)
		if err != nil {
			return false, err
		}
		c = contentCheck{known: true, crc: crc, tail: tail}
	case grown:
		tail, err := s.tailCRCKept(f, s.next)
		if err != nil || tail != c.tail {
			s.dropChecked()
			return true, nil
		}
	case mtime != c.mtime || ctime != c.ctime:
		if appending(f, s.next) {
			// An append caught between its mtime and its size: the
			// growth rule applies, and the next sync, which sees the
			// new size, takes the times with the new bytes.
			tail, err := tailCRC(f, s.next)
			return err != nil || tail != c.tail, nil
		}
		crc, err := crcRange(f, 0, 0, s.next)
		if err != nil || crc != c.crc {
			return true, nil
		}
	default:
		return false, nil
	}
	c.mtime, c.ctime = mtime, ctime
	s.check = c
	if grown {
		return false, nil // the batch stores the check with the new bytes
	}
	return false, s.saveCheck(ctx, db.Writer, c)
}

// appending reports whether f, whose stat gave the size next (the indexed
// bytes) and a new mtime, is larger than next now. A write(2) that appends
// sets the file's mtime before it copies the bytes and extends the size
// (Linux: file_modified, then generic_perform_write), so a stat taken
// between the two sees an append as a same-size change; a second stat
// tells it from a rewrite in place, which keeps the size.
func appending(f io.ReaderAt, next int64) bool {
	st, ok := f.(interface{ Stat() (fs.FileInfo, error) })
	if !ok {
		return false
	}
	fi, err := st.Stat()
	return err == nil && fi.Size() > next
}

// execer is *sql.DB or *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// saveCheck stores c in the sessions row of s.
func (s *Session) saveCheck(ctx context.Context, db execer, c contentCheck) error {
	crc, tail := checkCRCs(c)
	_, err := db.ExecContext(ctx, `UPDATE sessions SET indexed_crc=?, tail_crc=?, mtime_ns=?, ctime_ns=? WHERE file_id=?`, crc, tail, c.mtime, c.ctime, s.fileID)
	return err
}

// checkCRCs are c's CRCs as the sessions row stores them: -1 each when
// the check is not known.
func checkCRCs(c contentCheck) (crc, tail int64) {
	if !c.known {
		return -1, -1
	}
	return int64(c.crc), int64(c.tail)
}

// loadCheck reads s.check from the sessions row.
func (s *Session) loadCheck(ctx context.Context, db *DB) error {
	var crc, tail int64
	err := db.Writer.QueryRowContext(ctx, `SELECT indexed_crc, tail_crc, mtime_ns, ctime_ns FROM sessions WHERE file_id=?`, s.fileID).
		Scan(&crc, &tail, &s.check.mtime, &s.check.ctime)
	s.check.known = err == nil && crc >= 0 && tail >= 0
	s.check.crc, s.check.tail = uint32(crc), uint32(tail)
	return err
}
