package archive

import (
	"bytes"
	"encoding/json"
	"slices"

	"contextd/session"
)

// Protocol and Strategy are the only manifest `protocol` and `strategy`
// values (docs/codex-contract.md "Tree archive" "Manifest").
const (
	Protocol = 1
	Strategy = "codex-context-tree"
)

// Hard bounds of the index (docs/codex-contract.md "Tree archive" "Traversal: depth ≤ 50,000";
// docs/design.md §6.5 "Bounded").
const (
	// MaxDepth bounds one traversal in entries: the archived walk from
	// archivedLeafId towards branchBaseId, and the ancestry walk from a
	// manifest up to its summary.
	MaxDepth = 50_000
	// MaxSteps bounds the parent steps of all traversals of one Build
	// together. When it is spent, every later manifest (file order) is
	// invalid with ReasonBudgetExceeded, so a file with very many long
	// archives costs at most MaxSteps map lookups per build.
	MaxSteps = 5_000_000
)

// Reasons a manifest is invalid. A manifest can have several; they are
// listed in the order of the checks in validate.
const (
	// ReasonMalformed: data is not an object with protocol 1, strategy
	// "codex-context-tree", non-empty string windowId, boundaryEntryId,
	// summaryEntryId and archivedLeafId, branchBaseId a string or null
	// (absent counts as null) and compactionEntryId absent or a string.
	ReasonMalformed = "malformed"
	// ReasonSummaryMissing: no entry has the id summaryEntryId.
	ReasonSummaryMissing = "summary_missing"
	// ReasonNotBranchSummary: the summaryEntryId entry is not a branch_summary.
	ReasonNotBranchSummary = "not_branch_summary"
	// ReasonFromIDMismatch: the summary's fromId is not archivedLeafId.
	ReasonFromIDMismatch = "from_id_mismatch"
	// ReasonParentIDMismatch: the summary's parentId is not branchBaseId
	// (null, absent and "" are equal: a root).
	ReasonParentIDMismatch = "parent_id_mismatch"
	// ReasonSummaryNotAncestor: the summary is not an ancestor of the
	// manifest entry within MaxDepth (Pi appends the manifest under it).
	ReasonSummaryNotAncestor = "summary_not_ancestor"
	// ReasonArchivedLeafMissing: no entry has the id archivedLeafId.
	ReasonArchivedLeafMissing = "archived_leaf_missing"
	// ReasonMissingParent: the archived walk met a parentId that names no entry.
	ReasonMissingParent = "missing_parent"
	// ReasonBaseNotAncestor: the archived walk reached a root without
	// meeting branchBaseId.
	ReasonBaseNotAncestor = "base_not_ancestor"
	// ReasonCycle: the archived walk met an entry twice.
	ReasonCycle = "cycle"
	// ReasonDepthExceeded: the archived walk exceeded MaxDepth entries.
	ReasonDepthExceeded = "depth_exceeded"
	// ReasonBudgetExceeded: the build's MaxSteps were spent before this
	// manifest was checked.
	ReasonBudgetExceeded = "index_budget_exceeded"
	// ReasonSummaryInArchive: the archived walk contains the summary or the
	// manifest entry itself.
	ReasonSummaryInArchive = "summary_in_archive"
	// ReasonBoundaryNotInArchive: boundaryEntryId is not one of the archived
	// entries (the walk never passes it; branchBaseId itself is excluded).
	ReasonBoundaryNotInArchive = "boundary_not_in_archive"
	// ReasonNotABoundary: the boundaryEntryId entry is not a window boundary
	// (session.Entry.IsBoundary).
	ReasonNotABoundary = "not_a_boundary"
	// ReasonWindowIDMismatch: the boundary's currentWindowId is not windowId.
	ReasonWindowIDMismatch = "window_id_mismatch"
	// ReasonDuplicateSummary: an earlier manifest (file order) that passes
	// every other check already owns this summary.
	ReasonDuplicateSummary = "duplicate_summary"
)

