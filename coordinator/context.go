package coordinator

// POST /v1/sessions/{id}/context, run before every model call: the
// current window of the branch and the projection the extension applies
// to Pi's context event.

import (
	"context"

	"contextd"
	"contextd/session"
	"contextd/store"
)

// ContextRequest is the body of POST /v1/sessions/{id}/context.
type ContextRequest struct {
	LeafID string `json:"leaf_id,omitempty" maxLength:"256" doc:"Pi's live leaf; default the last entry of the file."`
}

// HiddenSummary is the signature of a Tree branch summary to remove from
// the provider context (docs/design.md §4): entry id, fromId, the SHA-256 of
// the summary text (hex) and the entry timestamp.
type HiddenSummary struct {
	EntryID    string `json:"entry_id"`
	FromID     string `json:"from_id"`
	SummarySHA string `json:"summary_sha256"`
	Timestamp  string `json:"timestamp"`
	ManifestID string `json:"manifest_entry_id"`
	WindowID   string `json:"window_id"`
}

// MessageKey names one message of the provider context the way Pi holds it
// in memory (Pi's AgentMessage objects carry no entry ids): by role plus a
// field of the message itself that is unique on a branch. The extension
// matches a key against the messages of Pi's context event.
//
//   - role custom, custom_type codex-context-window: the boundary whose
//     details.contextManagement.currentWindowId is window_id;
//   - role assistant: the assistant message holding a toolCall content
//     block whose id is tool_call_id;
//   - role branchSummary: the branch summary message whose fromId is
//     from_id and whose summary text has the SHA-256 summary_sha256 (hex);
//   - role toolResult: the occurrence-th (1-based) message whose
//     toolCallId is tool_call_id, counted over the messages start_at keeps
//     (all of the context event's messages when start_at is null).
type MessageKey struct {
	Role          string `json:"role" enum:"custom,assistant,branchSummary,toolResult" doc:"Pi message role of the matched message."`
	CustomType    string `json:"custom_type,omitempty" doc:"role custom: the message's customType (codex-context-window)."`
	WindowID      string `json:"window_id,omitempty" doc:"role custom: details.contextManagement.currentWindowId of the boundary."`
	ToolCallID    string `json:"tool_call_id,omitempty" doc:"role assistant: id of a toolCall content block of the message."`
	FromID        string `json:"from_id,omitempty" doc:"role branchSummary: the message's fromId."`
	SummarySHA256 string `json:"summary_sha256,omitempty" doc:"role branchSummary: SHA-256 (lowercase hex) of the message's summary text (UTF-8)."`
	Occurrence    int    `json:"occurrence,omitempty" minimum:"1" doc:"role toolResult: 1-based rank among the messages with this toolCallId that start_at keeps."`
}

// MoveStep moves the message matching Message to directly after the
// message matching After (docs/modes.md "Tool-call pairing": a boundary or branch summary written
// between a tool call and its results is sent after the results).
type MoveStep struct {
	Message MessageKey `json:"message" doc:"The message to move."`
	After   MessageKey `json:"after" doc:"The message it is sent right after."`
}

// Projection is what the extension does to the messages of Pi's context
// event, in this order: when StartAt is set, drop every message before
// the first message matching StartAt (the current window's start: its
// boundary, the summary of the Tree cuts right before it, or the assistant
// message whose calls the results after the boundary answer),
// then drop every message matching a key of Drop (Tree: the hidden
// summaries; both modes: tool results the pairing rule does not send),
// then apply Move in order. A toolResult key's occurrence counts the
// messages StartAt kept. A key that matches no message is an error the
// extension reports; it never guesses another message. The result obeys
// the pairing rule (PlanPairing).
type Projection struct {
	StartAt *MessageKey  `json:"start_at" doc:"Applied first. Keep the messages from the first one matching this key (Local and Tree: the current window's start, docs/modes.md Windows on a mixed branch); null: keep from the first message."`
	Drop    []MessageKey `json:"drop" doc:"Remove every message matching one of these keys (each matches exactly one message): Tree's hidden summaries, and stray or duplicate tool results."`
	Move    []MoveStep   `json:"move,omitempty" doc:"After start_at and drop, move each message right after another, in order (a boundary written inside a tool call pair goes after the results)."`
}

