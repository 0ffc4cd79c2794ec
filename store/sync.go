package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"contextd/history"
	"contextd/session"
)

// Session is one session file's index: its in-memory tree and item table,
// kept in step with the SQLite rows and the item-text file. Only Sync
// mutates it (under syncMu); readers use Read, which reads the snapshot
// the last change published (snapshot.go) and takes no lock, so a reader
// never sees half of a sync and never waits for one.
//
// Lock order (a goroutine holding one may take those after it, never one
// before): a scan slot (scanSlots, ReadScan) → a scan core (scanCores,
// ReadScan of an UnfilteredQuery; a checkpoint, checkpoint.go) → syncMu → mu → filters.mu →
// filters.mapMu → Index.mu. Readers hold no session lock: a search holds at
// most a scan slot and, while it scans, filters.mapMu for reading (resets wait
// for it before unmapping). frameCache.mu, spans.mu and decoded.mu are
// taken alone, for a copy. Rebuild takes every session's syncMu then mu,
// in the order of Index.Sessions.
type Session struct {
	x    *Index
	path string

	syncMu sync.Mutex // one sync at a time; the syncing goroutine owns the fields below for writing
	// Sync numbers the syncs it runs (syncBegun, counted as each begins,
	// under syncMu) and keeps the number of the last one that ended
	// without error (syncOK, under syncMu; 0 after a reset): a Sync that
	// finds, once it holds syncMu, that a sync begun after its own call
	// ended well returns at once, since that sync read the file as it was
	// at the call or later. Concurrent requests (32 searches at once) so
	// share one sync instead of queueing for one each.
	syncBegun atomic.Uint64
	syncOK    uint64
	// forgotten is set by Index.Forget: the object is out of the index,
	// its rows and files gone; the filter builder takes nothing of it
	// (a build queued before would write the filters of its old text
	// under its next generation's names, files no session owns).
	forgotten atomic.Bool
	// syncedAt is when the last sync ended (Unix nanoseconds; 0: never),
	// atomic so that a sync that changed nothing needs no write lock of
	// mu (which would wait for every reader in progress and hold off new
	// ones).
	syncedAt atomic.Int64
	// used is when a request last synced the session (Unix ns; 0: not
	// since contextd started): the order of eviction (budget.go).
	used atomic.Int64

	// snap is the last published snapshot (publishLocked), what
	// readers read.
	snap atomic.Pointer[sessionSnap]
	mu   sync.Mutex // serializes the writes of the fields below with their publication
	// files is the generation of the files under texts/ that syncs
	// write (textfiles.go); kept by reset, replaced by replaceTextFiles.
	files     *textFiles
	loaded    bool
	fileID    int64
	parser    session.Parser
	tree      *session.Tree
	items     []ItemMeta
	names     names
	calls     map[string]history.Call
	next      int64
	textSize  int64    // bytes of item text: frames×frameSize + len(textTail)
	frames    int      // item-text frames (textstore.go)
	frameEnds []int64  // ends of the first of them, compressed; appended to, never rewritten while published
	raw       *rawFile // the others, raw (rawframes.go); nil when none since the last compressed
	textTail  []byte   // the item text after the last frame; replaced, never modified
	textEpoch uint64   // textEpochs number of this state of the text
	// framesCreated is the frame file (framePath) an ingest created or
	// found since the last reset; the next ingests open it only to write
	// a frame (lazyFile). Owned by the syncing goroutine, as the fields
	// above syncMu says.
	framesCreated string
	// hdrKey is the header whose JSON (json.Marshal) is hdrJSON, which
	// the batches store (headerJSON); owned by the syncing goroutine.
	hdrKey  session.Header
	hdrJSON string
	// checked is the tail window this sync's change check read
	// (verify.go checkedTail); emptied as each pass of syncFile ends.
	checked   checkedTail
	firstLine [32]byte
	dev, ino  uint64
	mtime     time.Time    // file mtime at the last sync (memory only)
	check     contentCheck // change detection of the indexed bytes (verify.go)
	stats     session.Stats
	state     FileState
	stateMsg  string
	fileSize  int64

	// The unterminated last line (memory only): it starts at flightFrom
	// (== next) and holds no "\n" before flightScanned, so the next sync
	// looks for its end from flightScanned, not from its start.
	// flightTooLong is its length so far once it is over MaxLineBytes
	// (reported; 0 otherwise).
	flightFrom, flightScanned, flightTooLong int64

	// preview is the tree of a cold index served before its items are
	// built (preview.go); nil once the full index is current.
	preview *treePreview
	// refused is set while the file is refused as too large (toolarge.go);
	// written under syncMu and mu.
	refused *refusal

	filters frameFilters // search frame filters (framefilter.go); not under mu
	decoded decodeCache  // entries DecodeEach decoded lately (decode_many.go); not under mu
	// treeDecoded: entries DecodeEachTreeOnly decoded lately; not under mu
	treeDecoded decodeCache
	spans       spanCache // the spans of the last large search (view.go); not under mu
}

