package store

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// The disk budget of the derived index (docs/index-and-search.md "Disk
// budget"): each indexed session's derived bytes (its rows in index.db
// and its item-text and frame-filter files under texts/) are measured
// after the syncs that added bytes, at most once per budgetInterval (the
// syncs in between are measured together), and while their sum is over
// Options.MaxIndexBytes the least recently used sessions' derived data is
// evicted whole. Eviction takes only the evicted session's locks (never
// waiting for one in use: it is skipped) and one write transaction, so
// requests for other sessions go on; a later request for an evicted
// session syncs it again from its JSONL, as for a session never indexed.
// contextd's own state (state.db) is another database and is never
// touched.

// budget is an Index's disk budget state.
type budget struct {
	max atomic.Int64 // bytes; 0: no budget

	mu    sync.Mutex
	bytes map[string]int64 // resolved path → derived bytes of an indexed session
	dirty map[string]bool  // paths to measure again
	used  int64            // sum of bytes

	runMu     sync.Mutex // one enforcement at a time
	measured  bool       // the rows of earlier runs were measured (under runMu)
	evictions atomic.Int64
	evicted   atomic.Int64
	kick      chan struct{}
	interval  time.Duration // budgetInterval when the goroutine started
	runs      atomic.Int64  // enforcements by the goroutine (tests)
}

// IndexUsage is the derived index's disk use against its budget (GET
// /v1/index).
type IndexUsage struct {
	// UsedBytes is the sum of the indexed sessions' derived bytes: their
	// index.db payload (entry blocks, tool calls, text tail) and their
	// files under texts/.
	UsedBytes int64
	// BudgetBytes is Options.MaxIndexBytes (0: no budget).
	BudgetBytes int64
	// DiskBytes is the size of the index directory's files (index.db, its
	// -wal and -shm, texts/): UsedBytes plus SQLite's page overhead and
	// free pages it keeps for reuse.
	DiskBytes int64
	// Sessions is the number of sessions with a derived index.
	Sessions int
	// Evictions and EvictedBytes count the sessions evicted since contextd
	// started and the derived bytes they held.
	Evictions, EvictedBytes int64
}

// beforeEvict, when set (tests), is called with the path of a session
// being evicted, while its locks are held.
var beforeEvict func(path string)

// budgetInterval is the least time between two enforcements by the
// background goroutine: a session appended to at Pi's pace (one entry
// every few hundred ms), or a catch-up per model call, is measured once
// per interval, not per sync. Measuring is a query, a directory listing
// and a stat per file of the session; per appended line it was a third
// of the CPU of an append and /context (BenchmarkHTTPContextAfterAppend),
// taken from the requests of every session. The index can be over its
// budget for at most this long after a sync.
var budgetInterval = time.Second

