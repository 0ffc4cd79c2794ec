package store

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// openDirect opens the session file at path (absolute, clean, under the
// sessions directory) in one openat2 with RESOLVE_NO_SYMLINKS (Linux 5.6+;
// openat2(2)): the kernel refuses the open (ELOOP) if any component of the
// path is a symlink, so when it succeeds, path is its own resolved path
// (filepath.EvalSymlinks would return it unchanged) and, lying under the
// sessions directory, the file openSessionFile would open through os.Root.
// lfi is the caller's lstat of path: only a regular file is opened (a FIFO
// is never opened, as in openSessionFile), with O_NONBLOCK in case one is
// swapped in after the lstat, and the fstat refuses anything else again.
//
// ok is false whenever the direct open does not apply or fails (a symlink
// on the way, a missing file, an old kernel, a path not in clean absolute
// form): the caller then takes the full path (EvalSymlinks, then
// openSessionFile), which says why. The full path cost a sync of an
// appended line about a dozen system calls (an lstat per path component,
// os.OpenRoot's open and fstat, the open, the fstat, two closes); this is
// openat2, fstat and the close.
func (x *Index) openDirect(path string, lfi fs.FileInfo) (*os.File, fs.FileInfo, bool) {
	if lfi == nil || !lfi.Mode().IsRegular() || !x.directOK(path) {
		return nil, nil, false
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, path, &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return nil, nil, false
	}
	sessionOpens.Add(1)
	directOpens.Add(1)
	f := os.NewFile(uintptr(fd), path)
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		f.Close()
		return nil, nil, false
	}
	return f, fi, true
}