func (s *Session) reset() {
	s.syncOK = 0
	s.decoded.clear()
	s.treeDecoded.clear()
	s.preview = nil
	s.refused = nil
	s.loaded = false
	s.fileID = 0
	s.parser = session.Parser{}
	s.tree = nil
	s.items = nil
	s.names = names{}
	s.calls = nil
	s.next = 0
	s.textSize = 0
	s.frameEnds, s.textTail, s.textEpoch = nil, nil, textEpochs.Add(1)
	s.frames, s.raw = 0, nil
	s.framesCreated = ""
	s.firstLine = [32]byte{}
	s.dev, s.ino = 0, 0
	s.stats = session.Stats{}
	s.flightFrom, s.flightScanned, s.flightTooLong = 0, 0, 0
}

// Path is the session file's path.
func (s *Session) Path() string { return s.path }

// textSnap is the committed item text (caller holds mu).
func (s *Session) textSnap() *textSnap {
	t := &textSnap{epoch: s.textEpoch, path: s.framePath(), index: s.frameIndexPath(), ends: s.frameEnds, frames: s.frames, tail: s.textTail}
	if s.frames > len(s.frameEnds) {
		t.raw = s.raw
	}
	return t
}

// Sync brings the index of this session up to date with its file: a stat,
// then only the new complete lines. A file that shrank, whose first line
// changed or that was replaced (new inode) is re-indexed whole. Problems with
// the file itself (missing, outside the sessions directory, not a Pi
// session) are recorded in the session state, not returned; the error is for
// index failures.
//
// Under a context marked by TreeOnly, a cold index of a large file may
// return after building only the tree (see preview.go); ReadTree then
// serves it, and the full index follows in the background.
func (s *Session) Sync(ctx context.Context) error {
	s.touch()
	if IsTreeOnly(ctx) {
		return s.syncTree(ctx)
	}
	return s.syncSince(ctx, s.syncBegun.Load())
}

// syncSince is Sync for a call made when called syncs had begun.
func (s *Session) syncSince(ctx context.Context, called uint64) error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	if s.syncOK > called {
		return nil // a sync begun after this call ended well meanwhile
	}
	n := s.syncBegun.Add(1)
	if err := s.syncLocked(ctx); err != nil {
		return err
	}
	s.syncOK = n
	return nil
}

var errIndexClosed = errors.New("index is closed")

// loadedDB returns the index database with s's rows loaded from it (once
// per session), or errIndexClosed. The caller holds syncMu.
func (s *Session) loadedDB(ctx context.Context) (*DB, error) {
	s.x.mu.Lock()
	db := s.x.db
	s.x.mu.Unlock()
	if db == nil {
		return nil, errIndexClosed
	}
	if !s.loaded {
		if err := s.load(ctx, db); err != nil {
			return nil, err
		}
	}
	return db, nil
}

// maxCutSyncs bounds how many times one Sync reads a file again that was
// cut while it read it (errFileCut).
const maxCutSyncs = 3

