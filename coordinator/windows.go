package coordinator

// POST /v1/sessions/{id}/windows: the boundary of the next window
// (Local new_context) or of window 0.

import (
	"context"

	"contextd"
	"contextd/notes"
)

// WindowsRequest asks for the boundary to append.
type WindowsRequest struct {
	LeafID string `json:"leaf_id,omitempty" maxLength:"256" doc:"Pi's live leaf; default the last entry of the file."`
	// ThreadHint is used in Remote mode only (remote_window.go).
	ThreadHint string `json:"thread_hint,omitempty" maxLength:"4000" doc:"Remote mode: the Codex backend's thread hint for window 0 (the extension fetches it through notes thread_hint), written into the boundary; at most 4,000 characters. Ignored in Local and Tree, where contextd builds the hint."`
}

// WindowsAnswer is the boundary custom message to append, and whether it
// opens the first window or the next one.
type WindowsAnswer struct {
	First  bool           `json:"first" doc:"true: no boundary was on the branch, this opens window 0."`
	Window WindowIdentity `json:"window" doc:"Identity of the window the boundary opens."`
	// Finish and RolloverID are set when the branch ends in an interrupted
	// Tree rollover (finish.go).
	Finish     []PlannedEntry `json:"finish,omitempty" doc:"An interrupted Tree rollover (the branch ends in its branch summary): its missing manifest and note snapshot, to append first, in order, with pi.appendEntry(customType, data); then the boundary of append."`
	RolloverID string         `json:"rollover_id,omitempty" doc:"The rollover of contextd's state that finish and append complete; absent when they are rebuilt from the session file alone (the state does not hold it)."`
	Append     []Boundary     `json:"append" doc:"Append with pi.sendMessage, in order; the boundary triggers the next turn."`
}

// Windows answers POST /v1/sessions/{id}/windows: with no boundary on the
// branch, the boundary of window 0 (new first id; in Remote mode only
// this, remote_window.go); otherwise the next
// window's boundary (Local new_context): first id kept, previous = the
// current window, number + 1, and the thread hint (recent notes and the
// closing window's user item ids) inside. The next boundary is refused
// (EOpenToolCalls naming the call ids) while the leaf's tool batch has calls
// without results and no new_context call among them (docs/modes.md "Tool-call pairing").
func (s *Service) Windows(ctx context.Context, sessionID string, req WindowsRequest) (WindowsAnswer, error) {
	t, err := s.Resolve(ctx, sessionID)
	if err != nil {
		return WindowsAnswer{}, err
	}
	if t.Mode == contextd.ModeRemote {
		return s.remoteWindowZero(t, req)
	}
	if err := requireLocal(t); err != nil {
		return WindowsAnswer{}, err
	}
	var out WindowsAnswer
	if awaitingFile(t) {
		id := s.newID()
		out.First = true
		out.Window = WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: id, CurrentWindowID: id}
		out.Append = []Boundary{s.NewBoundary(t.Agent, out.Window, "")}
		return out, nil
	}
	var cut *cutShort
	err = s.withBranch(t, req.LeafID, func(b *Branch) error {
		if r := s.resumeOf(b); r != nil && r.BoundaryEntryID != "" {
			if r.Broken == nil && len(r.Missing) > 0 && t.Mode == contextd.ModeTree {
				// A rollover cut short after its summary: finish it
				// (finish.go), below.
				cut = cutOf(b, r)
				return nil
			}
			// No current window, but the file holds the chain: continue it.
			hint, err := resumeHint(b, r)
			if err != nil {
				return err
			}
			out.Window = s.nextIdentity(r.Window)
			out.Append = []Boundary{s.NewBoundary(t.Agent, out.Window, hint)}
			return nil
		}
		i := currentBoundary(b)
		if i < 0 {
			id := s.newID()
			out.First = true
			out.Window = WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: id, CurrentWindowID: id, StartEntryID: adoptionStart(b)}
			out.Append = []Boundary{s.NewBoundary(t.Agent, out.Window, "")}
			return nil
		}
		// The next boundary never lands inside a call/result pair: with
		// calls of the leaf's batch unanswered it is refused, unless the
		// batch holds the new_context call that asks for it (the extension
		// steers the boundary, and Pi appends steered messages only after
		// the whole batch's results: agent-loop.js runLoop).
		open, viaNewContext, err := leafUnresolved(b)
		if err != nil {
			return err
		}
		if len(open) > 0 && !viaNewContext {
			return openCallsError("the next window boundary", b.Leaf, open)
		}
		s.countLoop(b, string(t.Mode))
		cur := identityOf(new(b.V.Tree.Entry(b.Seqs[i])))
		hint, rep, err := s.nextHint(b, t.Agent, nil)
		if err != nil {
			return err
		}
		s.Metrics.observeRollover(string(contextd.ModeLocal), noteWrites(b.V.Tree, b.Seqs[i:]), rep.Bytes, len(rep.LeftOut) > 0)
		out.Window = s.nextIdentity(cur)
		out.Append = []Boundary{s.NewBoundary(t.Agent, out.Window, hint)}
		return nil
	})
	if err == nil && cut != nil {
		err = s.finishCut(ctx, t, req.LeafID, cut, &out)
	}
	return out, err
}

// nextHint is the thread hint of the next window: the note state of the
// branch and the recovery ids of the window being closed (the last window of
// the history view). summaryID, when set, is the Tree summary item id.
func (s *Service) nextHint(b *Branch, agent string, override *notes.Recovery) (string, notes.HintReport, error) {
	st, err := s.cachedNoteState(b)
	if err != nil {
		return "", notes.HintReport{}, err
	}
	rec := override
	if rec == nil {
		wins := s.localWindows(b)
		if len(wins) > 0 {
			rec = recoveryOf(wins[len(wins)-1])
		}
	}
	text, rep := notes.ThreadHintReport(st, rec)
	return text, rep, nil
}
