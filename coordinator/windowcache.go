package coordinator

// The Service's cache of what requests derive from a branch (windowCache):
// the branch of a leaf, its Local windows, their search order, the /branch
// projection, /context's pairing list, search_contents answers, and
// modeHint's marks of a tree.
//
// Invariants:
//   - The cache is never the authority: every entry is keyed by what its
//     payload is a function of (windowKey: the session, the tree's
//     Lineage, the tree length, the item count, the bytes indexed, the
//     leaf, the Pi rules), so a sync that adds entries or bytes, or a
//     rewrite (a new lineage), makes new keys; a Service without the
//     cache (Service.cache nil) answers the same (TestCachedAnswersMatchUncached,
//     TestConcurrentAnswersMatchCold).
//   - Payloads are immutable once published to other requests: slices are
//     read-only up to their length; an extension past it writes in place
//     only by claiming the array's filled length (arrayTail), else copies.
//   - Derivation runs without the cache's lock (mu guards the entry list
//     and the maps only); a payload derived concurrently for the same key
//     is served once.
//   - Bounded: 8 entries, 2 per session; search answers about 1 MiB per
//     entry; marks of 256 sessions, holding their trees weakly. Entries of
//     a session whose tree was replaced are dropped when the next one is
//     added.

import (
	"slices"
	"sync"
	"weak"

	"contextd/history"
	"contextd/session"
	"contextd/store"
)

// newWindowCache is the Service's cache of the branches, and the Local
// windows, of the last few leaves read: 8 entries, at most 2 per session.
func newWindowCache() *windowCache { return &windowCache{max: 8, perSession: 2} }

// windowKey identifies one state of a session and one leaf: everything the
// branch of the leaf and its Local windows depend on. The cache is never
// the authority: a sync that adds entries or bytes, or rewrites the file
// (a new tree), changes the key. tree is the view's Tree.Lineage: one per
// append-only sequence of entries, whatever snapshot of it the view
// holds. The pointers keep the session and tree alive while cached, so
// another cannot reuse their addresses.
type windowKey struct {
	sess  *store.Session
	tree  *session.Tree
	n     int   // tree length
	items int   // len(View.Items)
	bytes int64 // View.Bytes
	leaf  string
	rules session.Rules // the registration's Pi rules: context edits apply under 1.x only
}

// keyOf is the key of leaf (an entry id, not "") in v.
func keyOf(t *Target, v *store.View, leaf string) (windowKey, bool) {
	if t == nil || t.Session == nil || v.Tree == nil || leaf == "" {
		return windowKey{}, false
	}
	return windowKey{sess: t.Session, tree: v.Tree.Lineage(), n: v.Tree.Len(), items: len(v.Items), bytes: v.Bytes, leaf: leaf, rules: t.Rules()}, true
}

type windowEntry struct {
	key  windowKey
	seqs []int // the branch (read-only: Tree.Branch allocates it per request)
	// tail is the claim on the spare capacity of seqs' array (nil: none
	// may be written), shared with every slice of that array.
	tail  *arrayTail
	cycle bool
	wins  []history.Window // guarded by windowCache.mu, set once when built
	built bool
	// ordered is history.SearchOrder of the windows, once built (guarded
	// by windowCache.mu).
	ordered history.ItemList
	// msgs is Tree.Project of the branch under key.rules, once a /branch
	// asked for it (guarded by windowCache.mu; read-only once set).
	msgs []session.ContextMessage
	// pairs is what /context's pairing rule reads of the branch, once a
	// /context built it (guarded by windowCache.mu; read-only once set).
	pairs *pairCache
	// searches are search_contents answers of this state and leaf
	// (guarded by windowCache.mu), about searchBytes in all.
	searches    map[searchKey]*searchEntry
	searchBytes int
	// max is the largest seq of seqs, set by maxOnce.
	maxOnce sync.Once
	max     int
	used    uint64
}

