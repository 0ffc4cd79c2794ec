package coordinator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"contextd"
	"contextd/notes"
	"contextd/session"
	"contextd/store"
)

// Guidance is the <context_window_guidance> text of every boundary, as the
// seed extension writes it (testdata/pi-tree/*.jsonl boundary contents).
const Guidance = "Checkpoint the active request, known history IDs, decisions, progress, learnings and next steps in notes before new_context. After rollover, read hinted notes. Use history only for a missing detail.\n" +
	"Keep deferred ideas and tasks\u2014including those unrelated to the current work\u2014in notes for later resumption. Update them as decisions change; recording is not permission to implement."

// WindowIdentity is details.contextManagement of a boundary (docs/codex-contract.md
// "Window boundaries").
type WindowIdentity struct {
	Protocol         int    `json:"protocol" doc:"Always 1."`
	Kind             string `json:"kind" doc:"Always window for a boundary."`
	FirstWindowID    string `json:"firstWindowId" doc:"Id of window 0 of this session."`
	CurrentWindowID  string `json:"currentWindowId" doc:"Id of this window (UUID)."`
	PreviousWindowID string `json:"previousWindowId,omitempty" doc:"Id of the window before this one; absent for window 0."`
	WindowNumber     int    `json:"windowNumber" doc:"Zero-based window number."`
	StartEntryID     string `json:"startEntryId,omitempty" doc:"Adoption: the entry the window begins at, ahead of its boundary (the branch's first entry when context management was turned on for a branch that already had messages); absent when the window begins after its boundary (docs/design.md §4 Adoption)."`
}

// BoundaryDetails is the details object of a boundary custom message.
type BoundaryDetails struct {
	Protocol          int            `json:"protocol" doc:"Always 1."`
	ID                string         `json:"id" doc:"Marker id (UUID)."`
	ContextManagement WindowIdentity `json:"contextManagement"`
}

// Boundary is the codex-context-window custom message that opens a window,
// ready for pi.sendMessage({customType, content, display, details}).
type Boundary struct {
	Type       string          `json:"type" enum:"custom_message" doc:"Always custom_message."`
	CustomType string          `json:"customType" doc:"Always codex-context-window."`
	Content    string          `json:"content" doc:"Guidance block, a blank line, then the <context_window> block."`
	Display    bool            `json:"display" doc:"Always true."`
	Details    BoundaryDetails `json:"details"`
}

// BoundaryContent renders a boundary's content (docs/codex-contract.md "Window boundaries"
// "Lines inside the marker"): the guidance block, a blank line, then
// <context_window> with the agent name, first/current/previous window ids
// and the thread hint when non-empty.
func BoundaryContent(agent string, id WindowIdentity, hint string) string {
	var b strings.Builder
	b.WriteString("<context_window_guidance>\n")
	b.WriteString(Guidance)
	b.WriteString("\n</context_window_guidance>\n\n<context_window>\n")
	b.WriteString("Agent name: " + agent + "\n")
	b.WriteString("First context window id: " + id.FirstWindowID + "\n")
	b.WriteString("Current context window id: " + id.CurrentWindowID + "\n")
	if id.PreviousWindowID != "" {
		b.WriteString("Previous context window id: " + id.PreviousWindowID + "\n")
	}
	if hint != "" {
		b.WriteString(hint + "\n")
	}
	b.WriteString("</context_window>")
	return b.String()
}

// NewBoundary builds the boundary message for identity id.
func (s *Service) NewBoundary(agent string, id WindowIdentity, hint string) Boundary {
	id.Protocol, id.Kind = 1, "window"
	return Boundary{Type: "custom_message", CustomType: session.CustomTypeWindow, Content: BoundaryContent(agent, id, hint), Display: true,
		Details: BoundaryDetails{Protocol: 1, ID: s.newID(), ContextManagement: id}}
}

// identityOf returns the window identity of a boundary entry.
func identityOf(e *session.Entry) WindowIdentity {
	w := e.Window
	return WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: w.FirstWindowID, CurrentWindowID: w.CurrentWindowID,
		PreviousWindowID: w.PreviousWindowID, WindowNumber: w.WindowNumber, StartEntryID: w.StartEntryID}
}

