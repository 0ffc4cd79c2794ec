package store

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"contextd/history"
	"contextd/migrations"
	"contextd/session"
)

// FileState says whether a session's file can be read.
type FileState string

// File states reported in session problems.
const (
	StateOK       FileState = "ok"
	StateMissing  FileState = "missing"       // the file no longer exists
	StateOutside  FileState = "outside"       // it resolves outside the sessions directory
	StateNotPi    FileState = "not_a_session" // its first parsed line is not a session header
	StateEmpty    FileState = "empty"         // no complete line yet
	StateUnusable FileState = "unreadable"    // an I/O error other than not-exist
)

// ErrOutside is returned for a path that does not resolve (after following
// symlinks) to a file under the sessions directory.
var ErrOutside = errors.New("path is outside the sessions directory")

// ItemMeta is the history item an entry renders to (history.Render), with the
// position of its text in the session's item-text file. One ItemMeta per
// entry stays in memory, so it holds no pointer (the garbage collector never
// scans the table) and is 32 bytes: the role and tool names are indexes into
// the session's name table (View.Name).
type ItemMeta struct {
	TextOff int64
	// Chars and TextLen are int32: one item's text comes from one JSONL
	// line, which is capped far below 2 GiB.
	Chars   int32
	TextLen int32
	// Role, ToolName and ToolNamespace are the history item's role and
	// tool names as indexes into the session's name table (View.Name).
	Role, ToolName, ToolNamespace NameID
	IsItem                        bool
	Summary                       bool
	// Edit is set on a context_edit entry (which is never an item itself):
	// session.EditOmit, or session.EditReplace with the rendered
	// replacement at TextOff (history.RenderReplacement; the tool names
	// are those of its first toolCall part, for an assistant target).
	// View.Refs applies it to the target's item.
	Edit session.EditKind
}

// itemJSON is an ItemMeta as stored in the entries.item column.
type itemJSON struct {
	Role          string           `json:"role"`
	ToolName      string           `json:"toolName,omitempty"`
	ToolNamespace string           `json:"toolNamespace,omitempty"`
	Summary       bool             `json:"summary,omitempty"`
	Edit          session.EditKind `json:"edit,omitempty"`
	Chars         int32            `json:"chars"`
}

// NameID is an index into a session's table of role and tool names.
type NameID uint32

// names is a session's table of role and tool names (ItemMeta.Role, ToolName,
// ToolNamespace): index 0 is "", the rest in first-seen order. Only the syncing
// goroutine adds names; readers see the slice published under Session.mu.
type names struct {
	list []string
	idx  map[string]NameID
}

// id returns the index of name, adding it to the pending tail when new
// (committed by publish).
func (n *names) id(name string, pending *names) NameID {
	if name == "" {
		return 0
	}
	if i, ok := n.idx[name]; ok {
		return i
	}
	if i, ok := pending.idx[name]; ok {
		return i
	}
	if pending.idx == nil {
		pending.idx = map[string]NameID{}
	}
	i := NameID(len(n.list) + len(pending.list))
	if len(n.list) == 0 {
		i++ // index 0 is ""
	}
	pending.list = append(pending.list, session.Intern(name))
	pending.idx[name] = i
	return i
}

// publish appends the pending names (caller holds Session.mu).
func (n *names) publish(pending *names) {
	if len(pending.list) == 0 {
		return
	}
	if n.idx == nil {
		n.idx = map[string]NameID{}
	}
	if len(n.list) == 0 {
		n.list = append(n.list, "")
	}
	for _, name := range pending.list {
		n.idx[name] = NameID(len(n.list))
		n.list = append(n.list, name)
	}
}

// nameOr is name for a committed or pending index.
func (n *names) nameOr(i NameID, pending *names) string {
	if int(i) < len(n.list) {
		return n.list[i]
	}
	base := len(n.list)
	if base == 0 {
		base = 1
	}
	if j := int(i) - base; j >= 0 && j < len(pending.list) {
		return pending.list[j]
	}
	return ""
}

func (n *names) name(i NameID) string {
	if int(i) < len(n.list) {
		return n.list[i]
	}
	return ""
}

// Options configure an Index.
type Options struct {
	// MaxLineBytes caps one JSONL line (default session.DefaultMaxLineBytes).
	MaxLineBytes int
	// BatchBytes is how many JSONL bytes one ingest transaction covers
	// (default 16 MiB). Each batch commits the entries and the resume offset
	// together, so a crash loses at most the batch in progress.
	BatchBytes int64
	Logger     *slog.Logger
	Metrics    *Metrics
	// PathMap rewrites absolute session file paths before they are
	// resolved (Resolve, Lexical): a host path registered by a Pi outside
	// a container becomes the path the container reads (ParsePathMap).
	PathMap []PathMapping
}

// Index is the derived session index: an SQLite database (index.db) plus one
// item-text file per session under texts/, both under one directory, and an
// in-memory tree per session loaded on first use. Every part of it can be
// deleted and rebuilt from the JSONL files (Rebuild).
type Index struct {
	root    string // sessions directory, symlinks resolved
	dir     string // index directory
	opts    Options
	log     *slog.Logger
	metrics *Metrics

	mu     sync.Mutex // guards db, byPath
	db     *DB
	byPath map[string]*Session
}

// OpenIndex opens the index in dir for the sessions directory root. A
// database that is corrupt or has a newer schema is deleted and rebuilt
// (logged at warn level).
func OpenIndex(ctx context.Context, root, dir string, opts Options) (*Index, error) {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = session.DefaultMaxLineBytes
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = 16 << 20
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(nil)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(absRoot); err == nil {
		absRoot = r
	}
	x := &Index{root: absRoot, dir: dir, opts: opts, log: opts.Logger, metrics: opts.Metrics, byPath: map[string]*Session{}}
	if err := x.open(ctx); err != nil {
		return nil, err
	}
	return x, nil
}

// Root is the resolved sessions directory.
func (x *Index) Root() string { return x.root }

