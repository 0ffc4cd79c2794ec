package session

import (
	"bytes"
	"errors"
	"io"
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
	if maxLine <= 0 {
		maxLine = DefaultMaxLineBytes
	}
	buf := make([]byte, readChunk)
	var pending []byte // bytes of the current, unfinished line
	pendingLen := int64(0)
	tooLong := false
	lineStart := start
	pos := start
	for end < 0 || pos < end {
		want := int64(len(buf))
		if end >= 0 && end-pos < want {
			want = end - pos
		}
		n, err := r.ReadAt(buf[:want], pos)
		chunk := buf[:n]
		for len(chunk) > 0 {
			i := bytes.IndexByte(chunk, '\n')
			if i < 0 {
				if !tooLong {
					if int(pendingLen)+len(chunk) > maxLine {
						tooLong, pending = true, nil
					} else {
						pending = append(pending, chunk...)
					}
				}
				pendingLen += int64(len(chunk))
				break
			}
			var line []byte
			if !tooLong && int(pendingLen)+i > maxLine {
				tooLong, pending = true, nil
			}
			if !tooLong {
				if len(pending) == 0 {
					line = chunk[:i]
				} else {
					pending = append(pending, chunk[:i]...)
					line = pending
				}
			}
			if ferr := fn(line, lineStart, tooLong); ferr != nil {
				return lineStart, ferr
			}
			consumed := pendingLen + int64(i) + 1
			lineStart += consumed
			pending, pendingLen, tooLong = pending[:0], 0, false
			chunk = chunk[i+1:]
		}
		pos += int64(n)
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return lineStart, err
		}
		if n == 0 {
			break
		}
	}
	return lineStart, nil
}
