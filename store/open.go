package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
)

// sessionOpens counts the session files opened (tests); directOpens those
// of them opened by openDirect, without the walk through os.Root.
var sessionOpens, directOpens atomic.Int64

// directOK reports whether path may be opened by openDirect: absolute,
// clean (no "..", which a symlink-free path could still use to leave the
// directory it names) and under the sessions directory.
func (x *Index) directOK(path string) bool {
	return filepath.IsAbs(path) && filepath.Clean(path) == path && x.under(path)
}

// openSessionFile opens the session file at path (absolute, symlinks
// already resolved, under the sessions directory) for reading, such that
// what is opened is what was checked (docs/security.md):
//
//   - The open walks the path inside the sessions directory with os.Root
//     (each component opened with openat and O_NOFOLLOW; symlinks are
//     followed only while they stay inside), so a directory swapped for a
//     symlink between the caller's check and the open cannot lead outside:
//     the open fails with ErrOutside instead.
//   - A FIFO, device, socket or directory is never read: Lstat refuses it
//     before the open, the open uses O_NONBLOCK (a FIFO swapped in after the
//     Lstat does not block), and fstat on the descriptor refuses it again.
//
// Errors: ErrOutside, ErrNotRegular, or the os error (fs.ErrNotExist for a
// missing file). The caller closes the file.
func (x *Index) openSessionFile(path string) (*os.File, fs.FileInfo, error) {
	sessionOpens.Add(1)
	if !x.under(path) {
		return nil, nil, ErrOutside
	}
	rel, err := filepath.Rel(x.root, path)
	if err != nil {
		return nil, nil, ErrOutside
	}
	if lfi, err := os.Lstat(path); err != nil {
		return nil, nil, err
	} else if t := lfi.Mode().Type(); t != 0 && t != fs.ModeSymlink {
		return nil, nil, ErrNotRegular
	}
	root, err := os.OpenRoot(x.root)
	if err != nil {
		return nil, nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return nil, nil, err
		}
		// os.Root refuses a path that leaves the root ("path escapes
		// from parent"); a swapped symlink is the usual cause.
		if strings.Contains(err.Error(), "escapes") {
			return nil, nil, fmt.Errorf("%w: %w", ErrOutside, err)
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, ErrNotRegular
	}
	return f, fi, nil
}

// openForRead opens the session file at path for a reader (View.Decode,
// DecodeEach) as a sync does: a regular file reached without a symlink
// in one call (openDirect), else resolved (filepath.EvalSymlinks) and
// opened confined to the sessions directory (openSessionFile). Errors are
// those of the full path. The caller closes the file.
func (x *Index) openForRead(path string) (*os.File, error) {
	lfi, _ := os.Lstat(path)
	if f, _, ok := x.openDirect(path, lfi); ok {
		return f, nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	f, _, err := x.openSessionFile(real)
	return f, err
}
