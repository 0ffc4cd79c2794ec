package coordinator

import (
	"strings"

	"contextd/archive"
	"contextd/history"
	"contextd/session"
	"contextd/store"
)

// treeArchives is the Tree-mode part of the Service: the archive index of
// each session file (archive.Archives, cached) read as history windows,
// hidden summaries and archive counts. Invalid manifests are counted in
// Metrics.InvalidArchives.
type treeArchives struct {
	*archive.Archives
}

func newTreeArchives(m *Metrics) *treeArchives {
	var invalid func(string)
	if m != nil {
		invalid = func(reason string) { m.InvalidArchives.WithLabelValues(reason).Inc() }
	}
	return &treeArchives{archive.New(invalid)}
}

// branch is archive.Archives.Branch over b under the target's rules. When
// the target's parent sessions are held (withLineage) and manifests on the
// branch miss their archived entries, those read through the parents
// count as archives (resolveParents); texts then names the source of
// their items' texts by window id (nil when none is resolved).
func (a *treeArchives) branch(b *Branch) (*archive.Branch, map[string]history.TextSource, error) {
	rules := b.Target.Rules()
	br, err := a.Branch(b.V, b.Leaf, b.Seqs, rules)
	if err != nil || len(br.Unresolved) == 0 || len(b.Target.parents) == 0 {
		return br, nil, err
	}
	wins, texts, err := a.resolveParents(b, br)
	if err != nil || len(wins) == 0 {
		return br, nil, err
	}
	idx, err := a.Index(b.V)
	if err != nil {
		return nil, nil, err
	}
	return idx.BranchResolved(b.V.Tree, b.Seqs, func(scope []int) history.RefFunc { return b.V.Refs(scope, rules) }, wins), texts, nil
}

// view is the Tree-mode history view: the history view of b's
// branch, its windows as Index.Branch builds them (archived windows, then
// the current one) and item texts from the store (a window read through a
// parent session: from the parent's).
func (a *treeArchives) view(b *Branch, agent string) (*history.View, error) {
	br, texts, err := a.branch(b)
	if err != nil {
		return nil, err
	}
	ts := b.V.Texts()
	if len(texts) > 0 {
		ts = windowTexts{base: ts, byWindow: texts}
	}
	return &history.View{Agent: agent, Windows: br.Windows, Texts: ts}, nil
}

// context adds the Tree-mode parts of a context answer. It sets
// out.HiddenSummaries to the signatures of the summaries of the branch's
// archives (Branch.Archives: valid manifests whose manifest entry and
// summary are both on the branch), in branch order: summary entry id,
// fromId, hex SHA-256 of the summary text, the summary's timestamp, the
// manifest entry id and the window id (docs/design.md §4). Manual
// summaries, summaries of other extensions and summaries of invalid
// manifests are never listed, so they stay in the provider context. It
// sets out.NeedsBoundary by Branch.NeedsBoundary; out.Window and
// out.BoundaryEntryID keep naming the latest boundary on the branch, the
// identity a fresh boundary continues from. It answers where the provider
// context starts, an index in b.Seqs (treeWindowStart), or -1 when the
// branch has no current window or all of it is sent.
func (a *treeArchives) context(b *Branch, out *ContextAnswer) (int, error) {
	br, _, err := a.branch(b)
	if err != nil {
		return -1, err
	}
	out.HiddenSummaries = make([]HiddenSummary, 0, len(br.Archives))
	for _, m := range br.Archives {
		se := b.V.Tree.Entry(m.SummarySeq)
		sha, err := a.SummarySHA(b.V, m.SummarySeq)
		if err != nil {
			return -1, err
		}
		out.HiddenSummaries = append(out.HiddenSummaries, HiddenSummary{
			EntryID: se.ID, FromID: se.FromID(), SummarySHA: sha, Timestamp: se.Timestamp,
			ManifestID: m.EntryID, WindowID: m.Data.WindowID,
		})
	}
	out.NeedsBoundary = br.NeedsBoundary()
	if out.NeedsBoundary || out.BoundaryEntryID == "" {
		return -1, nil
	}
	idx, err := a.Index(b.V)
	if err != nil {
		return -1, err
	}
	return treeWindowStart(b, idx, br), nil
}

