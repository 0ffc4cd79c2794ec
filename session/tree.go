package session

import (
	"fmt"
	"iter"
	"os"
	"sync/atomic"
)

// Tree is the in-memory entry tree of one session file: the entries in file
// order and an id index. It mirrors Pi's SessionManager byId map: when ids
// repeat, the later entry wins (Map.set), exactly as Pi resolves parents.
type Tree struct {
	Header Header
	// tab holds the entries in file order, as rows the garbage collector
	// does not scan (entrymem.go). Add is the only writer; Entry reads.
	tab  entryTable
	byID idIndex
	// parents[i] is the Seq of entry i's parent as resolved when i was
	// added (-1: root, or a parent not yet in the file). Valid for
	// walking as it is while no id has been repeated and no parent came
	// after its child (dupIDs false); otherwise parentOf re-resolves the
	// few links that may have moved.
	parents []int32
	dupIDs  bool
	// superseded has bit i set when a later entry repeated entry i's id,
	// so that the children resolved to i now belong to that later entry
	// (Pi's byId: the later entry wins). nil until an id repeats; the
	// words are read and set atomically (Snapshot).
	superseded []uint32
	// base, while set, is a tree whose first Len() entries are exactly
	// this tree's (Reuse): tab's rows and parents are prefixes of base's
	// arrays, tab shares base's arena and side tables, and byID is base's
	// index, read only up to Len(). Add extends the prefix while the
	// entries it is given equal base's, and copies the prefix into arrays
	// of its own at the first that does not.
	base *Tree
	// lineage is the tree this one is a Snapshot of (nil: itself).
	lineage *Tree
}

// Snapshot returns a read-only copy of t as it is now, safe to read
// while Adds to t go on without any lock between them: an Add writes
// only past the copy's length (rows, parents, side tables, the arena's
// chunk list and chunk being written) or into new arrays, and the id
// index's slots are read and written atomically, an id added later passed
// over by the copy's lookups (its Seq is past the copy's length) and a
// repeated id given a new slot array rather than overwriting a slot a copy
// reads. The copy must not be added to. Snapshots of one tree share its
// Lineage.
func (t *Tree) Snapshot() *Tree {
	t.byID.shared = true
	c := *t
	c.lineage = t.Lineage()
	return &c
}

// Lineage is the tree t is a Snapshot of (t itself for a tree added to):
// the identity of one append-only sequence of entries. Two snapshots of
// one lineage agree on every entry both hold; a rewritten file gets a new
// tree, so a new lineage.
func (t *Tree) Lineage() *Tree {
	if t.lineage != nil {
		return t.lineage
	}
	return t
}

// NewTree returns an empty tree for a file with header h.
func NewTree(h Header) *Tree {
	return &Tree{Header: h}
}

// Reuse makes t, an empty tree, adopt base's entries as it is fed the
// same ones: while each entry given to Add equals (Entry.Same) base's
// entry at the same Seq, t grows as a prefix of base's arrays (no copy,
// no second id index); the first entry that differs makes t copy its
// prefix and go on alone. A tree of a file's first N entries read twice
// (the tree preview of a cold index, then its full index) is so kept in
// memory once. base must no longer be added to, nor be given to another
// Reuse (t appends past base's length into base's arrays); it may still
// be read (the caller serializes reads of base with Adds to t, as store
// does under Session.mu). Reuse does nothing when t is not empty, when the
// headers differ, or when base has a repeated id (its index then points
// some ids past a prefix). Source of the need: docs/benchmarks.md (peak
// RSS ≤ 150 MiB indexing 1 GiB; two trees of a 1 GiB session peaked at
// 176 MiB).
func (t *Tree) Reuse(base *Tree) {
	if base == nil || t.Len() != 0 || t.base != nil || base.dupIDs || base.Header != t.Header || base.Len() == 0 {
		return
	}
	t.base = base
	t.tab = base.tab
	t.tab.rows = base.tab.rows[:0]
	t.parents = base.parents[:0]
	base.byID.shared = true
	t.byID = base.byID
}

// Reusing reports whether t is still a prefix of the tree given to Reuse.
func (t *Tree) Reusing() bool { return t.base != nil }

