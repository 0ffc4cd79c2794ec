package coordinator

// The list of a branch's provider-context messages as the pairing rule
// (pairing.go) reads them, and its cached form extended as Pi appends.

import (
	"crypto/sha256"
	"encoding/hex"

	"contextd/session"
)

// pairMessages lists the branch's provider context (Pi's
// buildSessionContext under rules) as the pairing rule sees it, without the
// entries in hidden. Assistant and toolResult entries are decoded for their
// call ids (a context_edit replacement supplies an assistant's content);
// boundaries and branch summaries get their keys. shown holds the entry
// ids of the hidden messages Pi sends (the only ones callers ask about: a
// set of every id on a long branch cost /context milliseconds). With from
// (and not lastBatch), the list starts at d0 (below).
//
// Only the messages from d0 on are decoded (earlier assistant and
// toolResult messages carry no call ids): d0 is the last assistant message
// before the entry from (a Local boundary: what precedes that assistant is
// never sent), or, with from "", 0; with lastBatch, the last assistant
// message (none: the list is empty). This keeps /context's cost to the
// current window in Local mode.
func pairMessages(b *Branch, rules session.Rules, hidden map[string]bool, from string, lastBatch bool) ([]PairMessage, map[string]bool, error) {
	tr := b.V.Tree
	cms := tr.Project(b.Seqs, rules)
	d0, end := 0, len(cms)
	if lastBatch {
		from, d0 = "", len(cms)
		for i := len(cms) - 1; i >= 0; i-- {
			if cms[i].Role == session.RoleAssistant {
				d0 = i
				break
			}
		}
	}
	if from != "" {
		d0 = sliceStart(tr, cms, from)
	}
	// A Local slice never sends what precedes d0, and the pairing rule
	// looks back no further than d0 (PlanPairing), so the messages
	// listed start there: a long branch cost /context a PairMessage per
	// message on every call. The last batch's readers (leafUnresolved)
	// look no further back than its assistant message either. Hidden
	// summaries are looked for on the whole branch.
	first := 0
	if from != "" || lastBatch {
		first = d0
	}
	all, err := pairList(b, cms, first, d0, end)
	if err != nil {
		return nil, nil, err
	}
	out, shown := withoutHidden(all, hidden)
	for _, cm := range cms[:first] {
		if id := tr.ID(cm.Seq); hidden[id] {
			shown[id] = true
		}
	}
	return out, shown, nil
}

// sliceStart is d0 of pairMessages: the index in cms of the last assistant
// message before the message of entry from, else of that message; 0 when
// no message is from's.
func sliceStart(tr *session.Tree, cms []session.ContextMessage, from string) int {
	for i := range cms {
		if tr.ID(cms[i].Seq) == from {
			for j := i - 1; j >= 0; j-- {
				if cms[j].Role == session.RoleAssistant {
					return j
				}
			}
			return i
		}
	}
	return 0
}