// startBudget starts the goroutine that enforces the budget after syncs.
func (x *Index) startBudget() {
	x.SetMaxIndexBytes(x.opts.MaxIndexBytes)
	x.budget.kick = make(chan struct{}, 1)
	x.budget.interval = budgetInterval
	// A first pass measures the sessions indexed by earlier runs and
	// applies a budget lowered since, in the background (start-up does
	// not wait for it).
	x.budget.kick <- struct{}{}
	x.bg.Add(1)
	go func() {
		defer x.bg.Done()
		for {
			select {
			case <-x.bgCtx.Done():
				return
			case <-x.budget.kick:
			}
			x.budget.runs.Add(1)
			x.budget.runMu.Lock()
			err := x.enforce(x.bgCtx) // not Usage: nobody reads it here
			x.budget.runMu.Unlock()
			if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, errIndexClosed) {
				x.log.Warn("index disk budget: eviction failed", "error", err)
			}
			// The syncs until then kick the channel (one slot) and mark
			// their paths dirty: one enforcement measures them all.
			t := time.NewTimer(x.budget.interval)
			select {
			case <-x.bgCtx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}()
}

// grew records that the session at path has new derived bytes (the
// caller's sync ingested) and wakes the budget goroutine.
func (x *Index) grew(path string) {
	x.budget.mu.Lock()
	if x.budget.dirty == nil {
		x.budget.dirty = map[string]bool{}
	}
	x.budget.dirty[path] = true
	x.budget.mu.Unlock()
	select {
	case x.budget.kick <- struct{}{}:
	default:
	}
}

// forgetBytes drops the measure of path (its rows went).
func (x *Index) forgetBytes(path string) int64 {
	x.budget.mu.Lock()
	defer x.budget.mu.Unlock()
	n := x.budget.bytes[path]
	x.budget.used -= n
	delete(x.budget.bytes, path)
	delete(x.budget.dirty, path)
	return n
}

// resetBudget forgets every measure (Rebuild removed the files).
func (x *Index) resetBudget() {
	x.budget.mu.Lock()
	x.budget.bytes, x.budget.dirty, x.budget.used = nil, nil, 0
	x.budget.mu.Unlock()
}

// SetMaxIndexBytes changes the budget (0: none); the next enforcement
// applies it.
func (x *Index) SetMaxIndexBytes(n int64) {
	x.budget.max.Store(max(n, 0))
	x.metrics.IndexBudgetBytes.Set(float64(max(n, 0)))
}

// Usage reports the derived index's disk use (measuring the sessions
// that grew since the last measure).
func (x *Index) Usage(ctx context.Context) (IndexUsage, error) {
	x.budget.runMu.Lock()
	err := x.measure(ctx)
	x.budget.runMu.Unlock()
	if err != nil {
		return IndexUsage{}, err
	}
	x.budget.mu.Lock()
	u := IndexUsage{UsedBytes: x.budget.used, BudgetBytes: x.budget.max.Load(), Sessions: len(x.budget.bytes),
		Evictions: x.budget.evictions.Load(), EvictedBytes: x.budget.evicted.Load()}
	x.budget.mu.Unlock()
	u.DiskBytes = x.diskBytes()
	return u, nil
}

// diskBytes is the size of the index directory's files.
func (x *Index) diskBytes() int64 {
	var n int64
	for _, p := range []string{x.dbPath(), x.dbPath() + "-wal", x.dbPath() + "-shm"} {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	_ = filepath.WalkDir(x.textDir(), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// measure brings the per-session measures up to date: every indexed
// session the first time (the rows of earlier runs), then those that
// grew. The caller holds runMu.
func (x *Index) measure(ctx context.Context) error {
	x.budget.mu.Lock()
	var paths []string
	if !x.budget.measured {
		x.budget.mu.Unlock()
		rows, err := x.indexedRows()
		if err != nil {
			return err
		}
		x.budget.mu.Lock()
		for p := range rows {
			paths = append(paths, p)
		}
		x.budget.measured = true
	}
	for p := range x.budget.dirty {
		paths = append(paths, p)
	}
	x.budget.dirty = nil
	x.budget.mu.Unlock()
	for _, p := range paths {
		n, ok, err := x.derivedBytes(ctx, p)
		if err != nil {
			return err
		}
		x.budget.mu.Lock()
		if x.budget.bytes == nil {
			x.budget.bytes = map[string]int64{}
		}
		x.budget.used += n - x.budget.bytes[p]
		if ok {
			x.budget.bytes[p] = n
		} else {
			delete(x.budget.bytes, p)
		}
		x.budget.mu.Unlock()
	}
	x.budget.mu.Lock()
	x.metrics.IndexUsedBytes.Set(float64(x.budget.used))
	x.budget.mu.Unlock()
	return nil
}

// derivedBytes measures the derived data of the session at path: its
// index.db payload and its files under texts/; ok is false when it has
// no rows.
func (x *Index) derivedBytes(ctx context.Context, path string) (int64, bool, error) {
	x.mu.Lock()
	db := x.db
	x.mu.Unlock()
	if db == nil {
		return 0, false, errIndexClosed
	}
	var fileID, n int64
	err := db.Reader.QueryRowContext(ctx, `SELECT file_id, length(path) + length(header) + length(stats) + length(text_tail)
  + COALESCE((SELECT SUM(length(data)) + 16*COUNT(*) FROM entry_blocks e WHERE e.file_id = s.file_id), 0)
  + COALESCE((SELECT SUM(length(call_id) + length(name) + length(namespace) + length(action)) FROM tool_calls t WHERE t.file_id = s.file_id), 0)
  FROM sessions s WHERE path = ?`, path).Scan(&fileID, &n)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	paths, _, err := listTextFiles(x.textDir(), fileID)
	if err != nil {
		return 0, false, err
	}
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil {
			n += fi.Size()
		}
	}
	return n, true, nil
}

// EnforceBudget measures the sessions that grew and, while the derived
// index is over its budget, evicts the least recently used sessions'
// derived data whole (never the most recently used one, nor one being
// synced or waiting for its background full index: those are skipped).
// The background goroutine runs it after each sync that added bytes; it
// returns the usage after it.
func (x *Index) EnforceBudget(ctx context.Context) (IndexUsage, error) {
	x.budget.runMu.Lock()
	err := x.enforce(ctx)
	x.budget.runMu.Unlock()
	if err != nil {
		return IndexUsage{}, err
	}
	return x.Usage(ctx)
}

func (x *Index) enforce(ctx context.Context) error {
	if err := x.measure(ctx); err != nil {
		return err
	}
	limit := x.budget.max.Load()
	x.budget.mu.Lock()
	over := limit > 0 && x.budget.used > limit
	type cand struct {
		path string
		used int64
	}
	var cands []cand
	if over {
		for p := range x.budget.bytes {
			cands = append(cands, cand{path: p})
		}
	}
	x.budget.mu.Unlock()
	if !over {
		return nil
	}
	for i := range cands {
		cands[i].used = x.lastUsed(cands[i].path) // takes Index.mu: not under budget.mu
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].used != cands[j].used {
			return cands[i].used < cands[j].used
		}
		return cands[i].path < cands[j].path
	})
	for _, c := range cands[:len(cands)-1] { // never the most recently used
		x.budget.mu.Lock()
		done := x.budget.used <= limit
		x.budget.mu.Unlock()
		if done {
			break
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		freed, ok, err := x.evict(ctx, c.path, c.used)
		if err != nil {
			return err
		}
		if ok {
			x.budget.evictions.Add(1)
			x.budget.evicted.Add(freed)
			x.metrics.IndexEvictions.Inc()
			x.metrics.IndexEvictedBytes.Add(float64(freed))
			x.log.Info("index disk budget: evicted a session's derived data", "path", c.path, "bytes", freed, "budget", limit)
		}
	}
	x.budget.mu.Lock()
	x.metrics.IndexUsedBytes.Set(float64(x.budget.used))
	x.budget.mu.Unlock()
	return nil
}

// lastUsed is when the session at path was last synced for a request
// (Unix ns; 0 for one not used since contextd started).
func (x *Index) lastUsed(path string) int64 {
	x.mu.Lock()
	s := x.byPath[path]
	x.mu.Unlock()
	if s == nil {
		return 0
	}
	return s.used.Load()
}

// evict drops the derived data of the session at path: its rows, its
// files under texts/ and its in-memory tree and items; it reports the
// bytes freed and false when the session was in use (a sync holds it, a
// request used it after lastUsed, when it was chosen, or its full index is
// pending behind a tree preview) and was left alone.
func (x *Index) evict(ctx context.Context, path string, lastUsed int64) (int64, bool, error) {
	s := x.Session(path)
	if !s.syncMu.TryLock() {
		return 0, false, nil
	}
	defer s.syncMu.Unlock()
	if s.preview != nil || s.used.Load() > lastUsed {
		return 0, false, nil
	}
	if beforeEvict != nil {
		beforeEvict(path)
	}
	x.mu.Lock()
	db := x.db
	x.mu.Unlock()
	if db == nil {
		return 0, false, errIndexClosed
	}
	fileID := s.fileID
	if !s.loaded {
		// Indexed in an earlier run and not loaded since.
		err := db.Reader.QueryRowContext(ctx, `SELECT file_id FROM sessions WHERE path=?`, path).Scan(&fileID)
		if errors.Is(err, sql.ErrNoRows) {
			x.forgetBytes(path)
			return 0, false, nil
		}
		if err != nil {
			return 0, false, err
		}
	}
	if _, err := db.Writer.ExecContext(ctx, `DELETE FROM entry_blocks WHERE file_id=?; DELETE FROM tool_calls WHERE file_id=?; DELETE FROM sessions WHERE file_id=?`, fileID, fileID, fileID); err != nil {
		return 0, false, err
	}
	// A filter builder stops (filters.gen) and the filters are unmapped.
	// The files of a loaded session go once no reader of its snapshots
	// before holds them (textfiles.go: the next index of the session is
	// written under the next generation's names); those of a session
	// not loaded (no reader) go now, every generation.
	s.filters.gen.Add(1)
	s.filters.mu.Lock()
	s.filters.done.Store(0)
	s.filters.mu.Unlock()
	s.filters.unmap()
	var errs []error
	s.mu.Lock()
	var old *textFiles
	if s.files != nil && s.files.fileID == fileID {
		old = s.replaceTextFiles()
	} else {
		paths, _, err := listTextFiles(x.textDir(), fileID)
		errs = append(errs, err)
		for _, p := range paths {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	state, msg, size := s.state, s.stateMsg, s.fileSize
	s.reset()
	s.fileSize, s.state, s.stateMsg = size, state, msg
	s.syncedAt.Store(0)
	s.publishLocked()
	s.mu.Unlock()
	if old != nil {
		errs = append(errs, old.retire())
		if err := os.Remove(s.legacyTextPathOf(fileID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	s.decoded.clear()
	s.treeDecoded.clear()
	return x.forgetBytes(path), true, errors.Join(errs...)
}

// touch records that s is used by a request now (the order of eviction).
func (s *Session) touch() { s.used.Store(time.Now().UnixNano()) }
