package coordinator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"contextd"
	"contextd/archive"
	"contextd/notes"
	"contextd/session"
	"contextd/store"
)

// The append plan of a rollover's commit (docs/design.md §5.3 step 4): the
// entries the extension appends, and the check that they are in the file
// before the rollover completes (step 5). contextd never writes them.

// rolloverPlan is what the rollovers table stores for a commit.
type rolloverPlan struct {
	Window WindowIdentity `json:"window"`
	Append []PlannedEntry `json:"append"`
}

// commitPlan is the append plan of a commit (stored with the rollover)
// and what the rollover metrics record of it.
type commitPlan struct {
	rolloverPlan
	noteWrites int              // note writes of the closed window (Tree)
	hint       notes.HintReport // size of the boundary's thread hint and what it left out
}

// planCommit builds the entries a commit answers (docs/design.md §5.3 step 4),
// from the rollover's state at settle and the file as it is now. Tree:
// the branch summary summaryID is checked (checkSummary), then the
// codex-context-tree-archive manifest (docs/codex-contract.md "Tree archive") and the
// codex-context-note-snapshot materialized at settle (docs/codex-contract.md "Local notes"). Both modes:
// the next codex-context-window boundary (first window id kept, previous =
// the closing window, number + 1) with the thread hint of the snapshot's
// notes and the closing window's recovery ids (docs/codex-contract.md "Window boundaries", "Local notes"), then the other
// tool calls of the message that called new_context with their result
// item ids (batchText; docs/design.md §5.3.1). It writes nothing;
// CommitRollover stores the plan.
func (s *Service) planCommit(t *Target, r store.Rollover, summaryID string) (commitPlan, error) {
	var old WindowIdentity
	if err := json.Unmarshal(r.Window, &old); err != nil {
		return commitPlan{}, fmt.Errorf("rollover %s: window identity: %w", r.ID, err)
	}
	var rec notes.Recovery
	if err := json.Unmarshal(r.Recovery, &rec); err != nil {
		return commitPlan{}, fmt.Errorf("rollover %s: recovery: %w", r.ID, err)
	}
	ev, err := notes.DecodeEvent("rollover:"+r.ID, notes.CustomTypeNoteSnapshot, r.Notes)
	if err != nil {
		return commitPlan{}, fmt.Errorf("rollover %s: note snapshot: %w", r.ID, err)
	}
	var plan commitPlan
	if r.Mode == contextd.ModeTree {
		var base *string
		err := t.Session.Read(func(v *store.View) error {
			if err := usable(v); err != nil {
				return err
			}
			if v.Tree.Header.ID != r.SessionID {
				return sessionChanged(r, "its header id is now "+v.Tree.Header.ID)
			}
			b, err := checkSummary(v.Tree, r, summaryID)
			if err != nil {
				return err
			}
			base = b
			plan.noteWrites = archivedNoteWrites(v.Tree, r.LeafAtSettle, r.BoundaryEntryID)
			return nil
		})
		if err != nil {
			return commitPlan{}, err
		}
		md := archive.Data{Protocol: archive.Protocol, Strategy: archive.Strategy, WindowID: old.CurrentWindowID, BoundaryEntryID: r.BoundaryEntryID,
			SummaryEntryID: summaryID, ArchivedLeafID: r.LeafAtSettle}
		if base != nil {
			md.BranchBaseID = *base // "" is written as null (a root position)
		}
		manifest, err := marshalJS(md)
		if err != nil {
			return commitPlan{}, err
		}
		plan.Append = append(plan.Append,
			PlannedEntry{Type: "custom", CustomType: session.CustomTypeTreeArchive, Data: manifest},
			PlannedEntry{Type: "custom", CustomType: session.CustomTypeNoteSnapshot, Data: bytes.Clone(r.Notes)})
		rec.SummaryItemID = summaryID
	}
	var batch []BatchCall
	if err := s.rolloverBranch(t, r.LeafAtSettle, func(b *Branch) error {
		var err error
		batch, err = rolloverBatch(b, r.BoundaryEntryID, r.LeafAtRequest)
		return err
	}); err != nil {
		return commitPlan{}, err
	}
	plan.Window = s.nextIdentity(old)
	hint, hintRep := notes.ThreadHintReport(notes.Replay([]notes.Event{ev}), &rec)
	if bt := batchText(batch, old.CurrentWindowID); bt != "" {
		if hint != "" {
			hint += "\n"
		}
		hint += bt
	}
	bd := s.NewBoundary(t.Agent, plan.Window, hint)
	display := true
	plan.Append = append(plan.Append, PlannedEntry{Type: bd.Type, CustomType: bd.CustomType, Content: bd.Content, Display: &display, Details: &bd.Details})
	plan.hint = hintRep
	return plan, nil
}

