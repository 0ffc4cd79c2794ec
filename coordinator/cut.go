package coordinator

import (
	"context"
	"strings"

	"contextd"
	"contextd/cut"
	"contextd/history"
)

// CutIdentifier is one distinctive identifier of a closed window (package
// cut) and whether the next window starts with it.
type CutIdentifier struct {
	Kind      string   `json:"kind" enum:"url,path,commit,quantity,error,name" doc:"How it was found (package cut)."`
	Value     string   `json:"value" doc:"The literal string, as history search_contents would be given it."`
	ItemIDs   []string `json:"item_ids" doc:"History items of the window whose text contains it, in window order."`
	Carried   bool     `json:"carried" doc:"true: the next window starts with it (in a note, the thread hint or, Tree, the summary); false: the cut dropped it."`
	CarriedIn []string `json:"carried_in,omitempty" doc:"Where: notes, thread_hint (the next boundary's text), summary."`
}

// WindowCut is the answer of GET /v1/sessions/{id}/windows/{window_id}/cut.
type WindowCut struct {
	SessionID    string          `json:"session_id"`
	WindowID     string          `json:"window_id"`
	NextWindowID string          `json:"next_window_id" doc:"The window the rollover opened."`
	Items        int             `json:"items" doc:"History items of the window."`
	Identifiers  []CutIdentifier `json:"identifiers" doc:"In order of first occurrence in the window."`
	Carried      int             `json:"carried"`
	Dropped      int             `json:"dropped"`
}

// cutOf computes the cut of window windowID on b's history view.
// EConflict for the current window (nothing was cut), ENotFound for a
// window not on the branch.
func (s *Service) cutOf(b *Branch, view *history.View, windowID string) (WindowCut, *history.Window, error) {
	out := WindowCut{SessionID: b.Target.SessionID, WindowID: windowID, Identifiers: []CutIdentifier{}}
	idx := -1
	for i := range view.Windows {
		if view.Windows[i].ID == windowID {
			idx = i
		}
	}
	if idx < 0 {
		return out, nil, contextd.Errorf(contextd.ENotFound, "window %q is not a history window of the branch of leaf %q; list them with history list_windows", windowID, b.Leaf)
	}
	w := &view.Windows[idx]
	tr := b.V.Tree
	// The boundary that continued the chain: previousWindowId = windowID,
	// preferably on the branch.
	next := -1
	onBranch := map[int]bool{}
	for _, sq := range b.Seqs {
		onBranch[sq] = true
	}
	for sq := range tr.Len() {
		e := tr.Entry(sq)
		if e.IsBoundary() && e.Window.PreviousWindowID == windowID && (next < 0 || onBranch[sq]) {
			next = sq
		}
	}
	if next < 0 {
		return out, nil, contextd.Errorf(contextd.EConflict, "window %q was not closed by a rollover: it is the current window, nothing was cut yet", windowID)
	}
	ne := tr.Entry(next)
	out.NextWindowID = ne.Window.CurrentWindowID
	out.Items = w.Len()
	items := w.All()
	// What the next window starts with.
	carried := map[string]string{}
	_, d, err := b.V.Decode(next)
	if err != nil {
		return out, nil, err
	}
	if it, ok := history.Render(&ne, d, nil); ok {
		carried["thread_hint"] = it.Text
	}
	seqs, _, err := tr.Branch(ne.ID)
	if err != nil {
		return out, nil, err
	}
	st, err := noteState(&Branch{V: b.V, Leaf: ne.ID, Seqs: seqs[:len(seqs)-1], Target: b.Target})
	if err != nil {
		return out, nil, err
	}
	var nb strings.Builder
	for _, f := range st.Files() {
		nb.WriteString(f.Path)
		nb.WriteString("\n")
		nb.WriteString(f.Text)
		nb.WriteString("\n")
	}
	carried["notes"] = nb.String()
	// The window's item texts.
	texts := make([]string, len(items))
	for i, ref := range items {
		t, err := view.Texts.Slice(ref, 0, ref.Chars)
		if err != nil {
			return out, nil, err
		}
		texts[i] = t
		if ref.Summary {
			carried["summary"] += t
		}
	}
	seen := map[cut.Identifier]bool{}
	for i, ref := range items {
		if ref.Summary || ref.Role == history.RoleDeveloper || ref.ToolNamespace == history.NamespaceHistory || ref.ToolNamespace == history.NamespaceNotes ||
			ref.ToolName == history.NamespaceHistory || ref.ToolName == history.NamespaceNotes {
			continue
		}
		for _, id := range cut.Extract(texts[i], ref.Role == history.RoleTool) {
			if seen[id] {
				continue
			}
			seen[id] = true
			ci := CutIdentifier{Kind: id.Kind, Value: id.Value, ItemIDs: []string{}}
			for j, r := range items {
				if !r.Summary && strings.Contains(texts[j], id.Value) {
					ci.ItemIDs = append(ci.ItemIDs, r.ItemID)
				}
			}
			for _, where := range []string{"notes", "thread_hint", "summary"} {
				if strings.Contains(carried[where], id.Value) {
					ci.CarriedIn = append(ci.CarriedIn, where)
				}
			}
			ci.Carried = len(ci.CarriedIn) > 0
			if ci.Carried {
				out.Carried++
			} else {
				out.Dropped++
			}
			out.Identifiers = append(out.Identifiers, ci)
		}
	}
	return out, w, nil
}