// ContextAnswer tells the extension what to project before an LLM call.
type ContextAnswer struct {
	// Projection is the answer in the terms of Pi's in-memory messages;
	// the entry-id fields below say the same in the terms of the file.
	Projection Projection `json:"projection"`
	// AwaitingFile is true for a registered session whose file Pi has not
	// written yet (Pi 0.85 writes it at the first assistant message, 1.6
	// at the first user message): it has no entries, so nothing is hidden
	// and no boundary is on the file yet.
	AwaitingFile bool `json:"awaiting_file" doc:"The registered session file does not exist yet: the session has no entries on disk."`

	Mode            contextd.Mode   `json:"mode"`
	LeafID          string          `json:"leaf_id" doc:"The leaf the answer is for."`
	Window          *WindowIdentity `json:"window" doc:"Identity of the current window; null when no boundary is on the branch."`
	BoundaryEntryID string          `json:"boundary_entry_id,omitempty" doc:"The current boundary entry."`
	// SliceFromEntryID is where Local and Tree start the provider context
	// (docs/modes.md "Windows on a mixed branch"): the window's start, or,
	// when the boundary is written between an assistant's
	// tool calls and their results, that assistant (the boundary then
	// moves after the results: Projection.Move).
	SliceFromEntryID    string           `json:"slice_from_entry_id,omitempty"`
	OrphanedToolResults []string         `json:"orphaned_tool_results" doc:"toolResult entries the projection does not send: no open call of a replayed assistant precedes them in the sent context (call missing, before the slice, in an errored or aborted assistant) or their call already has a result (see problems)."`
	HiddenSummaries     []HiddenSummary  `json:"hidden_summaries" doc:"Tree mode: branch summaries to remove from the provider context."`
	WindowNoteWrites    int              `json:"window_note_writes" doc:"Note writes and appends (codex-context-note entries) on the branch since its latest boundary (since its root when it has none): what the notes guard of new_context checks; a note snapshot is no write. 0 while the file is awaited."`
	NeedsBoundary       bool             `json:"needs_boundary" doc:"true when the branch has no current boundary (first window, after user navigation into an archive, or a rollover cut short after navigation: then window is the archived window the chain continues from): append one with POST …/windows."`
	Problems            []SessionProblem `json:"problems,omitempty" doc:"Problems of the branch, e.g. missing_parent: its root entry names a parent that is not in the file (a torn line); window then keeps the last boundary before the break."`
}

// Context answers POST /v1/sessions/{id}/context (runs before every model
// call). Local: the current boundary and the slice point; Tree: also the
// summaries to hide (TreeContext).
func (s *Service) Context(ctx context.Context, sessionID string, req ContextRequest) (ContextAnswer, error) {
	// Before every model call: scans pause for it (store.Urgent).
	defer store.Urgent()()
	t, err := s.Resolve(ctx, sessionID)
	if err != nil {
		return ContextAnswer{}, err
	}
	out := ContextAnswer{Mode: t.Mode, OrphanedToolResults: []string{}, HiddenSummaries: []HiddenSummary{}, Projection: Projection{Drop: []MessageKey{}}}
	if t.Mode == contextd.ModeOff || t.Mode == contextd.ModeRemote {
		return out, nil
	}
	if awaitingFile(t) {
		out.AwaitingFile, out.NeedsBoundary = true, true
		return out, nil
	}
	defer s.holdLineage(ctx, t)()
	var fileWriters *SessionProblem
	err = s.withCachedBranch(t, req.LeafID, func(b *Branch) error {
		out.LeafID = b.Leaf
		i := currentBoundary(b)
		out.WindowNoteWrites = noteWrites(b.V.Tree, b.Seqs[max(i, 0):])
		r := s.resumeOf(b)
		switch {
		case r != nil && r.Broken == nil:
			// A rollover cut short after navigation: no current window;
			// Window is the archived one the next boundary continues from.
			id := r.Window
			out.Window, out.NeedsBoundary = &id, true
		case r != nil && r.BoundaryEntryID != "":
			// A broken parent chain: keep the last window before the break.
			out.Problems = append(out.Problems, *r.Broken)
			id := r.Window
			out.Window, out.BoundaryEntryID, out.SliceFromEntryID = &id, r.BoundaryEntryID, r.BoundaryEntryID
		case r != nil:
			out.Problems = append(out.Problems, *r.Broken)
			out.NeedsBoundary = true
		case i < 0:
			out.NeedsBoundary = true
		default:
			tr := b.V.Tree
			be := tr.Entry(b.Seqs[i])
			id := identityOf(&be)
			out.Window = &id
			out.BoundaryEntryID = be.ID
			out.SliceFromEntryID = be.ID
			if i > 0 && windowStart(b, i) == 0 {
				// An adopted window begins at the branch's first entry:
				// Local sends the whole branch, as before adoption.
				out.SliceFromEntryID = ""
			}
		}
		// treeStart: Tree mode's start of the provider context, an index
		// in b.Seqs; -1 sends all of it (treeWindowStart).
		treeStart := -1
		if t.Mode == contextd.ModeTree {
			if treeStart, err = s.tree.context(b, &out); err != nil {
				return err
			}
			if treeStart >= 0 {
				out.SliceFromEntryID = b.V.Tree.ID(b.Seqs[treeStart])
			}
		}
		if r != nil && r.Broken == nil {
			// An earlier Local boundary on the branch does not make the
			// window after a Tree cut current.
			out.NeedsBoundary = true
		}
		if err := s.project(b, &out, treeStart); err != nil {
			return err
		}
		fileWriters = s.interleaves.problem(t.Session.Path(), b.V.Tree)
		return nil
	})
	if p := s.writers.problem(sessionID); p != nil {
		out.Problems = append(out.Problems, *p)
	} else if fileWriters != nil {
		out.Problems = append(out.Problems, *fileWriters)
	}
	return out, err
}

