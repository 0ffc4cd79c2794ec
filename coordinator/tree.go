package coordinator

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"contextd"
	"contextd/history"
	"contextd/session"
)

// Bounds of the compaction summary (Service.Compaction), in Unicode code
// points.
const (
	// MaxCompactionChars bounds the whole summary. When the sections do not
	// fit, the oldest earlier-window sections are left out and one line
	// names them.
	MaxCompactionChars = 60_000
	// MaxCompactionWindowChars bounds one archived window's summary text.
	MaxCompactionWindowChars = 12_000
	// MaxCompactionRequests is how many user requests (the most recent) a
	// window digest lists.
	MaxCompactionRequests = 20
	// MaxCompactionRequestChars bounds one listed user request (its first
	// line).
	MaxCompactionRequestChars = 300
	// MaxCompactionReplyChars bounds the last assistant message of a digest.
	MaxCompactionReplyChars = 4_000
)

// CompactionStrategy is details.strategy of the compaction a Tree-mode
// session ends with.
const CompactionStrategy = "codex-context-tree"

// CompactionRequest is the body of POST /v1/sessions/{id}/compaction.
type CompactionRequest struct {
	LeafID string `json:"leaf_id,omitempty" maxLength:"256" doc:"Pi's live leaf; default the last entry of the file."`
}

// CompactionDetails is the details object to store on the compaction.
type CompactionDetails struct {
	Protocol          int      `json:"protocol" doc:"Always 1."`
	Strategy          string   `json:"strategy" doc:"Always codex-context-tree."`
	WindowID          string   `json:"windowId" doc:"The current window, kept verbatim."`
	ArchivedWindowIDs []string `json:"archivedWindowIds" doc:"The earlier windows of the branch whose summaries the summary holds, oldest first."`
}

// CompactionAnswer is what the extension returns from Pi's
// session_before_compact handler as {compaction: {summary,
// firstKeptEntryId, tokensBefore, details}} (docs/pi-facts.md
// "Provider hooks"). tokensBefore
// is Pi's own estimate (preparation.tokensBefore); contextd does not count
// tokens.
type CompactionAnswer struct {
	Summary          string            `json:"summary" doc:"Readable cumulative summary: each earlier window's summary in order, then a digest of the current window. At most 60,000 characters (Unicode code points)."`
	FirstKeptEntryID string            `json:"first_kept_entry_id" doc:"The current window's boundary entry: Pi keeps it and everything after it verbatim."`
	Details          CompactionDetails `json:"details"`
}

// Compaction answers POST /v1/sessions/{id}/compaction: the manual
// compaction that lets a session leave Tree mode (docs/design.md §4: it "must materialize a readable cumulative
// summary from archived summaries plus the current window"; docs/design.md
// §5.2).
//
// The windows are those of the Tree history view of the branch (archived
// windows, then the current one; archive.Index.Branch). The last window is
// the current one; it must be open (not archived), else the answer is an
// EConflict error. first_kept_entry_id is its boundary entry, so Pi keeps
// the current window verbatim after the summary. The summary is, in this
// order:
//
//   - a heading line;
//   - for each earlier window, oldest first, a section "## Window N (id
//     W), archived" holding its summary item's text (at most
//     MaxCompactionWindowChars code points, then "[…]"), or, for an earlier
//     window without a summary item (a Local window cut by a Tree
//     archive), its digest;
//   - "## Window N (id W), current (kept verbatim below)" and its digest:
//     "User requests:" and the first lines of its last
//     MaxCompactionRequests user items (each at most
//     MaxCompactionRequestChars code points, then " […]"), then "Last
//     assistant message:" and the text parts (thinking left out) of its
//     last assistant message that makes no tool call and has text (at most
//     MaxCompactionReplyChars code points, then " […]").
//
// N is the windowNumber of the first boundary entry in the file with the
// window's id ("?" when there is none). When the whole text would exceed
// MaxCompactionChars code points, the oldest earlier-window sections are
// replaced by one line giving their count and first and last ids.
//
// Errors: EConflict when the session is not in Tree mode or the branch has
// no open window (append a boundary first: POST …/windows); ENotFound for
// an unknown session or leaf; EGone for an unusable file.
func (s *Service) Compaction(ctx context.Context, sessionID string, req CompactionRequest) (CompactionAnswer, error) {
	t, err := s.Resolve(ctx, sessionID)
	if err != nil {
		return CompactionAnswer{}, err
	}
	if t.Mode != contextd.ModeTree {
		return CompactionAnswer{}, contextd.Errorf(contextd.EConflict, "session %q is in %s mode; the cumulative compaction summary is for leaving Tree mode, register the session with mode tree or compact it the usual way", sessionID, t.Mode)
	}
	var out CompactionAnswer
	err = s.withBranch(t, req.LeafID, func(b *Branch) error {
		view, err := s.historyView(b, t.Agent)
		if err != nil {
			return err
		}
		return s.compaction(b, view, &out)
	})
	return out, err
}