// WindowCutOf answers GET /v1/sessions/{id}/windows/{window_id}/cut for
// the branch of leafID ("" = the last entry). Errors: ENotFound (unknown
// session, leaf or window), EConflict (off/remote mode; the current
// window), EGone (unusable file).
func (s *Service) WindowCutOf(ctx context.Context, sessionID, windowID, leafID string) (WindowCut, error) {
	t, err := s.Resolve(ctx, sessionID)
	if err != nil {
		return WindowCut{}, err
	}
	if err := requireLocal(t); err != nil {
		return WindowCut{}, err
	}
	var out WindowCut
	err = s.withBranch(t, leafID, func(b *Branch) error {
		view, err := s.historyView(b, t.Agent)
		if err != nil {
			return err
		}
		out, _, err = s.cutOf(b, view, windowID)
		if err == nil && s.Metrics != nil && s.Metrics.CutDropped != nil {
			s.Metrics.CutDropped.Observe(float64(out.Dropped))
		}
		return err
	})
	return out, err
}

// WindowRecovery is the recoverability of one closed window's dropped
// identifiers (docs/rollover-quality.md).
type WindowRecovery struct {
	WindowID  string         `json:"window_id"`
	Dropped   int            `json:"dropped" doc:"Identifiers the cut dropped."`
	Recovered int            `json:"recovered" doc:"Of those, found by search_contents (query = the identifier, window_id = the window) in its first page and returned by read_item, read through next_offset_chars, with the identifier in it."`
	Share     *float64       `json:"share" doc:"recovered / dropped, 0 to 1; null when the cut dropped nothing (nothing to recover)."`
	Misses    []RecoveryMiss `json:"misses,omitempty"`
}

// RecoveryMiss is a dropped identifier the history tools did not give back.
type RecoveryMiss struct {
	Kind   string `json:"kind"`
	Value  string `json:"value"`
	Reason string `json:"reason"`
}

// Recoverability is the answer of contextd eval: every closed window of
// the branch and the overall share.
type Recoverability struct {
	SessionID string           `json:"session_id"`
	Windows   []WindowRecovery `json:"windows"`
	Dropped   int              `json:"dropped"`
	Recovered int              `json:"recovered"`
	Share     *float64         `json:"share" doc:"recovered / dropped over all windows, 0 to 1; null when nothing was dropped, e.g. no closed window to evaluate."`
}

// RecoverabilityOf measures, for every window of the branch that a
// rollover closed, whether the model gets each dropped identifier back
// with history search_contents then read_item (the operations the model
// is given, run as the model would call them).
func (s *Service) RecoverabilityOf(ctx context.Context, sessionID, leafID string) (Recoverability, error) {
	t, err := s.Resolve(ctx, sessionID)
	if err != nil {
		return Recoverability{}, err
	}
	if err := requireLocal(t); err != nil {
		return Recoverability{}, err
	}
	out := Recoverability{SessionID: sessionID, Windows: []WindowRecovery{}}
	err = s.withBranch(t, leafID, func(b *Branch) error {
		view, err := s.historyView(b, t.Agent)
		if err != nil {
			return err
		}
		for _, w := range view.Windows {
			c, _, err := s.cutOf(b, view, w.ID)
			if contextd.ErrorCode(err) == contextd.EConflict {
				continue // the current window
			}
			if err != nil {
				return err
			}
			wr := WindowRecovery{WindowID: w.ID}
			for _, id := range c.Identifiers {
				if id.Carried {
					continue
				}
				wr.Dropped++
				if reason := recover1(view, w.ID, id.Value); reason != "" {
					wr.Misses = append(wr.Misses, RecoveryMiss{Kind: id.Kind, Value: id.Value, Reason: reason})
					continue
				}
				wr.Recovered++
			}
			wr.Share = share(wr.Recovered, wr.Dropped)
			if s.Metrics != nil && s.Metrics.CutDropped != nil {
				s.Metrics.CutDropped.Observe(float64(wr.Dropped))
				if wr.Share != nil {
					s.Metrics.Recoverability.Observe(*wr.Share)
				}
			}
			out.Dropped += wr.Dropped
			out.Recovered += wr.Recovered
			out.Windows = append(out.Windows, wr)
		}
		return nil
	})
	out.Share = share(out.Recovered, out.Dropped)
	return out, err
}

// share is recovered / dropped, nil when dropped is 0.
func share(recovered, dropped int) *float64 {
	if dropped == 0 {
		return nil
	}
	v := float64(recovered) / float64(dropped)
	return &v
}

// recover1 runs search_contents then read_item for value in window; ""
// when the item read holds value, else why not.
func recover1(view *history.View, windowID, value string) string {
	wid := windowID
	res, err := view.Search(history.SearchArgs{Query: value, WindowID: &wid})
	if err != nil {
		return "search_contents failed: " + err.Error()
	}
	if len(res.Items) == 0 {
		return "search_contents finds no item of the window in its first page"
	}
	for _, it := range res.Items {
		var b strings.Builder
		off := 0
		for {
			o := off
			r, err := view.ReadItem(history.ReadItemArgs{WindowID: it.WindowID, ItemID: it.ItemID, OffsetChars: &o})
			if err != nil || r.Item == nil {
				break
			}
			b.WriteString(r.Item.Content)
			if r.Item.NextOffsetChars == nil {
				break
			}
			off = *r.Item.NextOffsetChars
		}
		if strings.Contains(b.String(), value) {
			return ""
		}
	}
	return "read_item of the items search_contents found does not return it"
}
