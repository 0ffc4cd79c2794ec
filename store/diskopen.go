package store

import (
	"os"
	"sync/atomic"
	"syscall"
)

// diskOpens counts openDiskFile's opens (tests).
var diskOpens atomic.Int64

// openDiskFile is os.OpenFile for a file of the index's own on disk (a
// regular file: item-text frames, raw frames, frame index), without the
// netpoller: os.OpenFile makes every descriptor non-blocking, tries to
// add it to epoll (which refuses a regular file) and makes it blocking
// again, four fcntl and an epoll_ctl per open. os.NewFile of a blocking
// descriptor asks one fcntl and leaves the poller out; reads and writes
// of a regular file block either way. The sync of an appended line opens
// two such files. Errors are *os.PathError, as os.OpenFile's.
func openDiskFile(path string, flag int, perm os.FileMode) (*os.File, error) {
	diskOpens.Add(1)
	for {
		fd, err := syscall.Open(path, flag|syscall.O_CLOEXEC, uint32(perm.Perm()))
		if err == nil {
			return os.NewFile(uintptr(fd), path), nil
		}
		if err != syscall.EINTR {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
	}
}

// lazyFile is a file of the index's own opened for writing
// (O_CREATE|O_WRONLY, 0600) at its first use: the sync of an appended
// line writes no whole frame (its text joins the tail, committed with the
// rows), so it needs neither frame file open.
type lazyFile struct {
	path string
	f    *os.File
}

// file opens the file if it is not open yet and returns it.
func (l *lazyFile) file() (*os.File, error) {
	if l.f == nil {
		f, err := openDiskFile(l.path, os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, err
		}
		l.f = f
	}
	return l.f, nil
}

// WriteAt implements io.WriterAt, opening the file first.
func (l *lazyFile) WriteAt(p []byte, off int64) (int, error) {
	f, err := l.file()
	if err != nil {
		return 0, err
	}
	return f.WriteAt(p, off)
}

// Close closes the file if it was opened.
func (l *lazyFile) Close() error {
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
