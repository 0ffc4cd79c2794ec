package coordinator

// The notes operations (docs/codex-contract.md "Local notes"): the note
// state of the caller's branch, the reads (list_files_by_prefix,
// read_file, search_contents) and the planned writes (write_file,
// append_to_file; note_plans.go remembers them until Pi appends them).

import (
	"context"

	"contextd/notes"
	"contextd/session"
)

// noteState replays the note entries of a branch (docs/codex-contract.md "Local notes"): the
// latest codex-context-note-snapshot replaces all state, later
// codex-context-note entries apply in order. Entries whose data is malformed
// are skipped; events the state refuses are listed in State.Skipped.
// cachedNoteState is the same through the Service's memo.
func noteState(b *Branch) (*notes.State, error) {
	seqs := b.Seqs[lastNoteSnapshot(b, b.Seqs):]
	return replayNotes(b, &notes.State{}, seqs)
}

// lastNoteSnapshot is the index in seqs of the last note snapshot entry,
// 0 when there is none.
func lastNoteSnapshot(b *Branch, seqs []int) int {
	tr := b.V.Tree
	for i := len(seqs) - 1; i >= 0; i-- {
		e := tr.Entry(seqs[i])
		if e.Type == session.TypeCustom && e.CustomType == session.CustomTypeNoteSnapshot {
			return i
		}
	}
	return 0
}

// replayNotes applies the note entries among seqs, in order, to st and
// returns the state: a snapshot entry starts again from an empty state (as
// a replay from the last snapshot does: noteState), then is applied like
// the others; an entry whose data does not decode is skipped, an event
// the state refuses is listed in Skipped (notes.Replay). The entries are
// decoded with one open of the file (DecodeEach): one open each cost the
// first settle of a window holding 36 of them 2.4 ms (docs/benchmarks.md,
// "Rollover: the first commit").
func replayNotes(b *Branch, st *notes.State, seqs []int) (*notes.State, error) {
	tr := b.V.Tree
	var noteSeqs []int
	for _, s := range seqs {
		e := tr.Entry(s)
		if e.Type == session.TypeCustom && (e.CustomType == session.CustomTypeNote || e.CustomType == session.CustomTypeNoteSnapshot) {
			noteSeqs = append(noteSeqs, s)
		}
	}
	err := b.V.DecodeEach(noteSeqs, func(_ int, e *session.Entry, d *session.Decoded) error {
		if e.CustomType == session.CustomTypeNoteSnapshot {
			st = &notes.State{}
		}
		ev, err := notes.DecodeEvent(e.ID, e.CustomType, d.Data)
		if err != nil {
			return nil
		}
		if err := st.Apply(ev); err != nil {
			st.Skipped = append(st.Skipped, notes.Skip{EntryID: ev.EntryID, Reason: err.Error()})
		}
		return nil
	})
	return st, err
}

// NoteWrite is the answer of a note write: the Codex-shaped result plus
// the entries the extension must append (docs/design.md §5.1).
type NoteWrite struct {
	notes.WriteResult
	Append []notes.AppendEntry `json:"append" doc:"Entries to append with pi.appendEntry, in order, before returning the tool result."`
}

// onNoteState runs f on the note state of the caller's branch (docs/codex-contract.md
// "Local notes", noteState) with the caller's agent. Errors: EConflict in off or
// remote mode; the note operations' own EInvalid and ETooLarge.
func onNoteState[R any](ctx context.Context, s *Service, cc CallContext, f func(st *notes.State, agent string) (R, error)) (R, error) {
	var out R
	t, err := s.Resolve(ctx, cc.SessionID)
	if err != nil {
		return out, err
	}
	if err := requireLocal(t); err != nil {
		return out, err
	}
	agent := agentOf(t, cc)
	err = s.withCachedBranch(t, cc.LeafID, func(b *Branch) error {
		st, err := s.cachedNoteState(b)
		if err != nil {
			return err
		}
		out, err = f(st, agent)
		return err
	})
	return out, err
}

// ListNoteFiles answers notes.list_files_by_prefix (notes.ListFilesByPrefix:
// max_results default 20, max 100).
func (s *Service) ListNoteFiles(ctx context.Context, cc CallContext, a notes.ListFilesByPrefixArgs) (notes.ListResult, error) {
	return onNoteState(ctx, s, cc, func(st *notes.State, agent string) (notes.ListResult, error) {
		return notes.ListFilesByPrefix(st, agent, a)
	})
}

// ReadNoteFile answers notes.read_file (notes.ReadFile: a 1-based inclusive
// line range, negative counting from the end).
func (s *Service) ReadNoteFile(ctx context.Context, cc CallContext, a notes.ReadFileArgs) (notes.ReadResult, error) {
	return onNoteState(ctx, s, cc, func(st *notes.State, agent string) (notes.ReadResult, error) {
		return notes.ReadFile(st, agent, a)
	})
}

// SearchNotes answers notes.search_contents (notes.SearchContents:
// max_files and max_matches_per_file default 20, max 100).
func (s *Service) SearchNotes(ctx context.Context, cc CallContext, a notes.SearchArgs) (notes.SearchResult, error) {
	return onNoteState(ctx, s, cc, func(st *notes.State, agent string) (notes.SearchResult, error) {
		return notes.SearchContents(st, agent, a)
	})
}

// WriteNote plans notes.write_file: the result and the codex-context-note
// entry the extension appends (contextd never writes the file), against
// the branch's notes plus the writes planned before it and not yet written
// (planNoteWrite). Files stay at most 1,000,000 UTF-8 bytes (ETooLarge).
func (s *Service) WriteNote(ctx context.Context, cc CallContext, a notes.WriteArgs) (NoteWrite, error) {
	return s.planNoteWrite(ctx, cc, func(st *notes.State, agent string) (NoteWrite, error) {
		res, entry, err := notes.PlanWrite(st, agent, a, s.now())
		return NoteWrite{WriteResult: res, Append: []notes.AppendEntry{entry}}, err
	})
}

// AppendNote plans notes.append_to_file like WriteNote.
func (s *Service) AppendNote(ctx context.Context, cc CallContext, a notes.AppendArgs) (NoteWrite, error) {
	return s.planNoteWrite(ctx, cc, func(st *notes.State, agent string) (NoteWrite, error) {
		res, entry, err := notes.PlanAppend(st, agent, a, s.now())
		return NoteWrite{WriteResult: res, Append: []notes.AppendEntry{entry}}, err
	})
}