// SharesEntries reports whether t's entries are held in the memory of
// o's (t a tree that took all of o's entries through Reuse, or a Snapshot
// of one), rather than in a copy.
func (t *Tree) SharesEntries(o *Tree) bool {
	return t.Len() > 0 && o.Len() > 0 && &t.tab.rows[0] == &o.tab.rows[0]
}

// detach gives t arrays of its own holding its entries (a copy of its
// prefix of base, strings included) and forgets base.
func (t *Tree) detach() {
	b := t.base
	n := t.Len()
	t.base, t.superseded = nil, nil
	t.tab = entryTable{rows: make([]entryRow, 0, b.Len())}
	t.parents, t.byID = make([]int32, 0, b.Len()), idIndex{}
	t.byID.grow(&t.tab, b.Len())
	for i := range n {
		t.Add(b.Entry(i))
	}
}

// Add appends e (whose Seq must equal Len()). The tree keeps copies of
// e's strings and of what its Refs and Window point at.
func (t *Tree) Add(e Entry) {
	if b := t.base; b != nil {
		n := t.Len()
		if n < b.Len() {
			if be := b.Entry(n); be.Same(&e) {
				t.tab.rows = b.tab.rows[:n+1]
				t.parents = b.parents[:n+1]
				if n+1 == b.Len() {
					// All of base is t's: from here t appends past base's
					// length (base never reads there) and its index may
					// take new ids (base's lookups skip them).
					t.base = nil
					t.tab.own()
				}
				return
			}
		}
		t.detach()
	}
	p := int32(-1)
	if e.ParentID != "" {
		if i, ok := t.byID.get(&t.tab, e.ParentID); ok {
			p = int32(i)
		} else {
			// A parent that appears later in the file (never in files Pi
			// writes) is resolved by id at walk time.
			t.dupIDs = true
		}
	}
	t.tab.add(&e, int(p))
	t.parents = append(t.parents, p)
	if prev := t.byID.put(&t.tab, e.ID, t.Len()-1); prev >= 0 {
		t.dupIDs = true
		t.supersede(prev)
	}
}

// supersede marks entry seq as no longer the latest with its id. The
// word array grows by copy, so a Snapshot keeps the words it read; a bit
// set after a Snapshot only makes its walks look the link up by id,
// which its id index answers as of the Snapshot.
func (t *Tree) supersede(seq int) {
	w := seq / 32
	if w >= len(t.superseded) {
		grown := make([]uint32, max(w+1, t.Len()/32+1))
		for i := range t.superseded {
			grown[i] = atomic.LoadUint32(&t.superseded[i])
		}
		t.superseded = grown
	}
	atomic.OrUint32(&t.superseded[w], 1<<(seq%32))
}

// isSuperseded reports whether a later entry repeated entry seq's id.
func (t *Tree) isSuperseded(seq int32) bool {
	w := int(seq) / 32
	return w < len(t.superseded) && atomic.LoadUint32(&t.superseded[w])&(1<<(seq%32)) != 0
}

// parentOf returns the Seq of the entry Pi resolves as entry c's parent
// (byId.get(parentId): the latest entry with that id), -1 for none. The
// link resolved on Add holds unless its parent's id was repeated since,
// or the parent was not yet in the file; only those are looked up by id.
func (t *Tree) parentOf(c int32) int32 {
	p := t.parents[c]
	if p >= 0 && !t.isSuperseded(p) {
		return p
	}
	id := t.ParentID(int(c))
	if id == "" {
		return -1
	}
	if i, ok := t.byID.get(&t.tab, id); ok {
		return int32(i)
	}
	return -1
}

// Grow makes room for n more entries without reallocating, so that a
// caller that can estimate the final size (the indexer, from the file size)
// avoids append's repeated copies, during which the old and new arrays are
// both live.
func (t *Tree) Grow(n int) {
	if t.base != nil {
		return // base's arrays are sized already
	}
	t.tab.rows = Grow(t.tab.rows, n)
	t.parents = Grow(t.parents, n)
	t.byID.grow(&t.tab, t.Len()+n)
}

// Len is the number of entries.
func (t *Tree) Len() int { return t.tab.len() }

// Entry returns the entry at seq (0 ≤ seq < Len(); it panics otherwise).
// Its strings share the tree's memory; its Refs and Window point at the
// tree's copies: read them, never write through them.
func (t *Tree) Entry(seq int) Entry { return t.tab.entry(seq) }

