package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"contextd"
	"contextd/archive"
	"contextd/history"
	"contextd/notes"
	"contextd/store"
)

// The rollover state machine (docs/design.md
// §5.3). One open rollover per
// session, persisted in the state database so that a contextd restart
// between any two steps loses nothing:
//
//	create (tool phase)  → pending
//	settle (agent_settled) pending → settled     note state materialized
//	commit (after navigateTree) settled → committed   append plan answered
//	complete             committed → completed   (or seen on a later sync)
//	abort                pending|settled|committed → aborted
//
// Every step is idempotent for the same rollover id: repeating a step that
// already happened answers what the first call answered. Local mode uses
// the same steps without navigation: settle answers navigate_to null and
// commit needs no summary and answers only the next boundary.

// RolloverToolResult is the new_context tool result text (docs/codex-contract.md
// "new_context").
const RolloverToolResult = "A new context window will start without summarizing conversation history."

// ManifestStrategy is the strategy of a Tree archive manifest (docs/codex-contract.md
// "Tree archive" "Manifest").
const ManifestStrategy = archive.Strategy

// DefaultAbortReason is the reason recorded when abort names none.
const DefaultAbortReason = "aborted by the extension"

// RolloverRequest is the body of POST /v1/sessions/{id}/rollovers.
type RolloverRequest struct {
	LeafID              string `json:"leaf_id,omitempty" maxLength:"256" doc:"Pi's leaf during the new_context tool call (the assistant message that called it); default the last entry of the file."`
	CommandContextReady bool   `json:"command_context_ready,omitempty" doc:"Tree mode: the extension holds a command context that can call navigateTree. Must be true in Tree mode; ignored in Local mode."`
}

// RolloverInfo is a rollover as GET …/rollovers/{id} shows it.
type RolloverInfo struct {
	RolloverID      string          `json:"rollover_id" doc:"Rollover id (UUID)."`
	SessionID       string          `json:"session_id"`
	Mode            contextd.Mode   `json:"mode" enum:"local,tree"`
	State           string          `json:"state" enum:"pending,settled,committed,completed,aborted"`
	BoundaryEntryID string          `json:"boundary_entry_id" doc:"Boundary of the window being closed."`
	Window          WindowIdentity  `json:"window" doc:"Identity of the window being closed."`
	NextWindow      *WindowIdentity `json:"next_window" doc:"Identity of the window the commit opens; null before commit."`
	LeafAtRequest   string          `json:"leaf_at_request" doc:"Pi's leaf at the tool phase."`
	LeafAtSettle    string          `json:"leaf_at_settle,omitempty" doc:"Pi's leaf at settle: the archived leaf."`
	SummaryEntryID  string          `json:"summary_entry_id,omitempty" doc:"Tree: the branch_summary entry accepted at commit."`
	Reason          string          `json:"reason,omitempty" doc:"Why the rollover was aborted."`
	RequestedAt     time.Time       `json:"requested_at"`
	SettledAt       *time.Time      `json:"settled_at,omitempty"`
	CommittedAt     *time.Time      `json:"committed_at,omitempty"`
	FinishedAt      *time.Time      `json:"finished_at,omitempty" doc:"When it completed or was aborted."`
	// WaitingFor is set only by …/complete on a committed rollover whose
	// planned entries are not all in the file yet (the extension calls it
	// right after appending them; Pi may write the boundary a moment later).
	WaitingFor []string `json:"waiting_for,omitempty" doc:"Complete on a committed rollover (answered 202): the customTypes of the planned entries not in the session file yet, in plan order; it completes once they are there, on the next complete or read."`
}

// RolloverCreated answers the tool phase.
type RolloverCreated struct {
	RolloverID string       `json:"rollover_id"`
	State      string       `json:"state" enum:"pending"`
	ToolResult string       `json:"tool_result" doc:"The new_context tool result text to return to the model."`
	Merged     bool         `json:"merged" doc:"true: a pending rollover requested on this branch already existed and this call joined it (Codex merges repeated new_context calls into one rollover: docs/codex-contract.md \"new_context\")."`
	Rollover   RolloverInfo `json:"rollover"`
}

