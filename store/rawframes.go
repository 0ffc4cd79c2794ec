package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Raw frames: an ingest of many bytes (a cold index, a tool result of
// megabytes) does not compress its item-text frames as they fill. It writes
// them raw, frameSize bytes each, into a raw file of the generation, and
// the filter builder's thread, lowered below requests (background.go),
// compresses them into the frame file afterwards (framecompress.go). The
// first /context of a never-indexed session and the /context after a big
// append then wait for no compression: it was a quarter of the CPU of a
// cold index (docs/benchmarks.md, "Deferred frame compression").
//
// The committed frames are frames×frameSize bytes (text_bytes less the
// tail). The first of them are compressed, their ends in N.s2x; the rest,
// from the first frame N.s2x does not cover, are in one raw file,
// N[.G].raw<first>: frame f at (f-first)×frameSize. Which frames are
// compressed is not committed anywhere: a load takes the frames N.s2x
// covers and the raw file for the others (loadRawFrames), so a crash during
// a compression loses nothing. Once every frame of a raw file is
// compressed, the snapshot without it is published and the file removed
// when no reader holds it (holders).

// rawFile is one raw file: frames from first on.
type rawFile struct {
	path  string
	first int
	held  holders
	// files is the generation it belongs to: once Rebuild dropped it,
	// the name may be the next index's file and is not removed.
	files *textFiles
}

// rawIngestBytes is the size of an ingest (file bytes) from which its
// frames are written raw. Smaller catch-ups compress inline: a frame of
// them fills rarely, and a raw file for it would be made and removed
// again.
const rawIngestBytes = 1 << 20

// rawExt is the extension of the raw file from frame first on.
func rawExt(first int) string { return "raw" + strconv.Itoa(first) }

// rawExtFirst parses a raw file's extension ("raw<first>").
func rawExtFirst(ext string) (int, bool) {
	d, ok := strings.CutPrefix(ext, "raw")
	if !ok || d == "" || (len(d) > 1 && d[0] == '0') {
		return 0, false
	}
	n, err := strconv.Atoi(d)
	return n, err == nil && n >= 0
}

// isRawPath reports whether p names a raw file.
func isRawPath(p string) bool {
	ext := filepath.Ext(p)
	_, ok := rawExtFirst(strings.TrimPrefix(ext, "."))
	return ok
}

// newRawFile names the raw file of t from frame first on.
func (t *textFiles) newRawFile(first int) *rawFile {
	return &rawFile{path: t.path(rawExt(first)), first: first, files: t}
}

// rawFiles lists the raw files of generation t on disk.
func (t *textFiles) rawFiles() ([]*rawFile, error) {
	des, err := os.ReadDir(t.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	prefix := strconv.FormatInt(t.fileID, 10) + "."
	if t.gen != 0 {
		prefix += strconv.FormatUint(t.gen, 10) + "."
	}
	var out []*rawFile
	for _, de := range des {
		ext, ok := strings.CutPrefix(de.Name(), prefix)
		if !ok {
			continue
		}
		if first, ok := rawExtFirst(ext); ok {
			out = append(out, &rawFile{path: filepath.Join(t.dir, de.Name()), first: first, files: t})
		}
	}
	return out, nil
}

// remove deletes the raw file (missing is no error), unless Rebuild
// dropped its generation: Rebuild removed it with the whole index, and
// the name may be a raw file of the rebuilt one (the same file id and
// first frame), which a reader of a snapshot before the Rebuild releasing
// the file must not remove.
func (r *rawFile) remove() error {
	if r.files != nil && r.files.dropped() {
		return nil
	}
	if err := os.Remove(r.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// of reports whether r is a raw file of generation t (Forget moves a
// session to the next generation and publishes its text as it was: that
// text's raw file is then of the replaced one).
func (r *rawFile) of(t *textFiles) bool {
	return t != nil && r.files != nil && r.files.fileID == t.fileID && r.files.gen == t.gen
}

// acquire takes the file for a reader (release gives it back); false
// once it is removed.
func (r *rawFile) acquire() bool { return r.held.acquire() }

// release gives back the file a reader acquired.
func (r *rawFile) release() { r.held.release(r.remove) }

// retire marks every frame of r compressed (the snapshot that reads them
// compressed is published already) and removes it once no reader holds it.
func (r *rawFile) retire() error { return r.held.retire(r.remove) }

// loadRawFrames finds the raw file holding frames [from, to) of generation
// t (a load, caller holds mu; no reader holds the generation) and removes
// every other raw file of t, truncating the one kept to frame to (dropping
// frames of a batch that never committed). ok is false when no raw file
// holds them all. For from == to it removes them all.
func loadRawFrames(t *textFiles, from, to int) (keep *rawFile, ok bool, err error) {
	raws, err := t.rawFiles()
	if err != nil {
		return nil, false, err
	}
	for _, r := range raws {
		if from < to && r.first <= from && (keep == nil || r.first > keep.first) {
			fi, err := os.Stat(r.path)
			if err == nil && fi.Size() >= int64(to-r.first)*frameSize {
				keep = r
			}
		}
	}
	for _, r := range raws {
		if r != keep {
			if err := r.remove(); err != nil {
				return nil, false, err
			}
		}
	}
	if keep == nil {
		return nil, from == to, nil
	}
	if err := os.Truncate(keep.path, int64(to-keep.first)*frameSize); err != nil {
		return nil, false, err
	}
	return keep, true, nil
}

// readRawFrame reads frame f of r into dst (frameSize bytes) through fh,
// the open raw file.
func readRawFrame(fh *os.File, r *rawFile, f int, dst []byte) error {
	if _, err := fh.ReadAt(dst[:frameSize], int64(f-r.first)*frameSize); err != nil {
		return fmt.Errorf("read raw item text frame %d: %w", f, err)
	}
	return nil
}
