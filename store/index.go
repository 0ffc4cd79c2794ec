package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

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
	StateNotPi    FileState = "not_a_session" // its first parsed line is not a session header, or no complete line is one
	StateEmpty    FileState = "empty"         // no complete line yet
	StateUnusable FileState = "unreadable"    // an I/O error other than not-exist
	// StateTooLarge (toolarge.go): more entries than the memory limit can index.
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

// NameID is an index into a session's table of role and tool names.
type NameID uint32

// names is a session's table of role and tool names (ItemMeta.Role, ToolName,
// ToolNamespace): index 0 is "", the rest in first-seen order. Only the syncing
// goroutine adds names; readers see the slice of a published snapshot.
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
	name = session.Intern(name) // an owned copy: name may pin a chunk of the parser's scratch
	pending.list = append(pending.list, name)
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

// Options configure an Index.
type Options struct {
	// MaxLineBytes caps one JSONL line (default session.DefaultMaxLineBytes).
	MaxLineBytes int
	// BatchBytes is how many JSONL bytes one ingest transaction covers
	// (default 8 MiB). Each batch commits the entries and the resume offset
	// together, so a crash loses at most the batch in progress. A batch's
	// parsed entries and buffers are the part of a cold index's peak RSS
	// that scales with it: 16 MiB batches put the 1 GiB bench session's
	// VmHWM at 150 MiB once the item text was compressed on the ingesting
	// goroutine, 8 MiB batches at 147 MiB for the same CPU
	// (docs/benchmarks.md, "Full index CPU").
	BatchBytes int64
	Logger     *slog.Logger
	Metrics    *Metrics
	// MaxIndexBytes is the disk budget of the derived index in bytes
	// (0: none); past it the least recently used sessions' derived data
	// is evicted (budget.go).
	MaxIndexBytes int64
	// PathMap rewrites absolute session file paths before they are
	// resolved (Resolve, Lexical): a host path registered by a Pi outside
	// a container becomes the path the container reads (ParsePathMap).
	PathMap []PathMapping
	// MemoryLimit is the Go heap limit contextd runs under, in bytes
	// (--memory-limit; 0: none). A session with more entries than
	// EntryBudget(MemoryLimit) is not indexed: it is refused as
	// StateTooLarge (toolarge.go).
	MemoryLimit int64
}

// Index is the derived session index: an SQLite database (index.db) plus one
// item-text file per session under texts/, both under one directory, and an
// in-memory tree per session loaded on first use. Every part of it can be
// deleted and rebuilt from the JSONL files (Rebuild).
type Index struct {
	root string // sessions directory, symlinks resolved
	dir  string // index directory
	opts Options
	// maxEntries is EntryBudget(opts.MemoryLimit): the most entries one
	// session is indexed with (0: no bound).
	maxEntries int
	log        *slog.Logger
	metrics    *Metrics

	mu     sync.Mutex // guards db, byPath, idsRead
	db     *DB
	byPath map[string]*Session
	// idsRead holds the session ids whose rows WithID has read from db
	// (the database idsRead is of: a Rebuild's new one starts empty).
	// Each row read was synced into byPath then, and a row only gets an
	// id through the sync of a session in byPath (commitBatch), so the
	// next WithID of such an id finds every file of it in byPath and
	// queries nothing: the query (a read transaction, whose pages every
	// commit of an appended line made stale) was a tenth of the CPU of
	// an append and /context (docs/benchmarks.md).
	idsRead   map[string]bool
	idsReadDB *DB

	bg      sync.WaitGroup // background builders of search frame filters and full indexes after a tree preview
	closing atomic.Bool    // set by Close: builders stop
	// rebuilds counts the Rebuilds so far: the files of a text generation
	// named before the last one are not removed by it (textFiles.dropped).
	rebuilds atomic.Uint64
	// bgCtx is the context of the background syncs that follow a tree
	// preview (preview.go); Close cancels it.
	bgCtx    context.Context
	bgCancel context.CancelFunc
	bgSlot   chan struct{} // held by the one background full index running
	filters  filterBuilder // the one builder of search frame filters (filterbuilder.go)

	frames *frameCache // decoded item-text frames (textstore.go)

	headers headerCache // the last header scan of each discovered file (headers.go)
	budget  budget      // the disk budget of the derived index (budget.go)
}

