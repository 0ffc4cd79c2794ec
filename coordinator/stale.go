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
// Tree rollover has its summary in the file and is finished, finish.go).
// CreateRollover aborts it with SupersededReason and opens the new one.

// SupersededReason is the abort reason of a superseded rollover.
const SupersededReason = "superseded: the model called new_context again after this rollover settled, and nothing of it reached the session file (its commit was cut short, e.g. by a contextd restart)"

// superseded reports whether the open rollover r is superseded by a new
// rollover requested on b (see above). r is as autoComplete left it.
func superseded(b *Branch, r store.Rollover) bool {
	switch {
	case r.LeafAtSettle == "":
		return false
	case r.State == store.RolloverSettled:
	case r.State == store.RolloverCommitted && r.Mode == contextd.ModeLocal:
	default:
		return false
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
		return false
	}
	called := false
	for _, sq := range b.Seqs[at+1:] {
		if e := tr.Entry(sq); e.Type == session.TypeMessage && e.Role == session.RoleAssistant {
			called = true
			break
		}
	}
	if !called {
		return false
	}
	if r.Mode == contextd.ModeTree {
		for i := range tr.Len() {
			if e := tr.Entry(i); e.Type == session.TypeBranchSummary && e.FromID() == r.LeafAtSettle {
				return false // its summary landed: finished, not dropped
			}
		}
	}
	return true
}

// abortSuperseded aborts the superseded rollover r; false when it moved on
// meanwhile (another call finished or aborted it).
func (s *Service) abortSuperseded(ctx context.Context, r store.Rollover) (bool, error) {
	ok, err := s.State.AbortRollover(ctx, r.ID, SupersededReason, s.now().UTC())
	if err != nil || !ok {
		return false, err
	}
	s.Metrics.Rollovers.WithLabelValues(string(r.Mode), "aborted").Inc()
	s.RefreshPending(ctx)
	return true, nil
}
