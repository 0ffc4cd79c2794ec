package coordinator

import (
	"context"

	"contextd"
	"contextd/session"
	"contextd/store"
)

// Rollovers the extension gave up on (docs/design.md §5.3 "Interrupted
// rollovers"): contextd stopped (killed, restarted) between a rollover's
// settle and its commit, or between the commit and the boundary reaching
// the file. The extension's commit failed, its abort could not reach
// contextd, the model was told it stays in its window and goes on. The
// rollover stays open in contextd's state with nothing of it in the file,
// and every later new_context was refused (409) until Pi reloaded.
//
// A rollover is superseded when a new one is requested on a branch that
// holds its leaf at settle followed by an assistant message (the model has
// been called since it settled: the extension that ran it has moved on;
// settle and commit are back to back with no model call between them,
// docs/design.md §5.3.1), and nothing of it is in the file: settled
// (Local: nothing planned; Tree: no branch summary from that leaf) or a
// committed Local rollover whose boundary is not in the file (a committed
// Tree rollover has its summary in the file and is finished, finish.go,
// unless the new one is requested on a branch without that summary:
// SupersededOffBranchReason). CreateRollover aborts it with the reason
// and opens the new one.

// SupersededReason is the abort reason of a superseded rollover.
const SupersededReason = "superseded: the model called new_context again after this rollover settled, and nothing of it reached the session file (its commit was cut short, e.g. by a contextd restart)"

// SupersededOffBranchReason is the abort reason of a committed Tree
// rollover superseded by a new_context on a branch without its branch
// summary.
const SupersededOffBranchReason = "superseded: new_context was called on a branch without this rollover's branch summary (the leaf moved away with /tree before its window opened); the summary stays in the session tree, and /contextd finish there opens its window"

// superseded answers the abort reason when the open rollover r is
// superseded by a new rollover requested on b (see above), else "". r is
// as autoComplete left it.
//
// A Tree rollover whose branch summary is in the file (committed, or
// settled when contextd stopped before the commit) and whose planned
// entries are not all under it (autoComplete left it open) is superseded
// by a rollover on a branch that does not hold the summary: the leaf
// moved away with /tree before the window opened (Pi 0.85 runs the
// person's /tree beside the rollover's navigation, so the extension may
// append the planned entries on the other branch), and no append can reach
// the summary's branch from there. Nothing is hidden: the summary and
// whatever Pi wrote stay in the file and in /tree, and a branch ending in
// the summary is finished from the file (finish.go) when the person
// returns to it. On the summary's own branch the rollover is finished, not
// dropped.
func superseded(b *Branch, r store.Rollover) string {
	if r.Mode == contextd.ModeTree && (r.State == store.RolloverSettled || r.State == store.RolloverCommitted) {
		if summary := treeSummary(b.V.Tree, r); summary >= 0 {
			for _, sq := range b.Seqs {
				if sq == summary {
					return "" // on its branch: finished, not dropped
				}
			}
			return SupersededOffBranchReason
		}
	}
	switch {
	case r.LeafAtSettle == "":
		return ""
	case r.State == store.RolloverSettled:
	case r.State == store.RolloverCommitted && r.Mode == contextd.ModeLocal:
	default:
		return ""
	}
	tr := b.V.Tree
	at := -1
	for i, sq := range b.Seqs {
		if tr.ID(sq) == r.LeafAtSettle {
			at = i
			break
		}
	}
	if at < 0 {
		return ""
	}
	called := false
	for _, sq := range b.Seqs[at+1:] {
		if e := tr.Entry(sq); e.Type == session.TypeMessage && e.Role == session.RoleAssistant {
			called = true
			break
		}
	}
	if !called {
		return ""
	}
	return SupersededReason
}

// treeSummary is the seq of the Tree rollover r's branch summary in tr: the
// committed summary, or for a settled rollover a branch summary from its
// leaf at settle; -1 when the file holds none.
func treeSummary(tr *session.Tree, r store.Rollover) int {
	if r.SummaryEntryID != "" {
		if sq, ok := tr.Lookup(r.SummaryEntryID); ok {
			return sq
		}
		return -1
	}
	if r.LeafAtSettle == "" {
		return -1
	}
	for i := range tr.Len() {
		if e := tr.Entry(i); e.Type == session.TypeBranchSummary && e.FromID() == r.LeafAtSettle {
			return i
		}
	}
	return -1
}

// abortSuperseded aborts the superseded rollover r with reason (superseded's
// answer); false when it moved on meanwhile (another call finished or
// aborted it).
func (s *Service) abortSuperseded(ctx context.Context, r store.Rollover, reason string) (bool, error) {
	ok, err := s.State.AbortRollover(ctx, r.ID, reason, s.now().UTC())
	if err != nil || !ok {
		return false, err
	}
	s.Metrics.Rollovers.WithLabelValues(string(r.Mode), "aborted").Inc()
	s.RefreshPending(ctx)
	return true, nil
}