// All yields every entry in file order with its Seq (for i, e := range
// t.All()); see Entry.
func (t *Tree) All() iter.Seq2[int, Entry] {
	return func(yield func(int, Entry) bool) {
		for i := range t.Len() {
			if !yield(i, t.Entry(i)) {
				return
			}
		}
	}
}

// Entries returns every entry in file order, in a new slice (Len()
// Entry values: for tests and tools; a reader of a few entries uses
// Entry or All).
func (t *Tree) Entries() []Entry {
	out := make([]Entry, 0, t.Len())
	for _, e := range t.All() {
		out = append(out, e)
	}
	return out
}

// ID is Entry(seq).ID, without building the rest of the entry.
func (t *Tree) ID(seq int) string { return t.tab.id(seq) }

// ParentID is Entry(seq).ParentID, without building the rest of the
// entry.
func (t *Tree) ParentID(seq int) string { return t.tab.strs.get(t.tab.rows[seq].parentID) }

// Type is Entry(seq).Type, without building the rest of the entry.
func (t *Tree) Type(seq int) string { return t.tab.strs.get(t.tab.rows[seq].typ) }

// CustomType is Entry(seq).CustomType, without building the rest of the
// entry.
func (t *Tree) CustomType(seq int) string { return t.tab.strs.get(t.tab.rows[seq].customType) }

// IsBoundary is Entry(seq).IsBoundary(), building the entry only when it
// has a window marker: the walks back to a window's boundary, before
// every /context, read a few hundred entries and build one.
func (t *Tree) IsBoundary(seq int) bool {
	if t.tab.rows[seq].window == 0 {
		return false
	}
	e := t.Entry(seq)
	return e.IsBoundary()
}

// role is Entry(seq).Role.
func (t *Tree) role(seq int) string { return t.tab.strs.get(t.tab.rows[seq].role) }

// Lookup returns the Seq of the entry with id, as Pi's byId.get would.
func (t *Tree) Lookup(id string) (int, bool) {
	return t.byID.get(&t.tab, id)
}

// Get returns the entry with id, or nil.
func (t *Tree) Get(id string) *Entry {
	if i, ok := t.byID.get(&t.tab, id); ok {
		e := t.Entry(i)
		return &e
	}
	return nil
}

// IDAt returns the id of the entry at seq (for v1 firstKeptEntryIndex mapping).
func (t *Tree) IDAt(seq int) (string, bool) {
	if seq < 0 || seq >= t.Len() {
		return "", false
	}
	return t.ID(seq), true
}

// Leaf is Pi's default leaf: the id of the last entry in file order ("" for
// a header-only file). Source: session-manager.js _buildIndex.
func (t *Tree) Leaf() string {
	if t.Len() == 0 {
		return ""
	}
	return t.ID(t.Len() - 1)
}

// ErrUnknownLeaf is returned by Branch for a leaf id that is not in the tree.
type ErrUnknownLeaf struct{ LeafID string }

func (e *ErrUnknownLeaf) Error() string {
	return fmt.Sprintf("leaf %q is not an entry of this session", e.LeafID)
}

// Branch returns the Seqs of the active branch from the root to leafID
// (Pi's getBranch): walk parentId from the leaf, stopping silently at a
// missing or empty parent. leafID "" means Pi's default leaf. A parent cycle
// (impossible in files Pi writes) ends the walk at the first repeated entry
// and is reported with cycle = true.
func (t *Tree) Branch(leafID string) (seqs []int, cycle bool, err error) {
	if leafID == "" {
		leafID = t.Leaf()
		if leafID == "" {
			return nil, false, nil
		}
	}
	cur, ok := t.byID.get(&t.tab, leafID)
	if !ok {
		return nil, false, &ErrUnknownLeaf{LeafID: leafID}
	}
	// Each path walks twice: once to count the branch, once to fill an
	// answer allocated at its length, root first (one allocation, not
	// append's growth steps and a reversal).
	if !t.dupIDs {
		// Fast path: parents were resolved on Add and always point to
		// earlier entries, so the walk cannot loop.
		n := 0
		for c := int32(cur); c >= 0; c = t.parents[c] {
			n++
		}
		seqs = make([]int, n)
		for c := int32(cur); c >= 0; c = t.parents[c] {
			n--
			seqs[n] = int(c)
		}
		return seqs, false, nil
	}
	// An id was repeated or a parent came after its child: a link may
	// have moved (parentOf) and the walk may loop. A bit per entry (n/8
	// bytes) stops it at the first repeated entry; a repeated id so costs
	// a walk no more than unique ids do (docs/security.md). The filling
	// walk stops after the counted entries, before the repeated one.
	seen := make([]uint64, (t.Len()+63)/64)
	n := 0
	for c := int32(cur); c >= 0; c = t.parentOf(c) {
		if seen[c/64]&(1<<(c%64)) != 0 {
			cycle = true
			break
		}
		seen[c/64] |= 1 << (c % 64)
		n++
	}
	seqs = make([]int, n)
	for c := int32(cur); n > 0; c = t.parentOf(c) {
		n--
		seqs[n] = int(c)
	}
	return seqs, cycle, nil
}