// treeWindowStart is the index in b.Seqs where Tree mode starts the
// provider context (docs/modes.md "Windows on a mixed branch"), or -1 when
// it sends everything Pi sends. The current window begins at the last
// boundary on the branch, of either kind (a Local boundary appended
// linearly, or the boundary a Tree rollover committed after its cut), or
// at its adoption start (windowStart). Walking back from there, the Tree
// cuts right before it belong to it: a manifest of br.Archives moves the
// start back to its branch summary (what Pi wrote between the summary and
// the manifest, such as input typed while the rollover was interrupted,
// came after the navigation), and so do branch summaries and entries Pi
// sends no message for (manifests, note snapshots, model changes). The
// walk stops at any other message: the end of a closed Local window, or of
// a conversation adopted before the first Tree cut. When no message Pi
// sends lies before the start (a branch written in Tree mode only), the
// answer is -1: everything Pi sends, with Tree's hidden summaries dropped,
// as before. Two cases send more:
//
//   - the boundary before it on the branch, with no Tree cut between
//     them, opened a window a valid manifest archived: the person
//     navigated into that archived window with /tree and the fresh
//     boundary continues from there, so the start is that window's (its
//     boundary, or its adoption start);
//   - a compaction entry lies on the branch after the start: Pi already
//     replaced what came before its kept range by its summary (contextd's
//     Tree compaction keeps from the window's boundary, POST …/compaction),
//     and Pi sends that summary first, so nothing is cut (-1).
func treeWindowStart(b *Branch, idx *archive.Index, br *archive.Branch) int {
	tr := b.V.Tree
	i := currentBoundary(b)
	if i < 0 {
		return -1
	}
	start := windowStart(b, i)
	cuts := make(map[int]int, len(br.Archives)) // manifest seq → its summary's seq
	for _, m := range br.Archives {
		cuts[m.Seq] = m.SummarySeq
	}
	navigated := false
	for j := start - 1; j >= 0; j-- {
		sq := b.Seqs[j]
		if _, ok := cuts[sq]; ok {
			break
		}
		if tr.Entry(sq).IsBoundary() {
			if idx.ArchivedBoundary(sq) {
				start, navigated = windowStart(b, j), true
			}
			break
		}
	}
	if !navigated {
	walk:
		for j := start - 1; j >= 0; j-- {
			sq := b.Seqs[j]
			if ss, ok := cuts[sq]; ok {
				// Back to the cut's summary (on the branch before its
				// manifest: Branch.Archives).
				for j > 0 && b.Seqs[j] != ss {
					j--
				}
				start = j
				continue
			}
			switch tr.Type(sq) {
			case session.TypeBranchSummary:
				start = j
			case session.TypeMessage, session.TypeCustomMessage, session.TypeCompaction:
				break walk
			}
		}
		sent := false
		for j := range start {
			switch tr.Type(b.Seqs[j]) {
			case session.TypeMessage, session.TypeCustomMessage, session.TypeCompaction, session.TypeBranchSummary:
				sent = true
			}
		}
		if !sent {
			return -1
		}
	}
	for j := start + 1; j < len(b.Seqs); j++ {
		if tr.Type(b.Seqs[j]) == session.TypeCompaction {
			return -1
		}
	}
	if start == 0 {
		return -1
	}
	return start
}

// searchOrder: Tree views keep no search order (history.View.Search
// orders them itself).
func (a *treeArchives) searchOrder(*Branch, *history.View) history.ItemList { return nil }

// count is the number of valid
// manifests in v's file and one problem {reason "invalid_archive", detail
// "<manifest entry id>: <reason>[, <reason>…]"} per invalid manifest, in
// file order. An index that cannot be built (I/O error) gives one problem
// {reason "invalid_archive", detail "index: <error>"}.
func (a *treeArchives) count(v *store.View) (int, []SessionProblem) {
	if v.Tree == nil {
		return 0, nil
	}
	idx, err := a.Index(v)
	if err != nil {
		return 0, []SessionProblem{{Reason: "invalid_archive", Detail: "index: " + err.Error()}}
	}
	var probs []SessionProblem
	for i := range idx.Manifests {
		m := &idx.Manifests[i]
		if !m.Valid {
			probs = append(probs, SessionProblem{Reason: "invalid_archive", Detail: m.EntryID + ": " + strings.Join(m.Reasons, ", ")})
		}
	}
	return idx.Valid(), probs
}