// OpenIndex opens the index in dir for the sessions directory root. A
// database that is corrupt or has a newer schema is deleted and rebuilt
// (logged at warn level).
func OpenIndex(ctx context.Context, root, dir string, opts Options) (*Index, error) {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = session.DefaultMaxLineBytes
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = 8 << 20
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
	x := &Index{root: absRoot, dir: dir, opts: opts, log: opts.Logger, metrics: opts.Metrics, byPath: map[string]*Session{}, frames: newFrameCache(), maxEntries: EntryBudget(opts.MemoryLimit)}
	if err := x.open(ctx); err != nil {
		return nil, err
	}
	x.bgCtx, x.bgCancel = context.WithCancel(context.WithoutCancel(ctx))
	x.bgSlot = make(chan struct{}, 1)
	x.startBudget()
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
	x.closing.Store(true)
	x.stopFilters()
	x.bgCancel()
	x.bg.Wait()
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
// directory: one file has one path, so it is one session (docs/security.md).
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
		if changing(err) {
			return "", fmt.Errorf("%w: %w", ErrChanging, err)
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

// ErrChanging is returned by Resolve when a component of the path changed
// kind while it was resolved: a directory swapped for a symlink (or back)
// between the lstat and the readlink of filepath.EvalSymlinks, which then
// fails with EINVAL ("readlink …: invalid argument").
// Nothing was read; the caller answers 409 and the client may retry
// (docs/security.md).
var ErrChanging = errors.New("the path changed while it was resolved")

// changing reports whether err, from filepath.EvalSymlinks of a path
// without NUL bytes, is one a concurrent swap of a component causes.
func changing(err error) bool {
	var pe *fs.PathError
	if !errors.As(err, &pe) || strings.ContainsRune(pe.Path, 0) {
		return false
	}
	return pe.Op == "readlink" && errors.Is(err, syscall.EINVAL)
}

// Forget drops a session object and its rows (used when a path was looked
// at for a request that was refused, so it does not linger in listings).
// A later Discover finds the file again if it is a session file.
func (x *Index) Forget(ctx context.Context, path string) error {
	x.mu.Lock()
	s := x.byPath[path]
	delete(x.byPath, path)
	db := x.db
	x.mu.Unlock()
	x.forgetBytes(path)
	if s == nil || db == nil {
		return nil
	}
	s.forgotten.Store(true)
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.syncOK = 0 // its rows go: no later Sync may take an earlier one as its own
	if s.fileID == 0 {
		return nil
	}
	if _, err := db.Writer.ExecContext(ctx, `DELETE FROM entry_blocks WHERE file_id=?; DELETE FROM tool_calls WHERE file_id=?; DELETE FROM sessions WHERE file_id=?`, s.fileID, s.fileID, s.fileID); err != nil {
		return err
	}
	// Its files go once no reader holds them (textfiles.go); readers of
	// its last snapshot after that are told the file changed.
	s.mu.Lock()
	old := s.replaceTextFiles()
	s.mu.Unlock()
	if err := s.resetFilters(0); err != nil {
		return err
	}
	if err := os.Remove(s.legacyTextPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if old != nil {
		return old.retire()
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
// session dirs, docs/pi-facts.md "Session file"), sorted; a directory
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
// read (Remote sessions, docs/security.md).
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
		// Unknown: look at the files' headers (ScanHeaders; only the
		// files with this id are then indexed, by WithID).
		if _, err := x.ScanHeaders(nil); err != nil {
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
// indexed in an earlier run, or whose header the last ScanHeaders read)
// whose file's header id is sessionID, each synced (so indexed): files
// that exist first, then those deleted or moved outside since they were
// indexed, each group by path. It reads no header itself.
func (x *Index) WithID(ctx context.Context, sessionID string) ([]*Session, error) {
	paths := map[string]bool{}
	for _, p := range x.headerPaths(sessionID) {
		paths[p] = true
	}
	for _, s := range x.Sessions() {
		if s.SessionID() == sessionID {
			paths[s.path] = true
		}
	}
	x.mu.Lock()
	db := x.db
	read := db != nil && x.idsReadDB == db && x.idsRead[sessionID]
	x.mu.Unlock()
	if db == nil {
		return nil, errIndexClosed
	}
	if !read {
		if err := x.pathsWithID(ctx, db, sessionID, paths); err != nil {
			return nil, err
		}
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
	if !read && len(out) > 0 {
		// An id no file has is not kept: requests naming unknown ids
		// would grow the set without bound.
		x.mu.Lock()
		if x.db == db {
			if x.idsReadDB != db {
				x.idsRead, x.idsReadDB = map[string]bool{}, db
			}
			x.idsRead[sessionID] = true
		}
		x.mu.Unlock()
	}
	gone := make(map[*Session]bool, len(out))
	for _, s := range out {
		_ = s.ReadFor(ctx, func(v *View) error {
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

// pathsWithID adds to paths those of the rows of db whose session id is
// sessionID.
func (x *Index) pathsWithID(ctx context.Context, db *DB, sessionID string, paths map[string]bool) error {
	idQueries.Add(1)
	// Not cancellable (a short query): the driver would run it on a
	// goroutine of its own and the caller wait for that one to get a P
	// (see commitBatch).
	rows, err := db.Reader.QueryContext(context.WithoutCancel(ctx), "SELECT path FROM sessions WHERE session_id = ?", sessionID)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			return err
		}
		paths[p] = true
	}
	return rows.Err()
}

// idQueries counts the queries of pathsWithID (tests).
var idQueries atomic.Int64

// Rebuild drops the whole derived index (database and item texts) and
// builds it again from the session files, for the sessions that were
// indexed (the others are indexed on first use, as before the rebuild).
// contextd's own state lives in another database and is not touched.
func (x *Index) Rebuild(ctx context.Context) error {
	// A sessions directory that cannot be listed is refused before
	// anything is dropped.
	if _, err := x.Discover(); err != nil {
		return err
	}
	indexed, err := x.IndexedPaths()
	if err != nil {
		return err
	}
	sessions := x.Sessions()
	for _, s := range sessions {
		s.syncMu.Lock()
		s.mu.Lock()
		// Readers of the current snapshots that open the text files
		// once they are removed are told the file changed; the next
		// load finds the generation on disk (none).
		s.files = nil
		// Stop any builder of frame filters before the files go.
		s.filters.gen.Add(1)
		s.filters.mu.Lock()
		s.filters.done.Store(0)
		s.filters.mu.Unlock()
		s.filters.unmap()
	}
	// Every generation named so far, current or replaced and still held
	// by a reader, is dropped: the files are removed below, and a
	// release after that must not remove a file of the rebuilt index
	// that has the same name (textFiles.dropped).
	x.rebuilds.Add(1)
	err = func() error {
		x.resetBudget()
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
			s.publishLocked()
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
	paths := make([]string, 0, len(indexed))
	for p := range indexed {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := x.Session(p).Sync(ctx); err != nil {
			return err
		}
	}
	return nil
}
