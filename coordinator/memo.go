package coordinator

// The Service's memo: one bounded cache of what requests derive from one
// published state of a session. Its kinds (memoKind) are the branch of a
// leaf, the Local windows of a branch, their search order, the /branch
// projection, /context's pairing list, search_contents answers and
// modeHint's marks of a tree; each is filled by one derive function
// (memo_kinds.go).
//
// Invariants:
//   - Key: (session, generation, leaf, rules, kind, and a search's or a
//     pairing list's arguments) (memoKey). A store.View's Generation
//     names one published state of its session (store/snapshot.go: two
//     views of one generation read the same state), so each payload is a
//     function of its key. The memo is never the authority: a Service
//     without it (Service.memo nil) answers the same
//     (TestCachedAnswersMatchUncached, TestConcurrentAnswersMatchCold).
//   - Derivation runs without the memo's lock, once per key: requests for
//     a key being derived wait for it (32 clients repeating a search scan
//     the texts once). A derivation that fails is not kept; whoever
//     waited for it derives for itself.
//   - Payloads are immutable once stored, and handed out shared: slices
//     are read-only up to their length. A payload derived incrementally
//     from another (a branch extended by one leaf, a pairing list by the
//     appended messages) writes past the other's length in place only by
//     claiming the array's filled length (arrayTail: the tail of the
//     array is owned by the array, not by a memo entry), else copies
//     (TestCachedBranchKeepsItsSeqsAfterSiblingExtension).
//   - Generations: for each session the memo keeps the entries of the
//     newest generation it was asked for and of the one before it; when a
//     newer generation comes, the entries of older ones are dropped
//     (TestMemoDropsOlderGenerations). The previous generation's entries
//     answer requests still reading it and are the bases of incremental
//     derivation, which checks the base's tree lineage and length itself
//     (a rewrite or rebuild makes a new lineage): /context after one
//     appended entry walks that entry, not the whole branch. A request
//     reading an older generation derives its answer without storing it.
//   - Bounded (TestMemoBounds): at most maxEntries entries, perSession of
//     one session (of them at most searches search answers, so that
//     distinct searches do not evict what /context reads), and maxBytes
//     of payload by estimate (memoSize); the least recently used entry
//     goes first, a search answer before any other over the global
//     bounds. The entry just stored stays even when it alone is over
//     the byte bound.

import (
	"errors"
	"reflect"
	"sync"

	"contextd/session"
	"contextd/store"
)

// memoKind is what a memo entry holds.
type memoKind uint8

const (
	kindBranch     memoKind = iota + 1 // the branch of leaf: *branchVal
	kindWindows                        // history.LocalWindows of the branch: *windowsVal
	kindOrder                          // history.SearchOrder of the Local windows: history.ItemList
	kindProjection                     // Tree.Project of the branch under rules (/branch): []session.ContextMessage
	kindPairs                          // /context's pairing list from window "from": *pairCache
	kindSearch                         // one search_contents answer (search): history.ItemsResult
	kindMarks                          // modeHint's marks of the tree (leaf "", rules 0): treeMarks
	kindNotes                          // the note state of the branch: *noteVal
)

// memoKey identifies one memo entry: everything its payload is a
// function of.
type memoKey struct {
	// sess keeps the session alive while cached, so another cannot
	// reuse its address.
	sess  *store.Session
	gen   uint64 // store.View.Generation
	leaf  string // an entry id ("" for kindMarks)
	rules session.Rules
	kind  memoKind
	// from is the first window of /context's slice (kindPairs).
	from string
	// search is a search_contents answer's mode, agent and arguments
	// (kindSearch).
	search searchKey
}

// keyOf is the memo key of kind for leaf (an entry id, not "") in v read
// for t; ok is false when there is none (no session, no tree, no leaf).
func keyOf(t *Target, v *store.View, leaf string, kind memoKind) (memoKey, bool) {
	if t == nil || t.Session == nil || v.Tree == nil || leaf == "" {
		return memoKey{}, false
	}
	return memoKey{sess: t.Session, gen: v.Generation(), leaf: leaf, rules: t.Rules(), kind: kind}, true
}