// Data is a manifest's `data` (docs/codex-contract.md "Tree archive" "Manifest"; docs/design.md §4). BranchBaseID "" stands for null: the summary's parent
// is a root position.
type Data struct {
	Protocol          int    `json:"protocol"`
	Strategy          string `json:"strategy"`
	WindowID          string `json:"windowId"`
	BoundaryEntryID   string `json:"boundaryEntryId"`
	SummaryEntryID    string `json:"summaryEntryId"`
	ArchivedLeafID    string `json:"archivedLeafId"`
	BranchBaseID      string `json:"branchBaseId"`
	CompactionEntryID string `json:"compactionEntryId,omitempty"`
}

// MarshalJSON writes d as a manifest's `data` in the key order the seed
// writes (protocol, strategy, windowId, boundaryEntryId, summaryEntryId,
// archivedLeafId, branchBaseId, then compactionEntryId when not ""), with
// branchBaseId null when "". The coordinator plans manifests with it.
func (d Data) MarshalJSON() ([]byte, error) {
	w := struct {
		Protocol          int     `json:"protocol"`
		Strategy          string  `json:"strategy"`
		WindowID          string  `json:"windowId"`
		BoundaryEntryID   string  `json:"boundaryEntryId"`
		SummaryEntryID    string  `json:"summaryEntryId"`
		ArchivedLeafID    string  `json:"archivedLeafId"`
		BranchBaseID      *string `json:"branchBaseId"`
		CompactionEntryID string  `json:"compactionEntryId,omitempty"`
	}{d.Protocol, d.Strategy, d.WindowID, d.BoundaryEntryID, d.SummaryEntryID, d.ArchivedLeafID, nil, d.CompactionEntryID}
	if d.BranchBaseID != "" {
		w.BranchBaseID = &d.BranchBaseID
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(w); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// ParseData decodes and checks a manifest's data (see ReasonMalformed). It
// reports false when the data is malformed.
func ParseData(raw json.RawMessage) (Data, bool) {
	var m map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &m) != nil || m == nil {
		return Data{}, false
	}
	var d Data
	if p, ok := m["protocol"]; !ok || json.Unmarshal(p, &d.Protocol) != nil || d.Protocol != Protocol || !isInteger(p) {
		return Data{}, false
	}
	str := func(key string, dst *string, required bool) bool {
		v, ok := m[key]
		if !ok || isNull(v) {
			return !required
		}
		if json.Unmarshal(v, dst) != nil {
			return false
		}
		return !required || *dst != ""
	}
	if !str("strategy", &d.Strategy, true) || d.Strategy != Strategy ||
		!str("windowId", &d.WindowID, true) || !str("boundaryEntryId", &d.BoundaryEntryID, true) ||
		!str("summaryEntryId", &d.SummaryEntryID, true) || !str("archivedLeafId", &d.ArchivedLeafID, true) ||
		!str("branchBaseId", &d.BranchBaseID, false) || !str("compactionEntryId", &d.CompactionEntryID, false) {
		return Data{}, false
	}
	return d, true
}

func isNull(v json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(v), []byte("null")) }

// isInteger reports whether a JSON number has no fraction or exponent
// (protocol 1.5 or 1e0 is not protocol 1).
func isInteger(v json.RawMessage) bool {
	return !bytes.ContainsAny(bytes.TrimSpace(v), ".eE")
}

// Manifest is one `codex-context-tree-archive` custom entry and the result
// of its validation.
type Manifest struct {
	Seq     int    // the manifest entry's Seq
	EntryID string // the manifest entry's id
	Data    Data   // zero when malformed
	Valid   bool
	Reasons []string // why it is invalid, in check order (nil when valid)

	SummarySeq  int // Seq of the summaryEntryId entry; -1 when there is none
	BoundarySeq int // Seq of the boundaryEntryId entry; -1 when there is none
	// Archived holds, for a valid manifest only, the archived entries in
	// chronological order: the walk from archivedLeafId through parentId up
	// to, excluding, branchBaseId, reversed. The boundary is among them
	// (normally first).
	Archived []int
}

// Index is the archive index of one tree: every manifest in file order.
type Index struct {
	Manifests []Manifest
	bySeq     map[int]int  // manifest Seq → index in Manifests
	boundary  map[int]bool // BoundarySeq of every valid manifest
	valid     int
}

// DataFunc returns the raw `data` of the custom entry at seq (nil when it
// has none). Errors are I/O errors; Build returns them.
type DataFunc func(seq int) (json.RawMessage, error)

