package coordinator

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"contextd"
	"contextd/history"
	"contextd/notes"
	"contextd/session"
	"contextd/store"
)

// CallContext is the `context` object of a Codex mirror request
// (reference codex-history-notes.md §1.6 "Body"), plus contextd's optional
// leaf_id: the extension's live Pi leaf (default: the last entry of the
// file).
type CallContext struct {
	SessionID        string `json:"session_id" minLength:"1" maxLength:"256" pattern:"^[A-Za-z0-9][A-Za-z0-9._:@+-]*$" patternDescription:"letters, digits and . _ : @ + - (a Pi session id is a UUID)" doc:"Pi session id (the session header's id): starts with a letter or digit, then letters, digits and . _ : @ + - (Pi writes UUIDs)."`
	CurrentAgentName string `json:"current_agent_name,omitempty" maxLength:"1024" doc:"Agent path of the caller; default the registered agent name (/root)."`
	LeafID           string `json:"leaf_id,omitempty" maxLength:"256" doc:"contextd extension: Pi's live leaf entry id. Default: the last entry of the file."`
}

// windowSource is how a mode reads the history of a branch: Local builds
// the windows of the active branch (reference §3.3, cached per leaf), Tree
// reads archived windows through valid manifests, then the current window
// (treeArchives). windowsOf chooses one by the target's mode.
type windowSource interface {
	// view is the history view of b's branch for agent. Errors are I/O
	// errors reading manifests from the session file.
	view(b *Branch, agent string) (*history.View, error)
	// searchOrder is history.SearchOrder(view) from a cache, nil when the
	// source keeps none (search then orders the view itself).
	searchOrder(b *Branch, view *history.View) history.ItemList
}

// localSource is the Local windowSource: the Service's window cache.
type localSource struct{ s *Service }

func (l localSource) view(b *Branch, agent string) (*history.View, error) {
	return &history.View{Agent: agent, Windows: l.s.localWindows(b), Texts: b.V.Texts()}, nil
}

func (l localSource) searchOrder(b *Branch, view *history.View) history.ItemList {
	return l.s.localSearchOrder(b, view)
}

// windowsOf is the windowSource of b's target: Tree mode reads archives,
// every other mode the Local windows.
func (s *Service) windowsOf(b *Branch) windowSource {
	if b.Target.Mode == contextd.ModeTree {
		return s.tree
	}
	return localSource{s}
}

// historyView builds the history view of a branch for the target's mode
// (windowsOf).
func (s *Service) historyView(b *Branch, agent string) (*history.View, error) {
	return s.windowsOf(b).view(b, agent)
}

// localWindows returns history.LocalWindows of b's branch. The windows are
// shared, read-only, with other requests: callers must not modify them.
//
// They come from the Service's cache when a request already built them for the
// same state of the session and the same leaf. Otherwise they are built,
// by extending the cached windows of an earlier branch of the same tree
// that is a prefix of this one (the usual case after Pi appended entries),
// else from scratch, and cached.
//
// Context edits (Branch.Refs) change how earlier items read: windows are
// extended only when the new part of the branch holds no context_edit,
// else built again from scratch.
func (s *Service) localWindows(b *Branch) []history.Window {
	k, ok := keyOf(b.Target, b.V, b.Leaf)
	if !ok || s.cache == nil {
		return history.LocalWindows(b.V.Tree, b.Seqs, b.Refs())
	}
	return s.cache.windows(k, b.Seqs, b.Cycle, func(base []history.Window, from int) []history.Window {
		ref := b.Refs()
		for _, sq := range b.Seqs[from:] {
			if b.V.Tree.Entries[sq].Type == session.TypeContextEdit {
				return history.LocalWindows(b.V.Tree, b.Seqs, ref)
			}
		}
		return history.ExtendLocalWindows(base, b.V.Tree, b.Seqs[from:], ref)
	})
}

// localSearchOrder returns history.SearchOrder(view) for the Local view of
// b, cached with its windows (built on the first unfiltered search of a
// state of the session). Shared, read-only.
func (s *Service) localSearchOrder(b *Branch, view *history.View) history.ItemList {
	k, ok := keyOf(b.Target, b.V, b.Leaf)
	if !ok || s.cache == nil {
		return nil
	}
	return s.cache.searchOrder(k, func() history.ItemList { return history.SearchOrder(view) })
}