// adoptionStart is the StartEntryID of window 0 opened on b's branch: the
// branch's first entry when the branch already holds a message Pi sends
// to the model (context management turned on for an existing
// conversation: first install, /reload, resume, CONTEXTD_MODE switched
// from off, a file Pi migrated), else "" (a new session: the window
// begins at its boundary). docs/design.md §4 "Adoption".
func adoptionStart(b *Branch) string {
	rules := session.NewestRules
	if b.Target != nil {
		rules = b.Target.Rules()
	}
	return adoptionStartOf(b.V.Tree, b.Seqs, rules)
}

// adoptionStartOf is adoptionStart for the branch seqs of tree under
// rules (Remote mode's window 0 uses it on a tree parsed apart from the
// index: remote_window.go).
func adoptionStartOf(tree *session.Tree, seqs []int, rules session.Rules) string {
	if len(seqs) == 0 || len(tree.Project(seqs, rules)) == 0 {
		return ""
	}
	return tree.Entries[seqs[0]].ID
}

// windowStart is the seq index in b.Seqs where the window of the boundary
// at index i begins: i, or for an adoption boundary whose StartEntryID is
// on the branch before it, that entry's index.
func windowStart(b *Branch, i int) int {
	w := b.V.Tree.Entries[b.Seqs[i]].Window
	if w == nil || w.StartEntryID == "" {
		return i
	}
	for j := range i {
		if b.V.Tree.Entries[b.Seqs[j]].ID == w.StartEntryID {
			return j
		}
	}
	return i
}

// currentBoundary returns the index in b.Seqs of the latest boundary on the
// branch, or -1.
func currentBoundary(b *Branch) int {
	for i := len(b.Seqs) - 1; i >= 0; i-- {
		if b.V.Tree.Entries[b.Seqs[i]].IsBoundary() {
			return i
		}
	}
	return -1
}

