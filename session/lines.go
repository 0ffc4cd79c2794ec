package session

import (
	"bytes"
	"errors"
	"io"

	"contextd/internal/hugemem"
)

// readChunk is the read size of the line scanner: 1 MiB, like Pi's
// SESSION_READ_BUFFER_SIZE.
const readChunk = 1 << 20

// LineFunc receives one complete physical line (without "\n") starting at
// byte offset off. line is nil and tooLong is true for a line longer than the
// cap; its bytes are not held in memory. The slice is only valid during the
// call.
type LineFunc func(line []byte, off int64, tooLong bool) error

// ScanLines reads r from byte offset start to end (exclusive; end < 0 means
// EOF) and calls fn for every complete line, i.e. every line terminated by
// "\n". It splits on "\n" only (Pi's JSON.stringify leaves U+2028/U+2029 raw
// inside lines). A last line without "\n" is in flight and is left for the
// next scan. There is no 64 KiB limit: lines up to maxLine bytes are passed
// whole; longer ones are reported with tooLong. It returns the offset just
// after the last complete line, where the next scan must start.
func ScanLines(r io.ReaderAt, start, end int64, maxLine int, fn LineFunc) (int64, error) {
	return scanLines(r, start, end, maxLine, readChunk, nil, nil, fn)
}

// ScanLinesBuf is ScanLines reading into buf when it holds at least
// ReadChunk bytes (a caller scanning many ranges reuses one buffer).
func ScanLinesBuf(r io.ReaderAt, start, end int64, maxLine int, buf []byte, fn LineFunc) (int64, error) {
	return scanLines(r, start, end, maxLine, readChunk, buf, nil, fn)
}

// ScanLinesLong is ScanLinesBuf reading the lines longer than a chunk into
// long's buffer, kept from one long line to the next: a scan of a large
// file, whose long lines would each fault in a new buffer (LongLines).
func ScanLinesLong(r io.ReaderAt, start, end int64, maxLine int, buf []byte, long *LongLines, fn LineFunc) (int64, error) {
	return scanLines(r, start, end, maxLine, readChunk, buf, long, fn)
}

// ReadChunk is the scanner's read size.
const ReadChunk = readChunk

// scanLines is ScanLines with the read size as a parameter (tests use tiny
// ones to exercise lines longer than the buffer).
func scanLines(r io.ReaderAt, start, end int64, maxLine, chunkSize int, reuse []byte, long *LongLines, fn LineFunc) (int64, error) {
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	if end >= 0 && end-start < int64(chunkSize) {
		// A short range (one appended line): a buffer of its size, not a
		// whole chunk allocated and zeroed for a few hundred bytes.
		chunkSize = int(max(end-start, 512))
	}
	var buf []byte
	if len(reuse) >= chunkSize {
		buf = reuse[:chunkSize]
	} else {
		buf = make([]byte, chunkSize)
	}
	lineStart := start
	pos := start
	for end < 0 || pos < end {
		want := int64(len(buf))
		if end >= 0 && end-pos < want {
			want = end - pos
		}
		n, err := r.ReadAt(buf[:want], pos)
		if err != nil && !errors.Is(err, io.EOF) {
			return lineStart, err
		}
		chunk := buf[:n]
		for {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				break
			}
			var ferr error
			if i > maxLine {
				ferr = fn(nil, lineStart, true)
			} else {
				ferr = fn(chunk[:i], lineStart, false)
			}
			if ferr != nil {
				return lineStart, ferr
			}
			lineStart += int64(i) + 1
			chunk = chunk[i+1:]
		}
		if int64(n) < int64(len(buf)) {
			// The file or the range ends here: what is left is in flight.
			return lineStart, nil
		}
		if lineStart > pos {
			// Read again from the start of the unfinished line.
			pos = lineStart
			continue
		}
		// No "\n" in a whole buffer: a long line. Read on into a buffer
		// with room for more than this chunk, looking for its end as it
		// reads: the line is read once (docs/benchmarks.md, "Long lines
		// read once"). A buffer too short for it is left for one of its
		// size, once its end is found.
		from := pos + int64(n)
		if long == nil {
			// Made here, not per scan: most scans (a catch-up of a few
			// lines) meet no long line.
			long = &LongLines{transient: true}
		}
		if lb, release, ok := long.readOnBuf(maxLine, n); ok {
			copy(lb, buf[:n])
			line, have, err := readOn(r, lineStart, end, lb, n)
			if line != nil && err == nil {
				err = fn(line, lineStart, false)
			}
			// readOn reads at most a piece past the bytes it reports.
			release(min(len(lb), have+readOnPiece))
			if err != nil {
				return lineStart, err
			}
			if line != nil {
				lineStart += int64(len(line)) + 1
				pos = lineStart
				continue
			}
			if have < len(lb) {
				return lineStart, nil // in flight: the range or the file ends first
			}
			from = lineStart + int64(have) // longer than the buffer
		}
		// Find its end, then read it once into a buffer of its size (no
		// growth copies).
		nl, found, err := findNewline(r, from, end, buf)
		if err != nil {
			return lineStart, err
		}
		if !found {
			return lineStart, nil // in flight
		}
		size := nl - lineStart
		var ferr error
		if size > int64(maxLine) {
			ferr = fn(nil, lineStart, true)
		} else {
			ferr = readLong(r, lineStart, size, long, fn)
		}
		if ferr != nil {
			return lineStart, ferr
		}
		lineStart = nl + 1
		pos = lineStart
	}
	return lineStart, nil
}

// FindNewline returns the offset of the first "\n" in r at or after from
// and before end (end < 0: to EOF), and whether there is one. It reads in
// chunks of 1 MiB and holds nothing else.
func FindNewline(r io.ReaderAt, from, end int64) (int64, bool, error) {
	return findNewline(r, from, end, make([]byte, readChunk))
}

