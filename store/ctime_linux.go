package store

import (
	"io/fs"
	"syscall"
)

// statusChangeTime is fi's ctime in ns (stat(2) st_ctim on Linux), 0 when
// fi did not come from stat.
func statusChangeTime(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Nano()
	}
	return 0
}