// windowCache is a small LRU of branches and their Local windows, safe
// for concurrent use. Entries are immutable once their windows are built.
type windowCache struct {
	max, perSession int

	mu      sync.Mutex
	clock   uint64
	entries []*windowEntry
	// hints is modeHint's scan of each session's tree (guarded by mu; one
	// per session, replaced when the session's tree is; at most maxHints,
	// and they hold their tree weakly).
	hints map[*store.Session]treeMarks
}

// maxHints bounds windowCache.hints: past it, a session's scan replaces
// another's (which the next modeHint of that session scans again).
const maxHints = 256

// marks returns the treeMarks of tr, sess's tree in a view, extended from
// the last scan of sess when tr is the same tree. The scan runs without
// the cache's lock (a first scan of a 1 GiB session reads a
// quarter-million entries).
func (c *windowCache) marks(sess *store.Session, tr *session.Tree) treeMarks {
	lineage := weak.Make(tr.Lineage())
	c.mu.Lock()
	m := c.hints[sess]
	c.mu.Unlock()
	if m.tree == lineage && m.n == tr.Len() {
		return m
	}
	if m.tree == lineage && m.n > tr.Len() {
		// An older view of the same tree (a request that read before
		// the last sync): scan it alone.
		var o treeMarks
		o.scan(tr)
		return o
	}
	m.scan(tr)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.hints[sess]; ok && old.tree == m.tree && old.n >= m.n {
		return m // a concurrent scan got as far
	}
	if c.hints == nil {
		c.hints = map[*store.Session]treeMarks{}
	}
	if _, ok := c.hints[sess]; !ok && len(c.hints) >= maxHints {
		for other := range c.hints {
			delete(c.hints, other)
			break
		}
	}
	c.hints[sess] = m
	return m
}

func (c *windowCache) find(k windowKey) *windowEntry {
	for _, e := range c.entries {
		if e.key == k {
			c.clock++
			e.used = c.clock
			return e
		}
	}
	return nil
}

// branch returns the cached branch of k, with the tail of its array.
func (c *windowCache) branch(k windowKey) ([]int, *arrayTail, bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.find(k); e != nil {
		return e.seqs, e.tail, e.cycle, true
	}
	return nil, nil, false, false
}

// extendBranch returns the branch of k's leaf as the cached branch of its
// parent plus the leaf, when the parent's branch is cached for the same
// tree (the usual case right after Pi appended an entry): Tree.Branch
// would walk the whole branch again. It declines (false) unless the leaf
// comes after every entry of that branch, so that the leaf cannot already
// be on it (a parent cycle) and the walk from the leaf is exactly the
// leaf, then the parent's walk. The tail returned is that of the branch's
// array.
func (c *windowCache) extendBranch(k windowKey, tr *session.Tree) ([]int, *arrayTail, bool) {
	ls, ok := tr.Lookup(k.leaf)
	if !ok {
		return nil, nil, false
	}
	parent := tr.ParentID(ls)
	if parent == "" {
		return nil, nil, false
	}
	c.mu.Lock()
	var base *windowEntry
	for _, e := range c.entries {
		if e.key.sess == k.sess && e.key.tree == k.tree && e.key.rules == k.rules && e.key.leaf == parent && e.key.n <= k.n && !e.cycle &&
			(base == nil || e.key.n > base.key.n) {
			base = e
		}
	}
	c.mu.Unlock()
	if base == nil || len(base.seqs) == 0 || ls <= base.maxSeq() {
		return nil, nil, false
	}
	seqs, tail := appendOwned(base.seqs, base.tail, ls)
	return seqs, tail, true
}

// maxSeq is the largest seq on e's branch (computed once; e.seqs is
// read-only).
func (e *windowEntry) maxSeq() int {
	e.maxOnce.Do(func() { e.max = slices.Max(e.seqs) })
	return e.max
}

// addBranch caches the branch of k (without windows), tail the tail of
// its array (nil: none); maxSeq is the largest of seqs when the caller
// knows it, else -1.
func (c *windowCache) addBranch(k windowKey, seqs []int, tail *arrayTail, cycle bool, maxSeq int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.find(k) == nil {
		e := &windowEntry{key: k, seqs: seqs, tail: tail, cycle: cycle}
		if maxSeq >= 0 {
			e.maxOnce.Do(func() { e.max = maxSeq })
		}
		c.add(e)
	}
}