// FindNewlineBuf is FindNewline reading into buf when it holds at least
// ReadChunk bytes (a caller that scans with ScanLinesBuf passes the same
// buffer: a fresh MiB per call was garbage for every batch that ended
// inside a huge line).
func FindNewlineBuf(r io.ReaderAt, from, end int64, buf []byte) (int64, bool, error) {
	if len(buf) < readChunk {
		buf = make([]byte, readChunk)
	}
	return findNewline(r, from, end, buf[:readChunk])
}

// findNewline returns the offset of the first "\n" at or after from (and
// before end, when end >= 0), reading with buf.
func findNewline(r io.ReaderAt, from, end int64, buf []byte) (int64, bool, error) {
	for p := from; end < 0 || p < end; {
		want := int64(len(buf))
		if end >= 0 && end-p < want {
			want = end - p
		}
		n, err := r.ReadAt(buf[:want], p)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			return p + int64(i), true, nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return 0, false, nil
			}
			return 0, false, err
		}
		if n == 0 {
			return 0, false, nil
		}
		p += int64(n)
	}
	return 0, false, nil
}

// readOnPiece is how much readOn reads at a time: what it reads past the
// line's end is read for nothing and faults in pages of the buffer (up to
// a huge page more), so it is a quarter of a read chunk.
const readOnPiece = readChunk / 4

// reserveLine reserves the buffer a long line is read on into
// (hugemem.Reserve; tests reserve from the heap to cover small caps).
var reserveLine = hugemem.Reserve

// readOn reads the line at off on into buf, whose first have bytes hold
// its start (no "\n" among them), readOnPiece bytes at a time and not past end (end
// < 0: EOF). It returns the line (a prefix of buf, without its "\n") once
// its end is read; else nil and how many bytes of buf hold the line: all
// of buf when the line is longer, fewer when the range or the file ends
// first (the line is in flight).
func readOn(r io.ReaderAt, off, end int64, buf []byte, have int) (line []byte, n int, err error) {
	for have < len(buf) {
		want := min(len(buf)-have, readOnPiece)
		if end >= 0 {
			want = int(min(int64(want), end-off-int64(have)))
		}
		if want <= 0 {
			return nil, have, nil
		}
		k, err := r.ReadAt(buf[have:have+want], off+int64(have))
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, have, err
		}
		if i := bytes.IndexByte(buf[have:have+k], '\n'); i >= 0 {
			return buf[: have+i : have+i], have + i, nil
		}
		have += k
		if k < want {
			return nil, have, nil // the file ends here
		}
	}
	return nil, have, nil
}

// readLong reads the line of size bytes at off into a buffer from long
// (LongLines.get) and hands it to fn.
func readLong(r io.ReaderAt, off, size int64, long *LongLines, fn LineFunc) error {
	line, release := long.get(int(size))
	defer release()
	if _, err := r.ReadAt(line, off); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return fn(line, off, false)
}

// LongLines gives a line scan its buffers for lines longer than its read
// chunk (LineFunc's slice is only valid during the call).
//
// A scan of a large file keeps one buffer for all its long lines, grown
// to the longest of up to maxKeptLong bytes: the pages of a new buffer are
// each faulted in and zeroed by the kernel, about a fifth of a 1 GiB
// index's system CPU with a buffer per line (docs/benchmarks.md, "Long
// lines read once"). It is mapped (hugemem.Alloc: 2 MiB pages, counted
// against the Go heap's soft limit while held, so the peak RSS of a 1 GiB
// index does not grow by it) and unmapped by Release.
//
// Any other scan (transient: a catch-up of appended lines, whose long
// line is likely its only one) reads a long line on into a reservation of
// maxLine bytes (hugemem.Reserve), of which only the pages the line
// reaches are faulted in: the one catch-ups share and keep while they use
// it (catchup.go), or one mapped for the line and unmapped after it when
// another scan holds that. A line over maxKeptLong bytes is read so in
// every scan.
//
// The zero value keeps a buffer.
type LongLines struct {
	buf       []byte
	release   func()
	transient bool
}

// maxKeptLong is the longest buffer LongLines keeps between lines.
const maxKeptLong = 16 << 20

// Release unmaps the kept buffer (a later long line maps a new one).
func (l *LongLines) Release() {
	if l.release != nil {
		l.release()
	}
	l.buf, l.release = nil, nil
}

// readOnBuf returns the buffer to read a long line on into, whose first
// have bytes are read, and the func to call with how many bytes of it
// were written once the line is handled: the kept one when it has room for
// more, else (a transient scan) the catch-ups' kept reservation
// (catchup.go) or, when another scan holds it, a reservation of its own,
// of maxLine+1 bytes each; ok is false when there is none (the caller
// finds the line's end and calls get).
func (l *LongLines) readOnBuf(maxLine, have int) (buf []byte, release func(written int), ok bool) {
	if len(l.buf) > have {
		return l.buf, func(int) {}, true
	}
	if !l.transient {
		return nil, nil, false
	}
	if buf, done, ok := takeCatchUp(maxLine + 1); ok {
		return buf, done, true
	}
	buf, free, ok := reserveLine(maxLine + 1)
	return buf, func(int) { free() }, ok
}

// get returns a buffer of n bytes and the func to call once it is no
// longer used.
func (l *LongLines) get(n int) (buf []byte, release func()) {
	if n <= len(l.buf) {
		return l.buf[:n], func() {}
	}
	if l.transient || n > maxKeptLong {
		return hugemem.Alloc(n)
	}
	l.Release()
	l.buf, l.release = hugemem.Alloc(n)
	return l.buf, func() {}
}