// pairList returns the PairMessage of each of cms[first:], hidden ones
// included; the assistant, toolResult and branch-summary messages among
// cms[d0:end] are decoded for their call ids and keys (the others get
// none).
func pairList(b *Branch, cms []session.ContextMessage, first, d0, end int) ([]PairMessage, error) {
	tr := b.V.Tree
	// A tool result gives only its call id: decoded without its content
	// (DecodeEachTreeOnly; a tool result is often the largest line of a
	// window), unless a context edit names it too.
	var need, results []int
	seen := map[int]bool{}
	for _, cm := range cms[d0:end] {
		switch cm.Role {
		case session.RoleAssistant, session.RoleToolResult, "branchSummary":
			if !seen[cm.Seq] {
				seen[cm.Seq] = true
				if cm.Role == session.RoleToolResult && cm.EditSeq < 0 {
					results = append(results, cm.Seq)
				} else {
					need = append(need, cm.Seq)
				}
			}
			if cm.EditSeq >= 0 && !seen[cm.EditSeq] {
				seen[cm.EditSeq] = true
				need = append(need, cm.EditSeq)
			}
		}
	}
	dec := make(map[int]*session.Decoded, len(need))
	if err := b.V.DecodeEach(need, func(seq int, _ *session.Entry, d *session.Decoded) error {
		dec[seq] = d
		return nil
	}); err != nil {
		return nil, err
	}
	callIDs := make(map[int]string, len(results))
	if err := b.V.DecodeEachTreeOnly(results, func(seq int, _ *session.Entry, d *session.Decoded) error {
		if d != nil && d.Message != nil {
			callIDs[seq] = d.Message.ToolCallID
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]PairMessage, 0, len(cms)-first)
	for _, cm := range cms[first:] {
		e := tr.Entry(cm.Seq)
		m := PairMessage{EntryID: e.ID, Line: e.Line, Role: cm.Role}
		d := dec[cm.Seq]
		switch cm.Role {
		case session.RoleAssistant:
			m.StopReason = e.StopReason
			content := (*session.Content)(nil)
			if d != nil && d.Message != nil {
				content = &d.Message.Content
			}
			if cm.EditSeq >= 0 {
				if ed := dec[cm.EditSeq]; ed != nil {
					content = ed.Replacement
				}
			}
			if content != nil {
				for _, part := range content.Parts {
					if part.Type == "toolCall" {
						m.Calls = append(m.Calls, PairCall{ID: part.ID, Name: part.Name})
					}
				}
			}
		case session.RoleToolResult:
			if id, ok := callIDs[cm.Seq]; ok {
				m.CallID = id
			} else if d != nil && d.Message != nil {
				m.CallID = d.Message.ToolCallID
			}
		case "custom":
			if e.IsBoundary() {
				m.Key = &MessageKey{Role: "custom", CustomType: session.CustomTypeWindow, WindowID: e.Window.CurrentWindowID}
			}
		case "branchSummary":
			if d != nil {
				sum := sha256.Sum256([]byte(d.Summary))
				m.Key = &MessageKey{Role: "branchSummary", FromID: e.FromID(), SummarySHA256: hex.EncodeToString(sum[:])}
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// withoutHidden returns msgs without the messages of the entries in
// hidden, and the set of those ids found. When none is found it returns
// msgs itself (a copy of a 2,000,000-message list is 208 MB), else a new
// list; callers must not modify either (msgs may be the list in the
// Service's memo).
func withoutHidden(msgs []PairMessage, hidden map[string]bool) ([]PairMessage, map[string]bool) {
	shown := make(map[string]bool, len(hidden))
	first := -1
	if len(hidden) > 0 {
		for i := range msgs {
			if hidden[msgs[i].EntryID] {
				first = i
				break
			}
		}
	}
	if first < 0 {
		return msgs, shown
	}
	out := make([]PairMessage, first, len(msgs)-1)
	copy(out, msgs[:first])
	for _, m := range msgs[first:] {
		if hidden[m.EntryID] {
			shown[m.EntryID] = true
			continue
		}
		out = append(out, m)
	}
	return out, shown
}

// pairCache is pairMessages' list for one branch and from, hidden
// messages included, kept in the Service's memo (kindPairs) so that
// /context after Pi appended entries decodes only those (extendPairs).
// Read-only once built.
type pairCache struct {
	from  string
	pairs []PairMessage // pairList(cms, d0, d0, len(cms)) of the branch's projection
	// targets holds the targetIds of the context edits on the branch
	// (RulesPi16; nil when none): an appended entry one of them names
	// would be edited, which extendPairs does not do.
	targets map[string]bool
	// tail is the claim on the spare capacity of pairs' array (nil: none
	// may be written), shared with every slice of that array.
	tail *arrayTail
}

// cachedPairMessages is pairMessages(b, rules, hidden, from, false),
// through the Service's memo (kindPairs; Local mode: no hidden summaries
// before the slice): the same state of the session and leaf reuses the
// list, a branch that extends a stored one by entries that do not change
// how the earlier ones project (derivePairs, extendPairs) lists only the
// new messages; otherwise the whole branch is projected again. pv is the
// memo's payload when msgs is its list (no hidden message left out), for
// its pairing walk (pairsVal.pairing); nil otherwise.
func (s *Service) cachedPairMessages(b *Branch, rules session.Rules, hidden map[string]bool, from string) (msgs []PairMessage, shown map[string]bool, pv *pairsVal, err error) {
	k, ok := keyOf(b.Target, b.V, b.Leaf, kindPairs)
	if !ok || s.memo == nil || (from != "" && len(hidden) > 0) || rules != k.rules {
		msgs, shown, err = pairMessages(b, rules, hidden, from, false)
		return msgs, shown, nil, err
	}
	k.from = from
	pv, err = memoized(s.memo, k, func() (*pairsVal, int, error) { return derivePairs(s.memo, k, b, rules) })
	if err != nil {
		return nil, nil, nil, err
	}
	msgs, shown = withoutHidden(pv.pc.pairs, hidden)
	if len(msgs) != len(pv.pc.pairs) {
		pv = nil
	}
	return msgs, shown, pv, nil
}

// buildPairs is the pairCache of b's whole branch.
func buildPairs(b *Branch, rules session.Rules, from string) (*pairCache, error) {
	tr := b.V.Tree
	cms := tr.Project(b.Seqs, rules)
	d0 := 0
	if from != "" {
		d0 = sliceStart(tr, cms, from)
	}
	pairs, err := pairList(b, cms, d0, d0, len(cms))
	if err != nil {
		return nil, err
	}
	pc := &pairCache{from: from, pairs: pairs}
	if rules >= session.RulesPi16 {
		for _, sq := range b.Seqs {
			if e := tr.Entry(sq); e.Type == session.TypeContextEdit && e.Edit != session.EditNone {
				if pc.targets == nil {
					pc.targets = map[string]bool{}
				}
				pc.targets[e.TargetID()] = true
			}
		}
	}
	return pc, nil
}

// extendPairs is the pairCache of base's branch followed by the entries
// added (seqs), when those project as their own messages appended after
// base's (Tree.Project): none is a compaction (it reorders the context),
// a context edit under RulesPi16, a boundary (the slice moves) or the
// target of a context edit on the branch. ok is false otherwise.
func extendPairs(b *Branch, rules session.Rules, base *pairCache, added []int) (*pairCache, bool, error) {
	tr := b.V.Tree
	cms := make([]session.ContextMessage, 0, len(added))
	for _, sq := range added {
		e := tr.Entry(sq)
		if e.Type == session.TypeCompaction || e.Type == session.TypeContextEdit || e.IsBoundary() || base.targets[e.ID] {
			return nil, false, nil
		}
		if role := session.ContextRole(&e); role != "" {
			cms = append(cms, session.ContextMessage{Seq: sq, Role: role, EditSeq: -1})
		}
	}
	more, err := pairList(b, cms, 0, 0, len(cms))
	if err != nil {
		return nil, false, err
	}
	pairs, tail := appendOwned(base.pairs, base.tail, more...)
	return &pairCache{from: base.from, pairs: pairs, tail: tail, targets: base.targets}, true, nil
}