func (s *Service) compaction(b *Branch, view *history.View, out *CompactionAnswer) error {
	tr := b.V.Tree
	n := len(view.Windows)
	if n == 0 || isArchived(view.Windows[n-1]) {
		return contextd.Errorf(contextd.EConflict, "the branch of leaf %q has no open context window after its last Tree archive; append a boundary with POST /v1/sessions/%s/windows, then compact", b.Leaf, b.Target.SessionID)
	}
	cur := view.Windows[n-1]
	// The current window's boundary: the latest boundary on the branch
	// with the window's id.
	boundary := ""
	for i := len(b.Seqs) - 1; i >= 0; i-- {
		if e := tr.Entry(b.Seqs[i]); e.IsBoundary() && e.Window.CurrentWindowID == cur.ID {
			boundary = e.ID
			break
		}
	}
	if boundary == "" {
		return fmt.Errorf("compaction: window %s has no boundary on the branch", cur.ID)
	}
	numbers := map[string]int{} // window id → windowNumber of its first boundary in the file
	for i := range tr.Len() {
		if e := tr.Entry(i); e.IsBoundary() {
			if _, ok := numbers[e.Window.CurrentWindowID]; !ok {
				numbers[e.Window.CurrentWindowID] = e.Window.WindowNumber
			}
		}
	}
	number := func(id string) string {
		if n, ok := numbers[id]; ok {
			return fmt.Sprint(n)
		}
		return "?"
	}
	var sections []string
	archived := []string{}
	for _, w := range view.Windows[:n-1] {
		var sec strings.Builder
		if isArchived(w) {
			text, err := view.Texts.Slice(w.At(0), 0, MaxCompactionWindowChars)
			if err != nil {
				return err
			}
			fmt.Fprintf(&sec, "## Window %s (id %s), archived\n\n%s", number(w.ID), w.ID, strings.TrimSpace(text))
			if w.At(0).Chars > MaxCompactionWindowChars {
				sec.WriteString(" […]")
			}
		} else {
			fmt.Fprintf(&sec, "## Window %s (id %s)\n\n", number(w.ID), w.ID)
			if err := digest(&sec, b, view.Texts, w); err != nil {
				return err
			}
		}
		archived = append(archived, w.ID)
		sections = append(sections, sec.String())
	}
	var last strings.Builder
	fmt.Fprintf(&last, "## Window %s (id %s), current (kept verbatim below)\n\n", number(cur.ID), cur.ID)
	if err := digest(&last, b, view.Texts, cur); err != nil {
		return err
	}
	head := fmt.Sprintf("Context windows of this session (contextd Tree mode): %d earlier, then the current one.", n-1)
	out.Summary = assemble(head, sections, archived, last.String())
	out.FirstKeptEntryID = boundary
	out.Details = CompactionDetails{Protocol: 1, Strategy: CompactionStrategy, WindowID: cur.ID, ArchivedWindowIDs: archived}
	return nil
}

// isArchived reports whether w is an archived Tree window: its first item
// is a summary item.
func isArchived(w history.Window) bool { return w.Len() > 0 && w.At(0).Summary }

