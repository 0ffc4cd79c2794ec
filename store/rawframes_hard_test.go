package store

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"contextd/bench/sessiongen"
	"contextd/history"
)

// The raw frames (rawframes.go) under the hard timings: a reset, an
// eviction, a Rebuild or appends while a compression is paused between
// two frames, and readers across the boundary of compressed and raw
// frames. Each ends in the item text, frame file and frame index of an
// index of the final file built in one go (inlineIndex), the files of
// replaced generations removed, and nothing logged at WARN.

// lockedLog is a log sink written by the index's goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// openLogged opens an index of root in a new directory, logging to the
// returned sink.
func openLogged(t *testing.T, root string) (*Index, *lockedLog) {
	t.Helper()
	logs := &lockedLog{}
	x, err := OpenIndex(t.Context(), root, filepath.Join(t.TempDir(), "index"), Options{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return x, logs
}

func noWarn(t *testing.T, logs *lockedLog) {
	t.Helper()
	if s := logs.String(); strings.Contains(s, "level=WARN") || strings.Contains(s, "level=ERROR") {
		t.Fatalf("logged:\n%s", s)
	}
}

// genBytes is a generated session of about mb MiB (seed: its content).
func genBytes(t *testing.T, mb float64, seed uint64) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := sessiongen.Generate(&buf, sessiongen.Options{Bytes: int64(mb * (1 << 20)), Seed: seed, WindowEvery: 50, Big: []int{64 << 10}}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// linePrefix is all's longest prefix of whole lines of at most n bytes.
func linePrefix(all []byte, n int) []byte {
	return all[:bytes.LastIndexByte(all[:n], '\n')+1]
}

// writeCopy writes b to a file named s.jsonl in a new directory (an
// inlineIndex of the same bytes as the session).
func writeCopy(t *testing.T, b []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func appendFile(t *testing.T, path string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// pauseAt makes compressRaw stop before each frame of at, once each, until
// the returned resume of that frame is called; reached[f] is closed when
// it stops there.
type pauses struct {
	reached map[int]chan struct{}
	resumed map[int]chan struct{}
	once    map[int]*sync.Once
}

func pauseAt(t *testing.T, at ...int) *pauses {
	p := &pauses{reached: map[int]chan struct{}{}, resumed: map[int]chan struct{}{}, once: map[int]*sync.Once{}}
	for _, f := range at {
		p.reached[f], p.resumed[f], p.once[f] = make(chan struct{}), make(chan struct{}), &sync.Once{}
	}
	betweenFrameCompression = func(_ *Session, f int) {
		if o := p.once[f]; o != nil {
			o.Do(func() {
				close(p.reached[f])
				<-p.resumed[f]
			})
		}
	}
	t.Cleanup(func() {
		for _, f := range at {
			p.resume(f)
		}
	})
	return p
}

func (p *pauses) wait(t *testing.T, f int) {
	t.Helper()
	select {
	case <-p.reached[f]:
	case <-time.After(time.Minute):
		t.Fatalf("the compression never reached frame %d", f)
	}
}

func (p *pauses) resume(f int) {
	select {
	case <-p.resumed[f]:
	default:
		close(p.resumed[f])
	}
}

// waitGenPast waits until s's filter generation moved past g (a reset,
// eviction or Rebuild told the builder to stop and now waits for it).
func waitGenPast(s *Session, g uint64) {
	for s.filters.gen.Load() == g {
		runtime.Gosched()
		time.Sleep(100 * time.Microsecond)
	}
}

// onDisk lists the names of the files under the index's texts/.
func onDisk(t *testing.T, x *Index) []string {
	t.Helper()
	des, err := os.ReadDir(x.textDir())
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}

// wantInline checks that s's committed text, frame file and frame index
// are those of an index of want built in one go, every frame compressed
// and no raw file left.
func wantInline(t *testing.T, x *Index, s *Session, want []byte) {
	t.Helper()
	text, frames, index := inlineIndex(t, writeCopy(t, want))
	if got := committedText(t, s); !bytes.Equal(got, text) {
		t.Fatalf("item text %d bytes differs from a cold index's (%d bytes)", len(got), len(text))
	}
	c := s.current()
	if c.view.text.raw != nil || len(c.view.text.ends) != c.view.text.frames {
		t.Fatalf("%d of %d frames compressed, raw %v; want all, none", len(c.view.text.ends), c.view.text.frames, c.view.text.raw)
	}
	gotFrames, _ := os.ReadFile(s.framePath())
	gotIndex, _ := os.ReadFile(s.frameIndexPath())
	if !bytes.Equal(gotFrames, frames) || !bytes.Equal(gotIndex, index) {
		t.Fatalf("frame file %d bytes, index %d bytes; want a cold index's %d and %d, equal", len(gotFrames), len(gotIndex), len(frames), len(index))
	}
	for _, n := range onDisk(t, x) {
		if isRawPath(n) {
			t.Fatalf("raw file %s left after every frame was compressed (texts/: %v)", n, onDisk(t, x))
		}
	}
}

// onlyGeneration checks that texts/ holds files of s's generation only.
func onlyGeneration(t *testing.T, x *Index, s *Session) {
	t.Helper()
	f := s.textFiles()
	for _, n := range onDisk(t, x) {
		p := filepath.Join(x.textDir(), n)
		ok := false
		for _, e := range textExts {
			ok = ok || p == f.path(e)
		}
		if !ok {
			t.Fatalf("texts/ holds %s, not a file of the generation in use (%s): %v", n, f.path("s2"), onDisk(t, x))
		}
	}
}

// TestResetDuringCompression: the session file rewritten (another first
// line; or cut and written again shorter) while the builder is paused in
// the middle of compressing its raw frames, with a reader holding the
// snapshot before. The reset waits for the compression to stop, the
// reader still reads the old text whole, the old generation's files (its
// raw file too) go when it releases them, and the new text ends as a cold
// index of the new file writes it.
func TestResetDuringCompression(t *testing.T) {
	first := genBytes(t, 2, 7)
	for name, next := range map[string][]byte{
		"first line": genBytes(t, 1.5, 8),
		"cut":        linePrefix(first, 1<<20+300<<10),
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, "s.jsonl")
			if err := os.WriteFile(path, first, 0o600); err != nil {
				t.Fatal(err)
			}
			p := pauseAt(t, 10)
			defer func() { betweenFrameCompression = nil }()
			x, logs, s := loggedSynced(t, root, path)
			p.wait(t, 10)
			oldText := committedText(t, s)
			c, release := s.hold()
			if c.view.text.raw == nil {
				t.Fatal("no raw frames after a large ingest")
			}
			oldRaw := c.view.text.raw.path
			oldFiles := s.textFiles()

			if err := os.WriteFile(path, next, 0o600); err != nil {
				t.Fatal(err)
			}
			g := s.filters.gen.Load()
			errc := make(chan error, 1)
			go func() { errc <- s.Sync(t.Context()) }()
			waitGenPast(s, g)
			p.resume(10)
			if err := <-errc; err != nil {
				t.Fatal(err)
			}
			x.filtersIdle()

			if gone(oldRaw) {
				t.Fatal("the old raw file was removed under a reader holding it")
			}
			got, err := snapText(c.view.text)
			if err != nil || !bytes.Equal(got, oldText) {
				t.Fatalf("the held snapshot read %v, equal %v", err, bytes.Equal(got, oldText))
			}
			release()
			if !gone(oldRaw) || !gone(oldFiles.path("s2")) {
				t.Fatalf("old generation's files left after its reader released them: %v", onDisk(t, x))
			}
			if s.textFiles().gen != oldFiles.gen+1 {
				t.Fatalf("generation %d after the reset, want %d", s.textFiles().gen, oldFiles.gen+1)
			}
			wantInline(t, x, s, next)
			onlyGeneration(t, x, s)
			noWarn(t, logs)
		})
	}
}

// loggedSynced opens a logged index of the sessions under root
// (openLogged), closed at the end of the test, and syncs the session at
// path.
func loggedSynced(t *testing.T, root, path string) (*Index, *lockedLog, *Session) {
	t.Helper()
	x, logs := openLogged(t, root)
	t.Cleanup(func() { x.Close() })
	s := x.Session(path)
	if err := s.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	return x, logs, s
}

// indexedAsOnce waits for the builder, then checks that s's frames are
// those of one index of want (wantInline), in one generation, and that
// nothing was logged at WARN.
func indexedAsOnce(t *testing.T, x *Index, s *Session, want []byte, logs *lockedLog) {
	t.Helper()
	x.filtersIdle()
	wantInline(t, x, s, want)
	onlyGeneration(t, x, s)
	noWarn(t, logs)
}

// rawSynced writes all as the session file s.jsonl under a new root,
// opens a logged index of it and syncs it, its frames left raw: pending
// (mid false: the builder compresses none) or with their compression
// paused before frame 10 (mid true, p waited for). The hooks are undone
// and the index closed at the end of the test.
func rawSynced(t *testing.T, all []byte, mid bool) (*Index, *lockedLog, *Session, *pauses) {
	t.Helper()
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	if err := os.WriteFile(path, all, 0o600); err != nil {
		t.Fatal(err)
	}
	var p *pauses
	if mid {
		p = pauseAt(t, 10)
	} else {
		beforeFrameCompression = func(*Session) bool { return false }
	}
	t.Cleanup(func() { beforeFrameCompression, betweenFrameCompression = nil, nil })
	x, logs, s := loggedSynced(t, root, path)
	if mid {
		p.wait(t, 10)
	}
	return x, logs, s, p
}

// TestEvictRawFrames: an eviction of a session whose frames are raw,
// pending or with their compression paused mid-way, removes every file of
// it (the raw file too) and frees what the budget measured, raw file
// included; the next sync indexes it again to a cold index's frames.
func TestEvictRawFrames(t *testing.T) {
	all := genBytes(t, 2, 7)
	for _, mid := range []bool{false, true} {
		t.Run(map[bool]string{false: "pending", true: "mid-compression"}[mid], func(t *testing.T) {
			x, logs, s, p := rawSynced(t, all, mid)
			path := s.path
			if !mid {
				x.filtersIdle()
			}
			raw := s.current().view.text.raw
			if raw == nil {
				t.Fatal("no raw frames after a large ingest")
			}
			fi, err := os.Stat(raw.path)
			if err != nil {
				t.Fatal(err)
			}
			u, err := x.Usage(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			want, _, err := x.derivedBytes(t.Context(), path)
			if err != nil {
				t.Fatal(err)
			}
			if u.UsedBytes != want || u.UsedBytes <= fi.Size() {
				t.Fatalf("budget measured %d bytes; want %d, more than the raw file's %d", u.UsedBytes, want, fi.Size())
			}
			fileID := s.fileID
			// Mid-compression, a reader holds the snapshot before the
			// eviction: its files stay until it releases them.
			oldText := committedText(t, s)
			c, release := s.hold()
			if !mid {
				release()
			}

			var freed int64
			var ok bool
			if mid {
				g := s.filters.gen.Load()
				type res struct {
					n  int64
					ok bool
					e  error
				}
				done := make(chan res, 1)
				go func() { n, ok, e := x.evict(t.Context(), path, s.used.Load()); done <- res{n, ok, e} }()
				waitGenPast(s, g)
				p.resume(10)
				r := <-done
				freed, ok, err = r.n, r.ok, r.e
			} else {
				freed, ok, err = x.evict(t.Context(), path, s.used.Load())
			}
			if err != nil || !ok || freed != u.UsedBytes {
				t.Fatalf("evict: freed %d, %v, %v; want %d, true", freed, ok, err, u.UsedBytes)
			}
			x.filtersIdle()
			if mid {
				if gone(raw.path) {
					t.Fatal("the raw file was removed under a reader holding it")
				}
				got, err := snapText(c.view.text)
				if err != nil || !bytes.Equal(got, oldText) {
					t.Fatalf("the held snapshot read %v, equal %v", err, bytes.Equal(got, oldText))
				}
				release()
			}
			if paths, _, err := listTextFiles(x.textDir(), fileID); err != nil || len(paths) != 0 {
				t.Fatalf("files of the evicted session left: %v, %v", paths, err)
			}
			if u, _ := x.Usage(t.Context()); u.UsedBytes != 0 {
				t.Fatalf("budget measures %d bytes after the eviction, want 0", u.UsedBytes)
			}

			beforeFrameCompression, betweenFrameCompression = nil, nil // the builder is idle
			if err := s.Sync(t.Context()); err != nil {
				t.Fatal(err)
			}
			indexedAsOnce(t, x, s, all, logs)
		})
	}
}

// TestBudgetMeasuresCompressedFrames: the budget measured a session while
// its frames were raw (a raw file of frames×16 KiB); once they are
// compressed and the raw file removed, it measures what is left, not the
// raw file that is gone (else it would evict sessions for bytes no longer
// on disk until the session grew again).
func TestBudgetMeasuresCompressedFrames(t *testing.T) {
	x, logs, s, _ := rawSynced(t, genBytes(t, 2, 7), false)
	path := s.path
	x.filtersIdle()
	before, err := x.Usage(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	beforeFrameCompression = nil // the builder is idle
	// A sync of the unchanged file queues the session for the builder.
	if err := s.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	x.filtersIdle()
	if s.current().view.text.raw != nil {
		t.Fatal("frames left raw")
	}
	after, err := x.Usage(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := x.derivedBytes(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	if after.UsedBytes != want || want >= before.UsedBytes {
		t.Fatalf("budget measures %d bytes after compression (%d before); want %d, what is on disk", after.UsedBytes, before.UsedBytes, want)
	}
	noWarn(t, logs)
}

// TestRebuildDuringCompression: a Rebuild while the session's raw frames
// wait for the builder, or while the builder is paused in the middle of
// compressing them: it waits for the compression to stop, and nothing of
// the old index is written into the new one; the session is indexed again
// to a cold index's frames.
func TestRebuildDuringCompression(t *testing.T) {
	all := genBytes(t, 2, 7)
	for _, mid := range []bool{false, true} {
		t.Run(map[bool]string{false: "pending", true: "mid-compression"}[mid], func(t *testing.T) {
			x, logs, s, p := rawSynced(t, all, mid)
			if mid {
				g := s.filters.gen.Load()
				errc := make(chan error, 1)
				go func() { errc <- x.Rebuild(t.Context()) }()
				waitGenPast(s, g)
				p.resume(10)
				if err := <-errc; err != nil {
					t.Fatal(err)
				}
			} else {
				x.filtersIdle()
				if s.current().view.text.raw == nil {
					t.Fatal("no raw frames after a large ingest")
				}
				if err := x.Rebuild(t.Context()); err != nil {
					t.Fatal(err)
				}
				x.filtersIdle()
				if s.current().view.text.raw == nil {
					t.Fatal("no raw frames after the rebuild's large ingest")
				}
				beforeFrameCompression = nil // the builder is idle
				if err := s.Sync(t.Context()); err != nil {
					t.Fatal(err)
				}
			}
			indexedAsOnce(t, x, s, all, logs)
		})
	}
}

// TestRebuildAfterHeldRawFile: a reader holds a snapshot whose frames are
// raw while the builder compresses them (the raw file's removal waits for
// the reader), then the index is rebuilt and the session's frames written
// raw again under the same name (file id 1, generation 0, N.raw0). The
// reader's release must not remove the new index's raw file.
func TestRebuildAfterHeldRawFile(t *testing.T) {
	all := genBytes(t, 2, 7)
	x, logs, s, _ := rawSynced(t, all, false)
	x.filtersIdle()
	c, release := s.hold()
	oldRaw := c.view.text.raw
	if oldRaw == nil {
		t.Fatal("no raw frames after a large ingest")
	}
	beforeFrameCompression = nil // the builder is idle
	if err := s.compressFrames(); err != nil {
		t.Fatal(err)
	}
	beforeFrameCompression = func(*Session) bool { return false }
	if err := x.Rebuild(t.Context()); err != nil {
		t.Fatal(err)
	}
	x.filtersIdle()
	newRaw := s.current().view.text.raw
	if newRaw == nil || newRaw.path != oldRaw.path {
		t.Fatalf("raw file after the rebuild %v, want one at %s", newRaw, oldRaw.path)
	}
	release()
	if gone(newRaw.path) {
		t.Fatal("the release of the old index's raw file removed the new index's")
	}
	beforeFrameCompression = nil // the builder is idle
	if err := s.compressFrames(); err != nil {
		t.Fatal(err)
	}
	wantInline(t, x, s, all)
	noWarn(t, logs)
}

// searchView runs fn on a history view of v's whole branch.
func searchView(t *testing.T, v *View, fn func(hv *history.View)) {
	t.Helper()
	seqs, _, err := v.Tree.Branch("")
	if err != nil {
		t.Fatal(err)
	}
	fn(&history.View{Windows: history.LocalWindows(v.Tree, seqs, v.Ref), Texts: v.Texts()})
}

// answers is what search_contents answers for each query and the text of
// every item (read_item) of v.
func answers(t *testing.T, v *View, queries []string) (found [][]string, texts []string) {
	t.Helper()
	searchView(t, v, func(hv *history.View) {
		limit := 25
		for _, q := range queries {
			res, err := hv.Search(history.SearchArgs{Query: q, Limit: &limit})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, it := range res.Items {
				ids = append(ids, it.ItemID)
			}
			found = append(found, ids)
		}
	})
	tx := v.Texts()
	for i := range v.Items {
		if !v.Items[i].hasText() {
			continue
		}
		ref := history.ItemRef{Key: int64(i)}
		s, err := tx.Prefix(ref, -1)
		if err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
		texts = append(texts, s)
	}
	return found, texts
}

// boundaryQueries are pieces of text around the start of frame f (the
// first raw frame), within one item, and around the frames next to it.
func boundaryQueries(text []byte, fs ...int) []string {
	var out []string
	for _, f := range fs {
		at := f * frameSize
		if at+40 > len(text) || at < 40 {
			continue
		}
		q := string(text[at-12 : at+12])
		if !strings.ContainsAny(q, "\x00") {
			out = append(out, q)
		}
	}
	return out
}

// TestAppendsDuringCompression: while the builder is paused in the middle
// of compressing the frames of a cold index, a catch-up of over 1 MiB and
// then one of 200 KiB are synced: both write their frames raw, into the
// same raw file (the compressed frames stay the first ones), and the text
// reads back whole after each. The builder's next pass stops with the
// first frames compressed and published and the rest raw: search_contents
// and read_item across that boundary answer as a cold index does, also on
// a snapshot held while the rest are compressed and the raw file retired.
// At the end every frame is compressed: the frame file and index are byte
// for byte a cold index's of the final file.
func TestAppendsDuringCompression(t *testing.T) {
	all := genBytes(t, 4, 7)
	initial := linePrefix(all, 2<<20)
	mid := linePrefix(all, len(initial)+1<<20+200<<10)
	final := linePrefix(all, len(mid)+200<<10)
	if len(final) == len(mid) || len(mid)-len(initial) < rawIngestBytes || len(final)-len(mid) >= rawIngestBytes {
		t.Fatalf("prefixes %d, %d, %d", len(initial), len(mid), len(final))
	}
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	if err := os.WriteFile(path, initial, 0o600); err != nil {
		t.Fatal(err)
	}
	// The cold index of the final file, for the answers.
	cold, _ := openLogged(t, filepath.Dir(writeCopy(t, final)))
	defer cold.Close()
	cs := cold.Session(filepath.Join(cold.root, "s.jsonl"))
	if err := cs.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	cold.filtersIdle()
	coldText := committedText(t, cs)

	x0, _ := openLogged(t, filepath.Dir(writeCopy(t, initial)))
	s0 := x0.Session(filepath.Join(x0.root, "s.jsonl"))
	if err := s0.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	f1 := s0.frames // frames of the first pass
	x0.Close()

	p := pauseAt(t, 10, f1+3)
	defer func() { betweenFrameCompression = nil }()
	x, logs, s := loggedSynced(t, root, path)
	p.wait(t, 10)
	raw := s.raw
	if raw == nil || raw.first != 0 || s.frames != f1 {
		t.Fatalf("raw %v, %d frames; want raw0, %d", raw, s.frames, f1)
	}
	for i, b := range [][]byte{mid, final} {
		from := len(initial)
		if i == 1 {
			from = len(mid)
		}
		appendFile(t, path, b[from:])
		before := s.frames
		if err := s.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
		if s.frames <= before {
			t.Fatalf("catch-up %d of %d bytes filled no frame (%d frames)", i, len(b)-from, s.frames)
		}
		want, _, _ := inlineIndex(t, writeCopy(t, b))
		if got := committedText(t, s); !bytes.Equal(got, want) {
			t.Fatalf("catch-up %d: item text %d bytes differs from a cold index's (%d bytes)", i, len(got), len(want))
		}
		c := s.current()
		if s.raw != raw || c.view.text.raw != raw || len(c.view.text.ends) != 0 {
			t.Fatalf("catch-up %d: raw %v, %d frames compressed; want the same raw file, none compressed", i, s.raw, len(c.view.text.ends))
		}
		if fi, err := os.Stat(raw.path); err != nil || fi.Size() != int64(s.frames)*frameSize {
			t.Fatalf("catch-up %d: raw file %v, want %d bytes", i, err, int64(s.frames)*frameSize)
		}
	}
	if !bytes.Equal(committedText(t, s), coldText) {
		t.Fatal("item text after the catch-ups differs from the cold index's")
	}

	p.resume(10)
	p.wait(t, f1+3)
	// Published: the first pass's frames compressed, the rest raw.
	queries := boundaryQueries(coldText, f1-1, f1, f1+1, f1+3, s.frames-1)
	if len(queries) < 3 {
		t.Fatalf("only %d boundary queries", len(queries))
	}
	var wantFound [][]string
	var wantTexts []string
	if err := cs.Read(func(v *View) error { wantFound, wantTexts = answers(t, v, queries); return nil }); err != nil {
		t.Fatal(err)
	}
	hits := 0
	for _, f := range wantFound {
		hits += len(f)
	}
	if hits == 0 {
		t.Fatalf("the boundary queries %q find nothing in the cold index", queries)
	}
	err := s.Read(func(v *View) error {
		if len(v.text.ends) != f1 || v.text.raw != raw || v.text.frames != s.frames {
			t.Fatalf("published %d compressed frames of %d, raw %v; want %d, raw0", len(v.text.ends), v.text.frames, v.text.raw, f1)
		}
		found, texts := answers(t, v, queries)
		if !slices.EqualFunc(found, wantFound, slices.Equal) || !slices.Equal(texts, wantTexts) {
			t.Fatalf("across the boundary: found %v, want %v; texts equal %v", found, wantFound, slices.Equal(texts, wantTexts))
		}
		// The rest compressed and the raw file retired under this reader.
		p.resume(f1 + 3)
		x.filtersIdle()
		if s.current().view.text.raw != nil || gone(raw.path) {
			t.Fatalf("after the compression under a reader: raw %v, raw file gone %v; want none published, the file kept", s.current().view.text.raw, gone(raw.path))
		}
		found, texts = answers(t, v, queries)
		if !slices.EqualFunc(found, wantFound, slices.Equal) || !slices.Equal(texts, wantTexts) {
			t.Fatalf("on the held snapshot: found %v, want %v; texts equal %v", found, wantFound, slices.Equal(texts, wantTexts))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !gone(raw.path) {
		t.Fatal("raw file left after its reader released it")
	}
	if err := s.Read(func(v *View) error {
		found, texts := answers(t, v, queries)
		if !slices.EqualFunc(found, wantFound, slices.Equal) || !slices.Equal(texts, wantTexts) {
			t.Fatalf("all compressed: found %v, want %v", found, wantFound)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	wantInline(t, x, s, final)
	onlyGeneration(t, x, s)
	noWarn(t, logs)
}

// TestLargeIngestWithoutFrames: an ingest of over rawIngestBytes that
// fills no frame (1.2 MiB of custom entries, which have no item text)
// commits no raw frame and leaves no raw file behind (it would stay on
// disk, counted by nothing, until the next load).
func TestLargeIngestWithoutFrames(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "s.jsonl")
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"019fc000-0000-7000-8000-00000000c4a6","timestamp":"2026-08-02T08:00:00.000Z","cwd":"/x"}` + "\n")
	parent := "null"
	for i := 0; b.Len() < 1200<<10; i++ {
		id := fmt.Sprintf("%08x", i+1)
		fmt.Fprintf(&b, `{"type":"custom","customType":"state","data":{"blob":%q},"id":%q,"parentId":%s,"timestamp":"2026-08-02T08:00:00.000Z"}`+"\n", strings.Repeat("z", 4000), id, parent)
		parent = `"` + id + `"`
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	x, logs, s := loggedSynced(t, root, path)
	x.filtersIdle()
	if s.frames != 0 || s.raw != nil || s.Len() < 250 {
		t.Fatalf("%d frames, raw %v, %d entries; want 0, none, at least 250", s.frames, s.raw, s.Len())
	}
	for _, n := range onDisk(t, x) {
		if isRawPath(n) {
			t.Fatalf("raw file %s left by an ingest that committed no raw frame (texts/: %v)", n, onDisk(t, x))
		}
	}
	noWarn(t, logs)
}

// TestEvictedFileIDReused: the evicted session had the highest file id,
// so SQLite gives the next session indexed the same id (file_id INTEGER
// PRIMARY KEY takes max+1). A reader of the evicted session still holds
// its files (N.s2, N.raw0 of its generation): the new session's text must
// go under other names, so that the reader reads its own text whole and
// its release removes none of the new session's files.
func TestEvictedFileIDReused(t *testing.T) {
	root := t.TempDir()
	pa, pb, pc := filepath.Join(root, "a.jsonl"), filepath.Join(root, "b.jsonl"), filepath.Join(root, "c.jsonl")
	for _, f := range []struct {
		p    string
		seed uint64
	}{{pb, 7}, {pa, 8}, {pc, 9}} {
		if err := os.WriteFile(f.p, genBytes(t, 1.5, f.seed), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	beforeFrameCompression = func(*Session) bool { return false }
	defer func() { beforeFrameCompression = nil }()
	x, logs := openLogged(t, root)
	defer x.Close()
	sb, sa := x.Session(pb), x.Session(pa)
	for _, s := range []*Session{sb, sa} {
		if err := s.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	x.filtersIdle()
	aText := committedText(t, sa)
	aID := sa.fileID
	c, release := sa.hold()
	if c.view.text.raw == nil {
		t.Fatal("no raw frames after a large ingest")
	}
	if _, ok, err := x.evict(t.Context(), pa, sa.used.Load()); err != nil || !ok {
		t.Fatalf("evict: %v, %v", ok, err)
	}
	sc := x.Session(pc)
	if err := sc.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	x.filtersIdle()
	if sc.fileID != aID {
		t.Fatalf("the new session got file id %d, not the evicted one's %d: nothing tested", sc.fileID, aID)
	}
	got, err := snapText(c.view.text)
	if err != nil || !bytes.Equal(got, aText) {
		t.Fatalf("the evicted session's held snapshot read %v, its own text %v", err, bytes.Equal(got, aText))
	}
	release()
	if !gone(c.view.text.raw.path) || !gone(c.files.path("s2")) {
		t.Fatalf("the evicted session's files left after its reader released them: %v", onDisk(t, x))
	}
	beforeFrameCompression = nil // the builder is idle
	for _, s := range []*Session{sb, sc} {
		if err := s.Sync(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	x.filtersIdle()
	all, _ := os.ReadFile(pc)
	wantInline(t, x, sc, all)
	noWarn(t, logs)
}

// TestForgetWithRawFrames: a session forgotten (Index.Forget) while its
// frames are raw, taken by the builder after: its files go with the
// generation, and the compression finds nothing to do: no error (the
// builder would log it), no file created under the next generation's
// names.
func TestForgetWithRawFrames(t *testing.T) {
	x, logs, s, _ := rawSynced(t, genBytes(t, 1.5, 7), false)
	path := s.path
	x.filtersIdle()
	if s.current().view.text.raw == nil {
		t.Fatal("no raw frames after a large ingest")
	}
	if err := x.Forget(t.Context(), path); err != nil {
		t.Fatal(err)
	}
	beforeFrameCompression = nil // the builder is idle
	if err := s.compressFrames(); err != nil {
		t.Fatalf("compression after Forget: %v", err)
	}
	if got := onDisk(t, x); len(got) != 0 {
		t.Fatalf("texts/ after Forget and a compression: %v, want nothing", got)
	}
	noWarn(t, logs)
}