// ContextEntries lists the entries that produce at least one context
// message under NewestRules, in context order (see Project;
// ContextEntriesUnder for another rule set).
func (t *Tree) ContextEntries(branch []int) []int {
	return t.ContextEntriesUnder(branch, NewestRules)
}

// ContextEntriesUnder lists the entries that produce at least one context
// message under rules r, in context order (see Project).
func (t *Tree) ContextEntriesUnder(branch []int, r Rules) []int {
	msgs := t.Project(branch, r)
	out := make([]int, 0, len(msgs))
	for i, m := range msgs {
		if i > 0 && msgs[i-1].Seq == m.Seq {
			continue
		}
		out = append(out, m.Seq)
	}
	return out
}

// ContextMessage is one message of the model-visible context (Pi's
// buildSessionContext().messages): the entry that produced it and the
// message's effective role.
type ContextMessage struct {
	Seq  int    // the context entry that produced the message
	Role string // user, assistant, toolResult, bashExecution, custom, system, branchSummary, compactionSummary (or the stored role)
	// EditSeq is the Seq of the context_edit whose replacement content the
	// message carries, -1 when its content is the entry's own.
	EditSeq int
}

// Project is Pi's buildSessionContext for the branch (root to leaf) under
// rules r: the messages the model is sent, in order, each tagged with its
// entry. Sources: dist/core/session-manager.js of Pi 0.85.1
// (buildContextEntries, sessionEntryToContextMessages), of Pi 0.86.1 (the
// same, with system messages) and of Pi 1.6.0 (the same plus
// projectContextEntry, buildSessionProjection).
//
// Both rule sets: if the branch holds a compaction, the last one comes
// first, then the branch entries before it starting at its
// firstKeptEntryId (none when that id is not found before it, as for a
// retain-none compaction whose firstKeptEntryId is its own id), then every
// entry after it. A message entry yields its message (role as stored,
// "unknown" when the message has none), a custom_message a "custom"
// message, a branch_summary with a non-empty summary a "branchSummary"
// message, a compaction a "compactionSummary" message; every other type
// yields nothing.
//
// RulesPi086 adds:
//   - system messages (role "system") inside the kept range before the
//     compaction are dropped;
//   - a compaction with a systemMessage yields it ("system") before its
//     summary, an older compaction inside the kept range included.
//
// RulesPi16 adds to RulesPi086:
//   - an older compaction inside the kept range yields nothing (0.85 and
//     0.86 yield its messages);
//   - context_edit entries that are themselves among the context entries
//     apply to their targetId, the last one per target winning: a null
//     replacement omits every message of the target, a content
//     replacement swaps the content of its user, assistant, toolResult
//     and custom messages (EditSeq) and leaves other roles as they are.
//     An edit whose replacement is neither null nor an object with string
//     or array content (which Pi's appendContextEdit refuses to write) is
//     ignored.
func (t *Tree) Project(branch []int, r Rules) []ContextMessage {
	last := -1
	for i, s := range branch {
		if t.Type(s) == TypeCompaction {
			last = i
		}
	}
	v086, v16 := r >= RulesPi086, r >= RulesPi16
	sel := branch
	if last >= 0 {
		comp := t.Entry(branch[last])
		sel = make([]int, 0, len(branch)-last)
		sel = append(sel, branch[last])
		found := false
		for _, s := range branch[:last] {
			if !found && t.ID(s) == comp.FirstKeptEntryID() {
				found = true
			}
			if found && !(v086 && t.Type(s) == TypeMessage && t.role(s) == RoleSystem) {
				sel = append(sel, s)
			}
		}
		sel = append(sel, branch[last+1:]...)
	}
	var edits map[string]int // target id → seq of the edit that applies
	if v16 {
		for _, s := range sel {
			if t.tab.rows[s].edit != EditNone && t.Type(s) == TypeContextEdit {
				if edits == nil {
					edits = make(map[string]int)
				}
				edits[t.Entry(s).TargetID()] = s
			}
		}
	}
	out := make([]ContextMessage, 0, len(sel))
	for i, s := range sel {
		row, typ := &t.tab.rows[s], t.Type(s)
		if v16 && typ == TypeCompaction && i > 0 {
			continue
		}
		role := contextRole(typ, t.role(s), row.flags&flagEmptySummary != 0)
		if role == "" {
			continue
		}
		edit := -1
		if edits != nil {
			if es, ok := edits[t.ID(s)]; ok {
				if t.tab.rows[es].edit == EditOmit {
					continue
				}
				edit = es
			}
		}
		if v086 && typ == TypeCompaction && row.flags&flagSystemMessage != 0 {
			out = append(out, ContextMessage{Seq: s, Role: RoleSystem, EditSeq: -1})
		}
		m := ContextMessage{Seq: s, Role: role, EditSeq: -1}
		switch role {
		case RoleUser, RoleAssistant, RoleToolResult, RoleCustom:
			m.EditSeq = edit
		}
		out = append(out, m)
	}
	return out
}

