package coordinator

// The thread hint (docs/codex-contract.md "Local notes"): recent notes
// and the recovery ids of the previous window.

import (
	"context"

	"contextd/history"
	"contextd/notes"
)

// ThreadHintResult is thread_hint's answer: {text} of at most 4,000 bytes
// (docs/codex-contract.md "Backend transport", "Local notes").
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
		st, err := s.cachedNoteState(b)
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