// syncLocked is Sync's work; the caller holds syncMu. A file cut while it
// is read (errFileCut: a rewrite truncates, then writes) is read again
// from a new stat, at most maxCutSyncs times in all; after that the sync
// ends with what it committed (a prefix of complete lines, whose bytes
// the next sync checks) and no error, and the next sync goes on.
func (s *Session) syncLocked(ctx context.Context) error {
	start := time.Now()
	defer func() { s.x.metrics.SyncDuration.Observe(time.Since(start).Seconds()) }()

	db, err := s.loadedDB(ctx)
	if err != nil {
		return err
	}
	for n := 1; ; n++ {
		err := s.syncFile(ctx, db)
		if !errors.Is(err, errFileCut) {
			return err
		}
		s.x.log.Info("session file was cut while it was read, reading it again", "path", s.path)
		if n == maxCutSyncs {
			return nil
		}
	}
}

// syncFile is one pass of syncLocked: a stat, then the bytes after it.
func (s *Session) syncFile(ctx context.Context, db *DB) error {
	lfi, same := s.unchanged()
	if same {
		s.publishState(s.fileSize)
		s.kickFilters()
		return nil
	}
	f, fi, ok := s.openFile(lfi)
	if !ok {
		s.dropPreview()
		return nil
	}
	defer f.Close()
	defer s.dropChecked()
	size := fi.Size()
	var dev, ino uint64
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		dev, ino = uint64(st.Dev), uint64(st.Ino)
	}
	if s.refused != nil {
		if s.refused.still(dev, ino, size) {
			s.publishState(size)
			return nil
		}
		// Another file, or cut: index it again (it may fit now).
		s.mu.Lock()
		s.refused = nil
		s.mu.Unlock()
	}
	cause, err := s.changeCause(ctx, db, f, fi, dev, ino)
	if err != nil {
		return err
	}
	if cause != "" {
		s.x.metrics.Reindexes.WithLabelValues(cause).Inc()
		s.x.log.Info("session file changed in place, re-indexing it whole", "path", s.path, "cause", cause)
		if err := s.clear(ctx, db); err != nil {
			return err
		}
	}
	if size == s.fileSize && !fi.ModTime().Equal(s.mtime) {
		// Same size, new mtime: the unterminated last line may have been
		// rewritten (a "\n" now inside it), so it is scanned again from
		// its start rather than from where the last sync stopped.
		s.flightScanned = s.flightFrom
	}
	s.dev, s.ino = dev, ino
	s.mtime = fi.ModTime()
	if size > s.next {
		s.check.mtime, s.check.ctime = times(fi)
		err := s.ingest(ctx, db, cutReader{f: f, size: size}, size)
		s.x.grew(s.path) // measured for the disk budget (budget.go), also after a partial ingest
		if tl := (*errTooLarge)(nil); errors.As(err, &tl) {
			return s.refuse(ctx, db, tl, dev, ino, size)
		}
		if err != nil {
			return err
		}
	}
	s.publishState(size)
	s.dropPreview()
	s.kickFilters()
	return nil
}

// unchanged reports whether one lstat of the session path finds the file
// the last sync read, as it was then: a regular file of the same device,
// inode, size, mtime and ctime (any write(2), truncate or utimes sets the
// ctime), indexed without a refusal, a pending tree preview or a state
// other than StateOK. Such a sync has nothing to read, and the full
// check (openFile: symlinks resolved, the path confined to the sessions
// directory, the file opened and stat'ed; changeCause) would conclude
// the same after about fifteen system calls, with syncMu held: what
// every search and /context that follows no append paid. It reads no
// byte of the file, so a path that now leads out of the sessions
// directory to the same inode reveals nothing. It also returns the lstat
// it took (nil: none, or it failed), which openFile uses. Caller holds
// syncMu.
func (s *Session) unchanged() (fs.FileInfo, bool) {
	fi, err := os.Lstat(s.path)
	if err != nil {
		return nil, false
	}
	if s.next == 0 || s.refused != nil || s.preview != nil || !s.check.known || s.state != StateOK || s.mtime.IsZero() || !fi.Mode().IsRegular() {
		return fi, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fi, false
	}
	mtime, ctime := times(fi)
	return fi, uint64(st.Dev) == s.dev && uint64(st.Ino) == s.ino && fi.Size() == s.fileSize &&
		fi.ModTime().Equal(s.mtime) && mtime == s.check.mtime && ctime == s.check.ctime
}

