package store

import (
	"hash/crc32"
	"io"
)

// batchCheck takes the change check of an ingest batch (verify.go) from
// the lines the parser got, so every byte indexed is read once: the
// CRC-32C of the indexed bytes extended over the batch, and the tail
// window's bytes that lie in the batch. Only bytes no line callback holds
// are read from the file: a line over the line limit (skipped, never
// indexed) and the part of the tail window before the batch (indexed by an
// earlier batch, and checked against the stored tail when this sync
// began: the first batch of a sync takes those bytes from that check's
// read, checkedTail; the later batches, or a sync whose check read
// none, read them).
type batchCheck struct {
	crc  uint32
	at   int64  // the check covers [0, at)
	tail []byte // the batch's last bytes, up to 2*TailWindow
	from int64  // batch start
	// checked is the tail window the sync's change check read (nil:
	// none), whose bytes before the batch finish takes without a read.
	checked *checkedTail
}

func newBatchCheck(crc uint32, start int64, ib *ingestBufs, checked *checkedTail) *batchCheck {
	return &batchCheck{crc: crc, at: start, from: start, tail: ib.tail[:0], checked: checked}
}

var newline = []byte{'\n'}

// line takes the line at off (without its "\n"; nil when tooLong) into
// the check. A gap before off is a line over the limit, read from r.
func (c *batchCheck) line(r io.ReaderAt, line []byte, off int64, tooLong bool) error {
	if err := c.gap(r, off); err != nil {
		return err
	}
	if tooLong {
		return nil // its bytes are taken once the next offset is known
	}
	c.crc = crc32.Update(c.crc, castagnoli, line)
	c.crc = crc32.Update(c.crc, castagnoli, newline)
	c.keep(line)
	c.keep(newline)
	c.at = off + int64(len(line)) + 1
	return nil
}

// gap takes [c.at, to) from r (a skipped line).
func (c *batchCheck) gap(r io.ReaderAt, to int64) error {
	if to <= c.at {
		return nil
	}
	var err error
	if c.crc, err = crcRange(r, c.crc, c.at, to); err != nil {
		return err
	}
	from := max(c.at, to-TailWindow)
	buf := make([]byte, to-from)
	if _, err := r.ReadAt(buf, from); err != nil {
		return err
	}
	c.keep(buf)
	c.at = to
	return nil
}

// keep appends b to the tail bytes, keeping the last TailWindow (and at
// most twice that before compacting).
func (c *batchCheck) keep(b []byte) {
	if len(b) >= TailWindow {
		c.tail = append(c.tail[:0], b[len(b)-TailWindow:]...)
		return
	}
	if len(c.tail)+len(b) > 2*TailWindow {
		n := copy(c.tail, c.tail[len(c.tail)-(TailWindow-len(b)):])
		c.tail = c.tail[:n]
	}
	c.tail = append(c.tail, b...)
}

// finish returns prev's check extended over the batch, which ends at next.
func (c *batchCheck) finish(r io.ReaderAt, prev contentCheck, next int64) (contentCheck, error) {
	if err := c.gap(r, next); err != nil {
		return prev, err
	}
	out := prev
	out.crc = c.crc
	tail := c.tail
	if len(tail) > TailWindow {
		tail = tail[len(tail)-TailWindow:]
	}
	var err error
	// The window's bytes before the batch, if it reaches back that far.
	before := max(0, next-TailWindow)
	if before < c.from {
		if k, ok := c.checked.bytes(before, c.from); ok {
			out.tail = crc32.Update(0, castagnoli, k)
		} else if out.tail, err = crcRange(r, 0, before, c.from); err != nil {
			return prev, err
		}
	} else {
		out.tail = 0
	}
	out.tail = crc32.Update(out.tail, castagnoli, tail[len(tail)-int(next-max(before, c.from)):])
	return out, nil
}