// withCachedBranch is withBranch with the branch taken from the Service's cache
// when a request already computed it for the same state of the session
// and the same leaf: the requests that run before every model call
// (/context) and the history reads then cost no walk of the whole branch.
// b.Seqs is then shared, read-only, with other requests.
func (s *Service) withCachedBranch(t *Target, leafID string, fn func(b *Branch) error) error {
	hit := false
	err := t.read(func(v *store.View) error {
		if err := usable(v); err != nil {
			return err
		}
		leaf := leafID
		if leaf == "" {
			leaf = v.Tree.Leaf()
		}
		k, ok := keyOf(t, v, leaf)
		if !ok || s.cache == nil {
			return nil
		}
		seqs, cycle, ok := s.cache.branch(k)
		if !ok {
			if seqs, ok = s.cache.extendBranch(k, v.Tree); !ok {
				return nil
			}
			s.cache.addBranch(k, seqs, false, seqs[len(seqs)-1])
		}
		hit = true
		return fn(&Branch{V: v, Leaf: leaf, Seqs: seqs, Cycle: cycle, Target: t})
	})
	if hit || err != nil {
		return err
	}
	return s.withBranch(t, leafID, func(b *Branch) error {
		if k, ok := keyOf(t, b.V, b.Leaf); ok && s.cache != nil {
			s.cache.addBranch(k, b.Seqs, b.Cycle, -1)
		}
		return fn(b)
	})
}

// newWindowCache is the Service's cache of the branches, and the Local
// windows, of the last few leaves read: 8 entries, at most 2 per session.
func newWindowCache() *windowCache { return &windowCache{max: 8, perSession: 2} }

// windowKey identifies one state of a session and one leaf: everything the
// branch of the leaf and its Local windows depend on. The cache is never
// the authority: a sync that adds entries or bytes, or rewrites the file
// (a new tree), changes the key. The pointers keep the session and tree
// alive while cached, so another cannot reuse their addresses.
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
	return windowKey{sess: t.Session, tree: v.Tree, n: v.Tree.Len(), items: len(v.Items), bytes: v.Bytes, leaf: leaf, rules: t.Rules()}, true
}

type windowEntry struct {
	key   windowKey
	seqs  []int // the branch (read-only: Tree.Branch allocates it per request)
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
	// grown is set by the one extension of seqs that appended in place
	// (appendShared).
	grown atomic.Bool
	used  uint64
}

// windowCache is a small LRU of branches and their Local windows, safe
// for concurrent use. Entries are immutable once their windows are built.
type windowCache struct {
	max, perSession int

	mu      sync.Mutex
	clock   uint64
	entries []*windowEntry
	// hints is modeHint's scan of each session's tree (guarded by mu; one
	// per session, dropped when the session's tree is replaced).
	hints map[*store.Session]treeMarks
}

