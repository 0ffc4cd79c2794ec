package store

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/klauspost/compress/s2"
)

// writeFrames stores text as the committed item text of s (frames, frame
// index and tail), as ingest would.
func writeFrames(tb testing.TB, s *Session, text []byte) {
	tb.Helper()
	if err := os.MkdirAll(s.x.textDir(), 0o700); err != nil {
		tb.Fatal(err)
	}
	f, err := os.OpenFile(s.framePath(), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		tb.Fatal(err)
	}
	w := &frameWriter{f: f}
	if err := w.write(string(text)); err != nil {
		tb.Fatal(err)
	}
	if err := w.finish(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
	if err := os.Truncate(s.frameIndexPath(), 0); err != nil && !os.IsNotExist(err) {
		tb.Fatal(err)
	}
	if err := s.writeFrameIndex(0, w.ends); err != nil {
		tb.Fatal(err)
	}
	s.frameEnds, s.textTail, s.textSize, s.textEpoch = w.ends, slices.Clone(w.buf), int64(len(text)), textEpochs.Add(1)
}

// TestTextReader: reads at every kind of offset (inside a frame, across
// frames, into the tail, the very end) give the bytes written, with and
// without the shared cache; a read past the end fails.
func TestTextReader(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	text := make([]byte, 3*frameSize+777)
	for i := range text {
		text[i] = byte(r.IntN(7) + 'a')
	}
	s := &Session{x: &Index{dir: t.TempDir()}, fileID: 1}
	writeFrames(t, s, text)
	if len(s.frameEnds) != 3 || len(s.textTail) != 777 {
		t.Fatalf("%d frames and a tail of %d bytes, want 3 and 777", len(s.frameEnds), len(s.textTail))
	}
	for _, keep := range []bool{false, true} {
		rd := newTextReader(s.textSnap(), newFrameCache(), keep)
		for _, c := range [][2]int{{0, 10}, {frameSize - 3, 6}, {frameSize - 3, 2*frameSize + 10}, {3*frameSize - 1, 2}, {3 * frameSize, 777}, {len(text) - 1, 1}, {5, len(text) - 5}, {len(text), 0}} {
			buf := make([]byte, c[1])
			if _, err := rd.ReadAt(buf, int64(c[0])); err != nil || !bytes.Equal(buf, text[c[0]:c[0]+c[1]]) {
				t.Fatalf("keep %v: read %d bytes at %d: %v, bytes differ: %v", keep, c[1], c[0], err, !bytes.Equal(buf, text[c[0]:c[0]+c[1]]))
			}
		}
		if _, err := rd.ReadAt(make([]byte, 2), int64(len(text)-1)); !errors.Is(err, errTextRange) {
			t.Fatalf("a read past the end: %v, want errTextRange", err)
		}
		rd.Close()
	}
}

// TestFrameWriterSteps: texts written in any pieces, with a commit (tail
// carried to the next batch) between them, compressed inline or by the
// writer's second goroutine, give the same frames as one write of the
// whole text: frames depend on the text alone.
func TestFrameWriterSteps(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	text := make([]byte, 5*frameSize+123)
	for i := range text {
		text[i] = byte(r.IntN(50) + ' ')
	}
	dir := t.TempDir()
	once := &Session{x: &Index{dir: dir}, fileID: 1}
	writeFrames(t, once, text)
	steps := &Session{x: &Index{dir: dir}, fileID: 2}
	f, err := os.OpenFile(steps.framePath(), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tail []byte
	var ends []int64
	for off := 0; off < len(text); {
		n := min(len(text)-off, 1+r.IntN(2*frameSize))
		w := &frameWriter{f: f, buf: slices.Clone(tail)}
		if len(ends) > 0 {
			w.end = ends[len(ends)-1]
		}
		if r.IntN(2) == 0 {
			w.async() // compressed by a second goroutine: the same frames
		}
		if err := w.write(string(text[off : off+n])); err != nil {
			t.Fatal(err)
		}
		if err := w.finish(); err != nil {
			t.Fatal(err)
		}
		if err := steps.writeFrameIndex(len(ends), w.ends); err != nil {
			t.Fatal(err)
		}
		ends, tail = append(ends, w.ends...), slices.Clone(w.buf)
		off += n
	}
	for _, p := range [][2]string{{once.framePath(), steps.framePath()}, {once.frameIndexPath(), steps.frameIndexPath()}} {
		a, _ := os.ReadFile(p[0])
		b, _ := os.ReadFile(p[1])
		if len(a) == 0 || !bytes.Equal(a, b) {
			t.Fatalf("%s and %s differ (%d and %d bytes)", p[0], p[1], len(a), len(b))
		}
	}
	if !bytes.Equal(tail, once.textTail) {
		t.Fatal("tails differ")
	}
}

// FuzzDecodeFrame: decodeFrame never panics on any input and accepts only
// a frame of exactly frameSize bytes.
func FuzzDecodeFrame(f *testing.F) {
	full := bytes.Repeat([]byte("frame text "), frameSize/11+1)[:frameSize]
	enc := s2.Encode(nil, full)
	f.Add(enc)
	f.Add(enc[:len(enc)/2])
	f.Add([]byte{})
	f.Add([]byte{0x80, 0x80, 0x04, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := decodeFrame(nil, b)
		if err == nil && len(out) != frameSize {
			t.Fatalf("decoded %d bytes without an error", len(out))
		}
	})
}
