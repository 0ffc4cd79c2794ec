package store

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// committedText reads the whole committed item text of s's published
// snapshot.
func committedText(t *testing.T, s *Session) []byte {
	t.Helper()
	var out []byte
	err := s.Read(func(v *View) error {
		var err error
		out, err = snapText(v.text)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// snapText reads the whole item text of t.
func snapText(t *textSnap) ([]byte, error) {
	out := make([]byte, t.size())
	r := newTextReader(t, nil, false)
	defer r.Close()
	_, err := r.ReadAt(out, 0)
	return out, err
}

// inlineIndex indexes path's bytes appended to a copy in pieces under
// rawIngestBytes (each ingest compresses its frames as they fill) and
// returns the session, its item text, and its frame file and index.
func inlineIndex(t *testing.T, path string) (text, frames, index []byte) {
	t.Helper()
	all, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	cp := filepath.Join(root, filepath.Base(path))
	x, err := OpenIndex(t.Context(), root, filepath.Join(t.TempDir(), "index"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	s := x.Session(cp)
	for off := 0; off < len(all); {
		end := min(off+rawIngestBytes/2, len(all))
		if i := bytes.LastIndexByte(all[off:end], '\n'); i >= 0 && end < len(all) {
			end = off + i + 1
		}
		f, err := os.OpenFile(cp, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(all[off:end]); err != nil {
			t.Fatal(err)
		}
		f.Close()
		off = end
		if err := s.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		if s.raw != nil {
			t.Fatalf("an ingest of %d bytes wrote raw frames", end-off)
		}
	}
	x.filtersIdle()
	frames, _ = os.ReadFile(s.framePath())
	index, _ = os.ReadFile(s.frameIndexPath())
	return committedText(t, s), frames, index
}

// holdCompression leaves raw frames raw (the filter builder compresses
// none) until the test sets *held to false, and undoes it at the end of
// the test.
func holdCompression(t *testing.T) *bool {
	held := true
	beforeFrameCompression = func(*Session) bool { return !held }
	t.Cleanup(func() { beforeFrameCompression = nil })
	return &held
}

// syncedIndex opens an index of the sessions under root (in dir, a new
// temporary directory for "") and syncs the session at path.
func syncedIndex(t *testing.T, root, path, dir string) (*Index, *Session) {
	t.Helper()
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "index")
	}
	x, err := OpenIndex(t.Context(), root, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := x.Session(path)
	if err := s.Sync(t.Context()); err != nil {
		x.Close()
		t.Fatal(err)
	}
	return x, s
}

func gone(path string) bool {
	_, err := os.Stat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// TestLargeIngestWritesRawFrames: an ingest of rawIngestBytes or more
// writes its frames raw, one raw file of frames×frameSize bytes from frame
// 0, and commits and publishes them so (nothing compressed yet, the text
// read back whole); the builder then compresses them, publishes them
// compressed and removes the raw file. The frame file and frame index it
// leaves are byte for byte those of the same file indexed in pieces under
// rawIngestBytes, whose frames were compressed as they filled.
func TestLargeIngestWritesRawFrames(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	genSession(t, path, 3)
	wantText, wantFrames, wantIndex := inlineIndex(t, path)
	if len(wantFrames) == 0 || len(wantIndex) == 0 {
		t.Fatal("the inline index wrote no frames")
	}

	held := holdCompression(t)
	x, s := syncedIndex(t, root, path, "")
	defer x.Close()
	x.filtersIdle()
	frames := int(s.textSize / frameSize)
	c := s.current()
	if c.view.text.raw == nil || len(c.view.text.ends) != 0 || c.view.text.frames != frames || frames < 100 {
		t.Fatalf("published %d compressed frames of %d, raw file %v; want 0 of %d (at least 100), raw", len(c.view.text.ends), c.view.text.frames, c.view.text.raw, frames)
	}
	rawPath := s.textFiles().path("raw0")
	if c.view.text.raw.path != rawPath {
		t.Fatalf("raw file %s, want %s", c.view.text.raw.path, rawPath)
	}
	if fi, err := os.Stat(rawPath); err != nil || fi.Size() != int64(frames)*frameSize {
		t.Fatalf("raw file: %v, want %d bytes", err, int64(frames)*frameSize)
	}
	if got := committedText(t, s); !bytes.Equal(got, wantText) {
		t.Fatalf("item text read from raw frames (%d bytes) differs from the inline index's (%d bytes)", len(got), len(wantText))
	}

	*held = false
	if err := s.compressFrames(); err != nil {
		t.Fatal(err)
	}
	c = s.current()
	if c.view.text.raw != nil || len(c.view.text.ends) != frames || s.raw != nil {
		t.Fatalf("after compression: %d of %d frames compressed, raw file %v; want all, none", len(c.view.text.ends), frames, c.view.text.raw)
	}
	if !gone(rawPath) {
		t.Fatal("the raw file is left after every frame was compressed")
	}
	gotFrames, _ := os.ReadFile(s.framePath())
	gotIndex, _ := os.ReadFile(s.frameIndexPath())
	if !bytes.Equal(gotFrames, wantFrames) || !bytes.Equal(gotIndex, wantIndex) {
		t.Fatalf("frame file %d bytes, index %d bytes; want the inline index's %d and %d, equal", len(gotFrames), len(gotIndex), len(wantFrames), len(wantIndex))
	}
	if got := committedText(t, s); !bytes.Equal(got, wantText) {
		t.Fatal("item text read from the compressed frames differs from the inline index's")
	}
}

// TestHeldSnapshotKeepsRawFile: a reader holding a snapshot whose frames
// are raw reads them whole while the builder compresses them and publishes
// the compressed ones; the raw file is removed only when it releases it.
func TestHeldSnapshotKeepsRawFile(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	genSession(t, path, 2)
	held := holdCompression(t)
	x, s := syncedIndex(t, root, path, "")
	defer x.Close()
	x.filtersIdle()
	want := committedText(t, s)
	c, release := s.hold()
	raw := c.view.text.raw
	if raw == nil {
		t.Fatal("no raw frames after a large ingest")
	}
	*held = false
	if err := s.compressFrames(); err != nil {
		t.Fatal(err)
	}
	if s.current().view.text.raw != nil {
		t.Fatal("the snapshot published after compression still reads raw frames")
	}
	if gone(raw.path) {
		t.Fatal("the raw file was removed under a reader holding it")
	}
	got, err := snapText(c.view.text)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("held snapshot read: %v, equal %v", err, bytes.Equal(got, want))
	}
	release()
	if !gone(raw.path) {
		t.Fatal("the raw file is left after its last reader released it")
	}
}

// TestLoadFindsRawFrames: an index closed with its frames raw (not
// compressed yet), or with the first of them compressed by a compression
// cut short (their ends in the frame index past the published ones), is
// loaded by the next process with the same item text: the compressed
// frames from the frame index, the rest from the raw file, with no
// re-index; stale raw files of the session are removed; the next sync's
// builder compresses the rest, to the frames an index in one go writes.
func TestLoadFindsRawFrames(t *testing.T) {
	for _, compressed := range []int{0, 37} {
		t.Run("", func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, "s.jsonl")
			genSession(t, path, 2)
			_, wantFrames, wantIndex := inlineIndex(t, path)
			dir := filepath.Join(t.TempDir(), "index")
			held := holdCompression(t)
			x, s := syncedIndex(t, root, path, dir)
			x.filtersIdle()
			want := committedText(t, s)
			files := s.textFiles()
			frames := s.frames
			if compressed > 0 {
				// What compressRaw leaves when cut after its first frames.
				s.mu.Lock()
				tx := s.textSnap()
				s.mu.Unlock()
				tx.frames = compressed
				ends, err := s.compressRaw(tx, s.filters.gen.Load())
				if err != nil || len(ends) != compressed {
					t.Fatalf("compressRaw: %d ends, %v", len(ends), err)
				}
			}
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			stale := files.path("raw5")
			if err := os.WriteFile(stale, []byte("stale"), 0o600); err != nil {
				t.Fatal(err)
			}

			x, s = syncedIndex(t, root, path, dir)
			defer x.Close()
			x.filtersIdle()
			var d dto.Metric
			if err := x.metrics.Reindexes.WithLabelValues("text_lost").Write(&d); err != nil || d.GetCounter().GetValue() != 0 {
				t.Fatalf("the load re-indexed the session (%v, %v)", d.GetCounter().GetValue(), err)
			}
			c := s.current()
			if len(c.view.text.ends) != compressed || c.view.text.frames != frames || c.view.text.raw == nil || c.view.text.raw.path != files.path("raw0") {
				t.Fatalf("loaded %d compressed frames of %d, raw %v; want %d of %d, raw0", len(c.view.text.ends), c.view.text.frames, c.view.text.raw, compressed, frames)
			}
			if !gone(stale) {
				t.Fatal("a stale raw file of the session is left after the load")
			}
			if got := committedText(t, s); !bytes.Equal(got, want) {
				t.Fatal("item text after the load differs")
			}
			*held = false
			if err := s.compressFrames(); err != nil {
				t.Fatal(err)
			}
			gotFrames, _ := os.ReadFile(s.framePath())
			gotIndex, _ := os.ReadFile(s.frameIndexPath())
			if !bytes.Equal(gotFrames, wantFrames) || !bytes.Equal(gotIndex, wantIndex) || !gone(files.path("raw0")) {
				t.Fatalf("after compression: frame file %d bytes, index %d bytes, want %d and %d equal to one index's; raw file gone %v", len(gotFrames), len(gotIndex), len(wantFrames), len(wantIndex), gone(files.path("raw0")))
			}
		})
	}
}

// A writer of raw frames, fed texts of every size around a frame and
// around its gathering buffer (frameWriteBytes), from a committed tail
// and over two batches, writes exactly the text's whole frames to the raw
// file, in order from its first frame, and keeps the rest as the tail: the
// raw file is the text's first frames×frameSize bytes, the tail the rest.
func TestRawFrameWriterWritesTheText(t *testing.T) {
	sizes := []int{1, frameSize - 1, 1, frameSize, 3*frameSize + 7, 100, frameWriteBytes, frameWriteBytes + frameSize/2, 5, 2*frameWriteBytes + 3, frameSize + 1}
	tail := bytes.Repeat([]byte("t"), 1000) // the committed tail a batch starts from
	text := slices.Clone(tail)
	rf, err := os.Create(filepath.Join(t.TempDir(), "1.raw0"))
	if err != nil {
		t.Fatal(err)
	}
	defer rf.Close()
	w := &frameWriter{rf: rf, buf: slices.Clone(tail)}
	written := 0 // frames written by the batches before
	for batch, part := range [][]int{sizes[:6], sizes[6:]} {
		w.n, w.nraw, w.rawOff = 0, 0, int64(written)*frameSize
		for i, n := range part {
			b := bytes.Repeat([]byte{byte('a' + (batch*8+i)%26)}, n)
			text = append(text, b...)
			if err := w.writeBytes(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.finish(); err != nil {
			t.Fatal(err)
		}
		written += w.nraw
		if len(w.buf) >= frameSize {
			t.Fatalf("batch %d: tail of %d bytes, want under a frame", batch, len(w.buf))
		}
	}
	whole := len(text) / frameSize * frameSize
	if written != whole/frameSize {
		t.Fatalf("%d frames written, want %d", written, whole/frameSize)
	}
	got, err := os.ReadFile(rf.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, text[:whole]) {
		t.Errorf("raw file: %d bytes that differ from the text's first %d", len(got), whole)
	}
	if !bytes.Equal(w.buf, text[whole:]) {
		t.Errorf("tail: %d bytes, want the text's last %d", len(w.buf), len(text)-whole)
	}
}