func (x *Index) dbPath() string  { return filepath.Join(x.dir, "index.db") }
func (x *Index) textDir() string { return filepath.Join(x.dir, "texts") }
func (x *Index) removeFiles() error {
	var errs []error
	for _, p := range []string{x.dbPath(), x.dbPath() + "-wal", x.dbPath() + "-shm"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	errs = append(errs, os.RemoveAll(x.textDir()))
	return errors.Join(errs...)
}

func (x *Index) open(ctx context.Context) error {
	db, err := OpenDB(ctx, x.dbPath(), migrations.Index, "index")
	if errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNewerSchema) {
		x.log.Warn("index database unusable, deleting and rebuilding it from the session files", "path", x.dbPath(), "error", err)
		if rerr := x.removeFiles(); rerr != nil {
			return rerr
		}
		db, err = OpenDB(ctx, x.dbPath(), migrations.Index, "index")
	}
	if err != nil {
		return err
	}
	if err := os.MkdirAll(x.textDir(), 0o700); err != nil {
		db.Close()
		return err
	}
	x.db = db
	return nil
}

// Close closes the database.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.db == nil {
		return nil
	}
	err := x.db.Close()
	x.db = nil
	return err
}

// Resolve turns a path (absolute, or relative to the sessions directory;
// absolute paths are first rewritten by Options.PathMap)
// into the resolved absolute path (every symlink and alias such as
// /proc/self/root followed) of a regular file under the sessions
// directory: one file has one path, so it is one session (issue 12 item 7).
// Errors: ErrOutside, ErrNotRegular, or the os error (fs.ErrNotExist for a
// missing file).
func (x *Index) Resolve(path string) (string, error) {
	if path == "" {
		return "", fmt.Errorf("%w: empty path", ErrOutside)
	}
	path, _ = x.Lexical(path)
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if !x.under(path) {
			return "", ErrOutside
		}
		return "", err
	}
	if !x.under(real) {
		return "", ErrOutside
	}
	fi, err := os.Stat(real)
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", ErrNotRegular
	}
	return real, nil
}

// ErrNotRegular is returned by Resolve for a path that is not a regular
// file (a directory, a device, a FIFO).
var ErrNotRegular = errors.New("path is not a regular file")

