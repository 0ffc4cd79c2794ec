package coordinator

import (
	"context"
	"encoding/json"
	"fmt"

	"contextd"
	"contextd/archive"
	"contextd/notes"
	"contextd/session"
	"contextd/store"
)

// Finishing an interrupted Tree rollover (docs/design.md §5.3 "Interrupted
// rollovers"): contextd or the extension stopped after Pi appended the
// rollover's branch summary and before every planned entry (manifest,
// note snapshot, boundary) was in the file. The branch then ends in the
// summary with no current window (resumeOf). POST …/windows answers the
// missing entries, so that once the extension appends them the archived
// window is listed and readable and its notes are the notes the model had:
//
//   - contextd's state holds the rollover (settled: it is committed now;
//     committed: its stored plan): the planned entries not in the file, so
//     the rollover completes when Pi has written them;
//   - the state does not hold it (state directory lost, another contextd
//     ran it): the entries are rebuilt from the file alone: the manifest
//     from the summary and the archived boundary, the note snapshot from
//     the note state of the archived leaf's branch (what settle
//     materializes), the boundary with the thread hint of that same note
//     state, so the hint's note sizes are what notes then returns.

// cutShort is what Windows found of a rollover cut short, for finishCut
// (which runs after the branch's read is released: committing reads the
// session again).
type cutShort struct {
	boundaryEntryID string // the archived window's boundary
	summaryEntryID  string // the rollover's branch summary on the branch
	archivedLeafID  string // the summary's fromId
}

// cutOf is the cutShort of the rollover r (resumeOf) cut short on b's branch.
func cutOf(b *Branch, r *Resume) *cutShort {
	c := &cutShort{boundaryEntryID: r.BoundaryEntryID, summaryEntryID: r.SummaryEntryID}
	if se := b.V.Tree.Get(r.SummaryEntryID); se != nil {
		c.archivedLeafID = se.FromID()
	}
	return c
}

// finishCut fills out with the entries that finish the rollover cut short on
// the branch of leafID: from contextd's state when it holds the rollover
// (finishFromState), else from the file alone (finishFromFile).
func (s *Service) finishCut(ctx context.Context, t *Target, leafID string, cut *cutShort, out *WindowsAnswer) error {
	if done, err := s.finishFromState(ctx, t, cut, out); done || err != nil {
		return err
	}
	return s.withBranch(t, leafID, func(b *Branch) error {
		r := s.resumeOf(b)
		if r == nil || r.Broken != nil || r.SummaryEntryID != cut.summaryEntryID || len(r.Missing) == 0 {
			return contextd.Errorf(contextd.EConflict, "the session changed while the interrupted rollover of summary %q was being finished; retry", cut.summaryEntryID)
		}
		return s.finishFromFile(b, t, r, out)
	})
}

// finishFromFile fills out with the entries that finish the rollover r cut
// short on b's branch, rebuilt from the file alone (see above).
func (s *Service) finishFromFile(b *Branch, t *Target, r *Resume, out *WindowsAnswer) error {
	tr := b.V.Tree
	se := tr.Get(r.SummaryEntryID)
	if se == nil {
		return fmt.Errorf("summary %s of an interrupted rollover is not in the tree", r.SummaryEntryID)
	}
	nb := b
	if r.notesFrom != nil {
		nb = &Branch{V: b.V, Leaf: b.Leaf, Seqs: r.notesFrom, Target: b.Target}
	}
	st, err := noteState(nb)
	if err != nil {
		return err
	}
	for _, m := range r.Missing {
		switch m {
		case session.CustomTypeTreeArchive:
			raw, err := marshalJS(archive.Data{Protocol: archive.Protocol, Strategy: archive.Strategy, WindowID: r.Window.CurrentWindowID,
				BoundaryEntryID: r.BoundaryEntryID, SummaryEntryID: se.ID, ArchivedLeafID: se.FromID(), BranchBaseID: se.ParentID})
			if err != nil {
				return err
			}
			out.Finish = append(out.Finish, PlannedEntry{Type: "custom", CustomType: m, Data: raw})
		case session.CustomTypeNoteSnapshot:
			data, err := notes.Snapshot(st, s.now().UTC())
			if err != nil {
				return err
			}
			raw, err := marshalJS(data)
			if err != nil {
				return err
			}
			out.Finish = append(out.Finish, PlannedEntry{Type: "custom", CustomType: m, Data: raw})
		}
	}
	out.Window = s.nextIdentity(r.Window)
	out.Append = []Boundary{s.NewBoundary(t.Agent, out.Window, notes.ThreadHint(st, r.Recovery))}
	return nil
}

// finishFromState fills out with the entries of the open rollover of
// contextd's state that cut names, when there is one (done true): a
// settled rollover is committed with cut's summary, and the entries of its
// plan that the file does not hold yet are answered (manifest and snapshot
// in Finish, the boundary in Append).
func (s *Service) finishFromState(ctx context.Context, t *Target, cut *cutShort, out *WindowsAnswer) (done bool, err error) {
	row, ok, err := s.State.OpenRollover(ctx, t.SessionID)
	if err != nil || !ok || row.Mode != contextd.ModeTree || row.BoundaryEntryID != cut.boundaryEntryID {
		return false, err
	}
	switch {
	case row.State == store.RolloverSettled && row.LeafAtSettle == cut.archivedLeafID:
		if _, err := s.CommitRollover(ctx, t.SessionID, row.ID, CommitRequest{SummaryEntryID: cut.summaryEntryID}); err != nil {
			return false, err
		}
		if row, err = s.loadRollover(ctx, t.SessionID, row.ID); err != nil {
			return false, err
		}
	case row.State == store.RolloverCommitted && row.SummaryEntryID == cut.summaryEntryID:
	default:
		return false, nil
	}
	var plan rolloverPlan
	if err := json.Unmarshal(row.Plan, &plan); err != nil {
		return false, fmt.Errorf("rollover %s: plan: %w", row.ID, err)
	}
	var missing []string
	if err := t.Session.Read(func(v *store.View) error {
		if err := usable(v); err != nil {
			return err
		}
		missing, err = missingPlanned(v, row.Mode, row.SummaryEntryID, plan)
		return err
	}); err != nil {
		return false, err
	}
	out.Finish, out.Append, out.Window, out.RolloverID = nil, []Boundary{}, plan.Window, row.ID
	for _, e := range plan.Append[len(plan.Append)-len(missing):] {
		if e.Type == "custom" {
			out.Finish = append(out.Finish, e)
			continue
		}
		b := Boundary{Type: e.Type, CustomType: e.CustomType, Content: e.Content, Display: true}
		if e.Details != nil {
			b.Details = *e.Details
		}
		out.Append = append(out.Append, b)
	}
	return true, nil
}