// SettleRequest is the body of POST …/rollovers/{id}/settle.
type SettleRequest struct {
	LeafID string `json:"leaf_id,omitempty" maxLength:"256" doc:"Pi's live leaf at agent_settled; default the last entry of the file. It must descend from the leaf at the tool phase."`
}

// SettleAnswer is the navigation plan of the settled phase.
type SettleAnswer struct {
	RolloverID string  `json:"rollover_id"`
	State      string  `json:"state" enum:"settled,committed,completed"`
	NavigateTo *string `json:"navigate_to" doc:"Tree: the boundary entry to pass to navigateTree; null in Local mode (no navigation)."`
	Summarize  bool    `json:"summarize" doc:"Tree: navigateTree(navigate_to, {summarize: true}); false in Local mode."`
	Label      *string `json:"label" doc:"Tree: the label to pass to navigateTree (options.label), which Pi attaches to the branch summary, so /tree shows the archive as a contextd window (ArchiveLabel, e.g. \"contextd window 0 archive\"); null in Local mode."`
	// SummaryParentID is the parentId Pi's branch_summary will carry: the
	// boundary is a custom message, so navigateTree lands on its parent
	// (docs/pi-facts.md "Tree navigation").
	SummaryParentID *string `json:"summary_parent_id" doc:"Tree: parentId of the branch_summary Pi will append (the boundary's parent; null when the boundary is a root). null in Local mode."`
	ArchivedLeafID  string  `json:"archived_leaf_id" doc:"The leaf being archived: the fromId of the branch_summary Pi will append."`
}

// CommitRequest is the body of POST …/rollovers/{id}/commit.
type CommitRequest struct {
	SummaryEntryID string `json:"summary_entry_id,omitempty" maxLength:"256" doc:"Tree: id of the branch_summary navigateTree appended. Local: omit."`
}

// PlannedEntry is one entry of a commit's append plan: a custom entry
// {type:"custom", customType, data} for pi.appendEntry(customType, data), or
// a custom message {type:"custom_message", customType, content, display,
// details} for pi.sendMessage.
type PlannedEntry struct {
	Type       string           `json:"type" enum:"custom,custom_message"`
	CustomType string           `json:"customType" doc:"codex-context-tree-archive, codex-context-note-snapshot or codex-context-window."`
	Data       json.RawMessage  `json:"data,omitempty" doc:"custom: the entry's data (manifest or note snapshot)."`
	Content    string           `json:"content,omitempty" doc:"custom_message: the boundary text."`
	Display    *bool            `json:"display,omitempty" doc:"custom_message: always true."`
	Details    *BoundaryDetails `json:"details,omitempty" doc:"custom_message: the boundary details."`
}

// CommitAnswer is the append plan of a commit.
type CommitAnswer struct {
	RolloverID string         `json:"rollover_id"`
	State      string         `json:"state" enum:"committed,completed"`
	Window     WindowIdentity `json:"window" doc:"Identity of the window the boundary opens."`
	Append     []PlannedEntry `json:"append" doc:"Append in order: Tree, the codex-context-tree-archive manifest and the codex-context-note-snapshot (pi.appendEntry), then the codex-context-window boundary (pi.sendMessage, the only entry that triggers a turn); Local, only the boundary."`
}

// AbortRequest is the body of POST …/rollovers/{id}/abort.
type AbortRequest struct {
	Reason string `json:"reason,omitempty" maxLength:"1024" doc:"Why, e.g. navigation cancelled; default aborted by the extension."`
}

// IncompleteFromFile is the State of an IncompleteRollover found in the
// session file only: the branch ends in a rollover's branch summary (and
// perhaps its manifest and note snapshot) with no boundary after it, and
// contextd's state holds no open rollover for the session.
const IncompleteFromFile = "found_in_file"

