package store

import (
	"context"
	"errors"
	"io"
	"os"
	"runtime"
	"syscall"
	"time"

	"contextd/session"
)

// The two phases of a cold index (docs/benchmarks.md). A request that reads only the
// entry tree (GET /v1/sessions/{id}/branch) syncs with a context marked by
// TreeOnly. When such a sync finds a session never indexed and a file of at
// least PreviewMinBytes, it first builds a tree preview: one pass over the
// lines with session.Parser.TreeOnly (the Entry fields only; bodies are
// validated, not decoded), no rendering, no item text, no SQLite. ReadTree
// serves the preview at once; the full index (items, texts, rows, the
// change check) is built right after by a background Sync, and every other
// request waits for it as it waits for any sync (Session.syncMu), so the
// history routes, notes and /context never see a state without items.
// The full index does not build a second tree: its tree adopts the
// preview's entries as it parses the same ones (session.Tree.Reuse), so a
// file's entries are held once at every size (two trees of a 1 GiB
// session peaked at 176 MiB with the GC at half the CPU; docs/benchmarks.md: peak
// RSS ≤ 150 MiB, GC < 15%). An entry that differs from the preview's (the
// file was rewritten in between) makes the full index's tree copy what
// it shares and go on alone. When the full sync commits, the preview is
// dropped: the tree it built holds the same entries
// (session.TestTreeOnlyParsesTheSameEntries), and nothing of the preview
// is stored, so drop + rebuild and incremental = cold are untouched.

// PreviewMinBytes is the smallest file whose cold index answers tree reads
// from a preview first (a variable for tests). Below it one phase is as
// quick.
var PreviewMinBytes int64 = 4 << 20

// beforeBackgroundSync, when set (tests), runs before the background
// full sync that follows a tree preview.
var beforeBackgroundSync func()

// beforePreviewRead, when set (tests), runs before each read of the
// session file by a tree preview, with the read's offset.
var beforePreviewRead func(off int64)

// hookedReader calls beforePreviewRead before each read of f.
type hookedReader struct{ f io.ReaderAt }

func (r hookedReader) ReadAt(p []byte, off int64) (int, error) {
	beforePreviewRead(off)
	return r.f.ReadAt(p, off)
}

type treeOnlyKey struct{}

// TreeOnly marks ctx for a request that reads only the entry tree
// (ReadTree): a Sync under it may answer from a tree preview while the
// items of a cold index are still being built.
func TreeOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, treeOnlyKey{}, true)
}

// IsTreeOnly reports whether ctx was marked by TreeOnly.
func IsTreeOnly(ctx context.Context) bool {
	v, _ := ctx.Value(treeOnlyKey{}).(bool)
	return v
}

// treePreview is the tree of the file's complete lines [0, next) as of
// one stat (size, identity, mtime), built before the full index.
type treePreview struct {
	tree     *session.Tree
	next     int64
	size     int64
	dev, ino uint64
	mtime    time.Time
	stats    session.Stats
	at       time.Time
}