// memoEntry is one payload, or the derivation that computes it.
type memoEntry struct {
	key  memoKey
	done chan struct{} // closed once val or err is set
	// val and err are set once, under memo.mu, before done is closed;
	// ready says they are.
	val   any
	err   error
	ready bool
	size  int    // memoSize of val once ready
	used  uint64 // memo.clock at the last use
}

// memoSession is what the memo keeps per session: the generations it
// holds entries of, and how many.
type memoSession struct {
	cur, prev uint64 // the newest generation asked for, and the one before (0: none)
	n         int    // entries
	searches  int    // kindSearch entries
}

// memo is the Service's cache of derived answers (see the invariants at
// the top of this file); safe for concurrent use.
type memo struct {
	maxEntries, perSession, searches, maxBytes int

	mu       sync.Mutex
	clock    uint64
	bytes    int
	entries  map[memoKey]*memoEntry
	sessions map[*store.Session]*memoSession
}

// newMemo is the Service's memo: 128 entries, 32 per session of which 16
// search answers, 256 MiB of payload by estimate. One /context of a state derives 4 entries (marks,
// branch, windows, pairing list), a search 2 (order, answer), /branch
// one. A leaf of a 1 GiB session (a quarter-million entries) takes about
// 35 MiB by estimate, most of it the pairing list (104 bytes a message);
// its previous generation's entries, counted again although they share
// their arrays with the current ones, about as much. The byte bound
// keeps that pair for a few such sessions, not for a session of 2
// million messages (208 MB of pairing list alone), whose entries then
// evict each other.
func newMemo() *memo {
	return &memo{maxEntries: 128, perSession: 32, searches: 16, maxBytes: 256 << 20}
}

// errDeriveFailed is what waiters see of a derivation that panicked.
var errDeriveFailed = errors.New("memo: the derivation did not finish")

// memoized returns the payload of k: stored, or derived by derive (which
// returns the payload and its memoSize) once while concurrent requests
// for k wait for it. m nil derives every time. The payload is shared:
// callers must not modify it.
func memoized[T any](m *memo, k memoKey, derive func() (T, int, error)) (T, error) {
	if m == nil {
		v, _, err := derive()
		return v, err
	}
	m.mu.Lock()
	keep := m.advance(k.sess, k.gen)
	if e, ok := m.entries[k]; ok {
		m.touch(e)
		m.mu.Unlock()
		<-e.done
		if e.err == nil {
			return e.val.(T), nil
		}
		v, _, err := derive()
		return v, err
	}
	if !keep {
		m.mu.Unlock()
		v, _, err := derive()
		return v, err
	}
	e := &memoEntry{key: k, done: make(chan struct{})}
	m.insert(e)
	m.mu.Unlock()

	var v T
	size, err := 0, errDeriveFailed
	defer func() {
		m.mu.Lock()
		e.val, e.err, e.ready = v, err, true
		if m.entries[k] == e {
			if err != nil {
				m.remove(e)
			} else {
				e.size = size
				m.bytes += size
				m.bound(e)
			}
		}
		m.mu.Unlock()
		close(e.done)
	}()
	v, size, err = derive()
	return v, err
}

// memoBase is a stored payload that an incremental derivation may start
// from.
type memoBase[T any] struct {
	key memoKey
	val T
}

// memoBases returns the stored payloads of kind for k's session and rules
// (of every generation the memo holds), for the derivation of k to
// extend; the caller checks that a base is a prefix of what it derives.
func memoBases[T any](m *memo, k memoKey, kind memoKind) []memoBase[T] {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []memoBase[T]
	for _, e := range m.entries {
		if e.ready && e.err == nil && e.key.sess == k.sess && e.key.kind == kind && e.key.rules == k.rules {
			out = append(out, memoBase[T]{key: e.key, val: e.val.(T)})
		}
	}
	return out
}

