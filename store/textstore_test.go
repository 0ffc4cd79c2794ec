package store

import (
	"bytes"
	"errors"
	"fmt"
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
	s.frameEnds, s.frames, s.textTail, s.textSize, s.textEpoch = w.ends, len(w.ends), slices.Clone(w.buf), int64(len(text)), textEpochs.Add(1)
	s.publishLocked() // callers hold mu, or are alone with s
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
// TestFrameCacheCopies: the frame cache keeps its own copy of each frame
// (a later change to the bytes put, or to a buffer got, does not reach
// it), replaces the oldest frame once frameCacheFrames are held, and a
// reader that finds its frames in the cache, or decodes them into its own
// buffers, allocates nothing (0 allocations per read of a pooled reader).
func TestFrameCacheCopies(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	text := make([]byte, 3*frameSize)
	for i := range text {
		text[i] = byte(r.IntN(7) + 'a')
	}
	s := &Session{x: &Index{dir: t.TempDir()}, fileID: 1}
	writeFrames(t, s, text)
	snap := s.textSnap()
	c := newFrameCache()
	frame := slices.Clone(text[frameSize : 2*frameSize])
	k := frameKey{epoch: snap.epoch, frame: 1}
	c.put(k, frame)
	frame[0] = 'Z'
	got := make([]byte, frameSize)
	if !c.get(k, got) || !bytes.Equal(got, text[frameSize:2*frameSize]) {
		t.Fatalf("frame 1 from the cache differs from the text")
	}
	got[1] = 'Z'
	if !c.get(k, got) || got[1] != text[frameSize+1] {
		t.Fatalf("a change to a copy got reached the cache")
	}
	for f := range frameCacheFrames {
		c.put(frameKey{epoch: snap.epoch + 1, frame: f}, frame)
	}
	if c.get(k, got) {
		t.Errorf("frame 1, the oldest of %d+1 frames put, is still cached", frameCacheFrames)
	}
	if !c.get(frameKey{epoch: snap.epoch + 1, frame: 0}, got) || got[0] != 'Z' {
		t.Errorf("frame 0 of epoch+1, put after frame 1, is not cached")
	}

	// A reader of frames 0 and 2 with keep (read_item) decodes them and
	// puts them in the cache.
	buf := make([]byte, 100)
	rd := newTextReader(snap, c, true)
	for _, off := range []int64{10, 2*frameSize + 10} {
		if _, err := rd.ReadAt(buf, off); err != nil || !bytes.Equal(buf, text[off:off+100]) {
			t.Fatalf("read at %d: %v", off, err)
		}
	}
	rd.Close()
	for _, f := range []int{0, 2} {
		if !c.get(frameKey{epoch: snap.epoch, frame: f}, got) || !bytes.Equal(got, text[f*frameSize:(f+1)*frameSize]) {
			t.Errorf("frame %d read with keep is not in the cache", f)
		}
	}
	// With a cache of two frames, readers of frames 0, 1, 2 in turn
	// decode every frame they read: into their own buffers, and a reader
	// with keep, or one that shares what it decoded, copies the frame into
	// the cache's buffers. None allocates.
	small := &frameCache{m: map[frameKey]int{}, slots: make([]frameSlot, 2)}
	for _, keep := range []bool{true, false} {
		rd := &textReader{t: snap, cache: small, keep: keep}
		reads := func() {
			for f := range 3 {
				off := int64(f*frameSize + 10)
				if _, err := rd.ReadAt(buf, off); err != nil || !bytes.Equal(buf, text[off:off+100]) {
					t.Fatalf("read at %d: %v", off, err)
				}
				rd.share(f)
			}
		}
		reads()
		if n := testing.AllocsPerRun(20, reads); n != 0 {
			t.Errorf("keep %v: reads of frames not cached allocate %.0f times per run, want 0", keep, n)
		}
		rd.Close()
	}
}

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

// TestEncodeFrameDecodes: a frame encoded by encodeFrame (its first
// frameSize-1 bytes as one S2 block, the last byte as a literal) decodes
// with s2.Decode to the raw frame, for text, incompressible bytes, a run
// of one byte (the last byte then continues a match) and text ending in
// a multi-byte rune; its decoded length is frameSize, it fits
// frameEncodedMax, and text compresses within 1/16 of s2.Encode of the
// whole frame (the smaller hash table finds fewer matches in some text:
// 1.6% more bytes here; over the frames of a generated 16 MiB session
// 0.8% fewer).
func TestEncodeFrameDecodes(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 8))
	text := make([]byte, 0, frameSize)
	for len(text) < frameSize {
		text = fmt.Appendf(text, "func f%d() error { return fmt.Errorf(\"step %d failed\") }\n", r.IntN(500), r.IntN(90))
	}
	random := make([]byte, frameSize)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	run := bytes.Repeat([]byte{'x'}, frameSize)
	utf := bytes.Repeat([]byte("漢字👩‍💻 "), frameSize)[:frameSize]
	dst := make([]byte, frameEncodedMax)
	for name, raw := range map[string][]byte{"text": text[:frameSize], "random": random, "run": run, "utf8": utf} {
		enc := encodeFrame(dst, raw)
		if len(enc) > frameEncodedMax {
			t.Fatalf("%s: %d encoded bytes, over %d", name, len(enc), frameEncodedMax)
		}
		if n, err := s2.DecodedLen(enc); err != nil || n != frameSize {
			t.Fatalf("%s: decoded length %d (%v), want %d", name, n, err, frameSize)
		}
		out, err := s2.Decode(nil, enc)
		if err != nil || !bytes.Equal(out, raw) {
			t.Fatalf("%s: decodes to %d bytes (%v), not the raw frame", name, len(out), err)
		}
		if whole := s2.Encode(nil, raw); name == "text" && len(enc) > len(whole)*17/16 {
			t.Fatalf("%s: %d encoded bytes, s2.Encode of the frame %d", name, len(enc), len(whole))
		}
	}
}