// Rules names one of Pi's context projection rule sets.
type Rules uint8

// The rule sets contextd knows, oldest first (a later one is greater). The
// e2e parity harness checks each against the Pi releases at its edges
// (docs/pi-versions.md).
const (
	// RulesPi085: Pi 0.85.x, the releases before transcript-backed
	// system messages (0.86.0) and context edits (0.87.0).
	RulesPi085 Rules = iota + 1
	// RulesPi086: Pi 0.86.x (0.86.1 is the only release): system
	// messages, no context edits, and every compaction among the context
	// entries yields its messages.
	RulesPi086
	// RulesPi16: Pi 0.87.0 and later, checked against every release from
	// 0.87.0 to 1.6.0.
	RulesPi16
	// NewestRules applies to unregistered sessions, to a registration
	// without pi_version, and to versions newer than NewestProvenPi.
	NewestRules = RulesPi16
)

// NewestProvenPi is the newest Pi release whose projection the parity
// harness has checked (docs/pi-versions.md records the run): a registered
// Pi newer than it is read with NewestRules, untested (see Untested).
const NewestProvenPi = "1.6.0"

// String is the rule set's name as /branch reports it: "pi-0.85",
// "pi-0.86" or "pi-1.6".
func (r Rules) String() string {
	switch r {
	case RulesPi085:
		return "pi-0.85"
	case RulesPi086:
		return "pi-0.86"
	case RulesPi16:
		return "pi-1.6"
	}
	return "unknown"
}

// RulesFor returns the rule set for a Pi version ("0.85.1", "1.6.0"; a
// semver core, optionally followed by a pre-release or build suffix):
// RulesPi085 below 0.86.0, RulesPi086 from 0.86.0 to below 0.87.0,
// RulesPi16 from 0.87.0 on, NewestRules for "" or a version that does not
// start with MAJOR.MINOR.
func RulesFor(version string) Rules {
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil {
		return NewestRules
	}
	switch {
	case major == 0 && minor < 86:
		return RulesPi085
	case major == 0 && minor == 86:
		return RulesPi086
	}
	return RulesPi16
}

// Untested reports whether a Pi version ("1.7.0", "2.0.0-rc.1+b") is newer
// than NewestProvenPi by semver precedence of MAJOR.MINOR.PATCH (a
// pre-release of a newer core counts as newer; one of NewestProvenPi's
// own core does not, nor does a build suffix). "" and a version that does
// not start with MAJOR.MINOR.PATCH are not untested: they get NewestRules
// without a claim about the running Pi.
func Untested(version string) bool {
	v, ok := semverCore(version)
	if !ok {
		return false
	}
	proven, _ := semverCore(NewestProvenPi)
	for i := range v {
		if v[i] != proven[i] {
			return v[i] > proven[i]
		}
	}
	return false
}

