package coordinator

import (
	"encoding/json"
	"errors"

	"contextd/archive"
	"contextd/history"
	"contextd/session"
)

// RolloverLoopThreshold is how many consecutive closed windows without
// progress make a rollover loop (docs/modes.md "Tool-call pairing"): three rollovers in a row, each
// closing a window that held no user message and no successful tool result
// other than new_context's own. One empty window happens (the model
// checkpoints and rolls over at once after a rollover that landed
// mid-task); two can be a retry; a third means the model keeps calling
// new_context instead of working, and every further rollover spends a
// summary or a boundary for nothing.
const RolloverLoopThreshold = 3

// RolloverLoop is the no-progress report of GET /v1/sessions/{id}.
type RolloverLoop struct {
	Windows   int      `json:"windows" doc:"Consecutive closed windows, most recent first, without a user message or a successful tool result other than new_context's (at least RolloverLoopThreshold = 3)."`
	WindowIDs []string `json:"window_ids" doc:"Their window ids, most recent first: at most the 25 most recent (windows counts them all; history list_windows lists every window), each cut like history IDs (over 256 characters: \"…\" and the last 255)."`
}

// MaxLoopWindowIDs bounds RolloverLoop.WindowIDs: a loop of 100,000
// windows would otherwise make every GET /v1/sessions/{id} megabytes
// (docs/security.md).
const MaxLoopWindowIDs = 25

// windowSegment is one window of a branch: its id and entry Seqs.
type windowSegment struct {
	id   string
	seqs []int
}

// branchWindows splits b into windows in chronological order: a boundary
// starts a window (Local, and the current window in Tree); a Tree archive
// manifest on the branch stands for the window it archived (the entries
// from its boundary to its archived leaf, off the branch). The last
// segment is the current window when the branch holds a boundary.
func branchWindows(b *Branch) ([]windowSegment, error) {
	tr := b.V.Tree
	var out []windowSegment
	cur := -1
	var manifests []int
	for _, sq := range b.Seqs {
		if e := tr.Entry(sq); e.Type == session.TypeCustom && e.CustomType == session.CustomTypeTreeArchive {
			manifests = append(manifests, sq)
		}
	}
	data := map[int]archive.Data{}
	if err := b.V.DecodeEach(manifests, func(seq int, _ *session.Entry, d *session.Decoded) error {
		var m archive.Data
		if json.Unmarshal(d.Data, &m) == nil {
			data[seq] = m
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for _, sq := range b.Seqs {
		e := tr.Entry(sq)
		switch {
		case e.IsBoundary():
			out = append(out, windowSegment{id: e.Window.CurrentWindowID, seqs: []int{sq}})
			cur = len(out) - 1
		case e.Type == session.TypeCustom && e.CustomType == session.CustomTypeTreeArchive:
			m, ok := data[sq]
			if !ok {
				continue
			}
			arch, _, err := tr.Branch(m.ArchivedLeafID)
			if err != nil {
				continue // an invalid manifest is reported elsewhere
			}
			seg := windowSegment{id: m.WindowID}
			in := false
			for _, a := range arch {
				in = in || tr.ID(a) == m.BoundaryEntryID
				if in {
					seg.seqs = append(seg.seqs, a)
				}
			}
			// Archived windows come before the window that follows them.
			out = append(out, seg)
			cur = -1
		default:
			if cur >= 0 {
				out[cur].seqs = append(out[cur].seqs, sq)
			}
		}
	}
	return out, nil
}

// noProgress returns the ids of the consecutive windows without progress
// that end the branch, most recent first: with current, the window the
// leaf is in counts (a rollover requested now closes it); without, only
// closed windows count. A window has progress when it holds a user
// message or a toolResult with isError false whose toolName is not
// new_context.
func noProgress(b *Branch, current bool) ([]string, error) {
	wins, err := branchWindows(b)
	if err != nil {
		return nil, err
	}
	last := len(wins) - 1
	if last >= 0 && !current && len(wins[last].seqs) > 0 && b.V.Tree.Entry(wins[last].seqs[0]).IsBoundary() {
		last-- // the open window
	}
	var ids []string
	for i := last; i >= 0; i-- {
		progress, err := windowProgress(b, wins[i].seqs)
		if err != nil {
			return nil, err
		}
		if progress {
			break
		}
		ids = append(ids, wins[i].id)
	}
	return ids, nil
}

func windowProgress(b *Branch, seqs []int) (bool, error) {
	tr := b.V.Tree
	var results []int
	for _, sq := range seqs {
		e := tr.Entry(sq)
		if e.Type != session.TypeMessage {
			continue
		}
		if e.Role == session.RoleUser {
			return true, nil
		}
		if e.Role == session.RoleToolResult {
			results = append(results, sq)
		}
	}
	// Newest first: a window with progress usually shows it near its end.
	for i, j := 0, len(results)-1; i < j; i, j = i+1, j-1 {
		results[i], results[j] = results[j], results[i]
	}
	err := b.V.DecodeEach(results, func(_ int, _ *session.Entry, d *session.Decoded) error {
		if d.Message != nil && !d.Message.IsError && d.Message.ToolName != NewContextTool {
			return errProgress
		}
		return nil
	})
	if errors.Is(err, errProgress) {
		return true, nil
	}
	return false, err
}

// errProgress ends windowProgress's decoding at the first successful result.
var errProgress = errors.New("progress")

// rolloverLoop reports b's rollover loop, nil when its closed windows
// without progress are fewer than RolloverLoopThreshold.
func rolloverLoop(b *Branch) (*RolloverLoop, error) {
	ids, err := noProgress(b, false)
	if err != nil || len(ids) < RolloverLoopThreshold {
		return nil, err
	}
	shown := make([]string, 0, min(len(ids), MaxLoopWindowIDs))
	for _, id := range ids[:min(len(ids), MaxLoopWindowIDs)] {
		shown = append(shown, history.BoundID(id))
	}
	return &RolloverLoop{Windows: len(ids), WindowIDs: shown}, nil
}

// countLoop counts, in contextd_rollover_loops_total, a rollover (Tree or
// Local: a next boundary) requested at b that closes the
// RolloverLoopThreshold-th or a later window in a row without progress.
func (s *Service) countLoop(b *Branch, mode string) {
	if s.Metrics == nil || s.Metrics.RolloverLoops == nil {
		return
	}
	if ids, err := noProgress(b, true); err == nil && len(ids) >= RolloverLoopThreshold {
		s.Metrics.RolloverLoops.WithLabelValues(mode).Inc()
	}
}