// advance records that gen of sess is asked for (m.mu held): a newer
// generation than the session's newest drops the entries of the
// generations before the newest (which becomes the previous). It reports
// whether entries of gen are kept: the newest and the previous only.
func (m *memo) advance(sess *store.Session, gen uint64) bool {
	ss := m.sessions[sess]
	switch {
	case ss == nil:
		return true // insert records the session
	case gen > ss.cur:
		ss.prev, ss.cur = ss.cur, gen
		for k, e := range m.entries {
			if k.sess == sess && k.gen < ss.prev {
				m.remove(e)
			}
		}
		return true
	}
	return gen == ss.cur || gen == ss.prev
}

// insert stores e (m.mu held), then evicts beyond the bounds.
func (m *memo) insert(e *memoEntry) {
	if m.entries == nil {
		m.entries = map[memoKey]*memoEntry{}
		m.sessions = map[*store.Session]*memoSession{}
	}
	ss := m.sessions[e.key.sess]
	if ss == nil {
		ss = &memoSession{cur: e.key.gen}
		m.sessions[e.key.sess] = ss
	}
	ss.n++
	if e.key.kind == kindSearch {
		ss.searches++
	}
	m.entries[e.key] = e
	m.touch(e)
	m.bound(e)
}

// touch marks e used now (m.mu held).
func (m *memo) touch(e *memoEntry) {
	m.clock++
	e.used = m.clock
}

// remove drops e (m.mu held); a session left with no entry is forgotten.
func (m *memo) remove(e *memoEntry) {
	delete(m.entries, e.key)
	m.bytes -= e.size
	if ss := m.sessions[e.key.sess]; ss != nil {
		if e.key.kind == kindSearch {
			ss.searches--
		}
		if ss.n--; ss.n == 0 {
			delete(m.sessions, e.key.sess)
		}
	}
}

// bound evicts the least recently used entries other than keep until the
// bounds hold (m.mu held): first the search answers of keep's session
// beyond searches, then its entries beyond perSession, then beyond
// maxEntries and maxBytes the search answers of any session, then any.
func (m *memo) bound(keep *memoEntry) {
	ss := m.sessions[keep.key.sess]
	for ss != nil && ss.searches > m.searches {
		if !m.evict(func(e *memoEntry) bool { return e != keep && e.key.sess == keep.key.sess && e.key.kind == kindSearch }) {
			break
		}
	}
	for ss != nil && ss.n > m.perSession {
		if !m.evict(func(e *memoEntry) bool { return e != keep && e.key.sess == keep.key.sess }) {
			break
		}
	}
	// Over the global bounds, search answers of any session go first:
	// with a client searching eight sessions in turn, their answers
	// filled the entries and evicted the branches and pair lists each
	// /context extends, so every /context derived its window's pairs
	// again (the bench's many-clients row).
	for len(m.entries) > m.maxEntries || m.bytes > m.maxBytes {
		if m.evict(func(e *memoEntry) bool { return e != keep && e.key.kind == kindSearch }) {
			continue
		}
		if !m.evict(func(e *memoEntry) bool { return e != keep }) {
			break
		}
	}
}

// evict removes the least recently used entry that ok accepts (m.mu
// held); false when there is none.
func (m *memo) evict(ok func(*memoEntry) bool) bool {
	var lru *memoEntry
	for _, e := range m.entries {
		if ok(e) && (lru == nil || e.used < lru.used) {
			lru = e
		}
	}
	if lru == nil {
		return false
	}
	m.remove(lru)
	return true
}

// memoSize estimates the bytes of n values of T held in slices
// (reflect's size of T; what they point to is counted by the caller when
// it is theirs alone).
func memoSize[T any](n int) int { return n * int(reflect.TypeFor[T]().Size()) }
