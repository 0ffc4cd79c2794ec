package store

import (
	"context"
	"fmt"
	"runtime/debug"

	"contextd/session"
)

// StateTooLarge is the state of a session whose file holds more entries
// than the memory limit can index (EntryBudget): it is not indexed, its
// file is untouched, and every route that needs its content answers the
// problem session_too_large (docs/security.md "Many tiny entries").
const StateTooLarge FileState = "too_large"

// EntryRetainedBytes is the memory one indexed entry costs at the peak of
// its session's cold index and first /context: the entry tree, its id
// index, the 32-byte ItemMeta, the parse buffers and /context's cached
// pair list (104 bytes, coordinator.PairMessage). Measured by hand on a
// file of 2,000,000 tiny user messages (97 bytes a line, 8-hex ids on one
// parentId chain, 185 MiB) under the default --memory-limit 128 MiB:
// contextd's peak RSS (VmHWM) after GET /branch, POST /context and GET
// /v1/sessions/{id} was 694 MiB against 21 MiB before the first request,
// (694-21) MiB / 2,000,000 = 352.8 bytes an entry; 352 here.
const EntryRetainedBytes = 352

// EntryBudget is the most entries one session may hold to be indexed
// under the Go heap limit memoryLimit (bytes; --memory-limit, 128 MiB by
// default): three quarters of the limit divided by EntryRetainedBytes, so
// a session at the budget keeps about 96 MiB of the default 128 MiB and
// the rest serves SQLite, the HTTP answers and the other sessions.
// 128 MiB gives 285,975 entries (the 1 GiB benchmark session has 256,996;
// docs/benchmarks.md). With it, the 2,000,000-entry file is refused at a
// peak RSS of 77 MiB when a tree read comes first (the tree preview) and
// 168 MiB when /context does (the full ingest), against 694 MiB before.
// 0 (memoryLimit ≤ 0, no limit): no budget.
func EntryBudget(memoryLimit int64) int {
	if memoryLimit <= 0 {
		return 0
	}
	return int(memoryLimit / 4 * 3 / EntryRetainedBytes)
}

// errTooLarge stops an ingest or a tree preview at the entry past the
// budget: read is how many bytes of the file were parsed by then, id the
// session header's id.
type errTooLarge struct {
	read int64
	id   string
	// The stat of the file a tree preview read (set by buildPreview).
	dev, ino uint64
	size     int64
}

func (e *errTooLarge) Error() string {
	return fmt.Sprintf("the session has more entries than the memory limit can index (after %d bytes)", e.read)
}

// refusal is a session refused as too large, as of one stat of its file:
// while the file keeps its identity and does not shrink (Pi only appends),
// it stays refused without being read again.
type refusal struct {
	dev, ino uint64
	size     int64
	id       string // the session header's id, for FindByID
	msg      string
}

// still reports whether the file (identity dev/ino, size) is the one
// refused, or that file grown.
func (r *refusal) still(dev, ino uint64, size int64) bool {
	return r != nil && r.dev == dev && r.ino == ino && size >= r.size
}

// overBudget is the error of the count-th entry parsed when it is past
// the index's entry budget (nil otherwise); off is the entry line's offset.
func (x *Index) overBudget(count int, off int64, h *session.Header) error {
	if x.maxEntries > 0 && count > x.maxEntries {
		tl := &errTooLarge{read: off}
		if h != nil {
			tl.id = h.ID
		}
		return tl
	}
	return nil
}

// refuse forgets what was indexed of the session (rows, texts, tree:
// the memory is handed back to the OS at once, so the peak stays near
// the limit), records the refusal and publishes StateTooLarge. The
// caller holds syncMu.
func (s *Session) refuse(ctx context.Context, db *DB, tl *errTooLarge, dev, ino uint64, size int64) error {
	if err := s.clear(ctx, db); err != nil {
		return err
	}
	s.preview = nil
	r := &refusal{dev: dev, ino: ino, size: size, id: tl.id, msg: s.x.tooLargeMsg(tl.read, size)}
	s.mu.Lock()
	s.refused = r
	s.fileSize = size
	s.state, s.stateMsg = StateTooLarge, r.msg
	s.publishLocked()
	s.mu.Unlock()
	s.x.log.Warn("session not indexed: more entries than the memory limit can hold", "path", s.path, "max_entries", s.x.maxEntries, "memory_limit", s.x.opts.MemoryLimit)
	debug.FreeOSMemory()
	return nil
}

// tooLargeMsg is the sentence of a refused session whose first read bytes
// (of size) held more than the entry budget: what to do, in Pi terms. The
// limit it suggests holds the whole file's entries at the density of the
// bytes read, with a tenth to spare: twice the current limit (in whole
// MiB), doubled until it does.
func (x *Index) tooLargeMsg(read, size int64) string {
	need := (x.opts.MemoryLimit*2 + 1<<20 - 1) &^ (1<<20 - 1) // whole MiB
	if read > 0 {
		entries := float64(x.maxEntries) * float64(size) / float64(read)
		for float64(EntryBudget(need)) < entries*1.1 {
			need *= 2
		}
	}
	return fmt.Sprintf("this session has more than %d entries, more than contextd's memory limit (--memory-limit %s) can index; restart contextd with --memory-limit %s and /reload, or start a new Pi session (/new)",
		x.maxEntries, sizeText(x.opts.MemoryLimit), sizeText(need))
}

// sizeText writes n bytes in the largest binary unit that divides it
// (GiB, MiB, KiB), as --memory-limit accepts it back.
func sizeText(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return fmt.Sprintf("%dGiB", n>>30)
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dMiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprint(n)
}
