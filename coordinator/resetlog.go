package coordinator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"contextd"
	"contextd/archive"
	"contextd/notes"
	"contextd/session"
	"contextd/store"
)

// The reset log (docs/rollover-quality.md): every rollover of a session, in order,
// from contextd's own state (state.db) and from the file. The file is the
// record of what happened: a rollover is a window boundary whose
// previousWindowId names the window before it (Local), with, in Tree mode,
// the archive manifest that names the archived interval. state.db adds the
// rollovers the file cannot show (aborted, still open) and the times of
// each step; a rollover found only in the file is rebuilt from its entries.

// Reset-log states. requested is the state machine's pending.
const (
	ResetRequested = "requested"
	ResetSettled   = "settled"
	ResetCommitted = "committed"
	ResetCompleted = "completed"
	// ResetFailed: the settled phase started and did not finish (aborted
	// after settle, e.g. navigation cancelled), or the file holds the
	// rollover's summary and manifest but no boundary after them.
	ResetFailed = "failed"
	// ResetAborted: aborted before the settled phase.
	ResetAborted = "aborted"
)

// ResetWindow names one window of a rollover.
type ResetWindow struct {
	ID     string `json:"id" doc:"Window id (currentWindowId of its boundary)."`
	Number int    `json:"number" doc:"Zero-based window number."`
}

// ResetInterval is the archived interval of a rollover: the entries of the
// closed window, from its boundary to its last entry, in chronological
// order.
type ResetInterval struct {
	FirstEntryID string `json:"first_entry_id" doc:"The closed window's boundary entry."`
	LastEntryID  string `json:"last_entry_id" doc:"The window's last entry: Tree, the archived leaf (the manifest's archivedLeafId); Local, the entry before the next boundary."`
	Entries      int    `json:"entries" doc:"Entries in the interval, both ends included."`
	Bytes        int64  `json:"bytes" doc:"Bytes of their JSONL lines in the session file, each line's newline included."`
}

// ResetDurations are the step durations of a rollover in milliseconds;
// a field is absent when either end is unknown.
type ResetDurations struct {
	SettleMS   *int64 `json:"settle_ms,omitempty" doc:"requested → settled."`
	CommitMS   *int64 `json:"commit_ms,omitempty" doc:"settled → committed (Tree: the branch summary was written in between)."`
	CompleteMS *int64 `json:"complete_ms,omitempty" doc:"committed → completed or aborted."`
	TotalMS    *int64 `json:"total_ms,omitempty" doc:"requested → completed or aborted."`
}

// ResetEntry is one rollover of the reset log.
type ResetEntry struct {
	RolloverID       string         `json:"rollover_id,omitempty" doc:"The state machine's rollover id; absent for a rollover rebuilt from the file only (Local new_context, or a state database that lacks it)."`
	Source           string         `json:"source" enum:"state,file,state+file" doc:"state: only contextd's state knows it; file: rebuilt from the file's boundaries and manifests; state+file: both agree."`
	Mode             contextd.Mode  `json:"mode" enum:"local,tree"`
	State            string         `json:"state" enum:"requested,settled,committed,completed,failed,aborted"`
	From             ResetWindow    `json:"from" doc:"The window closed."`
	To               *ResetWindow   `json:"to" doc:"The window opened; null when none was (yet)."`
	BoundaryEntryID  string         `json:"boundary_entry_id,omitempty" doc:"The closed window's boundary."`
	NextBoundaryID   string         `json:"next_boundary_entry_id,omitempty" doc:"The boundary that opened the next window."`
	ManifestEntryID  string         `json:"manifest_entry_id,omitempty" doc:"Tree: the codex-context-tree-archive entry."`
	Archived         *ResetInterval `json:"archived" doc:"The archived interval; null when the file does not hold it."`
	SummaryEntryID   string         `json:"summary_entry_id,omitempty" doc:"Tree: the branch_summary standing for the window."`
	SummarySHA256    string         `json:"summary_sha256,omitempty" doc:"Tree: lowercase hex SHA-256 of the summary text's UTF-8 bytes."`
	NoteFiles        int            `json:"note_files" doc:"Note files in the note state at the cut (all agents)."`
	NoteBytes        int            `json:"note_bytes" doc:"UTF-8 bytes of their texts."`
	WindowNoteWrites int            `json:"window_note_writes" doc:"write_file/append_to_file entries (codex-context-note) the closed window appended; 0 means nothing was checkpointed in it."`
	Reason           string         `json:"reason,omitempty" doc:"Why it was aborted or failed."`
	RequestedAt      *time.Time     `json:"requested_at,omitempty" doc:"Tool phase (file only: the last entry of the closed window)."`
	SettledAt        *time.Time     `json:"settled_at,omitempty" doc:"Settled phase (file only, Tree: the branch summary's timestamp)."`
	CommittedAt      *time.Time     `json:"committed_at,omitempty" doc:"Commit answered (file only, Tree: the manifest's timestamp)."`
	FinishedAt       *time.Time     `json:"finished_at,omitempty" doc:"Completed (file only: the next boundary's timestamp) or aborted."`
	Durations        ResetDurations `json:"durations"`
}