// IncompleteRollover is an open Tree rollover whose branch summary is in
// the file but whose planned entries are not all there (a crash between
// navigation and the manifest): retry its commit with summary_entry_id and
// append the missing entries. With state found_in_file (no rollover in
// contextd's state, rollover_id ""), append the boundary POST …/windows
// answers: it continues the window chain from the archived window.
type IncompleteRollover struct {
	RolloverID     string   `json:"rollover_id" doc:"The rollover; empty for found_in_file."`
	State          string   `json:"state" enum:"settled,committed,found_in_file"`
	SummaryEntryID string   `json:"summary_entry_id" doc:"The branch_summary in the file."`
	Missing        []string `json:"missing" doc:"customTypes of the planned entries not in the file yet, in append order."`
}

// CreateRollover runs the tool phase of new_context (docs/design.md §5.3 step
// 1) at req.LeafID. It refuses: off or remote mode (EConflict); Tree mode
// without command_context_ready (EPrecondition); a leaf_id that is not in
// the file (ENotFound, as on every route with a leaf_id); a branch without
// a window boundary (EPrecondition); a parent
// cycle (EInvalid); another open rollover (ERolloverPending "a rollover is
// already pending"), unless it is superseded (stale.go: it is aborted and
// the new one opened). A pending rollover requested at an ancestor of the
// leaf (a repeated new_context in the same run) is joined: created is false and
// Merged true. It persists the rollover and answers the tool result.
func (s *Service) CreateRollover(ctx context.Context, sessionID string, req RolloverRequest) (out RolloverCreated, created bool, err error) {
	t, err := s.Resolve(ctx, sessionID)
	if err != nil {
		return out, false, err
	}
	switch t.Mode {
	case contextd.ModeLocal, contextd.ModeTree:
	case contextd.ModeOff:
		return out, false, contextd.Errorf(contextd.EConflict, "context management is off for session %q; register it with mode local or tree to use new_context", sessionID)
	default:
		return out, false, contextd.Errorf(contextd.EConflict, "session %q is in %s mode: rollovers are the extension's concern there; contextd runs them only in local and tree mode", sessionID, t.Mode)
	}
	if t.Mode == contextd.ModeTree && !req.CommandContextReady {
		return out, false, contextd.Errorf(contextd.EPrecondition, "tree rollovers need a command context that can call navigateTree; capture it (session_start) and retry with command_context_ready: true")
	}
	open, hasOpen, err := s.State.OpenRollover(ctx, sessionID)
	if err != nil {
		return out, false, err
	}
	if hasOpen && open.State == store.RolloverCommitted {
		if open, err = s.autoComplete(ctx, t, open); err != nil {
			return out, false, err
		}
		hasOpen = open.State.Open()
	}
	var r store.Rollover
	supersede := "" // the abort reason of the open rollover this one supersedes
	err = s.rolloverBranch(t, req.LeafID, func(b *Branch) error {
		if hasOpen {
			if open.State == store.RolloverPending && onBranch(b, open.LeafAtRequest) {
				return nil // joined below
			}
			if supersede = superseded(b, open); supersede == "" {
				return alreadyPending(open)
			}
			// aborted below, once the read is released (stale.go)
		}
		i := currentBoundary(b)
		if i < 0 {
			return contextd.Errorf(contextd.EPrecondition, "no window boundary on the active branch of leaf %q; append the first boundary (POST /v1/sessions/%s/windows) before new_context", b.Leaf, sessionID)
		}
		be := b.V.Tree.Entry(b.Seqs[i])
		win, err := json.Marshal(identityOf(&be))
		if err != nil {
			return err
		}
		r = store.Rollover{ID: s.newID(), SessionID: sessionID, SessionFile: t.Session.Path(), Mode: t.Mode, State: store.RolloverPending,
			BoundaryEntryID: be.ID, BoundaryParentID: be.ParentID, Window: win, LeafAtRequest: b.Leaf, RequestedAt: s.now().UTC()}
		s.countLoop(b, string(t.Mode))
		return nil
	})
	if err != nil {
		return out, false, err
	}
	if supersede != "" {
		if ok, err := s.abortSuperseded(ctx, open, supersede); err != nil {
			return out, false, err
		} else if !ok {
			return out, false, contextd.Errorf(contextd.EConflict, "rollover %s of session %q changed while new_context was being opened; retry", open.ID, sessionID)
		}
	} else if hasOpen {
		out, err = createdAnswer(open, true)
		return out, false, err
	}
	if err := s.State.CreateRollover(ctx, r); errors.Is(err, store.ErrRolloverOpen) {
		other, ok, gerr := s.State.OpenRollover(ctx, sessionID)
		if gerr != nil || !ok {
			return out, false, contextd.Errorf(contextd.EConflict, "a rollover is already pending for session %q; retry", sessionID)
		}
		// Parallel new_context calls of one assistant message (Pi 1.6
		// runs tool calls concurrently) race here: the loser joins the
		// winner's rollover as a repeated call would.
		if other.State == store.RolloverPending && other.LeafAtRequest == r.LeafAtRequest {
			out, err = createdAnswer(other, true)
			return out, false, err
		}
		return out, false, alreadyPending(other)
	} else if err != nil {
		return out, false, err
	}
	s.RefreshPending(ctx)
	out, err = createdAnswer(r, false)
	return out, err == nil, err
}

