package session

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"testing"
)

// A line of 3 MiB (over the 1 MiB read chunk and hugemem.MinBytes) between
// two short ones reaches fn whole and byte for byte, and its buffer is
// not taken from the Go heap (hugemem maps it and unmaps it after fn):
// the scan's heap allocation stays under the line's size.
func TestScanLongLineOutsideHeap(t *testing.T) {
	const long = 3 << 20
	big := bytes.Repeat([]byte("0123456789abcdef"), long/16)
	file := append(append(append([]byte("first\n"), big...), '\n'), "last\n"...)
	var got [][]byte
	chunk := make([]byte, ReadChunk)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	next, err := ScanLinesBuf(bytes.NewReader(file), 0, int64(len(file)), 8<<20, chunk, func(line []byte, off int64, tooLong bool) error {
		if tooLong {
			t.Errorf("line at %d reported too long", off)
		}
		if len(line) > 100 {
			// Only the length and a few bytes: copying it would allocate.
			got = append(got, []byte{line[0], line[len(line)-1]})
			if !bytes.Equal(line, big) {
				t.Errorf("line at %d: %d bytes differ from the %d written", off, len(line), len(big))
			}
			return nil
		}
		got = append(got, append([]byte(nil), line...))
		return nil
	})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	if next != int64(len(file)) {
		t.Errorf("next %d, want %d", next, len(file))
	}
	if len(got) != 3 || string(got[0]) != "first" || string(got[1]) != "0f" || string(got[2]) != "last" {
		t.Errorf("lines %q, want first, the long line (0...f), last", got)
	}
	if d := after.TotalAlloc - before.TotalAlloc; d >= long {
		t.Errorf("the scan allocated %d bytes on the Go heap, want under %d (the long line's buffer mapped outside it)", d, long)
	}
}

// FindNewlineBuf finds the "\n" that ends a line longer than a chunk (at
// byte 3 MiB + 5 here, counted by hand: "first\n" is 6 bytes, the long
// line starts at 6) reading into the caller's buffer: no allocation.
func TestFindNewlineBufReusesBuffer(t *testing.T) {
	long := bytes.Repeat([]byte("x"), 3<<20)
	file := append(append([]byte("first\n"), long...), "\nlast\n"...)
	r := bytes.NewReader(file)
	buf := make([]byte, ReadChunk)
	var nl int64
	var found bool
	allocs := testing.AllocsPerRun(5, func() {
		nl, found, _ = FindNewlineBuf(r, 6, int64(len(file)), buf)
	})
	if !found || nl != 6+3<<20 {
		t.Errorf("newline at %d (found %v), want %d", nl, found, 6+3<<20)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per call, want 0 (the caller's buffer)", allocs)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r *bytes.Reader
	n int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.n += int64(n)
	return n, err
}

// A line of 3 MiB is read once, on into its reserved buffer while its end
// is looked for. Counted by hand for "first\n", the 3 MiB line, "\n",
// "last\n" (3 MiB + 12 bytes): the first chunk (1 MiB), the chunk from
// the long line's start at byte 6 (1 MiB), the rest of the line read on
// (2 MiB, then the 6 bytes left in the range, whose first is its "\n"),
// and "last\n" (5): 4 MiB + 11 bytes. Finding the end first and reading
// the line again read 7 MiB + 11.
func TestScanLongLineReadOnce(t *testing.T) {
	big := bytes.Repeat([]byte("x"), 3<<20)
	file := append(append(append([]byte("first\n"), big...), '\n'), "last\n"...)
	r := &countingReader{r: bytes.NewReader(file)}
	var lens []int
	next, err := ScanLinesBuf(r, 0, int64(len(file)), 8<<20, make([]byte, ReadChunk), func(line []byte, off int64, tooLong bool) error {
		lens = append(lens, len(line))
		return nil
	})
	if err != nil || next != int64(len(file)) {
		t.Fatalf("next %d, err %v; want %d, nil", next, err, len(file))
	}
	if len(lens) != 3 || lens[0] != 5 || lens[1] != 3<<20 || lens[2] != 4 {
		t.Errorf("line lengths %v, want [5 %d 4]", lens, 3<<20)
	}
	if want := int64(4<<20 + 11); r.n != want {
		t.Errorf("read %d bytes, want %d (the long line once)", r.n, want)
	}
}

// A scan that keeps its long-line buffer (ScanLinesLong) reads the first
// long line into a buffer of its size, found first, and the next, shorter
// one on into the same buffer, once. Counted by hand for "a\n", 3 MiB of
// x, "\n", 2 MiB of y, "\n", "b\n" (5 MiB + 6 bytes): the first chunk
// (1 MiB), the chunk at the first long line (1 MiB), its end looked for
// (3 MiB: the last read holds its "\n"), the line read (3 MiB), the chunk
// at the second long line (1 MiB), the rest of it read on (1 MiB, then
// the 3 bytes left, whose first is its "\n"), and "b\n" (2): 10 MiB + 5.
func TestScanLinesLongKeepsBuffer(t *testing.T) {
	x, y := bytes.Repeat([]byte("x"), 3<<20), bytes.Repeat([]byte("y"), 2<<20)
	file := append(append(append(append([]byte("a\n"), x...), '\n'), y...), "\nb\n"...)
	r := &countingReader{r: bytes.NewReader(file)}
	var long LongLines
	defer long.Release()
	var firsts []*byte
	var got []string
	next, err := ScanLinesLong(r, 0, int64(len(file)), 8<<20, make([]byte, ReadChunk), &long, func(line []byte, off int64, tooLong bool) error {
		if len(line) > ReadChunk {
			firsts = append(firsts, &line[0])
			got = append(got, fmt.Sprintf("%d×%c", len(line), line[0]))
			if bytes.IndexFunc(line, func(r rune) bool { return r != rune(line[0]) }) >= 0 {
				t.Errorf("line at %d: not all %c", off, line[0])
			}
			return nil
		}
		got = append(got, string(line))
		return nil
	})
	if err != nil || next != int64(len(file)) {
		t.Fatalf("next %d, err %v; want %d, nil", next, err, len(file))
	}
	if want := []string{"a", fmt.Sprintf("%d×x", 3<<20), fmt.Sprintf("%d×y", 2<<20), "b"}; !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
	if len(firsts) != 2 || firsts[0] != firsts[1] || len(long.buf) != 3<<20 {
		t.Errorf("kept buffer of %d bytes; the long lines at %v, want both in it", len(long.buf), firsts)
	}
	if want := int64(10<<20 + 5); r.n != want {
		t.Errorf("read %d bytes, want %d", r.n, want)
	}
}