// Forget drops a session object and its rows (used when a path was looked
// at for a request that was refused, so it does not linger in listings).
// A later Discover finds the file again if it is a session file.
func (x *Index) Forget(ctx context.Context, path string) error {
	x.mu.Lock()
	s := x.byPath[path]
	delete(x.byPath, path)
	db := x.db
	x.mu.Unlock()
	if s == nil || db == nil {
		return nil
	}
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.fileID == 0 {
		return nil
	}
	if _, err := db.Writer.ExecContext(ctx, `DELETE FROM entries WHERE file_id=?; DELETE FROM tool_calls WHERE file_id=?; DELETE FROM sessions WHERE file_id=?`, s.fileID, s.fileID, s.fileID); err != nil {
		return err
	}
	if err := os.Remove(s.textPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Lexical returns path mapped (Options.PathMap), made absolute (relative
// paths are under the sessions directory) and cleaned, and whether it lies under the sessions
// directory without following symlinks. It touches no file.
func (x *Index) Lexical(path string) (string, bool) {
	if path == "" {
		return "", false
	}
	path = mapPath(x.opts.PathMap, path)
	if !filepath.IsAbs(path) {
		path = filepath.Join(x.root, path)
	}
	path = filepath.Clean(path)
	return path, x.under(path)
}

func (x *Index) under(p string) bool {
	rel, err := filepath.Rel(x.root, p)
	return err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

// Discover lists the *.jsonl files in the sessions directory and in its
// direct subdirectories (Pi's per-cwd "--<cwd>--" folders and flat custom
// session dirs, reference pi-session-format.md §1), sorted; a directory
// named *.jsonl there is listed too (its sync reports it unreadable, "not
// a regular file", and nothing under it is read). A missing
// sessions directory lists nothing; one that exists but cannot be listed
// is a *SessionsDirError. Unreadable subdirectories are skipped.
func (x *Index) Discover() ([]string, error) {
	var out []string
	err := filepath.WalkDir(x.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == x.root && errors.Is(err, fs.ErrNotExist) {
				return fs.SkipAll // no sessions yet: Pi creates the directory on its first write
			}
			if p == x.root {
				return &SessionsDirError{Path: x.root, Err: err}
			}
			return nil
		}
		depth := strings.Count(strings.TrimPrefix(p, x.root), string(filepath.Separator))
		if d.IsDir() && p != x.root && strings.HasSuffix(d.Name(), ".jsonl") {
			// A directory named like a session file: listed, so its sync
			// reports it as not a regular file (unreadable), and not
			// descended into.
			out = append(out, p)
			return filepath.SkipDir
		}
		if d.IsDir() {
			if depth > 1 {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(d.Name(), ".jsonl") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// SessionsDirError is Discover's error when the sessions directory itself
// exists but cannot be listed (typically permission denied: the directory
// lacks read or execute permission for contextd's user). Err is the
// underlying error.
type SessionsDirError struct {
	Path string
	Err  error
}

func (e *SessionsDirError) Error() string {
	return "sessions directory " + e.Path + " cannot be listed: " + e.Err.Error()
}

func (e *SessionsDirError) Unwrap() error { return e.Err }

// Discoverable reports whether Discover would list path: a *.jsonl file in
// the sessions directory or one of its direct subdirectories.
func (x *Index) Discoverable(path string) bool {
	rel, err := filepath.Rel(x.root, path)
	if err != nil || !x.under(path) || !strings.HasSuffix(path, ".jsonl") {
		return false
	}
	return strings.Count(rel, string(filepath.Separator)) <= 1
}

// Session returns the session object for a resolved path (see Resolve),
// creating it on first use. It does not read the file.
func (x *Index) Session(path string) *Session {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := x.byPath[path]
	if s == nil {
		s = &Session{x: x, path: path}
		x.byPath[path] = s
	}
	return s
}

// Sessions returns every session object known so far, by path.
func (x *Index) Sessions() []*Session {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make([]*Session, 0, len(x.byPath))
	for _, s := range x.byPath {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// SyncAll discovers every session file and brings each one's index up to
// date. Per-file problems are recorded on the session, not returned.
func (x *Index) SyncAll(ctx context.Context) ([]*Session, error) {
	return x.SyncAllExcept(ctx, nil)
}

// SyncAllExcept is SyncAll without touching the files for which skip (nil:
// none) reports true, given the resolved path: they are neither opened nor
// read (Remote sessions, issue 12 item 10).
func (x *Index) SyncAllExcept(ctx context.Context, skip func(path string) bool) ([]*Session, error) {
	paths, err := x.Discover()
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(paths))
	for _, p := range paths {
		if rp, err := x.Resolve(p); err == nil || errors.Is(err, ErrOutside) {
			if err == nil {
				p = rp
			}
		}
		seen[p] = true
		if skip != nil && skip(p) {
			continue
		}
		s := x.Session(p)
		if err := s.Sync(ctx); err != nil {
			return nil, err
		}
	}
	// Sessions known from before whose file is no longer discovered
	// (deleted, or registered elsewhere under the root): their sync records
	// the state (missing, outside) instead of leaving the last one.
	for _, s := range x.Sessions() {
		if !seen[s.path] && (skip == nil || !skip(s.path)) {
			if err := s.Sync(ctx); err != nil {
				return nil, err
			}
		}
	}
	return x.Sessions(), nil
}

// FindByID returns the session whose header id is sessionID, syncing it.
// When several files carry the same id (copies of one session), the one
// with the smallest path in byte order wins (an existing file before one
// deleted since it was indexed), so the answer does not
// depend on the order files were indexed in (nor change after a rebuild);
// WithID lists them all. It reports false when no file has that id.
func (x *Index) FindByID(ctx context.Context, sessionID string) (*Session, bool, error) {
	found, err := x.WithID(ctx, sessionID)
	if err != nil {
		return nil, false, err
	}
	if len(found) == 0 {
		// Unknown: look at new files' headers.
		if _, err := x.SyncAll(ctx); err != nil {
			return nil, false, err
		}
		if found, err = x.WithID(ctx, sessionID); err != nil {
			return nil, false, err
		}
	}
	if len(found) == 0 {
		return nil, false, nil
	}
	return found[0], true, nil
}

// WithID returns the sessions already known to the index (loaded, or
// indexed in an earlier run) whose file's header id is sessionID, each
// synced: files that exist first, then those deleted or moved outside
// since they were indexed, each group by path. It does not look at files
// never indexed.
func (x *Index) WithID(ctx context.Context, sessionID string) ([]*Session, error) {
	paths := map[string]bool{}
	for _, s := range x.Sessions() {
		if s.SessionID() == sessionID {
			paths[s.path] = true
		}
	}
	x.mu.Lock()
	db := x.db
	x.mu.Unlock()
	rows, err := db.Reader.QueryContext(ctx, "SELECT path FROM sessions WHERE session_id = ?", sessionID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return nil, err
		}
		paths[p] = true
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []*Session
	for p := range paths {
		s := x.Session(p)
		if err := s.Sync(ctx); err != nil {
			return nil, err
		}
		// The file may have been emptied or rewritten as another session
		// since it was last read: check the id again.
		if s.SessionID() == sessionID {
			out = append(out, s)
		}
	}
	gone := make(map[*Session]bool, len(out))
	for _, s := range out {
		_ = s.Read(func(v *View) error {
			gone[s] = v.State == StateMissing || v.State == StateOutside
			return nil
		})
	}
	sort.Slice(out, func(i, j int) bool {
		if gone[out[i]] != gone[out[j]] {
			return !gone[out[i]]
		}
		return out[i].path < out[j].path
	})
	return out, nil
}

// Rebuild drops the whole derived index (database and item texts) and
// builds it again from the session files. contextd's own state lives in
// another database and is not touched.
func (x *Index) Rebuild(ctx context.Context) error {
	sessions := x.Sessions()
	for _, s := range sessions {
		s.syncMu.Lock()
		s.mu.Lock()
	}
	err := func() error {
		x.mu.Lock()
		defer x.mu.Unlock()
		if x.db != nil {
			x.db.Close()
			x.db = nil
		}
		if err := x.removeFiles(); err != nil {
			return err
		}
		for _, s := range sessions {
			s.reset()
		}
		return x.open(ctx)
	}()
	for _, s := range sessions {
		s.mu.Unlock()
		s.syncMu.Unlock()
	}
	if err != nil {
		return err
	}
	_, err = x.SyncAll(ctx)
	return err
}

// Session is one session file's index: its in-memory tree and item table,
// kept in step with the SQLite rows and the item-text file. Only Sync
// mutates it (under syncMu); readers use Read, which holds mu for reading,
// so a reader never sees half of a sync.
type Session struct {
	x    *Index
	path string

	syncMu sync.Mutex // one sync at a time; the syncing goroutine owns the fields below for writing

	mu        sync.RWMutex // guards every field below against readers
	loaded    bool
	fileID    int64
	parser    session.Parser
	tree      *session.Tree
	items     []ItemMeta
	names     names
	calls     map[string]history.Call
	next      int64
	textSize  int64
	firstLine [32]byte
	dev, ino  uint64
	mtime     time.Time    // file mtime at the last sync (memory only)
	check     contentCheck // change detection of the indexed bytes (verify.go)
	stats     session.Stats
	state     FileState
	stateMsg  string
	fileSize  int64
	syncedAt  time.Time

	// The unterminated last line (memory only): it starts at flightFrom
	// (== next) and holds no "\n" before flightScanned, so the next sync
	// looks for its end from flightScanned, not from its start.
	// flightTooLong is its length so far once it is over MaxLineBytes
	// (reported; 0 otherwise).
	flightFrom, flightScanned, flightTooLong int64
}

func (s *Session) reset() {
	s.loaded = false
	s.fileID = 0
	s.parser = session.Parser{}
	s.tree = nil
	s.items = nil
	s.names = names{}
	s.calls = nil
	s.next = 0
	s.textSize = 0
	s.firstLine = [32]byte{}
	s.dev, s.ino = 0, 0
	s.stats = session.Stats{}
	s.flightFrom, s.flightScanned, s.flightTooLong = 0, 0, 0
}

// Path is the session file's path.
func (s *Session) Path() string { return s.path }

// SessionID is the header id, "" before the header is indexed.
func (s *Session) SessionID() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.tree == nil {
		return ""
	}
	return s.tree.Header.ID
}

func (s *Session) textPath() string {
	return filepath.Join(s.x.textDir(), fmt.Sprintf("%d.txt", s.fileID))
}

// Sync brings the index of this session up to date with its file: a stat,
// then only the new complete lines. A file that shrank, whose first line
// changed or that was replaced (new inode) is re-indexed whole. Problems with
// the file itself (missing, outside the sessions directory, not a Pi
// session) are recorded in the session state, not returned; the error is for
// index failures.
func (s *Session) Sync(ctx context.Context) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	start := time.Now()
	defer func() { s.x.metrics.SyncDuration.Observe(time.Since(start).Seconds()) }()

	s.x.mu.Lock()
	db := s.x.db
	s.x.mu.Unlock()
	if db == nil {
		return errors.New("index is closed")
	}
	if !s.loaded {
		if err := s.load(ctx, db); err != nil {
			return err
		}
	}
	real, err := filepath.EvalSymlinks(s.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.setMissing()
			return nil
		}
		s.setState(StateUnusable, "the session file cannot be read")
		return nil
	}
	if !s.x.under(real) {
		s.setState(StateOutside, "the session file resolves outside the sessions directory")
		return nil
	}
	f, fi, err := s.x.openSessionFile(real)
	switch {
	case err == nil:
	case errors.Is(err, fs.ErrNotExist):
		s.setMissing()
		return nil
	case errors.Is(err, ErrOutside):
		s.setState(StateOutside, "the session file resolves outside the sessions directory")
		return nil
	case errors.Is(err, ErrNotRegular):
		s.setState(StateUnusable, "the session path is not a regular file (a FIFO, device or directory); contextd reads only regular files")
		return nil
	default:
		s.setState(StateUnusable, "the session file cannot be read")
		return nil
	}
	defer f.Close()
	size := fi.Size()
	var dev, ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		dev, ino = uint64(st.Dev), uint64(st.Ino)
	}
	cause := ""
	switch {
	case size < s.next:
		cause = "shrunk"
	case s.next > 0 && (dev != s.dev || ino != s.ino):
		// Same size or larger but a different file: check the first line.
		if fl, ok := firstLineHash(f); !ok || fl != s.firstLine {
			cause = "replaced"
		}
	case s.next > 0 && (size > s.next || !fi.ModTime().Equal(s.mtime)):
		// New bytes or a new mtime: make sure the file still starts with
		// the same line (Pi rewrites a migrated file from line 1). An
		// unchanged size, mtime and inode needs no read at all.
		if fl, ok := firstLineHash(f); !ok || fl != s.firstLine {
			cause = "rewritten"
		}
	}
	if cause == "" && s.next > 0 && size >= s.next {
		changed, err := s.changedInPlace(ctx, db, f, fi, size > s.next)
		if err != nil {
			return err
		}
		if changed {
			cause = "changed_in_place"
		}
	}
	if cause != "" {
		s.x.metrics.Reindexes.WithLabelValues(cause).Inc()
		s.x.log.Info("session file changed in place, re-indexing it whole", "path", s.path, "cause", cause)
		if err := s.clear(ctx, db); err != nil {
			return err
		}
	}
	s.dev, s.ino = dev, ino
	s.mtime = fi.ModTime()
	if size > s.next {
		s.check.mtime, s.check.ctime = times(fi)
		if err := s.ingest(ctx, db, f, size); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.fileSize = size
	s.syncedAt = time.Now()
	switch {
	case s.parser.NotPi:
		s.state, s.stateMsg = StateNotPi, "not a Pi session: the first parsed line is not a session header with a string id"
	case s.tree == nil && len(s.stats.Skipped) > 0:
		n := 0
		for _, c := range s.stats.Skipped {
			n += c
		}
		s.state, s.stateMsg = StateEmpty, fmt.Sprintf("no session header found: %d lines were skipped (see the line problems); a Pi session file starts with a session header line", n)
	case s.tree == nil:
		s.state, s.stateMsg = StateEmpty, "the file holds no complete header line yet"
	default:
		s.state, s.stateMsg = StateOK, ""
	}
	s.mu.Unlock()
	return nil
}

// setMissing records a missing file: one never indexed is not written yet
// (a session registered before Pi wrote its file: Pi 0.85 writes it at the
// first assistant message, 1.6 at the first user message); one indexed
// before was deleted.
func (s *Session) setMissing() {
	s.mu.Lock()
	never := s.tree == nil && s.next == 0
	s.mu.Unlock()
	if never {
		s.setState(StateMissing, "the session file does not exist yet: Pi writes it at the session's first message")
		return
	}
	s.setState(StateMissing, "the session file no longer exists")
}

func (s *Session) setState(st FileState, msg string) {
	s.mu.Lock()
	s.state, s.stateMsg = st, msg
	s.mu.Unlock()
}

// firstLineHash hashes the first line (at most 1 MiB of it). It runs on
// every sync that sees new bytes; a header line is a few hundred bytes, so
// it reads 4 KiB at a time.
func firstLineHash(f io.ReaderAt) ([32]byte, bool) {
	buf := make([]byte, 4<<10)
	var line []byte
	for off := int64(0); off < 1<<20; off += int64(len(buf)) {
		n, err := f.ReadAt(buf, off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			line = append(line, buf[:i]...)
			return sha256.Sum256(line), true
		}
		line = append(line, buf[:n]...)
		if err != nil {
			return [32]byte{}, false
		}
	}
	return sha256.Sum256(line), true
}

// clear forgets everything indexed for this session (rows, texts, tree).
func (s *Session) clear(ctx context.Context, db *DB) error {
	if s.fileID != 0 {
		if err := forgetRows(ctx, db, s.fileID); err != nil {
			return err
		}
		if err := os.Truncate(s.textPath(), 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	s.mu.Lock()
	s.fresh(s.fileID)
	s.mu.Unlock()
	return nil
}

// forgetRows deletes a session's entries and tool calls and resets its
// resume state, in one transaction.
func forgetRows(ctx context.Context, db *DB, fileID int64) error {
	_, err := db.Writer.ExecContext(ctx, `UPDATE sessions SET session_id='', header='{}', not_pi=0, bytes_indexed=0, first_line=x'', next_line=1, next_seq=0, last_v1_id='', text_bytes=0, stats='{}', indexed_crc=0, tail_crc=0, mtime_ns=0, ctime_ns=0 WHERE file_id=?;
DELETE FROM entries WHERE file_id=?; DELETE FROM tool_calls WHERE file_id=?`, fileID, fileID, fileID)
	return err
}

// fresh resets the in-memory state to an empty, loaded session (caller holds mu).
func (s *Session) fresh(fileID int64) {
	s.reset()
	s.fileID = fileID
	s.loaded = true
	s.calls = map[string]history.Call{}
	s.check = contentCheck{known: true} // nothing indexed: CRC-32C 0
}

// load reads this session's rows from SQLite into memory (or creates the
// sessions row) and reconciles the item-text file with the committed size.
func (s *Session) load(ctx context.Context, db *DB) error {
	var (
		fileID                          int64
		header, stats, lastV1           string
		notPi                           bool
		bytesIdx, nextLine, nextSeq, tb int64
		first                           []byte
		dev, ino                        int64
	)
	err := db.Writer.QueryRowContext(ctx, `SELECT file_id, header, not_pi, bytes_indexed, first_line, dev, ino, next_line, next_seq, last_v1_id, text_bytes, stats FROM sessions WHERE path=?`, s.path).
		Scan(&fileID, &header, &notPi, &bytesIdx, &first, &dev, &ino, &nextLine, &nextSeq, &lastV1, &tb, &stats)
	if errors.Is(err, sql.ErrNoRows) {
		res, err := db.Writer.ExecContext(ctx, `INSERT INTO sessions(path) VALUES (?)`, s.path)
		if err != nil {
			return err
		}
		fileID, _ = res.LastInsertId()
		s.mu.Lock()
		s.fresh(fileID)
		s.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	var tree *session.Tree
	var items []ItemMeta
	var nm names
	calls := map[string]history.Call{}
	var h session.Header
	if err := json.Unmarshal([]byte(header), &h); err == nil && h.ID != "" {
		tree = session.NewTree(h)
	}
	if tree != nil {
		if items, err = loadEntries(ctx, db, fileID, tree, &nm); err != nil {
			return err
		}
		if err := loadCalls(ctx, db, fileID, calls); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fresh(fileID)
	s.tree, s.items, s.calls, s.names = tree, items, calls, nm
	s.parser = session.Parser{Header: nil, NotPi: notPi, NextLine: int(nextLine), NextSeq: int(nextSeq), LastV1ID: lastV1}
	if tree != nil {
		hh := tree.Header
		s.parser.Header = &hh
	}
	s.next, s.textSize = bytesIdx, tb
	copy(s.firstLine[:], first)
	s.dev, s.ino = uint64(dev), uint64(ino)
	_ = json.Unmarshal([]byte(stats), &s.stats)
	if err := s.loadCheck(ctx, db); err != nil {
		return err
	}
	// The text file may hold bytes of a batch that never committed; drop
	// them. If it lost committed bytes, the index of this file is unusable.
	fi, err := os.Stat(s.textPath())
	switch {
	case err == nil && fi.Size() >= tb:
		if fi.Size() > tb {
			return os.Truncate(s.textPath(), tb)
		}
		return nil
	case (err == nil || errors.Is(err, fs.ErrNotExist)) && tb == 0:
		return nil
	default:
		s.x.log.Warn("item text file lost committed data, re-indexing the session", "path", s.path)
		s.x.metrics.Reindexes.WithLabelValues("text_lost").Inc()
		if err := forgetRows(ctx, db, fileID); err != nil {
			return err
		}
		s.fresh(fileID)
		return os.WriteFile(s.textPath(), nil, 0o600)
	}
}

// entryMeta holds the Entry fields that have no column of their own.
type entryMeta struct {
	Role             string                `json:"role,omitempty"`
	StopReason       string                `json:"stopReason,omitempty"`
	FromID           string                `json:"fromId,omitempty"`
	FromHook         bool                  `json:"fromHook,omitempty"`
	EmptySummary     bool                  `json:"emptySummary,omitempty"`
	FirstKeptEntryID string                `json:"firstKeptEntryId,omitempty"`
	TargetID         string                `json:"targetId,omitempty"`
	Label            string                `json:"label,omitempty"`
	Name             string                `json:"name,omitempty"`
	Window           *session.WindowMarker `json:"window,omitempty"`
	Edit             session.EditKind      `json:"edit,omitempty"`
	SystemMessage    bool                  `json:"systemMessage,omitempty"`
}

// loadEntries adds the stored entries of fileID to tree, in Seq order,
// and returns their item metadata. An error of the row iteration
// (rows.Err: a cancelled context, an I/O error) fails the load, so that a
// session is never left half loaded.
func loadEntries(ctx context.Context, db *DB, fileID int64, tree *session.Tree, nm *names) ([]ItemMeta, error) {
	rows, err := db.Writer.QueryContext(ctx, `SELECT seq, line, off, len, id, parent_id, type, ts, custom_type, meta, item, text_off, text_len FROM entries WHERE file_id=? ORDER BY seq`, fileID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var items []ItemMeta
	for rows.Next() {
		var e session.Entry
		var meta string
		var item sql.NullString
		var toff, tlen int64
		if err := rows.Scan(&e.Seq, &e.Line, &e.Offset, &e.Length, &e.ID, &e.ParentID, &e.Type, &e.Timestamp, &e.CustomType, &meta, &item, &toff, &tlen); err != nil {
			return nil, err
		}
		if err := decodeMeta(meta, &e); err != nil {
			return nil, err
		}
		e.Type, e.CustomType, e.Role, e.StopReason = session.Intern(e.Type), session.Intern(e.CustomType), session.Intern(e.Role), session.Intern(e.StopReason)
		var im ItemMeta
		if item.Valid {
			var ij itemJSON
			if err := json.Unmarshal([]byte(item.String), &ij); err != nil {
				return nil, err
			}
			var pend names
			im = ItemMeta{IsItem: ij.Edit == session.EditNone, TextOff: toff, TextLen: int32(tlen), Chars: ij.Chars, Summary: ij.Summary, Edit: ij.Edit,
				Role: nm.id(ij.Role, &pend), ToolName: nm.id(ij.ToolName, &pend), ToolNamespace: nm.id(ij.ToolNamespace, &pend)}
			nm.publish(&pend)
		}
		tree.Add(memEntry(e))
		items = append(items, im)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return items, rows.Close()
}

// loadCalls fills calls with the stored tool calls of fileID; like
// loadEntries it fails on an error of the row iteration.
func loadCalls(ctx context.Context, db *DB, fileID int64, calls map[string]history.Call) error {
	rows, err := db.Writer.QueryContext(ctx, `SELECT call_id, name, namespace, action FROM tool_calls WHERE file_id=?`, fileID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var c history.Call
		if err := rows.Scan(&id, &c.Name, &c.Namespace, &c.Action); err != nil {
			return err
		}
		calls[id] = c
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

// encodeMeta is json.Marshal of e's entryMeta, written by hand (it runs
// once per indexed entry): the same bytes, without reflection.
func encodeMeta(buf []byte, e *session.Entry) []byte {
	buf = append(buf, '{')
	n := len(buf)
	str := func(key, v string) {
		if v == "" {
			return
		}
		if len(buf) > n {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = append(buf, key...)
		buf = append(buf, '"', ':')
		buf = appendJSONString(buf, v)
	}
	flag := func(key string, v bool) {
		if !v {
			return
		}
		if len(buf) > n {
			buf = append(buf, ',')
		}
		buf = append(buf, '"')
		buf = append(buf, key...)
		buf = append(buf, `":true`...)
	}
	str("role", e.Role)
	str("stopReason", e.StopReason)
	str("fromId", e.FromID())
	flag("fromHook", e.FromHook)
	flag("emptySummary", e.EmptySummary)
	str("firstKeptEntryId", e.FirstKeptEntryID())
	str("targetId", e.TargetID())
	str("label", e.Label())
	str("name", e.Name())
	if e.Window != nil {
		if len(buf) > n {
			buf = append(buf, ',')
		}
		w, _ := json.Marshal(e.Window)
		buf = append(append(buf, `"window":`...), w...)
	}
	if e.Edit != session.EditNone {
		if len(buf) > n {
			buf = append(buf, ',')
		}
		buf = strconv.AppendUint(append(buf, `"edit":`...), uint64(e.Edit), 10)
	}
	flag("systemMessage", e.SystemMessage)
	return append(buf, '}')
}

// appendJSONString appends v as json.Marshal encodes a string (HTML
// characters escaped too).
func appendJSONString(buf []byte, v string) []byte {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(v)
			return append(buf, b...)
		}
	}
	buf = append(buf, '"')
	buf = append(buf, v...)
	return append(buf, '"')
}

func decodeMeta(s string, e *session.Entry) error {
	var m entryMeta
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return err
	}
	e.Role, e.StopReason, e.FromHook, e.EmptySummary, e.Window = m.Role, m.StopReason, m.FromHook, m.EmptySummary, m.Window
	e.SetRefs(session.EntryRefs{FromID: m.FromID, FirstKeptEntryID: m.FirstKeptEntryID, TargetID: m.TargetID, Label: m.Label, Name: m.Name})
	e.Edit, e.SystemMessage = m.Edit, m.SystemMessage
	return nil
}

// memEntry is e as the in-memory tree keeps it: the timestamp only for a
// branch_summary (the Tree archives' hidden summaries name it); every
// entry's timestamp stays in the entries.ts column. A quarter-million
// timestamps are 8 MiB of heap for a 1 GiB session.
func memEntry(e session.Entry) session.Entry {
	if e.Type != session.TypeBranchSummary {
		e.Timestamp = ""
	}
	return e
}

// textWriter appends item texts and counts the bytes written.
type textWriter struct {
	w *bufio.Writer
	n int64
}

func (t *textWriter) write(s string) error {
	n, err := t.w.WriteString(s)
	t.n += int64(n)
	return err
}

// pendingEntry is an entry parsed in the current batch.
type pendingEntry struct {
	e    session.Entry
	item ItemMeta
}

// ingest indexes the bytes [s.next, size) in batches of about BatchBytes.
// Each batch: parse and render, append item texts to the text file, then one
// transaction with the entries and the new resume state, then publish to
// readers.
func (s *Session) ingest(ctx context.Context, db *DB, f *os.File, size int64) error {
	tf, err := os.OpenFile(s.textPath(), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	defer tf.Close()
	for s.next < size {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.flightScanned > size {
			s.flightScanned = s.next // cut and written again: look again
		}
		if s.flightFrom == s.next && s.flightScanned > s.next {
			// An unterminated line seen before: look for its end in the
			// new bytes only (issue 12 item 5).
			nl, found, err := s.lineEnd(ctx, f, size)
			if err != nil || !found {
				return err
			}
			// It ends: one batch through its end indexes it (a line over
			// the limit is skipped as too_long without being held).
			s.flightFrom, s.flightScanned = 0, 0
			if _, err := s.batch(ctx, db, f, tf, nl+1, size); err != nil {
				return err
			}
			s.setFlightTooLong(0)
			continue
		}
		end := s.next + s.x.opts.BatchBytes
		if end > size {
			end = size
		}
		progressed, err := s.batch(ctx, db, f, tf, end, size)
		if err != nil {
			return err
		}
		if !progressed {
			// No "\n" in [next, end): the line at next is longer than the
			// batch, or in flight. Remember how far it was scanned.
			s.flightFrom, s.flightScanned = s.next, end
			if end == size {
				s.noteFlight()
				return nil
			}
		}
	}
	return nil
}

// lineEnd looks for the "\n" ending the line at s.next from s.flightScanned
// to size, 64 MiB at a time (ctx is checked between steps, so a request
// deadline cuts a huge scan and the next sync goes on from where it
// stopped). found is false when the line is still in flight.
func (s *Session) lineEnd(ctx context.Context, f *os.File, size int64) (nl int64, found bool, err error) {
	const step = 64 << 20
	for s.flightScanned < size {
		if err := ctx.Err(); err != nil {
			s.noteFlight()
			return 0, false, err
		}
		to := min(s.flightScanned+step, size)
		nl, found, err := session.FindNewline(f, s.flightScanned, to)
		if err != nil || found {
			return nl, found, err
		}
		s.flightScanned = to
	}
	s.noteFlight()
	return 0, false, nil
}

// noteFlight publishes the length of the in-flight line when it is over the
// line limit (it will be skipped as too_long when it ends).
func (s *Session) noteFlight() {
	n := s.flightScanned - s.flightFrom
	if n <= int64(s.x.opts.MaxLineBytes) {
		n = 0
	}
	s.setFlightTooLong(n)
}

func (s *Session) setFlightTooLong(n int64) {
	s.mu.Lock()
	s.flightTooLong = n
	s.mu.Unlock()
}

func (s *Session) batch(ctx context.Context, db *DB, f *os.File, tf *os.File, end, size int64) (bool, error) {
	p := s.parser // copy: committed only with the batch
	var hdr *session.Header
	if p.Header != nil {
		h := *p.Header
		p.Header = &h
	}
	// Size the batch's entries once, from the entries per byte so far
	// (growing by append allocated a fifth of the ingest's garbage).
	var pend []pendingEntry
	if s.tree != nil && s.next > 0 {
		pend = make([]pendingEntry, 0, int(float64(end-s.next)*float64(s.tree.Len())/float64(s.next)*1.1)+16)
	}
	// Item texts stream into the text file at its committed end; the rows
	// that point at them commit afterwards (a crash leaves only bytes that
	// load truncates away).
	texts := &textWriter{w: bufio.NewWriterSize(io.NewOffsetWriter(tf, s.textSize), int(min(1<<20, max(end-s.next, 4096))))}
	newCalls := map[string]history.Call{}
	var calls []history.CallRecord
	var newNames names
	stats := session.Stats{}
	textOff := s.textSize
	var first [32]byte
	haveFirst := false
	p.LookupSeq = func(seq int) (string, bool) {
		if s.tree != nil && seq < s.tree.Len() {
			return s.tree.IDAt(seq)
		}
		base := 0
		if s.tree != nil {
			base = s.tree.Len()
		}
		if i := seq - base; i >= 0 && i < len(pend) {
			return pend[i].e.ID, true
		}
		return "", false
	}
	lookup := func(id string) (history.Call, bool) {
		if c, ok := newCalls[id]; ok {
			return c, true
		}
		c, ok := s.calls[id]
		return c, ok
	}
	// handle finishes one line in file order: parser state, rendering, item
	// text and tool calls.
	handle := func(line []byte, off int64, tooLong bool) error {
		stats.Lines++
		lineNo := p.NextLine
		if lineNo == 0 {
			lineNo = 1
		}
		if tooLong {
			p.NextLine = lineNo + 1
			stats.Note(lineNo, off, session.SkipTooLong)
			return nil
		}
		wasHeader := p.Header == nil
		e, d, skip := p.ParseLine(line, off)
		if skip != session.SkipNone {
			stats.Note(lineNo, off, skip)
			return nil
		}
		if e == nil {
			if wasHeader {
				hdr = p.Header
			}
			return nil
		}
		var im ItemMeta
		if e.Type == session.TypeContextEdit && e.Edit != session.EditNone {
			// The replacement is rendered with the edit's own line, so that an
			// edit appended later never rewrites an earlier row (incremental =
			// cold); readers apply it (View.Refs).
			im = ItemMeta{Edit: e.Edit, TextOff: textOff + texts.n}
			if e.Edit == session.EditReplace {
				it := history.RenderReplacement(d.Replacement)
				im.ToolName, im.ToolNamespace, im.Chars, im.TextLen = s.names.id(it.ToolName, &newNames), s.names.id(it.ToolNamespace, &newNames), int32(it.Chars), int32(len(it.Text))
				if err := texts.write(it.Text); err != nil {
					return fmt.Errorf("write item texts: %w", err)
				}
			}
		} else if it, ok := history.Render(e, d, lookup); ok {
			im = ItemMeta{IsItem: true, Role: s.names.id(it.Role, &newNames), ToolName: s.names.id(it.ToolName, &newNames), ToolNamespace: s.names.id(it.ToolNamespace, &newNames), Summary: it.Summary, Chars: int32(it.Chars),
				TextOff: textOff + texts.n, TextLen: int32(len(it.Text))}
			if err := texts.write(it.Text); err != nil {
				return fmt.Errorf("write item texts: %w", err)
			}
		}
		for _, c := range history.Calls(d) {
			// Only a call with an action (flat router) or a namespace can
			// change how its result renders; keep just those.
			if c.ID != "" && (c.Action != "" || c.Namespace != "") {
				newCalls[c.ID] = c.Call
				calls = append(calls, c)
			}
		}
		pend = append(pend, pendingEntry{e: *e, item: im})
		return nil
	}
	start := s.next
	next, err := session.ScanLines(f, start, end, s.x.opts.MaxLineBytes, func(line []byte, off int64, tooLong bool) error {
		if off == 0 && line != nil {
			first, haveFirst = sha256.Sum256(line), true
		}
		return handle(line, off, tooLong)
	})
	if err != nil {
		return false, err
	}
	if next == start {
		return false, nil
	}
	if start == 0 && haveFirst {
		copy(s.firstLine[:], first[:])
	}
	// 1. item texts, before the rows that point at them.
	if err := texts.w.Flush(); err != nil {
		return false, fmt.Errorf("write item texts: %w", err)
	}
	newTextSize := textOff + texts.n
	// The change check of the indexed bytes, extended over this batch
	// (verify.go); stored with the resume state.
	check, err := s.check.extended(f, start, next)
	if err != nil {
		return false, err
	}
	// 2. rows and resume state in one transaction.
	merged := mergeStats(s.stats, stats)
	tx, err := db.Writer.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if err := insertEntries(ctx, tx, s.fileID, pend, &s.names, &newNames); err != nil {
		return false, err
	}
	for _, c := range calls {
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO tool_calls(file_id, call_id, name, namespace, action) VALUES (?,?,?,?,?)`, s.fileID, c.ID, c.Name, c.Namespace, c.Action); err != nil {
			return false, err
		}
	}
	hb := []byte("{}")
	sid := ""
	if p.Header != nil {
		hb, _ = json.Marshal(p.Header)
		sid = p.Header.ID
	}
	sb, _ := json.Marshal(merged)
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET session_id=?, header=?, not_pi=?, bytes_indexed=?, first_line=?, dev=?, ino=?, next_line=?, next_seq=?, last_v1_id=?, text_bytes=?, stats=? WHERE file_id=?`,
		sid, string(hb), p.NotPi, next, s.firstLine[:], int64(s.dev), int64(s.ino), p.NextLine, p.NextSeq, p.LastV1ID, newTextSize, string(sb), s.fileID); err != nil {
		return false, err
	}
	if err := s.saveCheck(ctx, tx, check); err != nil {
		return false, err
	}
	if err := tx.Commit(); err != nil {
		return false, err
	}
	s.check = check
	// 3. publish.
	s.mu.Lock()
	if hdr != nil && s.tree == nil {
		s.tree = session.NewTree(*hdr)
	}
	if s.tree != nil {
		if n := s.tree.Len(); len(pend) > cap(s.items)-len(s.items) && size-next > s.x.opts.BatchBytes {
			// Size the in-memory tables once for the whole file, from the
			// entries per byte so far, rather than by append's growth, which
			// holds old and new arrays at once (the peak memory of indexing
			// a large file).
			want := int(float64(n+len(pend)) * float64(size) / float64(next) * 1.05)
			if more := want - n; more > len(pend) {
				s.tree.Grow(more)
				s.items = slices.Grow(s.items, more)
			}
		}
	}
	for i := range pend {
		s.tree.Add(memEntry(pend[i].e))
		s.items = append(s.items, pend[i].item)
	}
	for id, c := range newCalls {
		s.calls[id] = c
	}
	s.names.publish(&newNames)
	p.LookupSeq = nil
	s.parser = p
	s.next = next
	s.textSize = newTextSize
	s.stats = merged
	s.mu.Unlock()

	m := s.x.metrics
	m.BytesIngested.Add(float64(next - start))
	m.EntriesIngested.Add(float64(len(pend)))
	for r, n := range stats.Skipped {
		m.SkippedLines.WithLabelValues(string(r)).Add(float64(n))
	}
	return true, nil
}

// entryRowsPerInsert is how many entries rows one INSERT statement writes
// (14 values each; SQLite allows 32766 parameters): one statement per
// row made the database/sql and cgo calls a sixth of the ingest time.
const entryRowsPerInsert = 64

// insertEntries writes the entries rows of one batch.
func insertEntries(ctx context.Context, tx *sql.Tx, fileID int64, pend []pendingEntry, nm, pending *names) error {
	const cols = `INSERT INTO entries(file_id, seq, line, off, len, id, parent_id, type, ts, custom_type, meta, item, text_off, text_len) VALUES `
	const row = `(?,?,?,?,?,?,?,?,?,?,?,?,?,?)`
	stmts := map[int]*sql.Stmt{}
	defer func() {
		for _, st := range stmts {
			st.Close()
		}
	}()
	args := make([]any, 0, 14*entryRowsPerInsert)
	var meta []byte
	for len(pend) > 0 {
		n := min(len(pend), entryRowsPerInsert)
		st := stmts[n]
		if st == nil {
			q := cols + row + strings.Repeat(","+row, n-1)
			var err error
			if st, err = tx.PrepareContext(ctx, q); err != nil {
				return err
			}
			stmts[n] = st
		}
		args = args[:0]
		for i := range pend[:n] {
			e, im := &pend[i].e, &pend[i].item
			var item any
			if im.IsItem || im.Edit != session.EditNone {
				b, _ := json.Marshal(itemJSON{Role: nm.nameOr(im.Role, pending), ToolName: nm.nameOr(im.ToolName, pending),
					ToolNamespace: nm.nameOr(im.ToolNamespace, pending), Summary: im.Summary, Edit: im.Edit, Chars: im.Chars})
				item = string(b)
			}
			meta = encodeMeta(meta[:0], e)
			args = append(args, fileID, e.Seq, e.Line, e.Offset, e.Length, e.ID, e.ParentID, e.Type, e.Timestamp, e.CustomType, string(meta), item, im.TextOff, im.TextLen)
		}
		if _, err := st.ExecContext(ctx, args...); err != nil {
			return err
		}
		pend = pend[n:]
	}
	return nil
}

func mergeStats(a, b session.Stats) session.Stats {
	out := session.Stats{Lines: a.Lines + b.Lines}
	for _, m := range []map[session.SkipReason]int{a.Skipped, b.Skipped} {
		for r, n := range m {
			if out.Skipped == nil {
				out.Skipped = map[session.SkipReason]int{}
			}
			out.Skipped[r] += n
		}
	}
	out.Problems = append(append([]session.Problem(nil), a.Problems...), b.Problems...)
	if len(out.Problems) > session.MaxProblems {
		out.Problems = out.Problems[:session.MaxProblems]
	}
	return out
}
