package coordinator

import (
	"fmt"
	"sync"

	"contextd/session"
)

// Concurrent writers seen in the file alone (docs/design.md §4 "Two Pis on
// one session"): a Pi without the extension, one whose registration
// contextd lost in a restart, or one registered under another pid still
// leaves a mark. One Pi appends each assistant message and each tool
// result as the child of the entry it appended just before (its leaf:
// SessionManager._appendEntry sets the leaf to every entry it appends, and
// a run never navigates), so such an entry whose parent is an earlier
// entry of the file, not the one right before it, was written while
// another process appended between them: two runs overlapped in one file.
// A person's /tree navigation cannot do that (it happens between runs and
// its first entry is a user message, a branch summary or a custom entry),
// nor can a torn or skipped line (its child's parent is then missing, not
// earlier). Two Pis whose runs never overlap look like navigation and are
// left to the registrations (writers.go).

// interleaveRecent is how many of the file's last entries the latest
// interleaved entry must be among to be reported: after that many entries
// written by one Pi alone the file is taken as settled, and the person,
// told once already, is not told again.
const interleaveRecent = 200

// interleaveScan is how far one session file was scanned and the latest
// interleaved entry found (seq -1: none).
type interleaveScan struct {
	lineage *session.Tree
	n       int
	seq     int
}

// interleaves caches each session file's scan, so that each answer scans
// only the entries appended since the last.
type interleaves struct {
	mu     sync.Mutex
	byPath map[string]interleaveScan
}

func newInterleaves() *interleaves { return &interleaves{byPath: map[string]interleaveScan{}} }

// latest returns the seq of the latest interleaved entry of tr (the tree
// of the file at path), or -1.
func (x *interleaves) latest(path string, tr *session.Tree) int {
	x.mu.Lock()
	sc, ok := x.byPath[path]
	x.mu.Unlock()
	if !ok || sc.lineage != tr.Lineage() || sc.n > tr.Len() {
		sc = interleaveScan{lineage: tr.Lineage(), seq: -1}
	}
	for i := max(sc.n, 1); i < tr.Len(); i++ {
		if tr.Type(i) != session.TypeMessage {
			continue
		}
		e := tr.Entry(i)
		if (e.Role != session.RoleAssistant && e.Role != session.RoleToolResult) ||
			e.ParentID == "" || e.ParentID == tr.ID(i-1) {
			continue
		}
		if _, found := tr.Lookup(e.ParentID); found {
			sc.seq = i
		}
	}
	sc.n = tr.Len()
	x.mu.Lock()
	x.byPath[path] = sc
	x.mu.Unlock()
	return sc.seq
}

// problem is the concurrent_writers problem the file at path shows, or
// nil: its latest interleaved entry is among its last interleaveRecent
// entries.
func (x *interleaves) problem(path string, tr *session.Tree) *SessionProblem {
	if tr == nil {
		return nil
	}
	seq := x.latest(path, tr)
	if seq < 0 || tr.Len()-seq > interleaveRecent {
		return nil
	}
	e := tr.Entry(seq)
	return &SessionProblem{Reason: "concurrent_writers", Line: e.Line, Detail: fmt.Sprintf(
		"two Pi processes appended to this session at the same time (entry %s, line %d, continues an earlier entry, not the one before it): "+
			"each sees only its own branch, so windows and notes written in one are not in the other; "+
			"close all but one Pi on this session (or continue in a copy with /fork), and find the other's work with /tree", e.ID, e.Line)}
}