// alreadyPending is the ERolloverPending refusal of a new rollover while r
// is open. The extension branches on the code and tells the model and the
// person in their own terms; the sentence is for other API clients.
func alreadyPending(r store.Rollover) error {
	return contextd.Errorf(contextd.ERolloverPending, "a rollover is already pending for session %q: rollover %s is %s; finish it, or abort it with POST /v1/sessions/%s/rollovers/%s/abort",
		r.SessionID, r.ID, r.State, r.SessionID, r.ID)
}

func createdAnswer(r store.Rollover, merged bool) (RolloverCreated, error) {
	info, err := rolloverInfo(r)
	return RolloverCreated{RolloverID: r.ID, State: string(r.State), ToolResult: RolloverToolResult, Merged: merged, Rollover: info}, err
}

// SettleRollover runs the settled phase (docs/design.md §5.3 step 2): it takes
// the pending rollover, checks that the session is the same file, id and
// mode (EPrecondition "session changed"), that req.LeafID is in the file
// (ENotFound) and descends from the leaf at the tool phase (EPrecondition "ancestry
// mismatch"; EInvalid for a parent cycle) and that the rollover's boundary
// is still the current boundary on its branch (EPrecondition), then
// materializes the note state at the leaf (notes.Snapshot; ETooLarge
// beyond notes.MaxSnapshotBytes) and the closing window's recovery ids, and
// answers the navigation plan. Of concurrent settles exactly one moves the
// rollover; a repeated settle answers the stored plan. Errors: ENotFound for
// an unknown rollover, EConflict for an aborted one, and EConflict naming
// the call ids while the leaf's tool batch holds calls without results
// other than new_context (UnresolvedCalls; docs/modes.md "Tool-call pairing"): the extension
// settles again once Pi has written them.
func (s *Service) SettleRollover(ctx context.Context, sessionID, rolloverID string, req SettleRequest) (SettleAnswer, error) {
	r, err := s.loadRollover(ctx, sessionID, rolloverID)
	if err != nil {
		return SettleAnswer{}, err
	}
	switch r.State {
	case store.RolloverAborted:
		return SettleAnswer{}, abortedError(r)
	case store.RolloverSettled, store.RolloverCommitted, store.RolloverCompleted:
		return settleAnswer(r), nil
	}
	t, err := s.Resolve(ctx, sessionID)
	if err != nil {
		return SettleAnswer{}, err
	}
	if err := sameSession(t, r); err != nil {
		return SettleAnswer{}, err
	}
	now := s.now().UTC()
	var leaf string
	var snap, rec []byte
	err = s.rolloverBranch(t, req.LeafID, func(b *Branch) error {
		leaf = b.Leaf
		if err := checkHeader(b, r); err != nil {
			return err
		}
		if !onBranch(b, r.LeafAtRequest) {
			return contextd.Errorf(contextd.EPrecondition, "ancestry mismatch: leaf %q does not descend from %q, the leaf when new_context was called; the session moved to another branch, abort rollover %s", b.Leaf, r.LeafAtRequest, r.ID)
		}
		open, _, err := leafUnresolved(b)
		if err != nil {
			return err
		}
		if len(open) > 0 {
			return openCallsError("settle of rollover "+r.ID, b.Leaf, open)
		}
		i := currentBoundary(b)
		if i < 0 || b.V.Tree.ID(b.Seqs[i]) != r.BoundaryEntryID {
			return contextd.Errorf(contextd.EPrecondition, "boundary %q is no longer the current window boundary on the branch of leaf %q; abort rollover %s", r.BoundaryEntryID, b.Leaf, r.ID)
		}
		st, err := s.cachedNoteState(b)
		if err != nil {
			return err
		}
		data, err := notes.Snapshot(st, now)
		if err != nil {
			return err
		}
		if snap, err = marshalJS(data); err != nil {
			return err
		}
		var win WindowIdentity
		if err := json.Unmarshal(r.Window, &win); err != nil {
			return fmt.Errorf("rollover %s: window identity: %w", r.ID, err)
		}
		recovery := notes.Recovery{WindowID: win.CurrentWindowID}
		if wins := s.localWindows(b); len(wins) > 0 {
			recovery.UserItemIDs = history.UserItemIDs(wins[len(wins)-1], notes.HintUserItemIDs)
		}
		rec, err = marshalJS(recovery)
		return err
	})
	if err != nil {
		return SettleAnswer{}, err
	}
	ok, err := s.State.SettleRollover(ctx, r.ID, leaf, snap, rec, now)
	if err != nil {
		return SettleAnswer{}, err
	}
	if !ok { // another settle or an abort won
		return s.settleAgain(ctx, sessionID, rolloverID)
	}
	s.Metrics.PhaseSeconds.WithLabelValues("settle").Observe(now.Sub(r.RequestedAt).Seconds())
	r.State, r.LeafAtSettle, r.Notes, r.Recovery, r.SettledAt = store.RolloverSettled, leaf, snap, rec, now
	return settleAnswer(r), nil
}

