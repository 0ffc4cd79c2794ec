package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// A session's files under texts/ (item-text frames N.s2, their frame
// index N.s2x, raw frames not compressed yet N.rawF; frame filters N.blk
// and their count N.blkn; textstore.go, rawframes.go, framefilter.go) are
// one generation of its text. A reset (the session file
// rewritten: Session.clear, an eviction, Forget) never truncates or
// rewrites them: the next text is written under the next generation's
// names, N.G.s2, N.G.s2x, N.G.blk, N.G.blkn (generation G ≥ 1; generation
// 0 keeps the names without G, those of indexes before generations), and
// the files of the replaced generation are removed once no reader holds
// them. So a reader of an older snapshot never finds a file it opened, or
// is about to open, cut or holding another text (as codesearch writes a
// new index rather than editing one it serves).
//
// Readers hold a generation for as long as their Read callback runs
// (Session.hold); a replaced generation is retired after the snapshot of
// the next one is published, and the last of retire and the releases
// removes its files. The generation in use is found again on load from
// the names on disk (the highest; the others, left by a crash before
// their removal, are removed then).

// textFiles is one generation of a session's files under texts/.
type textFiles struct {
	dir    string
	fileID int64
	gen    uint64
	held   holders
	// rebuilds is the index's count of Rebuilds (Index.rebuilds) and
	// named its value when these files were named. A Rebuild removes
	// every file itself and names the rebuilt text from generation 0
	// again, so once it has run these names may be the rebuilt index's
	// files: dropped reports it, and neither remove nor a raw file's
	// removal (rawframes.go) touches them then, whichever generation
	// they are and whether a reader still held them
	// (TestRebuildAfterHeldRetiredGeneration, TestRebuildAfterHeldRawFile).
	rebuilds *atomic.Uint64
	named    uint64
}

// dropped reports whether a Rebuild ran since t's files were named.
func (t *textFiles) dropped() bool {
	return t.rebuilds != nil && t.rebuilds.Load() != t.named
}

// holders counts the readers of files a writer replaces: the files are
// removed by the last of the writer's retire and the readers' releases.
type holders struct {
	// refs is the number of readers holding the files; -1 once they are
	// removed (no reader may take them then).
	refs    atomic.Int64
	retired atomic.Bool
}

// acquire takes the files for a reader; false when they are removed
// already.
func (h *holders) acquire() bool {
	for {
		n := h.refs.Load()
		if n < 0 {
			return false
		}
		if h.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// release gives back files a reader acquired, calling remove when they are
// retired and this was the last reader.
func (h *holders) release(remove func() error) {
	if h.refs.Add(-1) == 0 && h.retired.Load() && h.refs.CompareAndSwap(0, -1) {
		_ = remove()
	}
}

// retire marks the files replaced (the snapshot without them is published
// already) and calls remove now when no reader holds them, else the last
// release does.
func (h *holders) retire(remove func() error) error {
	h.retired.Store(true)
	if h.refs.CompareAndSwap(0, -1) {
		return remove()
	}
	return nil
}

// path is the generation's file of the given extension ("s2", "s2x",
// "blk", "blkn").
func (t *textFiles) path(ext string) string {
	if t.gen == 0 {
		return filepath.Join(t.dir, fmt.Sprintf("%d.%s", t.fileID, ext))
	}
	return filepath.Join(t.dir, fmt.Sprintf("%d.%d.%s", t.fileID, t.gen, ext))
}

// textExts are the extensions of a generation's files.
var textExts = []string{"s2", "s2x", "blk", "blkn"}

// textFilesOf is generation gen of fileID's files, named now (under the
// index's current count of Rebuilds).
func (x *Index) textFilesOf(fileID int64, gen uint64) *textFiles {
	return &textFiles{dir: x.textDir(), fileID: fileID, gen: gen, rebuilds: &x.rebuilds, named: x.rebuilds.Load()}
}

// next returns the generation that replaces t.
func (t *textFiles) next() *textFiles {
	return &textFiles{dir: t.dir, fileID: t.fileID, gen: t.gen + 1, rebuilds: t.rebuilds, named: t.named}
}

// acquire takes the files for a reader (release gives them back); false
// when they are removed already.
func (t *textFiles) acquire() bool { return t.held.acquire() }

// release gives back the files a reader acquired, removing them when t
// is retired and this was the last reader.
func (t *textFiles) release() { t.held.release(t.remove) }

// retire marks t replaced (the snapshot of the next generation is
// published already) and removes its files now when no reader holds them,
// else when the last one releases them.
func (t *textFiles) retire() error { return t.held.retire(t.remove) }

// remove deletes the generation's files, its raw frame files too
// (missing ones are no error); nothing once a Rebuild dropped them.
func (t *textFiles) remove() error {
	if t.dropped() {
		return nil
	}
	var errs []error
	for _, ext := range textExts {
		if err := os.Remove(t.path(ext)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	raws, err := t.rawFiles()
	errs = append(errs, err)
	for _, r := range raws {
		if err := os.Remove(r.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// listTextFiles returns the paths of the files of fileID in dir, of every
// generation (with the raw N.txt of indexes before migration 0005), and
// the highest generation among them (0 when none).
func listTextFiles(dir string, fileID int64) (paths []string, gen uint64, err error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	prefix := strconv.FormatInt(fileID, 10) + "."
	for _, de := range des {
		g, ok := textFileGen(de.Name(), prefix)
		if !ok {
			continue
		}
		paths = append(paths, filepath.Join(dir, de.Name()))
		gen = max(gen, g)
	}
	return paths, gen, nil
}

// textFileGen parses name as one of the files whose names start with
// prefix ("N."): N.ext (generation 0) or N.G.ext.
func textFileGen(name, prefix string) (uint64, bool) {
	rest, ok := strings.CutPrefix(name, prefix)
	if !ok {
		return 0, false
	}
	g, ext, two := strings.Cut(rest, ".")
	if !two {
		return 0, rest == "txt" || isTextExt(rest)
	}
	n, err := strconv.ParseUint(g, 10, 64)
	if err != nil || n == 0 || !isTextExt(ext) {
		return 0, false
	}
	return n, true
}

func isTextExt(ext string) bool {
	for _, e := range textExts {
		if e == ext {
			return true
		}
	}
	_, raw := rawExtFirst(ext)
	return raw
}

// openTextFiles returns the generation of fileID's files in use: the
// highest on disk, the files of the others removed (left by a crash
// before their removal; no reader of this process holds them).
func (x *Index) openTextFiles(fileID int64) (*textFiles, error) {
	dir := x.textDir()
	paths, gen, err := listTextFiles(dir, fileID)
	if err != nil {
		return nil, err
	}
	t := x.textFilesOf(fileID, gen)
	keep := map[string]bool{filepath.Join(dir, fmt.Sprintf("%d.txt", fileID)): true}
	for _, ext := range textExts {
		keep[t.path(ext)] = true
	}
	prefix := strconv.FormatInt(fileID, 10) + "."
	for _, p := range paths {
		if g, _ := textFileGen(filepath.Base(p), prefix); g == gen && isRawPath(p) {
			continue // the generation's raw frames (loadRawFrames)
		}
		if !keep[p] {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, err
			}
		}
	}
	return t, nil
}