// IsManifest reports whether e is a Tree archive manifest entry.
func IsManifest(e *session.Entry) bool {
	return e.Type == session.TypeCustom && e.CustomType == session.CustomTypeTreeArchive
}

// Build validates every manifest of t (validate, in file order, sharing the
// MaxSteps budget) and then marks as ReasonDuplicateSummary each otherwise
// valid manifest whose summary an earlier valid one already owns. data
// reads a manifest's `data`; its errors are returned unchanged.
func Build(t *session.Tree, data DataFunc) (*Index, error) {
	return build(t, data, MaxSteps)
}

func build(t *session.Tree, data DataFunc, steps int) (*Index, error) {
	x := &Index{bySeq: map[int]int{}, boundary: map[int]bool{}}
	budget := steps
	for i := range t.Len() {
		e := t.Entry(i)
		if !IsManifest(&e) {
			continue
		}
		raw, err := data(i)
		if err != nil {
			return nil, err
		}
		x.bySeq[i] = len(x.Manifests)
		x.Manifests = append(x.Manifests, validate(t, i, raw, &budget))
	}
	owner := map[int]bool{}
	for i := range x.Manifests {
		m := &x.Manifests[i]
		if !m.Valid {
			continue
		}
		if owner[m.SummarySeq] {
			m.Valid, m.Archived = false, nil
			m.Reasons = []string{ReasonDuplicateSummary}
			continue
		}
		owner[m.SummarySeq] = true
		x.boundary[m.BoundarySeq] = true
		x.valid++
	}
	return x, nil
}

// validate checks the manifest entry at seq with data raw against t,
// spending the walk's steps from budget (Build shares one MaxSteps budget
// across manifests and adds the duplicate check). The rules, each giving the Reason named:
//
//  1. raw is well formed (ReasonMalformed; nothing else is checked then);
//  2. summaryEntryId names a branch_summary (ReasonSummaryMissing,
//     ReasonNotBranchSummary) whose fromId is archivedLeafId
//     (ReasonFromIDMismatch), whose parentId is branchBaseId
//     (ReasonParentIDMismatch) and which is an ancestor of the manifest
//     entry (ReasonSummaryNotAncestor): docs/design.md §4;
//  3. the walk from archivedLeafId through parentId reaches branchBaseId
//     (a root when it is null) within MaxDepth entries without a cycle or a
//     missing parent (ReasonArchivedLeafMissing, ReasonMissingParent,
//     ReasonBaseNotAncestor, ReasonCycle, ReasonDepthExceeded,
//     ReasonBudgetExceeded): docs/codex-contract.md "Tree archive" "Traversal";
//  4. the walk holds neither the manifest nor, when it is a
//     branch_summary, the summary (ReasonSummaryInArchive), and it passes the boundary
//     (ReasonBoundaryNotInArchive), a window boundary
//     (ReasonNotABoundary) of window windowId (ReasonWindowIDMismatch):
//     docs/codex-contract.md "Tree archive" "The walk must pass the boundary".
//
// Checks 2 and 3 are independent: a manifest can fail both.
func validate(t *session.Tree, seq int, raw json.RawMessage, budget *int) Manifest {
	me := t.Entry(seq)
	m := Manifest{Seq: seq, EntryID: me.ID, SummarySeq: -1, BoundarySeq: -1}
	d, ok := ParseData(raw)
	if !ok {
		m.Reasons = []string{ReasonMalformed}
		return m
	}
	m.Data = d
	fail := func(r string) {
		if !slices.Contains(m.Reasons, r) {
			m.Reasons = append(m.Reasons, r)
		}
	}

	// 2. The native summary.
	summary := -1 // its Seq, when it is a branch_summary
	if s, ok := t.Lookup(d.SummaryEntryID); !ok {
		fail(ReasonSummaryMissing)
	} else {
		m.SummarySeq = s
		se := t.Entry(s)
		if se.Type != session.TypeBranchSummary {
			fail(ReasonNotBranchSummary)
		} else {
			summary = s
			if se.FromID() != d.ArchivedLeafID {
				fail(ReasonFromIDMismatch)
			}
			if se.ParentID != d.BranchBaseID {
				fail(ReasonParentIDMismatch)
			}
			if r := ancestry(t, s, seq, budget); r != "" {
				fail(r)
			}
		}
	}

	// 3. The archived walk.
	if b, ok := t.Lookup(d.BoundaryEntryID); ok {
		m.BoundarySeq = b
	}
	walk, reason := Walk(t, d.ArchivedLeafID, d.BranchBaseID, budget)
	if reason != "" {
		fail(reason)
	} else {
		// 4. What the walk holds.
		hasBoundary := false
		inWalk := false
		for _, s := range walk {
			if s == summary || s == seq {
				inWalk = true
			}
			if s == m.BoundarySeq {
				hasBoundary = true
			}
		}
		if inWalk {
			fail(ReasonSummaryInArchive)
		}
		switch {
		case !hasBoundary:
			fail(ReasonBoundaryNotInArchive)
		case !t.Entry(m.BoundarySeq).IsBoundary():
			fail(ReasonNotABoundary)
		case t.Entry(m.BoundarySeq).Window.CurrentWindowID != d.WindowID:
			fail(ReasonWindowIDMismatch)
		}
		if len(m.Reasons) == 0 {
			m.Archived = walk
		}
	}
	m.Valid = len(m.Reasons) == 0
	return m
}