// checkSummary validates the branch summary of a Tree commit and returns
// its parentId (nil for a root): the manifest's branchBaseId.
func checkSummary(tr *session.Tree, r store.Rollover, summaryID string) (*string, error) {
	se := tr.Get(summaryID)
	if se == nil {
		return nil, contextd.Errorf(contextd.EPrecondition, "branch summary %q is not in the session file yet; retry the commit after Pi has written it (navigateTree appends it)", summaryID)
	}
	if se.Type != session.TypeBranchSummary {
		return nil, contextd.Errorf(contextd.EInvalid, "summary mismatch: entry %q is a %s entry, not a branch_summary; pass the id of the branch_summary navigateTree appended", summaryID, se.Type)
	}
	if se.ParentID != r.BoundaryParentID {
		return nil, contextd.Errorf(contextd.EInvalid, "summary mismatch: branch summary %q has parentId %s, but navigating to boundary %q gives %s; pass the summary of this rollover's navigation",
			summaryID, jsID(se.ParentID), r.BoundaryEntryID, jsID(r.BoundaryParentID))
	}
	if se.FromID() != r.LeafAtSettle {
		return nil, contextd.Errorf(contextd.EInvalid, "summary mismatch: branch summary %q has fromId %q, but the archived leaf (the leaf at settle) is %q; pass the summary of this rollover's navigation",
			summaryID, se.FromID(), r.LeafAtSettle)
	}
	if tr.Get(r.BoundaryEntryID) == nil {
		return nil, contextd.Errorf(contextd.EPrecondition, "boundary %q of rollover %s is no longer in the session file; abort the rollover", r.BoundaryEntryID, r.ID)
	}
	seqs, cycle, err := tr.Branch(r.LeafAtSettle)
	var unk *session.ErrUnknownLeaf
	if errors.As(err, &unk) {
		return nil, contextd.Errorf(contextd.EPrecondition, "archived leaf %q of rollover %s is no longer in the session file; abort the rollover", r.LeafAtSettle, r.ID)
	}
	if err != nil {
		return nil, err
	}
	if cycle {
		return nil, contextd.Errorf(contextd.EInvalid, "the parent chain of archived leaf %q has a cycle; this file cannot be archived, abort rollover %s", r.LeafAtSettle, r.ID)
	}
	found := false
	for _, sq := range seqs {
		if tr.ID(sq) == r.BoundaryEntryID {
			found = true
			break
		}
	}
	if !found {
		return nil, contextd.Errorf(contextd.EPrecondition, "ancestry mismatch: boundary %q is not an ancestor of the archived leaf %q; abort rollover %s", r.BoundaryEntryID, r.LeafAtSettle, r.ID)
	}
	if se.ParentID == "" {
		return nil, nil
	}
	p := se.ParentID
	return &p, nil
}

func jsID(id string) string {
	if id == "" {
		return "null"
	}
	return fmt.Sprintf("%q", id)
}

func commitAnswer(r store.Rollover) (CommitAnswer, error) {
	var p rolloverPlan
	if err := json.Unmarshal(r.Plan, &p); err != nil {
		return CommitAnswer{}, fmt.Errorf("rollover %s: plan: %w", r.ID, err)
	}
	return CommitAnswer{RolloverID: r.ID, State: string(r.State), Window: p.Window, Append: p.Append}, nil
}

// boundaryWrittenAt is when Pi wrote r's planned boundary: the timestamp of
// the boundary entry carrying the plan's window id (docs/pi-facts.md: every
// entry has Pi's ISO timestamp of its append), or nil when the file has no
// such boundary or its timestamp does not parse. It dates a completion
// found on a later read: Pi 1.6 writes the boundary after the extension's
// complete call, so the rollover completes on contextd's next read of the
// session, which may come minutes later (the next history call or /contextd).
func boundaryWrittenAt(v *store.View, r store.Rollover) *time.Time {
	var p rolloverPlan
	if json.Unmarshal(r.Plan, &p) != nil || p.Window.CurrentWindowID == "" {
		return nil
	}
	for i := v.Tree.Len() - 1; i >= 0; i-- {
		if e := v.Tree.Entry(i); e.IsBoundary() && e.Window.CurrentWindowID == p.Window.CurrentWindowID {
			return entryTime(v, &e)
		}
	}
	return nil
}