func (s *Service) settleAgain(ctx context.Context, sessionID, rolloverID string) (SettleAnswer, error) {
	r, err := s.loadRollover(ctx, sessionID, rolloverID)
	if err != nil {
		return SettleAnswer{}, err
	}
	switch r.State {
	case store.RolloverAborted:
		return SettleAnswer{}, abortedError(r)
	case store.RolloverPending:
		return SettleAnswer{}, contextd.Errorf(contextd.EConflict, "rollover %s changed while it was being settled; retry the settle", r.ID)
	}
	return settleAnswer(r), nil
}

// ArchiveLabel is the label of the branch summary that archives window n
// (zero-based), e.g. "contextd window 0 archive". Pi's summary text starts
// with its own preamble ("The user explored a different conversation
// branch…", branch-summarization.js in Pi 0.85.1 and 1.6.0), which an
// extension cannot change while Pi writes the summary; navigateTree's
// label is what /tree shows before it ("[contextd window 0 archive]
// [branch summary]: …"). Pi appends the label as a label entry right after
// the summary (AgentSession.navigateTree; docs/pi-facts.md "Tree navigation").
func ArchiveLabel(n int) string { return fmt.Sprintf("contextd window %d archive", n) }

func settleAnswer(r store.Rollover) SettleAnswer {
	a := SettleAnswer{RolloverID: r.ID, State: string(r.State), ArchivedLeafID: r.LeafAtSettle}
	if r.Mode == contextd.ModeTree {
		to := r.BoundaryEntryID
		a.NavigateTo, a.Summarize = &to, true
		var win WindowIdentity
		if json.Unmarshal(r.Window, &win) == nil {
			l := ArchiveLabel(win.WindowNumber)
			a.Label = &l
		}
		if r.BoundaryParentID != "" {
			p := r.BoundaryParentID
			a.SummaryParentID = &p
		}
	}
	return a
}

