package store

import (
	"os"
	"syscall"
)

// openDiskFile is os.OpenFile for a file of the index's own on disk (a
// regular file: item-text frames, raw frames, frame index), without the
// netpoller: os.OpenFile makes every descriptor non-blocking, tries to
// add it to epoll (which refuses a regular file) and makes it blocking
// again, four fcntl and an epoll_ctl per open. os.NewFile of a blocking
// descriptor asks one fcntl and leaves the poller out; reads and writes
// of a regular file block either way. The sync of an appended line opens
// two such files. Errors are *os.PathError, as os.OpenFile's.
func openDiskFile(path string, flag int, perm os.FileMode) (*os.File, error) {
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
