package session

import (
	"fmt"
	"os"
	"slices"
)

// Tree is the in-memory entry tree of one session file: the entries in file
// order and an id index. It mirrors Pi's SessionManager byId map: when ids
// repeat, the later entry wins (Map.set), exactly as Pi resolves parents.
type Tree struct {
	Header  Header
	Entries []Entry
	byID    map[string]int
	// parents[i] is the Seq of entry i's parent as resolved when i was
	// added (-1: root or missing). Valid for walking only while no id has
	// been repeated (dupIDs false): a repeated id can re-point a parentId.
	parents []int32
	dupIDs  bool
}

// NewTree returns an empty tree for a file with header h.
func NewTree(h Header) *Tree {
	return &Tree{Header: h, byID: make(map[string]int)}
}

// Add appends e (whose Seq must equal len(t.Entries)).
func (t *Tree) Add(e Entry) {
	if t.byID == nil {
		t.byID = make(map[string]int)
	}
	if _, dup := t.byID[e.ID]; dup {
		t.dupIDs = true
	}
	p := int32(-1)
	if e.ParentID != "" {
		if i, ok := t.byID[e.ParentID]; ok {
			p = int32(i)
			e.ParentID = t.Entries[i].ID // share the parent's id string
		} else {
			// A parent that appears later in the file (never in files Pi
			// writes) is resolved by id at walk time.
			t.dupIDs = true
		}
	}
	t.byID[e.ID] = len(t.Entries)
	t.Entries = append(t.Entries, e)
	t.parents = append(t.parents, p)
}

// Grow makes room for n more entries without reallocating, so that a
// caller that can estimate the final size (the indexer, from the file size)
// avoids append's repeated copies, during which the old and new arrays are
// both live.
func (t *Tree) Grow(n int) {
	t.Entries = slices.Grow(t.Entries, n)
	t.parents = slices.Grow(t.parents, n)
}

// Len is the number of entries.
func (t *Tree) Len() int { return len(t.Entries) }

// Lookup returns the Seq of the entry with id, as Pi's byId.get would.
func (t *Tree) Lookup(id string) (int, bool) {
	i, ok := t.byID[id]
	return i, ok
}

// Get returns the entry with id, or nil.
func (t *Tree) Get(id string) *Entry {
	if i, ok := t.byID[id]; ok {
		return &t.Entries[i]
	}
	return nil
}

// IDAt returns the id of the entry at seq (for v1 firstKeptEntryIndex mapping).
func (t *Tree) IDAt(seq int) (string, bool) {
	if seq < 0 || seq >= len(t.Entries) {
		return "", false
	}
	return t.Entries[seq].ID, true
}

// Leaf is Pi's default leaf: the id of the last entry in file order ("" for
// a header-only file). Source: session-manager.js _buildIndex.
func (t *Tree) Leaf() string {
	if len(t.Entries) == 0 {
		return ""
	}
	return t.Entries[len(t.Entries)-1].ID
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
	cur, ok := t.byID[leafID]
	if !ok {
		return nil, false, &ErrUnknownLeaf{LeafID: leafID}
	}
	if !t.dupIDs {
		// Fast path: parents were resolved on Add and always point to
		// earlier entries, so the walk cannot loop.
		for c := int32(cur); c >= 0; c = t.parents[c] {
			seqs = append(seqs, int(c))
		}
	} else {
		seen := make(map[int]struct{})
		for {
			if _, dup := seen[cur]; dup {
				cycle = true
				break
			}
			seen[cur] = struct{}{}
			seqs = append(seqs, cur)
			p := t.Entries[cur].ParentID
			if p == "" {
				break
			}
			next, ok := t.byID[p]
			if !ok {
				break
			}
			cur = next
		}
	}
	for i, j := 0, len(seqs)-1; i < j; i, j = i+1, j-1 {
		seqs[i], seqs[j] = seqs[j], seqs[i]
	}
	return seqs, cycle, nil
}

// ContextEntries selects the model-visible entries of a branch, as Pi 0.85's
// buildContextEntries + sessionEntryToContextMessages do: if the branch holds
// a compaction, the last one comes first, then the branch entries before it
// starting at its firstKeptEntryId (none when that id is not found before
// it), then every entry after it. Of those, message, custom_message,
// compaction and non-empty branch_summary entries produce context messages;
// custom, label, session_info, model_change, thinking_level_change and
// unknown types produce none and are dropped here.
func (t *Tree) ContextEntries(branch []int) []int {
	last := -1
	for i, s := range branch {
		if t.Entries[s].Type == TypeCompaction {
			last = i
		}
	}
	var sel []int
	if last < 0 {
		sel = branch
	} else {
		comp := &t.Entries[branch[last]]
		sel = append(sel, branch[last])
		found := false
		for _, s := range branch[:last] {
			if !found && t.Entries[s].ID == comp.FirstKeptEntryID {
				found = true
			}
			if found {
				sel = append(sel, s)
			}
		}
		sel = append(sel, branch[last+1:]...)
	}
	out := make([]int, 0, len(sel))
	for _, s := range sel {
		if ContextRole(&t.Entries[s]) != "" {
			out = append(out, s)
		}
	}
	return out
}

// ContextRole is the role of the context message an entry produces in Pi's
// buildSessionContext ("" for none): the stored message role for message
// entries, "custom" for custom_message, "branchSummary" for a branch summary
// with a non-empty summary, "compactionSummary" for a compaction.
func ContextRole(e *Entry) string {
	switch e.Type {
	case TypeMessage:
		if e.Role == "" {
			return "unknown"
		}
		return e.Role
	case TypeCustomMessage:
		return RoleCustom
	case TypeBranchSummary:
		if e.EmptySummary {
			return ""
		}
		return "branchSummary"
	case TypeCompaction:
		return "compactionSummary"
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
			return fn(&t.Entries[len(t.Entries)-1], d)
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
