//go:build !linux

package store

import (
	"io/fs"
	"os"
)

// openDirect is the one-call open of opendirect_linux.go, which needs
// openat2: elsewhere it never applies and callers take the full path.
func (x *Index) openDirect(path string, lfi fs.FileInfo) (*os.File, fs.FileInfo, bool) {
	return nil, nil, false
}