// ancestry checks that the entry at anc is a strict ancestor of the entry
// at seq, walking at most MaxDepth parents and spending one unit of budget
// per step. It returns "" when it is, ReasonBudgetExceeded when the budget
// ran out first, ReasonSummaryNotAncestor otherwise.
func ancestry(t *session.Tree, anc, seq int, budget *int) string {
	cur := seq
	for range MaxDepth {
		if *budget <= 0 {
			return ReasonBudgetExceeded
		}
		*budget--
		p := t.ParentID(cur)
		if p == "" {
			break
		}
		next, ok := t.Lookup(p)
		if !ok || next == cur {
			break
		}
		if next == anc {
			return ""
		}
		cur = next
	}
	return ReasonSummaryNotAncestor
}

// Walk collects the archived entries from the entry leafID up through
// parentId to, excluding, the entry baseID ("" = walk to a root, which is
// then included), and returns their Seqs in chronological order (the
// reverse of the walk). It fails with a Reason (ReasonArchivedLeafMissing,
// ReasonMissingParent, ReasonBaseNotAncestor, ReasonCycle,
// ReasonDepthExceeded, ReasonBudgetExceeded) and no entries when the walk
// does not end at baseID within MaxDepth entries; each step spends one unit
// of budget. leafID == baseID gives no entries and no reason.
func Walk(t *session.Tree, leafID, baseID string, budget *int) ([]int, string) {
	if leafID == baseID && baseID != "" {
		return nil, ""
	}
	cur, ok := t.Lookup(leafID)
	if !ok {
		return nil, ReasonArchivedLeafMissing
	}
	var out []int
	seen := map[int]struct{}{}
	for {
		if _, dup := seen[cur]; dup {
			return nil, ReasonCycle
		}
		if len(out) == MaxDepth {
			return nil, ReasonDepthExceeded
		}
		if *budget <= 0 {
			return nil, ReasonBudgetExceeded
		}
		*budget--
		seen[cur] = struct{}{}
		out = append(out, cur)
		p := t.ParentID(cur)
		if p == "" {
			if baseID == "" {
				break
			}
			return nil, ReasonBaseNotAncestor
		}
		if p == baseID {
			if _, ok := t.Lookup(p); !ok {
				return nil, ReasonMissingParent
			}
			break
		}
		next, ok := t.Lookup(p)
		if !ok {
			return nil, ReasonMissingParent
		}
		cur = next
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, ""
}

// Valid is the number of valid manifests.
func (x *Index) Valid() int { return x.valid }

// Manifest returns the manifest whose entry is at seq, or nil.
func (x *Index) Manifest(seq int) *Manifest {
	if i, ok := x.bySeq[seq]; ok {
		return &x.Manifests[i]
	}
	return nil
}

// ArchivedBoundary reports whether the entry at seq is the boundary of a
// valid manifest's window: that window was archived.
func (x *Index) ArchivedBoundary(seq int) bool { return x.boundary[seq] }