// current reports whether the file at path is still the one the preview
// read: same identity, size and mtime.
func (p *treePreview) current(path string) bool {
	fi, err := os.Stat(path)
	if err != nil || fi.Size() != p.size || !fi.ModTime().Equal(p.mtime) {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && uint64(st.Dev) == p.dev && uint64(st.Ino) == p.ino
}

func (s *Session) previewNow() *treePreview {
	return s.current().preview
}

// syncTree is Sync for a TreeOnly request: it returns at once while a
// preview describes the file as it is (the full index is then being built
// in the background), builds a preview when the session was never indexed
// and the file is large, and otherwise syncs fully.
func (s *Session) syncTree(ctx context.Context) error {
	if !s.syncMu.TryLock() {
		if p := s.previewNow(); p != nil && p.current(s.path) {
			return nil
		}
		s.syncMu.Lock()
	}
	defer s.syncMu.Unlock()
	if p := s.previewNow(); p != nil && p.current(s.path) {
		return nil
	}
	if _, err := s.loadedDB(ctx); err != nil {
		return err
	}
	if s.next > 0 || s.tree != nil || s.refused != nil || s.x.closing.Load() {
		return s.syncLocked(ctx)
	}
	p, err := s.previewFile(ctx)
	if tl := (*errTooLarge)(nil); errors.As(err, &tl) {
		db, err := s.loadedDB(ctx)
		if err != nil {
			return err
		}
		return s.refuse(ctx, db, tl, tl.dev, tl.ino, tl.size)
	}
	if err != nil {
		return err
	}
	if p == nil || p.tree == nil {
		// Small, or not a session: one phase.
		return s.syncLocked(ctx)
	}
	s.mu.Lock()
	s.preview = p
	s.publishLocked()
	s.mu.Unlock()
	s.x.bg.Add(1)
	go func() {
		defer s.x.bg.Done()
		if beforeBackgroundSync != nil {
			beforeBackgroundSync()
		}
		// One background index at a time: a sessions directory of many
		// large files is indexed file after file, as SyncAll does, not
		// all at once (memory).
		s.x.bgSlot <- struct{}{}
		defer func() { <-s.x.bgSlot }()
		// The first phase's garbage (its read buffers and scratch) goes
		// before the second phase grows the heap: without this the peak
		// RSS of the whole cold index holds both (docs/benchmarks.md peak RSS).
		// Small files leave little garbage: no forced collection.
		if p.size >= 64<<20 {
			runtime.GC()
		}
		if err := s.Sync(s.x.bgCtx); err != nil && !s.x.closing.Load() {
			s.x.log.Warn("indexing the items of a session after its tree failed; the next request retries", "path", s.path, "err", err)
		}
	}()
	return nil
}

// previewFile builds the tree preview of the session file (nil when it
// cannot be opened or is under PreviewMinBytes). A file cut while it is
// read (errFileCut, store/sync.go cutReader: a rewrite truncates, then
// writes) is read again from a new stat, at most maxCutSyncs times in
// all, as a sync reads it; after that there is no preview (the caller
// syncs fully, which retries in turn).
func (s *Session) previewFile(ctx context.Context) (*treePreview, error) {
	for n := 1; ; n++ {
		f, fi, ok := s.openFile(nil)
		if !ok {
			return nil, nil
		}
		p, err := s.buildPreview(ctx, f, fi)
		f.Close()
		if !errors.Is(err, errFileCut) {
			return p, err
		}
		s.x.log.Info("session file was cut while its tree preview read it, reading it again", "path", s.path)
		if n == maxCutSyncs {
			return nil, nil
		}
	}
}

// buildPreview reads the complete lines of f (nil when the file is under
// PreviewMinBytes) into a tree, parsing each line with Parser.TreeOnly.
func (s *Session) buildPreview(ctx context.Context, f *os.File, fi os.FileInfo) (*treePreview, error) {
	size := fi.Size()
	if size < PreviewMinBytes {
		return nil, nil
	}
	p := &treePreview{size: size, mtime: fi.ModTime(), at: time.Now()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		p.dev, p.ino = uint64(st.Dev), uint64(st.Ino)
	}
	var scratch session.StringChunks
	var tree *session.Tree
	ps := session.Parser{TreeOnly: true, Scratch: &scratch}
	ps.LookupSeq = func(seq int) (string, bool) {
		if tree == nil {
			return "", false
		}
		return tree.IDAt(seq)
	}
	var r io.ReaderAt = f
	if beforePreviewRead != nil {
		r = hookedReader{f}
	}
	grown := false
	var long session.LongLines
	defer long.Release()
	next, err := session.ScanLinesLong(cutReader{f: r, size: size}, 0, size, s.x.opts.MaxLineBytes, make([]byte, session.ReadChunk), &long, func(line []byte, off int64, tooLong bool) error {
		p.stats.Lines++
		lineNo := max(ps.NextLine, 1)
		if tooLong {
			ps.NextLine = lineNo + 1
			p.stats.Note(lineNo, off, session.SkipTooLong)
			return nil
		}
		e, _, skip := ps.ParseLine(line, off)
		if skip != session.SkipNone {
			p.stats.Note(lineNo, off, skip)
			return nil
		}
		if e == nil {
			if ps.Header != nil && tree == nil {
				tree = session.NewTree(*ps.Header)
			}
			return nil
		}
		if tree == nil {
			return nil
		}
		if err := s.x.overBudget(tree.Len()+1, off, ps.Header); err != nil {
			return err
		}
		if !grown && off >= 1<<20 {
			// Size the tree once from the entries per byte so far, never
			// past the entry budget (toolarge.go).
			grown = true
			want := int(float64(tree.Len()) * float64(size) / float64(off) * 1.05)
			if s.x.maxEntries > 0 {
				want = min(want, s.x.maxEntries)
			}
			tree.Grow(want)
		}
		tree.Add(memEntry(*e))
		if tree.Len()%4096 == 0 {
			return ctx.Err()
		}
		return nil
	})
	if tl := (*errTooLarge)(nil); errors.As(err, &tl) {
		tl.dev, tl.ino, tl.size = p.dev, p.ino, p.size
	}
	if err != nil {
		return nil, err
	}
	p.tree, p.next = tree, next
	return p, nil
}