// nextIdentity returns the identity after cur (docs/codex-contract.md "Window boundaries"
// startNewWindow): first id kept, previous = old current, number + 1, a new
// current id.
func (s *Service) nextIdentity(cur WindowIdentity) WindowIdentity {
	return WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: cur.FirstWindowID, CurrentWindowID: s.newID(),
		PreviousWindowID: cur.CurrentWindowID, WindowNumber: cur.WindowNumber + 1}
}

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
		cur := identityOf(&b.V.Tree.Entries[b.Seqs[i]])
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
	st, err := noteState(b)
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
// the first message matching StartAt (Local: the current boundary, or the
// assistant message whose calls the results after the boundary answer),
// then drop every message matching a key of Drop (Tree: the hidden
// summaries; both modes: tool results the pairing rule does not send),
// then apply Move in order. A toolResult key's occurrence counts the
// messages StartAt kept. A key that matches no message is an error the
// extension reports; it never guesses another message. The result obeys
// the pairing rule (PlanPairing).
type Projection struct {
	StartAt *MessageKey  `json:"start_at" doc:"Applied first. Local: keep the messages from the first one matching this key; null: keep from the first message."`
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
	// SliceFromEntryID is where Local mode starts the provider context: the
	// boundary, or, when the boundary is written between an assistant's
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
			be := &tr.Entries[b.Seqs[i]]
			id := identityOf(be)
			out.Window = &id
			out.BoundaryEntryID = be.ID
			out.SliceFromEntryID = be.ID
			if i > 0 && windowStart(b, i) == 0 {
				// An adopted window begins at the branch's first entry:
				// Local sends the whole branch, as before adoption.
				out.SliceFromEntryID = ""
			}
		}
		if t.Mode == contextd.ModeTree {
			if err := s.tree.context(b, &out); err != nil {
				return err
			}
		}
		if r != nil && r.Broken == nil {
			// An earlier Local boundary on the branch does not make the
			// window after a Tree cut current.
			out.NeedsBoundary = true
		}
		if err := s.project(b, &out); err != nil {
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
// rule (PlanPairing): Tree drops the hidden summaries and keeps the rest
// of the branch (the tree already cut it); Local starts at the boundary.
// Both then drop stray and duplicate tool results and move a boundary or
// branch summary written inside a call/result pair after the results,
// reporting each as a problem; OrphanedToolResults lists the dropped
// results and SliceFromEntryID the first entry sent.
func (s *Service) project(b *Branch, out *ContextAnswer) error {
	hidden := make(map[string]bool, len(out.HiddenSummaries))
	for _, h := range out.HiddenSummaries {
		hidden[h.EntryID] = true
	}
	rules := session.NewestRules
	if b.Target != nil {
		rules = b.Target.Rules()
	}
	slice := out.Mode == contextd.ModeLocal && out.Window != nil && out.SliceFromEntryID != ""
	from := ""
	if slice {
		from = out.SliceFromEntryID
	}
	msgs, shown, err := s.cachedPairMessages(b, rules, hidden, from)
	if err != nil {
		return err
	}
	for _, h := range out.HiddenSummaries {
		// Only summaries Pi sends are named: one a compaction cut away
		// is not among the context event's messages.
		if shown[h.EntryID] {
			out.Projection.Drop = append(out.Projection.Drop, MessageKey{Role: "branchSummary", FromID: h.FromID, SummarySHA256: h.SummarySHA})
		}
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
	plan := PlanPairing(msgs, start)
	// Result keys rank among the messages start_at keeps.
	occ := map[string]int{}
	for i := plan.Start; i < len(msgs); i++ {
		if msgs[i].Role == session.RoleToolResult {
			occ[msgs[i].CallID]++
			msgs[i].Occurrence = occ[msgs[i].CallID]
		}
	}
	if slice {
		m := &msgs[plan.Start]
		out.SliceFromEntryID = m.EntryID
		if m.Key != nil && plan.Start == start {
			out.Projection.StartAt = m.Key
		} else {
			out.Projection.StartAt = &MessageKey{Role: session.RoleAssistant, ToolCallID: m.Calls[0]}
		}
	}
	for _, i := range plan.Drop {
		out.OrphanedToolResults = append(out.OrphanedToolResults, msgs[i].EntryID)
		out.Projection.Drop = append(out.Projection.Drop, msgs[i].resultKey())
	}
	for _, mv := range plan.Moves {
		out.Projection.Move = append(out.Projection.Move, MoveStep{Message: *msgs[mv.Msg].Key, After: pairKeyOf(&msgs[mv.After])})
	}
	out.Problems = append(out.Problems, plan.Problems...)
	return nil
}

// pairKeyOf names m for the extension: its own key, or for a tool result its
// call id and occurrence.
func pairKeyOf(m *PairMessage) MessageKey {
	if m.Role == session.RoleToolResult {
		return m.resultKey()
	}
	if m.Key != nil {
		return *m.Key
	}
	return MessageKey{Role: session.RoleAssistant, ToolCallID: m.Calls[0]}
}

// pairMessages lists the branch's provider context (Pi's
// buildSessionContext under rules) as the pairing rule sees it, without the
// entries in hidden. Assistant and toolResult entries are decoded for their
// call ids (a context_edit replacement supplies an assistant's content);
// boundaries and branch summaries get their keys. shown holds the entry
// ids of the hidden messages Pi sends (the only ones callers ask about: a
// set of every id on a long branch cost /context milliseconds). With from
// (and not lastBatch), the list starts at d0 (below).
//
// Only the messages from d0 on are decoded (earlier assistant and
// toolResult messages carry no call ids): d0 is the last assistant message
// before the entry from (a Local boundary: what precedes that assistant is
// never sent), or, with from "", 0; with lastBatch, the last assistant
// message. This keeps /context's cost to the current window in Local mode.
func pairMessages(b *Branch, rules session.Rules, hidden map[string]bool, from string, lastBatch bool) ([]PairMessage, map[string]bool, error) {
	tr := b.V.Tree
	cms := tr.Project(b.Seqs, rules)
	d0, end := 0, len(cms)
	if lastBatch {
		from, end = "", 0
		for i := len(cms) - 1; i >= 0; i-- {
			if cms[i].Role == session.RoleAssistant {
				d0, end = i, len(cms)
				break
			}
		}
	}
	if from != "" {
		d0 = sliceStart(tr, cms, from)
	}
	// A Local slice never sends what precedes d0, and the pairing rule
	// looks back no further than d0 (PlanPairing), so the messages
	// listed start there: a long branch cost /context a PairMessage per
	// message on every call. Hidden summaries are looked for on the whole
	// branch.
	first := 0
	if from != "" && !lastBatch {
		first = d0
	}
	all, err := pairList(b, cms, first, d0, end)
	if err != nil {
		return nil, nil, err
	}
	out, shown := withoutHidden(all, hidden)
	for _, cm := range cms[:first] {
		if id := tr.Entries[cm.Seq].ID; hidden[id] {
			shown[id] = true
		}
	}
	return out, shown, nil
}

// sliceStart is d0 of pairMessages: the index in cms of the last assistant
// message before the message of entry from, else of that message; 0 when
// no message is from's.
func sliceStart(tr *session.Tree, cms []session.ContextMessage, from string) int {
	for i := range cms {
		if tr.Entries[cms[i].Seq].ID == from {
			for j := i - 1; j >= 0; j-- {
				if cms[j].Role == session.RoleAssistant {
					return j
				}
			}
			return i
		}
	}
	return 0
}

// pairList returns the PairMessage of each of cms[first:], hidden ones
// included; the assistant, toolResult and branch-summary messages among
// cms[d0:end] are decoded for their call ids and keys (the others get
// none).
func pairList(b *Branch, cms []session.ContextMessage, first, d0, end int) ([]PairMessage, error) {
	tr := b.V.Tree
	var need []int
	seen := map[int]bool{}
	for _, cm := range cms[d0:end] {
		switch cm.Role {
		case session.RoleAssistant, session.RoleToolResult, "branchSummary":
			if !seen[cm.Seq] {
				seen[cm.Seq] = true
				need = append(need, cm.Seq)
			}
			if cm.EditSeq >= 0 && !seen[cm.EditSeq] {
				seen[cm.EditSeq] = true
				need = append(need, cm.EditSeq)
			}
		}
	}
	dec := make(map[int]*session.Decoded, len(need))
	if err := b.V.DecodeEach(need, func(seq int, _ *session.Entry, d *session.Decoded) error {
		dec[seq] = d
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]PairMessage, 0, len(cms)-first)
	for _, cm := range cms[first:] {
		e := &tr.Entries[cm.Seq]
		m := PairMessage{EntryID: e.ID, Line: e.Line, Role: cm.Role}
		d := dec[cm.Seq]
		switch cm.Role {
		case session.RoleAssistant:
			m.StopReason = e.StopReason
			content := (*session.Content)(nil)
			if d != nil && d.Message != nil {
				content = &d.Message.Content
			}
			if cm.EditSeq >= 0 {
				if ed := dec[cm.EditSeq]; ed != nil {
					content = ed.Replacement
				}
			}
			if content != nil {
				for _, part := range content.Parts {
					if part.Type == "toolCall" {
						m.Calls = append(m.Calls, part.ID)
						m.Names = append(m.Names, part.Name)
					}
				}
			}
		case session.RoleToolResult:
			if d != nil && d.Message != nil {
				m.CallID = d.Message.ToolCallID
			}
		case "custom":
			if e.IsBoundary() {
				m.Key = &MessageKey{Role: "custom", CustomType: session.CustomTypeWindow, WindowID: e.Window.CurrentWindowID}
			}
		case "branchSummary":
			if d != nil {
				sum := sha256.Sum256([]byte(d.Summary))
				m.Key = &MessageKey{Role: "branchSummary", FromID: e.FromID(), SummarySHA256: hex.EncodeToString(sum[:])}
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// withoutHidden returns a copy of msgs (the caller may modify it) without
// the messages of the entries in hidden, and the set of those ids found.
func withoutHidden(msgs []PairMessage, hidden map[string]bool) ([]PairMessage, map[string]bool) {
	shown := make(map[string]bool, len(hidden))
	out := make([]PairMessage, 0, len(msgs))
	for _, m := range msgs {
		if hidden[m.EntryID] {
			shown[m.EntryID] = true
			continue
		}
		out = append(out, m)
	}
	return out, shown
}

// pairCache is pairMessages' list for one branch and from, hidden
// messages included, kept with the branch in the Service's cache so that
// /context after Pi appended entries decodes only those (extendPairs).
// Read-only once built.
type pairCache struct {
	from  string
	pairs []PairMessage // pairList(cms, d0, d0, len(cms)) of the branch's projection
	// targets holds the targetIds of the context edits on the branch
	// (RulesPi16; nil when none): an appended entry one of them names
	// would be edited, which extendPairs does not do.
	targets map[string]bool
	// tail is the claim on the spare capacity of pairs' array (nil: none
	// may be written), shared with every slice of that array.
	tail *arrayTail
}

// cachedPairMessages is pairMessages(b, rules, hidden, from, false),
// built from the Service's cache of b's branch (Local mode: no hidden
// summaries before the slice): the same state of the session and leaf
// reuses the list, a branch that extends a cached one by entries that do
// not change how the earlier ones project (extendPairs) lists only the
// new messages; otherwise the whole branch is projected again.
func (s *Service) cachedPairMessages(b *Branch, rules session.Rules, hidden map[string]bool, from string) ([]PairMessage, map[string]bool, error) {
	k, ok := keyOf(b.Target, b.V, b.Leaf)
	if !ok || s.cache == nil || (from != "" && len(hidden) > 0) || rules != k.rules {
		return pairMessages(b, rules, hidden, from, false)
	}
	pc, err := s.cache.pairsFor(k, b.Seqs, from, func(base *pairCache, added []int) (*pairCache, error) {
		if base != nil {
			if pc, ok, err := extendPairs(b, rules, base, added); ok || err != nil {
				return pc, err
			}
		}
		return buildPairs(b, rules, from)
	})
	if err != nil {
		return nil, nil, err
	}
	out, shown := withoutHidden(pc.pairs, hidden)
	return out, shown, nil
}

// buildPairs is the pairCache of b's whole branch.
func buildPairs(b *Branch, rules session.Rules, from string) (*pairCache, error) {
	tr := b.V.Tree
	cms := tr.Project(b.Seqs, rules)
	d0 := 0
	if from != "" {
		d0 = sliceStart(tr, cms, from)
	}
	pairs, err := pairList(b, cms, d0, d0, len(cms))
	if err != nil {
		return nil, err
	}
	pc := &pairCache{from: from, pairs: pairs}
	if rules >= session.RulesPi16 {
		for _, sq := range b.Seqs {
			if e := &tr.Entries[sq]; e.Type == session.TypeContextEdit && e.Edit != session.EditNone {
				if pc.targets == nil {
					pc.targets = map[string]bool{}
				}
				pc.targets[e.TargetID()] = true
			}
		}
	}
	return pc, nil
}

// extendPairs is the pairCache of base's branch followed by the entries
// added (seqs), when those project as their own messages appended after
// base's (Tree.Project): none is a compaction (it reorders the context),
// a context edit under RulesPi16, a boundary (the slice moves) or the
// target of a context edit on the branch. ok is false otherwise.
func extendPairs(b *Branch, rules session.Rules, base *pairCache, added []int) (*pairCache, bool, error) {
	tr := b.V.Tree
	cms := make([]session.ContextMessage, 0, len(added))
	for _, sq := range added {
		e := &tr.Entries[sq]
		if e.Type == session.TypeCompaction || e.Type == session.TypeContextEdit || e.IsBoundary() || base.targets[e.ID] {
			return nil, false, nil
		}
		if role := session.ContextRole(e); role != "" {
			cms = append(cms, session.ContextMessage{Seq: sq, Role: role, EditSeq: -1})
		}
	}
	more, err := pairList(b, cms, 0, 0, len(cms))
	if err != nil {
		return nil, false, err
	}
	pairs, tail := appendOwned(base.pairs, base.tail, more...)
	return &pairCache{from: base.from, pairs: pairs, tail: tail, targets: base.targets}, true, nil
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