// CommitRollover runs the commit (docs/design.md §5.3 step 4). Tree: the
// branch_summary req.SummaryEntryID must be in the file (EPrecondition when
// Pi has not written it yet: retry), be a branch_summary whose parentId is
// the boundary's parentId and whose fromId is the leaf at settle (EInvalid
// "summary mismatch"), with the boundary an ancestor of that leaf
// (EPrecondition; EInvalid for a cycle). It answers, in order, the
// codex-context-tree-archive manifest (docs/codex-contract.md "Tree archive"), the
// codex-context-note-snapshot materialized at settle (docs/codex-contract.md "Local notes") and the next
// codex-context-window boundary: first window id kept, previous = the
// closing window, number + 1, and the thread hint of the snapshot's notes
// with the closing window's id, the summary item id and up to 5 user item
// ids, newest first (docs/codex-contract.md "Window boundaries", "Local notes"). Local: no summary (EInvalid when one is
// given) and only the boundary. A repeated commit answers the stored plan;
// a different summary after a commit is EConflict, as are commits of
// pending or aborted rollovers.
func (s *Service) CommitRollover(ctx context.Context, sessionID, rolloverID string, req CommitRequest) (CommitAnswer, error) {
	r, err := s.loadRollover(ctx, sessionID, rolloverID)
	if err != nil {
		return CommitAnswer{}, err
	}
	switch r.State {
	case store.RolloverPending:
		return CommitAnswer{}, contextd.Errorf(contextd.EConflict, "rollover %s is pending: settle it first (POST /v1/sessions/%s/rollovers/%s/settle)", r.ID, sessionID, r.ID)
	case store.RolloverAborted:
		return CommitAnswer{}, abortedError(r)
	case store.RolloverCommitted, store.RolloverCompleted:
		if req.SummaryEntryID != "" && req.SummaryEntryID != r.SummaryEntryID {
			return CommitAnswer{}, contextd.Errorf(contextd.EConflict, "rollover %s was already committed with summary %q, not %q", r.ID, r.SummaryEntryID, req.SummaryEntryID)
		}
		return commitAnswer(r)
	}
	if r.Mode == contextd.ModeTree && req.SummaryEntryID == "" {
		return CommitAnswer{}, contextd.Errorf(contextd.EInvalid, "summary_entry_id is required in tree mode: pass the id of the branch_summary navigateTree appended")
	}
	if r.Mode == contextd.ModeLocal && req.SummaryEntryID != "" {
		return CommitAnswer{}, contextd.Errorf(contextd.EInvalid, "local rollovers have no branch summary; omit summary_entry_id")
	}
	t, err := s.Resolve(ctx, sessionID)
	if err != nil {
		return CommitAnswer{}, err
	}
	if err := sameSession(t, r); err != nil {
		return CommitAnswer{}, err
	}
	plan, err := s.planCommit(t, r, req.SummaryEntryID)
	if err != nil {
		return CommitAnswer{}, err
	}
	raw, err := marshalJS(plan.rolloverPlan)
	if err != nil {
		return CommitAnswer{}, err
	}
	now := s.now().UTC()
	ok, err := s.State.CommitRollover(ctx, r.ID, req.SummaryEntryID, raw, now)
	if err != nil {
		return CommitAnswer{}, err
	}
	if !ok { // another commit or an abort won: answer what is stored
		r, err = s.loadRollover(ctx, sessionID, rolloverID)
		if err != nil {
			return CommitAnswer{}, err
		}
		if r.State == store.RolloverAborted {
			return CommitAnswer{}, abortedError(r)
		}
		if r.SummaryEntryID != req.SummaryEntryID {
			return CommitAnswer{}, contextd.Errorf(contextd.EConflict, "rollover %s was already committed with summary %q, not %q", r.ID, r.SummaryEntryID, req.SummaryEntryID)
		}
		return commitAnswer(r)
	}
	s.Metrics.PhaseSeconds.WithLabelValues("commit").Observe(now.Sub(r.SettledAt).Seconds())
	if r.Mode == contextd.ModeTree {
		s.Metrics.observeRollover(string(r.Mode), plan.noteWrites, plan.hint.Bytes, len(plan.hint.LeftOut) > 0)
	}
	r.State, r.SummaryEntryID, r.Plan, r.CommittedAt = store.RolloverCommitted, req.SummaryEntryID, raw, now
	return commitAnswer(r)
}

