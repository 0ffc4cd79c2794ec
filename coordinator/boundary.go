package coordinator

// Window boundaries (docs/codex-contract.md "Window boundaries"): the
// codex-context-window custom message that opens a window, its identity,
// and where the current window of a branch begins.

import (
	"strings"

	"contextd/session"
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
	return tree.ID(seqs[0])
}

// windowStart is the seq index in b.Seqs where the window of the boundary
// at index i begins: i, or for an adoption boundary whose StartEntryID is
// on the branch before it, that entry's index.
func windowStart(b *Branch, i int) int {
	w := b.V.Tree.Entry(b.Seqs[i]).Window
	if w == nil || w.StartEntryID == "" {
		return i
	}
	for j := range i {
		if b.V.Tree.ID(b.Seqs[j]) == w.StartEntryID {
			return j
		}
	}
	return i
}

// currentBoundary returns the index in b.Seqs of the latest boundary on the
// branch, or -1: kept with the memo's branch (branchVal.boundary), else
// found by a walk back from the leaf (lastBoundary).
func currentBoundary(b *Branch) int {
	if b.boundary != nil {
		return *b.boundary
	}
	return lastBoundary(b.V.Tree, b.Seqs)
}

// lastBoundary returns the index in seqs of the last boundary entry of
// tr among them, or -1.
func lastBoundary(tr *session.Tree, seqs []int) int {
	for i := len(seqs) - 1; i >= 0; i-- {
		if tr.IsBoundary(seqs[i]) {
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