// windows returns the windows of key k, whose branch is seqs (tail the
// tail of its array, nil: none). build(base, from) must return the
// windows of seqs given base = the windows of seqs[:from] (nil, 0: from
// scratch).
func (c *windowCache) windows(k windowKey, seqs []int, tail *arrayTail, cycle bool, build func(base []history.Window, from int) []history.Window) []history.Window {
	c.mu.Lock()
	if e := c.find(k); e != nil && e.built {
		c.mu.Unlock()
		return e.wins
	}
	var bases []*windowEntry
	for _, e := range c.entries {
		if e.built && e.key.sess == k.sess && e.key.tree == k.tree && e.key.rules == k.rules && e.key.n <= k.n && e.key.items <= k.items && len(e.seqs) <= len(seqs) {
			bases = append(bases, e)
		}
	}
	c.mu.Unlock()

	// The longest cached branch that is a prefix of this one. The tree is
	// append-only while its pointer stays the same, so the entries and
	// items of the prefix are what they were when its windows were built.
	var base *windowEntry
	for _, e := range bases {
		if (base == nil || len(e.seqs) > len(base.seqs)) && slices.Equal(e.seqs, seqs[:len(e.seqs)]) {
			base = e
		}
	}
	var wins []history.Window
	if base != nil {
		wins = build(base.wins, len(base.seqs))
	} else {
		wins = build(nil, 0)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch e := c.find(k); {
	case e == nil:
		c.add(&windowEntry{key: k, seqs: seqs, tail: tail, cycle: cycle, wins: wins, built: true})
	case !e.built:
		e.wins, e.built = wins, true
	default:
		wins = e.wins // built concurrently: serve one
	}
	return wins
}

// pairsFor returns the pairCache of k (branch seqs) for from, from the
// cache or from build(base, added) (called without the lock), where base
// is the pairCache of the longest cached branch of the same tree that is
// a prefix of seqs and added the rest of seqs (nil, nil: none). An entry
// evicted meanwhile is not re-added.
func (c *windowCache) pairsFor(k windowKey, seqs []int, from string, build func(base *pairCache, added []int) (*pairCache, error)) (*pairCache, error) {
	c.mu.Lock()
	if e := c.find(k); e != nil && e.pairs != nil && e.pairs.from == from {
		c.mu.Unlock()
		return e.pairs, nil
	}
	var bases []*windowEntry
	for _, e := range c.entries {
		if e.pairs != nil && e.pairs.from == from && e.key.sess == k.sess && e.key.tree == k.tree && e.key.rules == k.rules && e.key.n <= k.n && len(e.seqs) < len(seqs) {
			bases = append(bases, e)
		}
	}
	c.mu.Unlock()
	var base *windowEntry
	for _, e := range bases {
		if (base == nil || len(e.seqs) > len(base.seqs)) && slices.Equal(e.seqs, seqs[:len(e.seqs)]) {
			base = e
		}
	}
	var pc *pairCache
	var err error
	if base != nil {
		pc, err = build(base.pairs, seqs[len(base.seqs):])
	} else {
		pc, err = build(nil, nil)
	}
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.find(k); e != nil && e.pairs == nil {
		e.pairs = pc
	}
	return pc, nil
}

// maxSearchBytes bounds the answers kept per cache entry (about their
// JSON size): 8 entries keep at most 8 MiB of search answers.
const maxSearchBytes = 1 << 20

// searchEntry is one cached search_contents answer, or the search that
// computes it (done closed when res and err are set).
type searchEntry struct {
	done chan struct{}
	res  history.ItemsResult
	err  error
}

// search returns the answer of sk in k's state of the session: cached,
// or computed by run once while concurrent requests for the same answer
// wait for it (32 clients repeating a query scan the texts once). Errors
// are not kept. Callers get their own copy of the items.
func (c *windowCache) search(k windowKey, sk searchKey, run func() (history.ItemsResult, error)) (history.ItemsResult, error) {
	c.mu.Lock()
	e := c.find(k)
	if e == nil {
		c.mu.Unlock()
		return run()
	}
	if se, ok := e.searches[sk]; ok {
		c.mu.Unlock()
		<-se.done
		if se.err != nil {
			return run()
		}
		return history.ItemsResult{Source: se.res.Source, Items: slices.Clone(se.res.Items)}, nil
	}
	if e.searches == nil {
		e.searches = map[searchKey]*searchEntry{}
	}
	se := &searchEntry{done: make(chan struct{})}
	e.searches[sk] = se
	c.mu.Unlock()

	se.res, se.err = run()
	size := 0
	for _, it := range se.res.Items {
		size += 128 + len(it.WindowID) + len(it.ItemID) + len(it.TruncatedContent)
	}
	c.mu.Lock()
	if se.err != nil {
		delete(e.searches, sk)
	} else {
		e.searchBytes += size + len(sk.query)
		if e.searchBytes > maxSearchBytes {
			// Full: keep only this answer.
			clear(e.searches)
			e.searches[sk] = se
			e.searchBytes = size + len(sk.query)
		}
	}
	c.mu.Unlock()
	close(se.done)
	if se.err != nil {
		return history.ItemsResult{}, se.err
	}
	return history.ItemsResult{Source: se.res.Source, Items: slices.Clone(se.res.Items)}, nil
}

// projection returns the context messages of k's branch (Tree.Project),
// from build (called without the lock) when k's entry has none yet. An
// entry evicted meanwhile is not re-added: the result then serves this
// request alone.
func (c *windowCache) projection(k windowKey, build func() []session.ContextMessage) []session.ContextMessage {
	c.mu.Lock()
	if e := c.find(k); e != nil && e.msgs != nil {
		c.mu.Unlock()
		return e.msgs
	}
	c.mu.Unlock()
	msgs := build()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.find(k); e != nil {
		if e.msgs == nil {
			e.msgs = msgs
		}
		return e.msgs
	}
	return msgs
}

// searchOrder returns the SearchOrder of the windows of k, from build
// (called without the lock) on the first call. Only entries whose windows
// are built keep it; otherwise it is built for this request alone.
func (c *windowCache) searchOrder(k windowKey, build func() history.ItemList) history.ItemList {
	c.mu.Lock()
	if e := c.find(k); e != nil && e.ordered != nil {
		c.mu.Unlock()
		return e.ordered
	}
	c.mu.Unlock()
	o := build()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.find(k); e != nil && e.built {
		if e.ordered == nil {
			e.ordered = o
		}
		return e.ordered
	}
	return o
}

// add inserts e (c.mu held), dropping entries of the same session for
// another tree (the file was rewritten), then the least recently used
// beyond the per-session and global bounds.
func (c *windowCache) add(e *windowEntry) {
	c.clock++
	e.used = c.clock
	keep := c.entries[:0]
	same := 0
	for _, o := range c.entries {
		if o.key.sess == e.key.sess {
			if o.key.tree != e.key.tree {
				continue
			}
			same++
		}
		keep = append(keep, o)
	}
	clear(c.entries[len(keep):])
	c.entries = append(keep, e)
	for ; same+1 > c.perSession; same-- {
		c.evict(func(o *windowEntry) bool { return o.key.sess == e.key.sess && o != e })
	}
	for len(c.entries) > c.max {
		c.evict(func(o *windowEntry) bool { return o != e })
	}
}

// evict removes the least recently used entry that ok accepts.
func (c *windowCache) evict(ok func(*windowEntry) bool) {
	i := -1
	for j, o := range c.entries {
		if ok(o) && (i < 0 || o.used < c.entries[i].used) {
			i = j
		}
	}
	if i < 0 {
		return
	}
	last := len(c.entries) - 1
	c.entries[i] = c.entries[last]
	c.entries[last] = nil
	c.entries = c.entries[:last]
}