// missingEntries lists the customTypes of r's planned entries that are not
// in the file (see missingPlanned).
func missingEntries(v *store.View, r store.Rollover) ([]string, error) {
	var p rolloverPlan
	if err := json.Unmarshal(r.Plan, &p); err != nil {
		return nil, fmt.Errorf("rollover %s: plan: %w", r.ID, err)
	}
	return missingPlanned(v, r.Mode, r.SummaryEntryID, p)
}

// missingPlanned lists the customTypes of the planned entries p.Append that
// are not in the file yet; once one is missing, the rest are.
//
// Local: the boundary (matched by its window id) anywhere in the file.
//
// Tree: the planned entries must descend from the branch summary summaryID
// in plan order (manifest matched by its window and summary ids, note
// snapshot, boundary matched by its window id), each one on the parent
// chain of the next. Any entries may lie between them: Pi's own (a 1.6
// system message, usage, context_edit, model and thinking-level changes,
// labels, session info), another extension's, and conversation messages:
// when a rollover is interrupted after its summary (contextd restarted
// while Pi wrote it), the person may type and the model answer before
// /contextd finish appends the missing entries at the leaf, after them
// (POST …/windows plans them from resumeOf, which reads the branch the
// same way). The ids the plan's manifest and boundary carry are the
// plan's own, so no other entry matches them. This is the one rule of
// "the rollover's entries are in the file" for complete, for the automatic
// completion on reads and new rollovers, for abort and for the missing
// entries finish answers.
//
// The check is one forward pass over the entries after the summary in
// file order (a parent always precedes its children in files Pi writes):
// each entry whose parent was reached inherits the parent's count of
// matched planned entries, plus one when it is the next planned entry.
func missingPlanned(v *store.View, mode contextd.Mode, summaryID string, p rolloverPlan) ([]string, error) {
	tr := v.Tree
	if mode == contextd.ModeLocal {
		for i := range tr.Len() {
			if e := tr.Entry(i); e.IsBoundary() && e.Window.CurrentWindowID == p.Window.CurrentWindowID {
				return nil, nil
			}
		}
		return []string{session.CustomTypeWindow}, nil
	}
	missing := func(k int) []string {
		out := make([]string, 0, len(p.Append)-k)
		for _, rest := range p.Append[k:] {
			out = append(out, rest.CustomType)
		}
		return out
	}
	start, ok := tr.Lookup(summaryID)
	if !ok || len(p.Append) == 0 {
		return missing(0), nil
	}
	reached := map[string]int{summaryID: 0} // entry id → planned entries matched on the chain up to it
	best := 0
	for i := start + 1; i < tr.Len() && best < len(p.Append); i++ {
		e := tr.Entry(i)
		k, ok := reached[e.ParentID]
		if !ok || e.ParentID == "" {
			continue
		}
		match, err := matchesPlanned(v, i, p.Append[k], p.Window.CurrentWindowID)
		if err != nil {
			return nil, err
		}
		if match {
			reached[e.ID] = k + 1
			best = max(best, k+1)
			continue
		}
		reached[e.ID] = k
	}
	if best == len(p.Append) {
		return nil, nil
	}
	return missing(best), nil
}

// matchesPlanned reports whether the entry at seq is the planned entry pe:
// same type and customType; a boundary must carry the plan's window id, a
// manifest the plan's window id and summary id.
func matchesPlanned(v *store.View, seq int, pe PlannedEntry, windowID string) (bool, error) {
	e := v.Tree.Entry(seq)
	if e.CustomType != pe.CustomType || e.Type != pe.Type {
		return false, nil
	}
	switch pe.CustomType {
	case session.CustomTypeWindow:
		return e.IsBoundary() && e.Window.CurrentWindowID == windowID, nil
	case session.CustomTypeTreeArchive:
		_, d, err := v.Decode(seq)
		if err != nil {
			return false, err
		}
		var got, want archive.Data
		if json.Unmarshal(d.Data, &got) != nil || json.Unmarshal(pe.Data, &want) != nil ||
			got.WindowID != want.WindowID || got.SummaryEntryID != want.SummaryEntryID {
			return false, nil
		}
	}
	return true, nil
}

// marshalJS encodes v as JavaScript's JSON.stringify would: no HTML
// escaping, no trailing newline.
func marshalJS(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