// errFileCut is a read that ended before the size the sync's stat gave:
// the file was cut (truncated) after the stat, as a rewrite in place does
// before it writes the new bytes.
var errFileCut = errors.New("the session file was cut while it was read")

// cutReader reads the session file f of a sync whose stat gave size. A
// read that ends before size is errFileCut, not the end of the file: the
// bytes the stat counted are being rewritten, and a scan that took their
// absence for an unterminated last line would remember that line as in
// flight through size (Session.flightScanned) and never index the lines
// written there again at the same size.
type cutReader struct {
	f    io.ReaderAt
	size int64
}

// ReadAt implements io.ReaderAt.
func (r cutReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.f.ReadAt(p, off)
	if n < len(p) && off+int64(n) < r.size && (err == nil || errors.Is(err, io.EOF)) {
		err = errFileCut
	}
	return n, err
}

// dropPreview forgets the tree preview once the full index is current.
// The caller holds syncMu (only syncs set the preview), so it reads
// s.preview without mu and takes mu only when there is one to drop.
func (s *Session) dropPreview() {
	if s.preview == nil {
		return
	}
	s.mu.Lock()
	s.preview = nil
	s.publishLocked()
	s.mu.Unlock()
}

// openFile opens the session file for a sync; lfi is the sync's lstat of
// the path (nil: none). A regular file reached without a symlink is
// opened in one call (openDirect); any other path is resolved and opened
// confined to the sessions directory. When it cannot be opened (missing,
// outside the sessions directory, not a regular file, unreadable), it
// records why in the session state and reports false.
func (s *Session) openFile(lfi fs.FileInfo) (*os.File, fs.FileInfo, bool) {
	if f, fi, ok := s.x.openDirect(s.path, lfi); ok {
		return f, fi, true
	}
	real, err := filepath.EvalSymlinks(s.path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			s.setMissing()
			return nil, nil, false
		}
		s.setState(StateUnusable, "the session file cannot be read")
		return nil, nil, false
	}
	if !s.x.under(real) {
		s.setState(StateOutside, "the session file resolves outside the sessions directory")
		return nil, nil, false
	}
	f, fi, err := s.x.openSessionFile(real)
	switch {
	case err == nil:
		return f, fi, true
	case errors.Is(err, fs.ErrNotExist):
		s.setMissing()
	case errors.Is(err, ErrOutside):
		s.setState(StateOutside, "the session file resolves outside the sessions directory")
	case errors.Is(err, ErrNotRegular):
		s.setState(StateUnusable, "the session path is not a regular file (a FIFO, device or directory); contextd reads only regular files")
	default:
		s.setState(StateUnusable, "the session file cannot be read")
	}
	return nil, nil, false
}

// changeCause says why the indexed bytes no longer describe the file f
// (size, identity dev/ino), so that it must be re-indexed whole: "shrunk",
// "replaced", "rewritten" (first line changed) or "changed_in_place"; ""
// when the index can go on from s.next.
func (s *Session) changeCause(ctx context.Context, db *DB, f *os.File, fi fs.FileInfo, dev, ino uint64) (string, error) {
	size := fi.Size()
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
			return "", err
		}
		if changed {
			cause = "changed_in_place"
		}
	}
	return cause, nil
}