// digest writes the user requests and the last reply of w.
func digest(b *strings.Builder, br *Branch, ts history.TextSource, w history.Window) error {
	var users []history.ItemRef
	for _, r := range w.All() {
		if r.Role == history.RoleUser {
			users = append(users, r)
		}
	}
	reply, err := lastReply(br, w)
	if err != nil {
		return err
	}
	if len(users) == 0 && reply == "" {
		b.WriteString("(no user requests or replies yet)")
		return nil
	}
	if len(users) > 0 {
		if len(users) > MaxCompactionRequests {
			fmt.Fprintf(b, "User requests (the last %d of %d):\n", MaxCompactionRequests, len(users))
			users = users[len(users)-MaxCompactionRequests:]
		} else {
			b.WriteString("User requests:\n")
		}
		for _, u := range users {
			// Read a prefix long enough to hold a first line of more than
			// the bound, so that a cut line is seen and marked.
			text, err := ts.Prefix(u, 4*MaxCompactionRequestChars)
			if err != nil {
				return err
			}
			line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
			if cut := history.SliceChars(line, 0, MaxCompactionRequestChars); cut != line {
				line = cut + " […]"
			}
			b.WriteString("- " + line + "\n")
		}
	}
	if reply != "" {
		if len(users) > 0 {
			b.WriteByte('\n')
		}
		b.WriteString("Last assistant message:\n")
		if cut := history.SliceChars(reply, 0, MaxCompactionReplyChars); cut != reply {
			reply = cut + " […]"
		}
		b.WriteString(reply)
	}
	return nil
}

// lastReply is the text of the last assistant message of w that makes no
// tool call and has text: its text parts (thinking left out) joined by
// "\n" and trimmed; "" when there is none. Item keys are entry Seqs
// (store.View.Refs: the context_edit's for a replaced item).
func lastReply(br *Branch, w history.Window) (string, error) {
	for i := w.Len() - 1; i >= 0; i-- {
		r := w.At(i)
		if r.Role != history.RoleAssistant || r.Summary || r.ToolName != "" {
			continue
		}
		var c *session.Content
		switch br.V.Tree.Type(int(r.Key)) {
		case session.TypeMessage:
			_, d, err := br.V.Decode(int(r.Key))
			if err != nil {
				return "", err
			}
			if d.Message == nil {
				continue
			}
			c = &d.Message.Content
		case session.TypeContextEdit:
			// A reply replaced by a context_edit (store.View.Refs): its
			// replacement is what the model was sent.
			_, d, err := br.V.Decode(int(r.Key))
			if err != nil {
				return "", err
			}
			if d.Replacement == nil {
				continue
			}
			c = d.Replacement
		default:
			continue // a branch summary: a raw assistant item, not a reply
		}
		var parts []string
		if c.IsString {
			parts = append(parts, c.Text)
		}
		for _, p := range c.Parts {
			if p.Type == "text" {
				parts = append(parts, p.Text)
			}
		}
		if text := strings.TrimSpace(strings.Join(parts, "\n")); text != "" {
			return text, nil
		}
	}
	return "", nil
}

// assemble joins head, the earlier sections and the current section with
// blank lines, leaving out the oldest earlier sections while the text
// exceeds MaxCompactionChars.
func assemble(head string, sections, ids []string, current string) string {
	chars := utf8.RuneCountInString
	total := chars(head) + chars(current) + 2
	for _, s := range sections {
		total += chars(s) + 2
	}
	drop := 0
	note := ""
	for drop < len(sections) && total+chars(note) > MaxCompactionChars {
		total -= chars(sections[drop]) + 2
		drop++
		note = fmt.Sprintf("(The %d oldest earlier windows, ids %s to %s, were left out to keep this summary within %d characters.)\n\n", drop, ids[0], ids[drop-1], MaxCompactionChars)
	}
	var b strings.Builder
	b.WriteString(head + "\n\n")
	b.WriteString(note)
	for _, s := range sections[drop:] {
		b.WriteString(s + "\n\n")
	}
	b.WriteString(current)
	return b.String()
}