// semverCore parses the MAJOR.MINOR.PATCH that starts version.
func semverCore(version string) ([3]int, bool) {
	var c [3]int
	if _, err := fmt.Sscanf(version, "%d.%d.%d", &c[0], &c[1], &c[2]); err != nil {
		return c, false
	}
	return c, true
}

// ContextRole is the role of the (last) context message an entry produces in
// Pi's buildSessionContext before context edits ("" for none): the stored
// message role for message entries ("unknown" when the message has none),
// "custom" for custom_message, "branchSummary" for a branch summary with a
// non-empty summary, "compactionSummary" for a compaction.
func ContextRole(e *Entry) string {
	return contextRole(e.Type, e.Role, e.EmptySummary)
}

// contextRole is ContextRole of an entry's Type, Role and EmptySummary.
func contextRole(typ, role string, emptySummary bool) string {
	switch typ {
	case TypeMessage:
		if role == "" {
			return RoleUnknown
		}
		return role
	case TypeCustomMessage:
		return RoleCustom
	case TypeBranchSummary:
		if emptySummary {
			return ""
		}
		return RoleBranchSummary
	case TypeCompaction:
		return RoleCompactionSummary
	}
	return ""
}

// Stats counts what a parse skipped, by reason.
type Stats struct {
	Lines   int                `json:"lines"`
	Skipped map[SkipReason]int `json:"skipped,omitempty"`
	// Problems lists the skipped lines (line number and reason), at most
	// MaxProblems of them.
	Problems []Problem `json:"problems,omitempty"`
}

// MaxProblems bounds the per-file problem list kept in memory and reported.
const MaxProblems = 100

// Problem is one skipped line.
type Problem struct {
	Line   int        `json:"line"`
	Offset int64      `json:"offset"`
	Reason SkipReason `json:"reason"`
}

// Note records a skipped line.
func (s *Stats) Note(line int, off int64, r SkipReason) {
	if s.Skipped == nil {
		s.Skipped = make(map[SkipReason]int)
	}
	s.Skipped[r]++
	if len(s.Problems) < MaxProblems {
		s.Problems = append(s.Problems, Problem{Line: line, Offset: off, Reason: r})
	}
}

// Feed parses every complete line of r from byte offset start to end (end < 0:
// EOF) with p, adds the entries to t (created from the header when nil) and
// calls fn (if not nil) for each entry. It returns the tree, the offset after
// the last complete line and the skip statistics of the lines read.
func Feed(r interface {
	ReadAt([]byte, int64) (int, error)
}, p *Parser, t *Tree, start, end int64, maxLine int, fn func(e *Entry, d *Decoded) error) (*Tree, int64, Stats, error) {
	var st Stats
	p.LookupSeq = func(seq int) (string, bool) {
		if t == nil {
			return "", false
		}
		return t.IDAt(seq)
	}
	next, err := ScanLines(r, start, end, maxLine, func(line []byte, off int64, tooLong bool) error {
		st.Lines++
		if tooLong {
			lineNo := p.NextLine
			if lineNo == 0 {
				lineNo = 1
			}
			p.NextLine = lineNo + 1
			st.Note(lineNo, off, SkipTooLong)
			return nil
		}
		lineNo := p.NextLine
		if lineNo == 0 {
			lineNo = 1
		}
		e, d, skip := p.ParseLine(line, off)
		if skip != SkipNone {
			st.Note(lineNo, off, skip)
			return nil
		}
		if e == nil { // header
			if t == nil {
				t = NewTree(*p.Header)
			}
			return nil
		}
		if t == nil {
			t = NewTree(*p.Header)
		}
		t.Add(*e)
		if fn != nil {
			return fn(e, d)
		}
		return nil
	})
	return t, next, st, err
}

// Each parses a whole session file and calls fn for each entry in file order.
// It returns ErrNotSession when the file is not a Pi session (a header-only
// or empty file gives an empty tree, or nil for an empty file).
func Each(path string, fn func(e *Entry, d *Decoded) error) (*Tree, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var p Parser
	t, _, _, err := Feed(f, &p, nil, 0, -1, DefaultMaxLineBytes, fn)
	if err != nil {
		return nil, err
	}
	if p.NotPi {
		return nil, ErrNotSession
	}
	return t, nil
}