// RolloverLog is the answer of GET /v1/sessions/{id}/rollovers.
type RolloverLog struct {
	SessionID string       `json:"session_id"`
	LeafID    string       `json:"leaf_id" doc:"The leaf whose branch the file part was read from."`
	Rollovers []ResetEntry `json:"rollovers" doc:"Every rollover, oldest first (by requested_at; file order for rollovers without times)."`
}

// RolloverLogRequest selects the branch the log reads.
type RolloverLogRequest struct {
	LeafID string `query:"leaf_id" maxLength:"256" doc:"Pi's leaf; default the last entry of the file."`
}

// Rollovers answers GET /v1/sessions/{id}/rollovers. Errors: ENotFound
// (unknown session or leaf), EConflict (off or remote mode), EGone (an
// unusable file).
func (s *Service) Rollovers(ctx context.Context, sessionID, leafID string) (RolloverLog, error) {
	t, err := s.Resolve(ctx, sessionID)
	if err != nil {
		return RolloverLog{}, err
	}
	if err := requireLocal(t); err != nil {
		return RolloverLog{}, err
	}
	out := RolloverLog{SessionID: sessionID, Rollovers: []ResetEntry{}}
	var fromFile []ResetEntry
	if !awaitingFile(t) {
		err = s.withBranch(t, leafID, func(b *Branch) error {
			out.LeafID = b.Leaf
			var err error
			if fromFile, err = fileRollovers(b); err != nil {
				return err
			}
			if f := cutBeforeManifest(b, s.resumeOf(b)); f != nil {
				fromFile = append(fromFile, *f)
			}
			return nil
		})
		if err != nil {
			return out, err
		}
	}
	rows, err := s.State.SessionRollovers(ctx, sessionID)
	if err != nil {
		return out, err
	}
	used := make([]bool, len(rows))
	for i := range fromFile {
		f := &fromFile[i]
		for j, r := range rows {
			if used[j] || !matchesFile(r, f) {
				continue
			}
			used[j] = true
			mergeState(f, r)
			break
		}
	}
	all := fromFile
	for j, r := range rows {
		if !used[j] {
			all = append(all, stateOnly(r))
		}
	}
	slices.SortStableFunc(all, func(a, b ResetEntry) int {
		switch {
		case a.RequestedAt == nil || b.RequestedAt == nil:
			return 0
		default:
			return a.RequestedAt.Compare(*b.RequestedAt)
		}
	})
	for i := range all {
		all[i].Durations = durationsOf(all[i])
	}
	out.Rollovers = all
	return out, nil
}

