package store

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"sync"
	"syscall"
	"time"

	"contextd/session"
)

// FileHeader is what a listing knows of a session file without indexing
// it (docs/index-and-search.md "Index only what is used"): the file's
// size, mtime and session header, read from its first lines.
type FileHeader struct {
	// Path is the resolved path (Resolve), or the discovered one when it
	// does not resolve (a file outside the sessions directory).
	Path    string
	Size    int64     // file size in bytes at the scan
	ModTime time.Time // file mtime at the scan
	// State is ok (Header is set), not_a_session, empty, outside,
	// missing or unreadable, as a sync would record it; Undecided files
	// (no header and no verdict in the first headerScanMax bytes) are
	// left to a sync.
	State     FileState
	StateMsg  string
	Header    *session.Header
	Undecided bool
}

// headerScanMax bounds the bytes a header scan reads of one file: a Pi
// header line is a few hundred bytes (docs/pi-facts.md "Session file").
const headerScanMax = 1 << 20

// headerCache keeps the last header scan of each discovered file, keyed by
// path and checked against the file's identity, size and mtime, so a
// second listing reads no file that did not change.
type headerCache struct {
	mu sync.Mutex
	m  map[string]cachedHeader
}

type cachedHeader struct {
	dev, ino uint64
	h        FileHeader
}

// ScanHeaders discovers every session file (Discover) except those skip
// (nil: none) reports true for, given the resolved path, and reads each
// one's header and file metadata without indexing it: no index row, item
// text or tree is created. Memory is one FileHeader per file; a file whose
// identity, size and mtime did not change since the last scan is not read
// again. Errors: a *SessionsDirError when the directory cannot be listed.
func (x *Index) ScanHeaders(skip func(path string) bool) ([]FileHeader, error) {
	paths, err := x.Discover()
	if err != nil {
		return nil, err
	}
	out := make([]FileHeader, 0, len(paths))
	seen := make(map[string]bool, len(paths))
	for _, p := range paths {
		rp, rerr := x.Resolve(p)
		if rerr == nil {
			p = rp
		}
		if seen[p] || (skip != nil && skip(p)) {
			continue
		}
		seen[p] = true
		out = append(out, x.header(p, rerr))
	}
	x.headers.mu.Lock()
	for p := range x.headers.m {
		if !seen[p] {
			delete(x.headers.m, p)
		}
	}
	x.headers.mu.Unlock()
	return out, nil
}

// HeaderOf is the header scan of one resolved path (see ScanHeaders).
func (x *Index) HeaderOf(path string) FileHeader {
	rp, err := x.Resolve(path)
	if err == nil {
		path = rp
	}
	return x.header(path, err)
}

// header scans one file; rerr is the error of resolving it.
func (x *Index) header(p string, rerr error) FileHeader {
	h := FileHeader{Path: p}
	switch {
	case errors.Is(rerr, ErrOutside):
		h.State, h.StateMsg = StateOutside, "the session file resolves outside the sessions directory"
		return h
	case errors.Is(rerr, fs.ErrNotExist):
		h.State, h.StateMsg = StateMissing, "the session file no longer exists"
		return h
	case errors.Is(rerr, ErrNotRegular):
		h.State, h.StateMsg = StateUnusable, "the session path is not a regular file (a FIFO, device or directory); contextd reads only regular files"
		return h
	case rerr != nil:
		h.State, h.StateMsg = StateUnusable, "the session file cannot be read"
		return h
	}
	f, fi, err := x.openSessionFile(p)
	if err != nil {
		h.State, h.StateMsg = StateUnusable, "the session file cannot be read"
		if errors.Is(err, fs.ErrNotExist) {
			h.State, h.StateMsg = StateMissing, "the session file no longer exists"
		}
		return h
	}
	defer f.Close()
	var dev, ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		dev, ino = uint64(st.Dev), uint64(st.Ino)
	}
	h.Size, h.ModTime = fi.Size(), fi.ModTime()
	x.headers.mu.Lock()
	c, ok := x.headers.m[p]
	x.headers.mu.Unlock()
	if ok && c.dev == dev && c.ino == ino && c.h.Size == h.Size && c.h.ModTime.Equal(h.ModTime) {
		return c.h
	}
	readHeader(f, &h)
	x.headers.mu.Lock()
	if x.headers.m == nil {
		x.headers.m = map[string]cachedHeader{}
	}
	x.headers.m[p] = cachedHeader{dev: dev, ino: ino, h: h}
	x.headers.mu.Unlock()
	return h
}

// readHeader parses the complete lines at the start of f with Pi's rules
// (session.Parser: blank and unparseable lines before the header are
// skipped, a first parsed line that is not a header makes the file not a
// session) until the header is found, the file is found not to be a
// session, or headerScanMax bytes were read (Undecided).
func readHeader(f io.ReaderAt, h *FileHeader) {
	var p session.Parser
	p.TreeOnly = true
	buf := make([]byte, 0, 4<<10)
	chunk := make([]byte, 4<<10)
	var off, lineStart int64
	complete := 0
	for off < headerScanMax {
		n, err := f.ReadAt(chunk, off)
		buf = append(buf, chunk[:n]...)
		off += int64(n)
		for {
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				break
			}
			complete++
			p.ParseLine(buf[:i], lineStart)
			lineStart += int64(i + 1)
			buf = buf[i+1:]
			switch {
			case p.Header != nil:
				hh := *p.Header
				h.State, h.Header = StateOK, &hh
				return
			case p.NotPi:
				h.State, h.StateMsg = StateNotPi, "not a Pi session: the first parsed line is not a session header with a string id"
				return
			}
		}
		if err != nil || n == 0 {
			if complete == 0 {
				h.State, h.StateMsg = StateEmpty, "the file holds no complete header line yet"
				return
			}
			h.State, h.StateMsg = StateNotPi, "not a Pi session: none of its complete lines is a session header; a Pi session file is UTF-8 JSON lines that start with a session header line"
			return
		}
	}
	h.Undecided = true
}

// headerPaths returns the paths of the last scan whose header id is
// sessionID.
func (x *Index) headerPaths(sessionID string) []string {
	x.headers.mu.Lock()
	defer x.headers.mu.Unlock()
	var out []string
	for p, c := range x.headers.m {
		if c.h.Header != nil && c.h.Header.ID == sessionID {
			out = append(out, p)
		}
	}
	return out
}

// indexedRows lists the paths of the sessions that have index rows.
func (x *Index) indexedRows() (map[string]bool, error) {
	x.mu.Lock()
	db := x.db
	x.mu.Unlock()
	if db == nil {
		return nil, errIndexClosed
	}
	rows, err := db.Reader.Query(`SELECT path FROM sessions`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		out[p] = true
	}
	return out, rows.Err()
}

// IndexedPaths returns the resolved paths of the sessions whose derived
// index exists (rows in index.db, written by a sync in this run or an
// earlier one, and not evicted since).
func (x *Index) IndexedPaths() (map[string]bool, error) {
	out, err := x.indexedRows()
	if err != nil {
		return nil, err
	}
	for _, s := range x.Sessions() {
		if s.Indexed() {
			out[s.path] = true
		}
	}
	return out, nil
}

// Indexed reports whether this session's derived index is loaded (a sync
// read it since it was created or evicted).
func (s *Session) Indexed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loaded
}
