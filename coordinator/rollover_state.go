package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"contextd"
	"contextd/session"
	"contextd/store"
)

// Reading rollovers back: the status GET /v1/sessions/{id} shows, loading
// one rollover of a session, the branch checks every step shares, and the
// refusals they answer.

// rolloverStatus is the rollover part of GET /v1/sessions/{id}: the open
// rollover (nil when none) and,
// for an open Tree rollover whose branch summary is in the file but whose
// planned entries are not all there, an IncompleteRollover (nil
// otherwise). A settled rollover's summary is the last branch_summary of
// the file with the boundary's parent as parentId and the leaf at settle as
// fromId. A committed rollover whose entries all landed is completed here.
func (s *Service) rolloverStatus(ctx context.Context, t *Target) (open *RolloverInfo, incomplete *IncompleteRollover, err error) {
	r, ok, err := s.State.OpenRollover(ctx, t.SessionID)
	if err != nil || !ok {
		return nil, nil, err
	}
	if r, err = s.autoComplete(ctx, t, r); err != nil {
		return nil, nil, err
	}
	if !r.State.Open() {
		return nil, nil, nil
	}
	info, err := rolloverInfo(r)
	if err != nil {
		return nil, nil, err
	}
	if t.Session == nil || r.Mode != contextd.ModeTree || r.State == store.RolloverPending {
		return &info, nil, nil
	}
	var inc *IncompleteRollover
	err = t.Session.Read(func(v *store.View) error {
		if usable(v) != nil {
			return nil
		}
		if r.State == store.RolloverSettled {
			sum := ""
			for i := range v.Tree.Len() {
				e := v.Tree.Entry(i)
				if e.Type == session.TypeBranchSummary && e.ParentID == r.BoundaryParentID && e.FromID() == r.LeafAtSettle {
					sum = e.ID
				}
			}
			if sum != "" {
				inc = &IncompleteRollover{RolloverID: r.ID, State: string(r.State), SummaryEntryID: sum,
					Missing: []string{session.CustomTypeTreeArchive, session.CustomTypeNoteSnapshot, session.CustomTypeWindow}}
			}
			return nil
		}
		missing, err := missingEntries(v, r)
		if err == nil && len(missing) > 0 {
			inc = &IncompleteRollover{RolloverID: r.ID, State: string(r.State), SummaryEntryID: r.SummaryEntryID, Missing: missing}
		}
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	if inc == nil {
		return &info, nil, nil
	}
	return &info, inc, nil
}

// loadRollover reads rollover id of sessionID; ENotFound when there is none.
func (s *Service) loadRollover(ctx context.Context, sessionID, id string) (store.Rollover, error) {
	r, ok, err := s.State.Rollover(ctx, id)
	if err != nil {
		return r, err
	}
	if !ok || r.SessionID != sessionID {
		return r, contextd.Errorf(contextd.ENotFound, "session %q has no rollover %q; start one with POST /v1/sessions/%s/rollovers", sessionID, id, sessionID)
	}
	return r, nil
}

// rolloverBranch is withBranch with the rollover refusals: a leaf that is
// not in the file is ENotFound (as on every route with a leaf_id), a parent
// cycle EInvalid.
func (s *Service) rolloverBranch(t *Target, leafID string, fn func(b *Branch) error) error {
	return t.Session.Read(func(v *store.View) error {
		if err := usable(v); err != nil {
			return err
		}
		if leafID != "" && v.Tree.Get(leafID) == nil {
			return unknownLeaf(leafID, t.SessionID)
		}
		seqs, cycle, err := v.Tree.Branch(leafID)
		if err != nil {
			return err
		}
		leaf := leafID
		if leaf == "" {
			leaf = v.Tree.Leaf()
		}
		if cycle {
			return contextd.Errorf(contextd.EInvalid, "the parent chain of leaf %q has a cycle; contextd cannot roll over a branch that is not a path to a root", leaf)
		}
		return fn(&Branch{V: v, Leaf: leaf, Seqs: seqs, Target: t})
	})
}

// onBranch reports whether the entry id is on b.
func onBranch(b *Branch, id string) bool {
	for _, sq := range b.Seqs {
		if b.V.Tree.ID(sq) == id {
			return true
		}
	}
	return false
}

// sameSession refuses a target whose file or mode differs from the
// rollover's.
func sameSession(t *Target, r store.Rollover) error {
	if t.Session == nil || t.Mode != r.Mode {
		return sessionChanged(r, "its mode is now "+string(t.Mode))
	}
	if t.Session.Path() != r.SessionFile {
		return sessionChanged(r, "its file is now "+t.Session.Path())
	}
	return nil
}

func checkHeader(b *Branch, r store.Rollover) error {
	if id := b.V.Tree.Header.ID; id != r.SessionID {
		return sessionChanged(r, "its header id is now "+id)
	}
	return nil
}

func sessionChanged(r store.Rollover, what string) error {
	return contextd.Errorf(contextd.EPrecondition, "session changed: session %q is no longer the one rollover %s was requested on (%s; was file %s, mode %s); abort the rollover",
		r.SessionID, r.ID, what, r.SessionFile, r.Mode)
}

func abortedError(r store.Rollover) error {
	return contextd.Errorf(contextd.EConflict, "rollover %s was aborted: %s; call new_context again to start a new one", r.ID, r.Reason)
}

// rolloverInfo renders a stored rollover.
func rolloverInfo(r store.Rollover) (RolloverInfo, error) {
	info := RolloverInfo{RolloverID: r.ID, SessionID: r.SessionID, Mode: r.Mode, State: string(r.State), BoundaryEntryID: r.BoundaryEntryID,
		LeafAtRequest: r.LeafAtRequest, LeafAtSettle: r.LeafAtSettle, SummaryEntryID: r.SummaryEntryID, Reason: r.Reason, RequestedAt: r.RequestedAt}
	if err := json.Unmarshal(r.Window, &info.Window); err != nil {
		return info, fmt.Errorf("rollover %s: window identity: %w", r.ID, err)
	}
	if r.Plan != nil {
		var p rolloverPlan
		if err := json.Unmarshal(r.Plan, &p); err != nil {
			return info, fmt.Errorf("rollover %s: plan: %w", r.ID, err)
		}
		info.NextWindow = &p.Window
	}
	for _, f := range []struct {
		t   time.Time
		dst **time.Time
	}{{r.SettledAt, &info.SettledAt}, {r.CommittedAt, &info.CommittedAt}, {r.FinishedAt, &info.FinishedAt}} {
		if !f.t.IsZero() {
			tt := f.t
			*f.dst = &tt
		}
	}
	return info, nil
}

// RefreshPending sets the Pending gauge (contextd_rollovers_pending) from
// the state database's count of open rollovers. Every rollover transition
// calls it; call it once at startup so the gauge counts the rollovers a
// previous run left open. A failed count is logged, not returned.
func (s *Service) RefreshPending(ctx context.Context) {
	if n, err := s.State.CountOpenRollovers(ctx); err == nil {
		s.Metrics.Pending.Set(float64(n))
	} else {
		s.Logger.Warn("count open rollovers", "error", err)
	}
}