// fileRollovers rebuilds the rollovers on b's branch from the file: each
// boundary with a previousWindowId opens a rollover; a manifest since the
// previous boundary naming that window makes it a Tree rollover (archived
// interval = the walk from archivedLeafId up to boundaryEntryId), else the
// previous boundary on the branch closes a Local window (interval = the
// branch from it up to the new boundary). A manifest with no boundary after
// it is a failed (incomplete) rollover.
func fileRollovers(b *Branch) ([]ResetEntry, error) {
	tr := b.V.Tree
	var out []ResetEntry
	lastBoundary := -1 // index in b.Seqs
	manifest := -1     // index in b.Seqs of a manifest not yet followed by its boundary
	var md archive.Data
	// closeTree ends the Tree rollover of the pending manifest: next is the
	// boundary it opened (nil: none in the file), notesEnd the branch
	// index before which the note state at the cut is read.
	closeTree := func(next *session.Entry, notesEnd int) error {
		r := ResetEntry{Source: "file", Mode: contextd.ModeTree, State: ResetCompleted, From: ResetWindow{ID: md.WindowID, Number: -1}}
		if bs, ok := tr.Lookup(md.BoundaryEntryID); ok && tr.Entry(bs).Window != nil {
			r.From.Number = tr.Entry(bs).Window.WindowNumber
		}
		if next != nil {
			r.To = &ResetWindow{ID: next.Window.CurrentWindowID, Number: next.Window.WindowNumber}
			r.NextBoundaryID, r.FinishedAt = next.ID, entryTime(b.V, next)
			if r.From.Number < 0 {
				r.From.Number = next.Window.WindowNumber - 1
			}
		} else {
			r.State = ResetFailed
			r.Reason = "the file holds the rollover's branch summary and manifest but no boundary after them: the rollover was cut short; /contextd finish completes it"
		}
		if err := treePart(b, &r, manifest, md); err != nil {
			return err
		}
		if err := notesAt(b, &r, notesEnd); err != nil {
			return err
		}
		out = append(out, r)
		manifest = -1
		return nil
	}
	for i, sq := range b.Seqs {
		e := tr.Entry(sq)
		if e.Type == session.TypeCustom && e.CustomType == session.CustomTypeTreeArchive {
			_, d, err := b.V.Decode(sq)
			if err != nil {
				return nil, err
			}
			var m archive.Data
			if json.Unmarshal(d.Data, &m) != nil || m.WindowID == "" {
				continue
			}
			if manifest >= 0 {
				// The pending rollover's boundary was archived by this one:
				// it is the boundary this manifest names.
				var next *session.Entry
				if bs, ok := tr.Lookup(m.BoundaryEntryID); ok && tr.Entry(bs).IsBoundary() && tr.Entry(bs).Window.PreviousWindowID == md.WindowID {
					next = new(tr.Entry(bs))
				}
				if err := closeTree(next, snapshotEnd(b, manifest)); err != nil {
					return nil, err
				}
			}
			manifest, md = i, m
			continue
		}
		if !e.IsBoundary() {
			continue
		}
		w := e.Window
		switch {
		case manifest >= 0 && md.WindowID == w.PreviousWindowID:
			if err := closeTree(&e, i); err != nil {
				return nil, err
			}
		case w.PreviousWindowID != "":
			r := ResetEntry{Source: "file", Mode: contextd.ModeLocal, State: ResetCompleted,
				From: ResetWindow{ID: w.PreviousWindowID, Number: w.WindowNumber - 1}, To: &ResetWindow{ID: w.CurrentWindowID, Number: w.WindowNumber},
				NextBoundaryID: e.ID, FinishedAt: entryTime(b.V, &e)}
			if lastBoundary >= 0 && tr.Entry(b.Seqs[lastBoundary]).Window.CurrentWindowID == w.PreviousWindowID {
				r.BoundaryEntryID = tr.ID(b.Seqs[lastBoundary])
				r.Archived = interval(tr, b.Seqs[lastBoundary:i])
				r.RequestedAt = entryTime(b.V, new(tr.Entry(b.Seqs[i-1])))
				r.WindowNoteWrites = noteWrites(tr, b.Seqs[lastBoundary:i])
			}
			if err := notesAt(b, &r, i); err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		lastBoundary, manifest = i, -1
	}
	if manifest >= 0 {
		if err := closeTree(nil, snapshotEnd(b, manifest)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// snapshotEnd is the branch index after the manifest at mi and the note
// snapshot right after it, if there is one.
func snapshotEnd(b *Branch, mi int) int {
	end := mi + 1
	if end < len(b.Seqs) {
		if e := b.V.Tree.Entry(b.Seqs[end]); e.Type == session.TypeCustom && e.CustomType == session.CustomTypeNoteSnapshot {
			end++
		}
	}
	return end
}

// treePart fills the Tree part of r from the manifest at b.Seqs[mi].
func treePart(b *Branch, r *ResetEntry, mi int, md archive.Data) error {
	tr := b.V.Tree
	me := tr.Entry(b.Seqs[mi])
	r.Mode = contextd.ModeTree
	r.ManifestEntryID = me.ID
	r.BoundaryEntryID = md.BoundaryEntryID
	r.SummaryEntryID = md.SummaryEntryID
	r.CommittedAt = entryTime(b.V, &me)
	if sq, ok := tr.Lookup(md.SummaryEntryID); ok {
		se := tr.Entry(sq)
		r.SettledAt = entryTime(b.V, &se)
		_, d, err := b.V.Decode(sq)
		if err != nil {
			return err
		}
		sum := sha256.Sum256([]byte(d.Summary))
		r.SummarySHA256 = hex.EncodeToString(sum[:])
	}
	// The manifest must agree with its branch summary (the rules of
	// archive.Build's checks, in short): the summary is a branch_summary whose
	// fromId is archivedLeafId and whose parentId is branchBaseId, and the
	// walk from archivedLeafId up to branchBaseId meets the boundary.
	var reasons []string
	base := md.BranchBaseID // "" for null
	if sq, ok := tr.Lookup(md.SummaryEntryID); !ok || tr.Type(sq) != session.TypeBranchSummary {
		reasons = append(reasons, "summaryEntryId is not a branch_summary")
	} else {
		if tr.Entry(sq).FromID() != md.ArchivedLeafID {
			reasons = append(reasons, "archivedLeafId is not the summary's fromId")
		}
		if tr.ParentID(sq) != base {
			reasons = append(reasons, "branchBaseId is not the summary's parentId")
		}
	}
	var walk []int
	found := false
	id := md.ArchivedLeafID
	for steps := 0; id != "" && id != base && steps <= tr.Len(); steps++ {
		sq, ok := tr.Lookup(id)
		if !ok {
			break
		}
		walk = append(walk, sq)
		if id == md.BoundaryEntryID {
			found = true
			break
		}
		id = tr.ParentID(sq)
	}
	if !found {
		reasons = append(reasons, "the walk from archivedLeafId does not reach boundaryEntryId")
	}
	if len(reasons) > 0 {
		r.Reason = "invalid manifest (" + strings.Join(reasons, "; ") + "): the archive is unavailable"
		return nil
	}
	slices.Reverse(walk)
	r.Archived = interval(tr, walk)
	r.RequestedAt = entryTime(b.V, new(tr.Entry(walk[len(walk)-1])))
	r.WindowNoteWrites = noteWrites(tr, walk)
	return nil
}

func interval(tr *session.Tree, seqs []int) *ResetInterval {
	if len(seqs) == 0 {
		return nil
	}
	iv := &ResetInterval{FirstEntryID: tr.ID(seqs[0]), LastEntryID: tr.ID(seqs[len(seqs)-1]), Entries: len(seqs)}
	for _, sq := range seqs {
		iv.Bytes += int64(tr.Entry(sq).Length) + 1
	}
	return iv
}

func noteWrites(tr *session.Tree, seqs []int) int {
	n := 0
	for _, sq := range seqs {
		if tr.Type(sq) == session.TypeCustom && tr.CustomType(sq) == session.CustomTypeNote {
			n++
		}
	}
	return n
}

// notesAt sets r's note count and bytes from the note state of the branch
// before b.Seqs[end] (the state the next window starts with).
func notesAt(b *Branch, r *ResetEntry, end int) error {
	st, err := noteState(&Branch{V: b.V, Leaf: b.Leaf, Seqs: b.Seqs[:end], Target: b.Target})
	if err != nil {
		return err
	}
	r.NoteFiles, r.NoteBytes = notesSize(st)
	return nil
}

func notesSize(st *notes.State) (files, bytes int) {
	for _, f := range st.Files() {
		files++
		bytes += len(f.Text)
	}
	return files, bytes
}

// entryTime is the entry's timestamp (UTC), nil when it has none. The
// in-memory tree keeps only branch summaries' timestamps, so the others
// are read from the JSONL line (the reset log is not a hot route).
func entryTime(v *store.View, e *session.Entry) *time.Time {
	ts := e.Timestamp
	if ts == "" {
		if d, _, err := v.Decode(e.Seq); err == nil {
			ts = d.Timestamp
		}
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return nil
	}
	t = t.UTC()
	return &t
}

// matchesFile: a state rollover is the file's rollover when it closed the
// same window and, once committed, opened the same next window. An aborted
// rollover is the file's only when its plan opened the window the file's
// boundary opens (it was aborted after its commit and its entries were
// appended all the same, e.g. by /contextd finish): the window id is the
// plan's own, so the file's rollover is that one, listed once, as the file
// shows it. An aborted rollover without a plan wrote nothing and is listed
// on its own.
func matchesFile(r store.Rollover, f *ResetEntry) bool {
	var w WindowIdentity
	if json.Unmarshal(r.Window, &w) != nil || w.CurrentWindowID != f.From.ID {
		return false
	}
	var p rolloverPlan
	planned := r.Plan != nil && json.Unmarshal(r.Plan, &p) == nil
	if r.State == store.RolloverAborted {
		return planned && f.To != nil && p.Window.CurrentWindowID == f.To.ID
	}
	if planned && f.To != nil && p.Window.CurrentWindowID != f.To.ID {
		return false
	}
	return true
}

// mergeState overlays the state machine's id, state and times on a
// rollover found in the file.
func mergeState(f *ResetEntry, r store.Rollover) {
	f.RolloverID, f.Source = r.ID, "state+file"
	if f.State == ResetCompleted && r.State != store.RolloverCompleted && f.To == nil {
		f.State = stateName(r)
	}
	f.RequestedAt = timePtr(r.RequestedAt)
	if !r.SettledAt.IsZero() {
		f.SettledAt = timePtr(r.SettledAt)
	}
	if !r.CommittedAt.IsZero() {
		f.CommittedAt = timePtr(r.CommittedAt)
	}
	if !r.FinishedAt.IsZero() {
		f.FinishedAt = timePtr(r.FinishedAt)
	}
}

// stateOnly is a rollover only state.db knows: aborted or still open.
func stateOnly(r store.Rollover) ResetEntry {
	var w WindowIdentity
	_ = json.Unmarshal(r.Window, &w)
	e := ResetEntry{RolloverID: r.ID, Source: "state", Mode: r.Mode, State: stateName(r), From: ResetWindow{ID: w.CurrentWindowID, Number: w.WindowNumber},
		BoundaryEntryID: r.BoundaryEntryID, SummaryEntryID: r.SummaryEntryID, Reason: r.Reason,
		RequestedAt: timePtr(r.RequestedAt), SettledAt: timePtr(r.SettledAt), CommittedAt: timePtr(r.CommittedAt), FinishedAt: timePtr(r.FinishedAt)}
	if r.Plan != nil {
		var p rolloverPlan
		if json.Unmarshal(r.Plan, &p) == nil {
			e.To = &ResetWindow{ID: p.Window.CurrentWindowID, Number: p.Window.WindowNumber}
		}
	}
	if r.Notes != nil {
		var d notes.SnapshotData
		if json.Unmarshal(r.Notes, &d) == nil {
			for _, f := range d.Files {
				e.NoteFiles++
				e.NoteBytes += len(f.Text)
			}
		}
	}
	return e
}

func stateName(r store.Rollover) string {
	switch r.State {
	case store.RolloverPending:
		return ResetRequested
	case store.RolloverSettled:
		return ResetSettled
	case store.RolloverCommitted:
		return ResetCommitted
	case store.RolloverCompleted:
		return ResetCompleted
	}
	if !r.SettledAt.IsZero() {
		return ResetFailed
	}
	return ResetAborted
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

func durationsOf(e ResetEntry) ResetDurations {
	ms := func(a, b *time.Time) *int64 {
		if a == nil || b == nil {
			return nil
		}
		d := b.Sub(*a).Milliseconds()
		return &d
	}
	return ResetDurations{SettleMS: ms(e.RequestedAt, e.SettledAt), CommitMS: ms(e.SettledAt, e.CommittedAt),
		CompleteMS: ms(e.CommittedAt, e.FinishedAt), TotalMS: ms(e.RequestedAt, e.FinishedAt)}
}

// archivedNoteWrites counts the codex-context-note entries on the walk
// from leafID up to the boundary boundaryID (the window being archived).
func archivedNoteWrites(tr *session.Tree, leafID, boundaryID string) int {
	n := 0
	id := leafID
	for steps := 0; id != "" && steps <= tr.Len(); steps++ {
		sq, ok := tr.Lookup(id)
		if !ok {
			break
		}
		if tr.Type(sq) == session.TypeCustom && tr.CustomType(sq) == session.CustomTypeNote {
			n++
		}
		if id == boundaryID {
			break
		}
		id = tr.ParentID(sq)
	}
	return n
}

// cutBeforeManifest is the reset-log entry of a Tree rollover cut short
// before its manifest (r from resumeOf: the branch ends in its summary):
// failed, from the archived window, with the note writes of that window;
// nil when r is not such a rollover (fileRollovers lists those with a
// manifest).
func cutBeforeManifest(b *Branch, r *Resume) *ResetEntry {
	if r == nil || r.Broken != nil || !slices.Contains(r.Missing, session.CustomTypeTreeArchive) {
		return nil
	}
	tr := b.V.Tree
	f := &ResetEntry{Source: "file", Mode: contextd.ModeTree, State: ResetFailed, From: ResetWindow{ID: r.Window.CurrentWindowID, Number: r.Window.WindowNumber},
		BoundaryEntryID: r.BoundaryEntryID, SummaryEntryID: r.SummaryEntryID,
		Reason: "the file holds the rollover's branch summary but not its manifest: the rollover was cut short; /contextd finish completes it"}
	if se := tr.Get(r.SummaryEntryID); se != nil {
		f.WindowNoteWrites = archivedNoteWrites(tr, se.FromID(), r.BoundaryEntryID)
		f.SettledAt = entryTime(b.V, se)
	}
	return f
}