// CompleteRollover finishes a committed rollover (docs/design.md §5.3 step 5)
// once its planned entries are in the file, in order after the summary
// (Tree: manifest, note snapshot, boundary; Local: the boundary). While
// some are missing it answers the rollover, still committed, with
// WaitingFor naming them (not an error: the extension asks right after
// appending, before Pi wrote its deferred boundary). Completing again answers the same;
// pending or settled rollovers (the message lists the steps still to do)
// and aborted ones are EConflict.
func (s *Service) CompleteRollover(ctx context.Context, sessionID, rolloverID string) (RolloverInfo, error) {
	r, err := s.loadRollover(ctx, sessionID, rolloverID)
	if err != nil {
		return RolloverInfo{}, err
	}
	switch r.State {
	case store.RolloverCompleted:
		return rolloverInfo(r)
	case store.RolloverAborted:
		return RolloverInfo{}, abortedError(r)
	case store.RolloverPending:
		return RolloverInfo{}, contextd.Errorf(contextd.EConflict, "rollover %s cannot complete yet: it is still pending (new_context asked for it; the window closes once the agent's turn has settled). "+
			"The steps in order: settle it (POST %s/settle), navigate in Tree mode, commit it (POST %s/commit), append the entries the commit answers to the session, then complete",
			r.ID, rolloverPath(sessionID, r.ID), rolloverPath(sessionID, r.ID))
	case store.RolloverSettled:
		return RolloverInfo{}, contextd.Errorf(contextd.EConflict, "rollover %s cannot complete yet: it is settled but not committed. "+
			"Commit it (POST %s/commit; in Tree mode with the id of the branch_summary navigateTree appended), append the entries the commit answers to the session, then complete",
			r.ID, rolloverPath(sessionID, r.ID))
	}
	t, err := s.Resolve(ctx, sessionID)
	if err != nil {
		return RolloverInfo{}, err
	}
	var missing []string
	var written *time.Time
	err = t.Session.Read(func(v *store.View) error {
		if err := usable(v); err != nil {
			return err
		}
		missing, err = missingEntries(v, r)
		if err == nil && len(missing) == 0 {
			written = boundaryWrittenAt(v, r)
		}
		return err
	})
	if err != nil {
		return RolloverInfo{}, err
	}
	if len(missing) > 0 {
		info, err := rolloverInfo(r)
		info.WaitingFor = missing
		return info, err
	}
	if r, err = s.finish(ctx, r, written); err != nil {
		return RolloverInfo{}, err
	}
	return rolloverInfo(r)
}

// rolloverPath is the route of one rollover, for messages.
func rolloverPath(sessionID, rolloverID string) string {
	return "/v1/sessions/" + sessionID + "/rollovers/" + rolloverID
}