// project fills out.Projection from the entry-id answer and the pairing
// rule (PlanPairing): Local starts at the boundary; Tree starts at the
// current window's start (treeWindowStart: closed Local windows and an
// adopted conversation left before a Tree cut are not sent) and drops the
// hidden summaries it still keeps (docs/modes.md "Windows on a mixed
// branch").
// Both then drop stray and duplicate tool results and move a boundary or
// branch summary written inside a call/result pair after the results,
// reporting each as a problem; OrphanedToolResults lists the dropped
// results and SliceFromEntryID the first entry sent. treeStart is Tree
// mode's start (an index in b.Seqs, -1: none).
func (s *Service) project(b *Branch, out *ContextAnswer, treeStart int) error {
	slice := out.Window != nil && out.SliceFromEntryID != "" &&
		(out.Mode == contextd.ModeLocal || out.Mode == contextd.ModeTree && treeStart >= 0)
	from := ""
	if slice {
		from = out.SliceFromEntryID
	}
	// A sliced Tree context names only the hidden summaries from its
	// start on (seqs grow along a branch: Pi appends an entry after its
	// parent); start_at already removes the others. A hidden summary at
	// the start stays in the list, so that start_at finds it, and is
	// dropped by its key.
	hidden := make(map[string]bool, len(out.HiddenSummaries))
	startHidden := ""
	for _, h := range out.HiddenSummaries {
		if slice && out.Mode == contextd.ModeTree {
			sq, ok := b.V.Tree.Lookup(h.EntryID)
			if !ok || sq < b.Seqs[treeStart] {
				continue
			}
			if sq == b.Seqs[treeStart] {
				startHidden = h.EntryID
				continue
			}
		}
		hidden[h.EntryID] = true
	}
	rules := session.NewestRules
	if b.Target != nil {
		rules = b.Target.Rules()
	}
	msgs, shown, pv, err := s.cachedPairMessages(b, rules, hidden, from)
	if err != nil {
		return err
	}
	start := 0
	if slice {
		start = -1
		for i := range msgs {
			if msgs[i].EntryID == from {
				start = i
				break
			}
		}
		if start < 0 && out.Mode == contextd.ModeTree {
			// Tree: the hidden summaries before the start were left out
			// of hidden; everything Pi sends is read again, unsliced.
			return s.project(b, out, -1)
		}
		if start < 0 {
			// Pi does not send the boundary (a compaction after it kept
			// none of the window, or the branch starts after a broken
			// parent chain): everything Pi sends is the window.
			slice, start = false, 0
			out.SliceFromEntryID = ""
			if len(msgs) > 0 {
				out.SliceFromEntryID = msgs[0].EntryID
			}
		}
	}
	for _, h := range out.HiddenSummaries {
		// Only summaries Pi sends are named: one a compaction cut away
		// is not among the context event's messages.
		if hidden[h.EntryID] && shown[h.EntryID] || h.EntryID == startHidden {
			out.Projection.Drop = append(out.Projection.Drop, MessageKey{Role: "branchSummary", FromID: h.FromID, SummarySHA256: h.SummarySHA})
		}
	}
	// The pairing rule's walk of the cached list is kept with it (and
	// goes on from the walk of the list it extends); msgs is read-only.
	var walk *pairingState
	if pv != nil {
		walk = pv.pairing(start)
	} else {
		walk = planPairing(msgs, start, nil)
	}
	plan, dropOcc, moveOcc := walk.result(msgs)
	if slice {
		m := &msgs[plan.Start]
		out.SliceFromEntryID = m.EntryID
		if m.Key != nil && plan.Start == start {
			out.Projection.StartAt = m.Key
		} else {
			out.Projection.StartAt = &MessageKey{Role: session.RoleAssistant, ToolCallID: m.Calls[0].ID}
		}
	}
	for k, i := range plan.Drop {
		out.OrphanedToolResults = append(out.OrphanedToolResults, msgs[i].EntryID)
		out.Projection.Drop = append(out.Projection.Drop, msgs[i].resultKey(dropOcc[k]))
	}
	for k, mv := range plan.Moves {
		out.Projection.Move = append(out.Projection.Move, MoveStep{Message: *msgs[mv.Msg].Key, After: pairKeyOf(&msgs[mv.After], moveOcc[k])})
	}
	out.Problems = append(out.Problems, plan.Problems...)
	return nil
}

// pairKeyOf names m for the extension: its own key, or for a tool result its
// call id and occurrence (its rank, from occurrences).
func pairKeyOf(m *PairMessage, occurrence int) MessageKey {
	if m.Role == session.RoleToolResult {
		return m.resultKey(occurrence)
	}
	if m.Key != nil {
		return *m.Key
	}
	return MessageKey{Role: session.RoleAssistant, ToolCallID: m.Calls[0].ID}
}

// awaitingFile reports whether t is a registered session whose file does
// not exist and was never indexed: Pi has not written it yet (a file that
// was indexed and then deleted keeps its tree and stays "gone").
func awaitingFile(t *Target) bool {
	if !t.Registered || t.Session == nil {
		return false
	}
	var ok bool
	_ = t.Session.Read(func(v *store.View) error {
		ok = v.State == store.StateMissing && v.Tree == nil
		return nil
	})
	return ok
}