// marks returns the treeMarks of tr, sess's tree in a view, extended from
// the last scan of sess when tr is the same tree.
func (c *windowCache) marks(sess *store.Session, tr *session.Tree) treeMarks {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.hints[sess]
	if m.tree == tr && m.n == tr.Len() {
		return m
	}
	if m.tree == tr && m.n > tr.Len() {
		// An older view of the same tree (a request that read before
		// the last sync): scan it alone.
		var o treeMarks
		o.scan(tr)
		return o
	}
	m.scan(tr)
	if c.hints == nil {
		c.hints = map[*store.Session]treeMarks{}
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

// branch returns the cached branch of k.
func (c *windowCache) branch(k windowKey) ([]int, bool, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.find(k); e != nil {
		return e.seqs, e.cycle, true
	}
	return nil, false, false
}

// extendBranch returns the branch of k's leaf as the cached branch of its
// parent plus the leaf, when the parent's branch is cached for the same
// tree (the usual case right after Pi appended an entry): Tree.Branch
// would walk the whole branch again. It declines (false) unless the leaf
// comes after every entry of that branch, so that the leaf cannot already
// be on it (a parent cycle) and the walk from the leaf is exactly the
// leaf, then the parent's walk.
func (c *windowCache) extendBranch(k windowKey, tr *session.Tree) ([]int, bool) {
	ls, ok := tr.Lookup(k.leaf)
	if !ok {
		return nil, false
	}
	parent := tr.Entries[ls].ParentID
	if parent == "" {
		return nil, false
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
		return nil, false
	}
	return appendShared(base.seqs, &base.grown, ls), true
}

// appendShared returns s followed by v. s is shared and read-only up to
// its length; the first caller for s (claimed: false before) may write
// past it in place, the others copy (with room to grow): so a chain of
// appends, one entry at a time, costs no copy of the whole branch each.
func appendShared[T any](s []T, claimed *atomic.Bool, v ...T) []T {
	if cap(s)-len(s) >= len(v) && claimed.CompareAndSwap(false, true) {
		return append(s, v...)
	}
	out := make([]T, len(s), len(s)+len(v)+len(s)/4+64)
	copy(out, s)
	return append(out, v...)
}

// maxSeq is the largest seq on e's branch (computed once; e.seqs is
// read-only).
func (e *windowEntry) maxSeq() int {
	e.maxOnce.Do(func() { e.max = slices.Max(e.seqs) })
	return e.max
}

// addBranch caches the branch of k (without windows); maxSeq is the
// largest of seqs when the caller knows it, else -1.
func (c *windowCache) addBranch(k windowKey, seqs []int, cycle bool, maxSeq int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.find(k) == nil {
		e := &windowEntry{key: k, seqs: seqs, cycle: cycle}
		if maxSeq >= 0 {
			e.maxOnce.Do(func() { e.max = maxSeq })
		}
		c.add(e)
	}
}

// windows returns the windows of key k, whose branch is seqs. build(base,
// from) must return the windows of seqs given base = the windows of
// seqs[:from] (nil, 0: from scratch).
func (c *windowCache) windows(k windowKey, seqs []int, cycle bool, build func(base []history.Window, from int) []history.Window) []history.Window {
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
		c.add(&windowEntry{key: k, seqs: seqs, cycle: cycle, wins: wins, built: true})
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

// agentOf returns the caller's agent: the context's current_agent_name, else
// the registered agent name.
func agentOf(t *Target, cc CallContext) string {
	if cc.CurrentAgentName != "" {
		return cc.CurrentAgentName
	}
	return t.Agent
}

// onHistoryView runs f on the history view of the caller's branch (Local
// or Tree mode: windowsOf chooses). Errors: EConflict in off or remote
// mode; the history operations' own EInvalid and EAmbiguous.
func onHistoryView[R any](ctx context.Context, s *Service, cc CallContext, f func(b *Branch, view *history.View) (R, error)) (R, error) {
	var out R
	t, err := s.Resolve(ctx, cc.SessionID)
	if err != nil {
		return out, err
	}
	if err := requireLocal(t); err != nil {
		return out, err
	}
	err = s.withCachedBranch(t, cc.LeafID, func(b *Branch) error {
		view, err := s.historyView(b, agentOf(t, cc))
		if err != nil {
			return err
		}
		out, err = f(b, view)
		return err
	})
	return out, err
}

// ListWindows answers history.list_windows for the caller's branch
// (history.View.ListWindows: limit default 20, max 100).
func (s *Service) ListWindows(ctx context.Context, cc CallContext, a history.ListWindowsArgs) (history.WindowsResult, error) {
	return onHistoryView(ctx, s, cc, func(_ *Branch, v *history.View) (history.WindowsResult, error) { return v.ListWindows(a) })
}

// ListItems answers history.list_items for the caller's branch
// (history.View.ListItems: limit default 10, max 25; at most 8,000
// characters of item JSON).
func (s *Service) ListItems(ctx context.Context, cc CallContext, a history.ListItemsArgs) (history.ItemsResult, error) {
	return onHistoryView(ctx, s, cc, func(_ *Branch, v *history.View) (history.ItemsResult, error) { return v.ListItems(a) })
}

// ReadItem answers history.read_item for the caller's branch
// (history.View.ReadItem: limit_chars default and max 8,000 code points).
func (s *Service) ReadItem(ctx context.Context, cc CallContext, a history.ReadItemArgs) (history.ReadResult, error) {
	return onHistoryView(ctx, s, cc, func(_ *Branch, v *history.View) (history.ReadResult, error) { return v.ReadItem(a) })
}

// SearchHistory answers history.search_contents for the caller's branch
// (history.View.Search). An unfiltered search visits windows in the
// mode's order (Tree: summaries first).
func (s *Service) SearchHistory(ctx context.Context, cc CallContext, a history.SearchArgs) (history.ItemsResult, error) {
	return onHistoryView(ctx, s, cc, func(b *Branch, v *history.View) (history.ItemsResult, error) {
		search := func() (history.ItemsResult, error) {
			if a.Unfiltered() {
				v.Ordered = s.windowsOf(b).searchOrder(b, v)
			}
			return v.Search(a)
		}
		k, ok := keyOf(b.Target, b.V, b.Leaf)
		if !ok || s.cache == nil || a.Query == "" {
			return search()
		}
		return s.cache.search(k, searchKeyOf(b.Target.Mode, v.Agent, a), search)
	})
}

// searchKey is what a search_contents answer depends on besides the
// state of the session and the leaf (windowKey): the mode (which windows
// are searched), the caller's agent and the arguments, nil and "" alike.
type searchKey struct {
	mode                                         contextd.Mode
	agent, query                                 string
	limit                                        int
	recent                                       bool
	namespace, role, agentName, toolName, window string
}

func searchKeyOf(mode contextd.Mode, agent string, a history.SearchArgs) searchKey {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	limit := 0
	if a.Limit != nil {
		limit = *a.Limit
	}
	return searchKey{mode: mode, agent: agent, query: a.Query, limit: limit, recent: a.RecentFirst != nil && *a.RecentFirst,
		namespace: str(a.ToolNamespace), role: str(a.Role), agentName: str(a.AgentName), toolName: str(a.ToolName), window: str(a.WindowID)}
}

// noteState replays the note entries of a branch (reference §3.4): the
// latest codex-context-note-snapshot replaces all state, later
// codex-context-note entries apply in order. Entries whose data is malformed
// are skipped (and listed in State.Skipped).
func noteState(b *Branch) (*notes.State, error) {
	tr := b.V.Tree
	start := 0
	for i := len(b.Seqs) - 1; i >= 0; i-- {
		e := &tr.Entries[b.Seqs[i]]
		if e.Type == session.TypeCustom && e.CustomType == session.CustomTypeNoteSnapshot {
			start = i
			break
		}
	}
	var events []notes.Event
	for _, s := range b.Seqs[start:] {
		e := &tr.Entries[s]
		if e.Type != session.TypeCustom || (e.CustomType != session.CustomTypeNote && e.CustomType != session.CustomTypeNoteSnapshot) {
			continue
		}
		_, d, err := b.V.Decode(s)
		if err != nil {
			return nil, err
		}
		ev, err := notes.DecodeEvent(e.ID, e.CustomType, d.Data)
		if err != nil {
			continue
		}
		events = append(events, ev)
	}
	return notes.Replay(events), nil
}

// NoteWrite is the answer of a note write: the Codex-shaped result plus
// the entries the extension must append (DESIGN.md §5.1).
type NoteWrite struct {
	notes.WriteResult
	Append []notes.AppendEntry `json:"append" doc:"Entries to append with pi.appendEntry, in order, before returning the tool result."`
}

// onNoteState runs f on the note state of the caller's branch (reference
// §3.4, noteState) with the caller's agent. Errors: EConflict in off or
// remote mode; the note operations' own EInvalid and ETooLarge.
func onNoteState[R any](ctx context.Context, s *Service, cc CallContext, f func(st *notes.State, agent string) (R, error)) (R, error) {
	var out R
	t, err := s.Resolve(ctx, cc.SessionID)
	if err != nil {
		return out, err
	}
	if err := requireLocal(t); err != nil {
		return out, err
	}
	agent := agentOf(t, cc)
	err = s.withCachedBranch(t, cc.LeafID, func(b *Branch) error {
		st, err := noteState(b)
		if err != nil {
			return err
		}
		out, err = f(st, agent)
		return err
	})
	return out, err
}

// ListNoteFiles answers notes.list_files_by_prefix (notes.ListFilesByPrefix:
// max_results default 20, max 100).
func (s *Service) ListNoteFiles(ctx context.Context, cc CallContext, a notes.ListFilesByPrefixArgs) (notes.ListResult, error) {
	return onNoteState(ctx, s, cc, func(st *notes.State, agent string) (notes.ListResult, error) {
		return notes.ListFilesByPrefix(st, agent, a)
	})
}

// ReadNoteFile answers notes.read_file (notes.ReadFile: a 1-based inclusive
// line range, negative counting from the end).
func (s *Service) ReadNoteFile(ctx context.Context, cc CallContext, a notes.ReadFileArgs) (notes.ReadResult, error) {
	return onNoteState(ctx, s, cc, func(st *notes.State, agent string) (notes.ReadResult, error) {
		return notes.ReadFile(st, agent, a)
	})
}

// SearchNotes answers notes.search_contents (notes.SearchContents:
// max_files and max_matches_per_file default 20, max 100).
func (s *Service) SearchNotes(ctx context.Context, cc CallContext, a notes.SearchArgs) (notes.SearchResult, error) {
	return onNoteState(ctx, s, cc, func(st *notes.State, agent string) (notes.SearchResult, error) {
		return notes.SearchContents(st, agent, a)
	})
}

// WriteNote plans notes.write_file: the result and the codex-context-note
// entry the extension appends (contextd never writes the file), against
// the branch's notes plus the writes planned before it and not yet written
// (planNoteWrite). Files stay at most 1,000,000 UTF-8 bytes (ETooLarge).
func (s *Service) WriteNote(ctx context.Context, cc CallContext, a notes.WriteArgs) (NoteWrite, error) {
	return s.planNoteWrite(ctx, cc, func(st *notes.State, agent string) (NoteWrite, error) {
		res, entry, err := notes.PlanWrite(st, agent, a, s.now())
		return NoteWrite{WriteResult: res, Append: []notes.AppendEntry{entry}}, err
	})
}

// AppendNote plans notes.append_to_file like WriteNote.
func (s *Service) AppendNote(ctx context.Context, cc CallContext, a notes.AppendArgs) (NoteWrite, error) {
	return s.planNoteWrite(ctx, cc, func(st *notes.State, agent string) (NoteWrite, error) {
		res, entry, err := notes.PlanAppend(st, agent, a, s.now())
		return NoteWrite{WriteResult: res, Append: []notes.AppendEntry{entry}}, err
	})
}

// ThreadHintResult is thread_hint's answer: {text} of at most 4,000 bytes
// (reference §1.6, §3.5).
type ThreadHintResult struct {
	Text string `json:"text" doc:"Thread hint: recent notes and previous window history IDs; at most 4,000 UTF-8 bytes."`
}

// ThreadHint answers notes.thread_hint for the branch: the recent notes and
// the recovery ids of the previous window (the window before the current
// one on the branch, when there is one). On a branch without a current
// window whose chain the file holds (resumeOf: a rollover cut short, a
// broken parent chain) it is the hint of the boundary that continues the
// chain: the newest archived window.
func (s *Service) ThreadHint(ctx context.Context, cc CallContext) (ThreadHintResult, error) {
	t, err := s.Resolve(ctx, cc.SessionID)
	if err != nil {
		return ThreadHintResult{}, err
	}
	if err := requireLocal(t); err != nil {
		return ThreadHintResult{}, err
	}
	var out ThreadHintResult
	err = s.withCachedBranch(t, cc.LeafID, func(b *Branch) error {
		if r := s.resumeOf(b); r != nil && r.Recovery != nil {
			// No current window: the hint is the one the next boundary
			// carries, naming the newest archive (resumeOf).
			out.Text, err = resumeHint(b, r)
			return err
		}
		st, err := noteState(b)
		if err != nil {
			return err
		}
		view, err := s.historyView(b, agentOf(t, cc))
		if err != nil {
			return err
		}
		var rec *notes.Recovery
		if n := len(view.Windows); n >= 2 {
			rec = recoveryOf(view.Windows[n-2])
		}
		out.Text = notes.ThreadHint(st, rec)
		return nil
	})
	return out, err
}

// recoveryOf is the thread hint's "Previous window history IDs" of w: its
// id, its summary item (Tree) and up to five user item ids, newest first.
func recoveryOf(w history.Window) *notes.Recovery {
	r := &notes.Recovery{WindowID: w.ID, UserItemIDs: history.UserItemIDs(w, 5)}
	for i, n := 0, w.Len(); i < n; i++ {
		if it := w.At(i); it.Summary {
			r.SummaryItemID = it.ItemID
			break
		}
	}
	return r
}