// finish moves a committed rollover to completed and records its metrics;
// when another caller finished it first, it returns the stored row. written
// is when Pi wrote the boundary (boundaryWrittenAt): the rollover finished
// then, not when contextd next read the file; a time outside
// [committed, now] (another clock, a file edited by hand) is not used.
func (s *Service) finish(ctx context.Context, r store.Rollover, written *time.Time) (store.Rollover, error) {
	now := s.now().UTC()
	if written != nil && !written.Before(r.CommittedAt) && written.Before(now) {
		now = *written
	}
	ok, err := s.State.CompleteRollover(ctx, r.ID, now)
	if err != nil {
		return r, err
	}
	if !ok {
		r2, found, err := s.State.Rollover(ctx, r.ID)
		if err != nil || !found {
			return r, err
		}
		return r2, nil
	}
	s.Metrics.Rollovers.WithLabelValues(string(r.Mode), "completed").Inc()
	s.Metrics.RolloverSeconds.Observe(now.Sub(r.RequestedAt).Seconds())
	s.Metrics.PhaseSeconds.WithLabelValues("complete").Observe(now.Sub(r.CommittedAt).Seconds())
	s.RefreshPending(ctx)
	r.State, r.FinishedAt = store.RolloverCompleted, now
	return r, nil
}

// autoComplete completes a committed rollover whose entries are all in the
// file (docs/design.md §5.3 step 5, "or contextd sees the three entries on its
// next sync"); otherwise it returns r unchanged.
func (s *Service) autoComplete(ctx context.Context, t *Target, r store.Rollover) (store.Rollover, error) {
	if r.State != store.RolloverCommitted || t.Session == nil {
		return r, nil
	}
	var missing []string
	var written *time.Time
	err := t.Session.Read(func(v *store.View) error {
		if usable(v) != nil {
			missing = []string{"(unreadable file)"}
			return nil
		}
		var err error
		missing, err = missingEntries(v, r)
		if err == nil && len(missing) == 0 {
			written = boundaryWrittenAt(v, r)
		}
		return err
	})
	if err != nil || len(missing) > 0 {
		return r, err
	}
	return s.finish(ctx, r, written)
}

// AbortRollover aborts an open rollover with req.Reason (default
// DefaultAbortReason), e.g. "navigation cancelled". Aborting again answers
// the same; a completed rollover is EConflict, and so is a committed one
// whose planned entries are all in the file (it is completed first, as
// GetRollover does).
func (s *Service) AbortRollover(ctx context.Context, sessionID, rolloverID string, req AbortRequest) (RolloverInfo, error) {
	r, err := s.loadRollover(ctx, sessionID, rolloverID)
	if err != nil {
		return RolloverInfo{}, err
	}
	reason := req.Reason
	if reason == "" {
		reason = DefaultAbortReason
	}
	if r.State == store.RolloverCommitted {
		// Its planned entries may all be in the file already: then it is
		// completed (as GET would find it), not aborted.
		if t, err := s.Resolve(ctx, sessionID); err == nil {
			if r, err = s.autoComplete(ctx, t, r); err != nil {
				return RolloverInfo{}, err
			}
		}
	}
	if r.State.Open() {
		now := s.now().UTC()
		ok, err := s.State.AbortRollover(ctx, r.ID, reason, now)
		if err != nil {
			return RolloverInfo{}, err
		}
		if ok {
			s.Metrics.Rollovers.WithLabelValues(string(r.Mode), "aborted").Inc()
			s.RefreshPending(ctx)
		}
		if r, err = s.loadRollover(ctx, sessionID, rolloverID); err != nil {
			return RolloverInfo{}, err
		}
	}
	if r.State == store.RolloverCompleted {
		return RolloverInfo{}, contextd.Errorf(contextd.EConflict, "rollover %s is already completed (its planned entries are in the session file); there is nothing to abort. GET it for the completed rollover", r.ID)
	}
	return rolloverInfo(r)
}

// GetRollover answers GET …/rollovers/{id}. A committed rollover whose
// entries are all in the file is completed first.
func (s *Service) GetRollover(ctx context.Context, sessionID, rolloverID string) (RolloverInfo, error) {
	r, err := s.loadRollover(ctx, sessionID, rolloverID)
	if err != nil {
		return RolloverInfo{}, err
	}
	if r.State == store.RolloverCommitted {
		if t, err := s.Resolve(ctx, sessionID); err == nil {
			if r, err = s.autoComplete(ctx, t, r); err != nil {
				return RolloverInfo{}, err
			}
		}
	}
	return rolloverInfo(r)
}