// publishState records the file size and the session state after a sync.
// The caller holds syncMu: the fields the state is made from are written
// only by syncs, so they are read here without mu, and mu is taken only
// when the size or the state changes (a sync that found nothing new takes
// no write lock).
func (s *Session) publishState(size int64) {
	defer s.syncedAt.Store(time.Now().UnixNano())
	state, msg := s.fileState()
	if size == s.fileSize && state == s.state && msg == s.stateMsg {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fileSize = size
	s.state, s.stateMsg = state, msg
	s.publishLocked()
}

// fileState is the state of the file as the last sync left it (caller
// holds syncMu).
func (s *Session) fileState() (FileState, string) {
	switch {
	case s.refused != nil:
		return StateTooLarge, s.refused.msg
	case s.parser.NotPi:
		return StateNotPi, "not a Pi session: the first parsed line is not a session header with a string id"
	case s.tree == nil && len(s.stats.Skipped) > 0:
		n := 0
		for _, c := range s.stats.Skipped {
			n += c
		}
		// No complete line is a session header: not a Pi session (a
		// UTF-16 file, another format), not one Pi has yet to write.
		return StateNotPi, fmt.Sprintf("not a Pi session: none of its %d complete lines is a session header (see the line problems); a Pi session file is UTF-8 JSON lines that start with a session header line", n)
	case s.tree == nil:
		return StateEmpty, "the file holds no complete header line yet"
	default:
		return StateOK, ""
	}
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
	s.publishLocked()
	s.mu.Unlock()
}

// firstLineHash hashes the first line (at most 1 MiB of it). It runs on
// every sync that sees new bytes; a header line is a few hundred bytes, so
// it reads 4 KiB at a time.
func firstLineHash(f io.ReaderAt) ([32]byte, bool) {
	p := readPool.Get().(*[]byte)
	defer readPool.Put(p)
	buf := (*p)[:4<<10]
	var line []byte
	for off := int64(0); off < 1<<20; off += int64(len(buf)) {
		n, err := f.ReadAt(buf, off)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			if line == nil {
				return sha256.Sum256(buf[:i]), true // the usual header: no copy
			}
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
	}
	// The next text is written under the next generation's names
	// (textfiles.go), never over the files readers of the snapshots
	// before hold: those are removed when the last of them is done. A
	// filter builder is told first (resetFilters below then waits for
	// it), so that it stops.
	s.filters.gen.Add(1)
	s.mu.Lock()
	s.fresh(s.fileID)
	old := s.replaceTextFiles()
	s.publishLocked()
	s.mu.Unlock()
	if err := s.resetFilters(0); err != nil {
		return err
	}
	if old != nil {
		return old.retire()
	}
	return nil
}

// useTextFiles makes s.files the generation of fileID's files in use:
// the one s holds when it is fileID's (an eviction or Forget replaced
// it already), else the one on disk (openTextFiles). Caller holds mu.
func (s *Session) useTextFiles(fileID int64) error {
	if s.files != nil && s.files.fileID == fileID {
		return nil
	}
	t, err := s.x.openTextFiles(fileID)
	if err != nil {
		return err
	}
	s.files = t
	return nil
}

// newTextFiles makes s.files the first generation of a new sessions row's
// files: one past every generation of fileID on disk and past s.files when
// it is fileID's. SQLite gives a new row the id of a row deleted last when
// that one had the highest (file_id INTEGER PRIMARY KEY is max+1): the
// files of an evicted or forgotten session of that id may still be held
// by its readers (textfiles.go), and neither they nor the new text may be
// written or removed under the other. Caller holds mu.
func (s *Session) newTextFiles(fileID int64) error {
	paths, gen, err := listTextFiles(s.x.textDir(), fileID)
	if err != nil {
		return err
	}
	t := s.x.textFilesOf(fileID, gen)
	if len(paths) > 0 {
		t = t.next()
	}
	if s.files != nil && s.files.fileID == fileID {
		t.gen = max(t.gen, s.files.gen)
	}
	s.files = t
	return nil
}

// replaceTextFiles moves s to the next generation of its files and
// returns the replaced one (nil: none), which the caller retires once the
// snapshot of the next is published. Caller holds mu.
func (s *Session) replaceTextFiles() *textFiles {
	old := s.files
	if old != nil {
		s.files = old.next()
	}
	return old
}

// forgetRows deletes a session's entries and tool calls and resets its
// resume state, in one transaction.
func forgetRows(ctx context.Context, db *DB, fileID int64) error {
	_, err := db.Writer.ExecContext(ctx, `UPDATE sessions SET session_id='', header='{}', not_pi=0, bytes_indexed=0, first_line=x'', next_line=1, next_seq=0, last_v1_id='', text_bytes=0, text_tail=x'', stats='{}', indexed_crc=0, tail_crc=0, mtime_ns=0, ctime_ns=0 WHERE file_id=?;
DELETE FROM entry_blocks WHERE file_id=?; DELETE FROM tool_calls WHERE file_id=?`, fileID, fileID, fileID)
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
// sessions row) and reconciles the item-text file and the search frame
// filters with the committed text size.
func (s *Session) load(ctx context.Context, db *DB) error {
	if err := s.loadRows(ctx, db); err != nil {
		return err
	}
	return s.resetFilters(s.textSize)
}

func (s *Session) loadRows(ctx context.Context, db *DB) error {
	var (
		fileID                          int64
		header, stats, lastV1           string
		notPi                           bool
		bytesIdx, nextLine, nextSeq, tb int64
		first                           []byte
		dev, ino                        int64
	)
	var tail []byte
	err := db.Writer.QueryRowContext(ctx, `SELECT file_id, header, not_pi, bytes_indexed, first_line, dev, ino, next_line, next_seq, last_v1_id, text_bytes, text_tail, stats FROM sessions WHERE path=?`, s.path).
		Scan(&fileID, &header, &notPi, &bytesIdx, &first, &dev, &ino, &nextLine, &nextSeq, &lastV1, &tb, &tail, &stats)
	if errors.Is(err, sql.ErrNoRows) {
		res, err := db.Writer.ExecContext(ctx, `INSERT INTO sessions(path) VALUES (?)`, s.path)
		if err != nil {
			return err
		}
		fileID, _ = res.LastInsertId()
		s.mu.Lock()
		if err := s.newTextFiles(fileID); err != nil {
			s.mu.Unlock()
			return err
		}
		s.fresh(fileID)
		s.publishLocked()
		s.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	if s.x.maxEntries > 0 && nextSeq > int64(s.x.maxEntries) {
		// Indexed under a larger memory limit: loading it would pass
		// this one. Forget it; the sync reads the file again and refuses
		// it (toolarge.go) without holding more than the budget.
		s.mu.Lock()
		err := s.useTextFiles(fileID)
		if err == nil {
			s.fresh(fileID)
		}
		s.mu.Unlock()
		if err != nil {
			return err
		}
		return s.clear(ctx, db)
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
	defer s.publishLocked()
	if err := s.useTextFiles(fileID); err != nil {
		return err
	}
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
	return s.reconcileText(ctx, db, fileID, tb, tail)
}

// reconcileText makes the item-text files hold exactly the tb committed
// bytes, tail the last of them (caller holds mu): the frames of a batch
// that never committed are dropped. If the files lost committed frames,
// the index of this file is unusable: its rows are forgotten and it is
// indexed again.
func (s *Session) reconcileText(ctx context.Context, db *DB, fileID, tb int64, tail []byte) error {
	// The raw item-text file of an index before migration 0005 (which
	// re-indexes every session).
	if err := os.Remove(s.legacyTextPath()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	inFrames := tb - int64(len(tail))
	if len(tail) < frameSize && inFrames >= 0 && inFrames%frameSize == 0 {
		ends, raw, ok, err := s.loadFrames(int(inFrames / frameSize))
		if err != nil {
			return err
		}
		if ok {
			s.frameEnds, s.frames, s.raw, s.textTail = ends, int(inFrames/frameSize), raw, tail
			return nil
		}
	}
	s.x.log.Warn("item text files lost committed data, re-indexing the session", "path", s.path)
	s.x.metrics.Reindexes.WithLabelValues("text_lost").Inc()
	if err := forgetRows(ctx, db, fileID); err != nil {
		return err
	}
	s.fresh(fileID)
	_, _, _, err := s.loadFrames(0)
	return err
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

// syncedAtTime is when the last sync ended (the zero time: never).
func (s *Session) syncedAtTime() time.Time {
	if ns := s.syncedAt.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}
