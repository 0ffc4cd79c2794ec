package coordinator

import (
	"context"
	"errors"

	"contextd"
	"contextd/history"
	"contextd/notes"
	"contextd/session"
	"contextd/store"
)

// CallContext is the `context` object of a Codex mirror request
// (reference codex-history-notes.md §1.6 "Body"), plus contextd's optional
// leaf_id: the extension's live Pi leaf (default: the last entry of the
// file).
type CallContext struct {
	SessionID        string `json:"session_id" minLength:"1" maxLength:"256" doc:"Pi session id (the session header's id)."`
	CurrentAgentName string `json:"current_agent_name,omitempty" maxLength:"1024" doc:"Agent path of the caller; default the registered agent name (/root)."`
	LeafID           string `json:"leaf_id,omitempty" maxLength:"256" doc:"contextd extension: Pi's live leaf entry id. Default: the last entry of the file."`
}

// historyView builds the history view of a branch for the target's mode.
// Local: the windows of the active branch (reference §3.3). Tree: archived
// windows through valid manifests, then the current window (treeView).
func (s *Service) historyView(b *Branch, agent string) (*history.View, error) {
	if b.Target.Mode == contextd.ModeTree && s.TreeView != nil {
		return s.TreeView(b, agent)
	}
	wins := history.LocalWindows(b.V.Tree, b.Seqs, b.V.Ref)
	return &history.View{Agent: agent, Windows: wins, Texts: b.V.Texts()}, nil
}

// agentOf returns the caller's agent: the context's current_agent_name, else
// the registered agent name.
func agentOf(t *Target, cc CallContext) string {
	if cc.CurrentAgentName != "" {
		return cc.CurrentAgentName
	}
	return t.Agent
}

// History runs one history operation (list_windows, list_items, read_item,
// search_contents) in Local or Tree mode. args is the operation's
// *history.XxxArgs. Errors: EConflict in off mode, history.*Error mapped to
// EInvalid/ENotFound.
func (s *Service) History(ctx context.Context, op string, cc CallContext, args any) (any, error) {
	t, err := s.Resolve(ctx, cc.SessionID)
	if err != nil {
		return nil, err
	}
	if err := requireLocal(t); err != nil {
		return nil, err
	}
	var out any
	err = s.withBranch(t, cc.LeafID, func(b *Branch) error {
		view, err := s.historyView(b, agentOf(t, cc))
		if err != nil {
			return err
		}
		switch a := args.(type) {
		case *history.ListWindowsArgs:
			out, err = view.ListWindows(*a)
		case *history.ListItemsArgs:
			out, err = view.ListItems(*a)
		case *history.ReadItemArgs:
			out, err = view.ReadItem(*a)
		case *history.SearchArgs:
			out, err = view.Search(*a)
		default:
			return contextd.Errorf(contextd.ENotFound, "unknown history operation %q", op)
		}
		return err
	})
	return out, mapDomainError(err)
}

// mapDomainError turns history/notes errors into coded errors.
func mapDomainError(err error) error {
	if err == nil {
		return nil
	}
	var he *history.Error
	if errors.As(err, &he) {
		code := contextd.EInvalid
		if he.Code == "not_found" {
			code = contextd.ENotFound
		}
		return &contextd.Error{Code: code, Message: he.Message}
	}
	var ne *notes.Error
	if errors.As(err, &ne) {
		code := contextd.EInvalid
		if ne.Code == notes.CodeTooLarge {
			code = contextd.ETooLarge
		}
		return &contextd.Error{Code: code, Message: ne.Message}
	}
	if errors.Is(err, store.ErrFileChanged) {
		return contextd.Errorf(contextd.EPrecondition, "%s", err.Error())
	}
	return err
}

// noteState replays the note entries of a branch (reference §3.4): the
// latest codex-context-note-snapshot replaces all state, later
// codex-context-note entries apply in order. Entries whose data is malformed
// are skipped (and listed in State.Skipped).
func noteState(b *Branch) (*notes.State, error) {
	tr := b.V.Tree
	start := 0
	for i := len(b.Seqs) - 1; i >= 0; i-- {
		e := &tr.Entries[b.Seqs[i]]
		if e.Type == session.TypeCustom && e.CustomType == session.CustomTypeNoteSnapshot {
			start = i
			break
		}
	}
	var events []notes.Event
	for _, s := range b.Seqs[start:] {
		e := &tr.Entries[s]
		if e.Type != session.TypeCustom || (e.CustomType != session.CustomTypeNote && e.CustomType != session.CustomTypeNoteSnapshot) {
			continue
		}
		_, d, err := b.V.Decode(s)
		if err != nil {
			return nil, err
		}
		ev, err := notes.DecodeEvent(e.ID, e.CustomType, d.Data)
		if err != nil {
			continue
		}
		events = append(events, ev)
	}
	return notes.Replay(events), nil
}

// NoteWrite is the answer of a note write: the Codex-shaped result plus
// the entries the extension must append (DESIGN.md §5.1).
type NoteWrite struct {
	notes.WriteResult
	Append []notes.AppendEntry `json:"append" doc:"Entries to append with pi.appendEntry, in order, before returning the tool result."`
}

// Notes runs one notes operation (list_files_by_prefix, read_file,
// search_contents, append_to_file, write_file) in Local or Tree mode.
func (s *Service) Notes(ctx context.Context, op string, cc CallContext, args any) (any, error) {
	t, err := s.Resolve(ctx, cc.SessionID)
	if err != nil {
		return nil, err
	}
	if err := requireLocal(t); err != nil {
		return nil, err
	}
	agent := agentOf(t, cc)
	var out any
	err = s.withBranch(t, cc.LeafID, func(b *Branch) error {
		st, err := noteState(b)
		if err != nil {
			return err
		}
		switch a := args.(type) {
		case *notes.ListFilesByPrefixArgs:
			out, err = notes.ListFilesByPrefix(st, agent, *a)
		case *notes.ReadFileArgs:
			out, err = notes.ReadFile(st, agent, *a)
		case *notes.SearchArgs:
			out, err = notes.SearchContents(st, agent, *a)
		case *notes.WriteArgs:
			res, entry, werr := notes.PlanWrite(st, agent, *a, s.Now())
			out, err = NoteWrite{WriteResult: res, Append: []notes.AppendEntry{entry}}, werr
		case *notes.AppendArgs:
			res, entry, werr := notes.PlanAppend(st, agent, *a, s.Now())
			out, err = NoteWrite{WriteResult: res, Append: []notes.AppendEntry{entry}}, werr
		default:
			return contextd.Errorf(contextd.ENotFound, "unknown notes operation %q", op)
		}
		return err
	})
	return out, mapDomainError(err)
}

// ThreadHintResult is thread_hint's answer: {text} of at most 4,000 bytes
// (reference §1.6, §3.5).
type ThreadHintResult struct {
	Text string `json:"text" doc:"Thread hint: recent notes and previous window history IDs; at most 4,000 UTF-8 bytes."`
}

// ThreadHint answers notes.thread_hint for the branch: the recent notes and
// the recovery ids of the previous window (the window before the current
// one on the branch, when there is one).
func (s *Service) ThreadHint(ctx context.Context, cc CallContext) (ThreadHintResult, error) {
	t, err := s.Resolve(ctx, cc.SessionID)
	if err != nil {
		return ThreadHintResult{}, err
	}
	if err := requireLocal(t); err != nil {
		return ThreadHintResult{}, err
	}
	var out ThreadHintResult
	err = s.withBranch(t, cc.LeafID, func(b *Branch) error {
		st, err := noteState(b)
		if err != nil {
			return err
		}
		view, err := s.historyView(b, agentOf(t, cc))
		if err != nil {
			return err
		}
		var rec *notes.Recovery
		if n := len(view.Windows); n >= 2 {
			rec = recoveryOf(view.Windows[n-2])
		}
		out.Text = notes.ThreadHint(st, rec)
		return nil
	})
	return out, mapDomainError(err)
}

// recoveryOf is the thread hint's "Previous window history IDs" of w: its
// id, its summary item (Tree) and up to five user item ids, newest first.
func recoveryOf(w history.Window) *notes.Recovery {
	r := &notes.Recovery{WindowID: w.ID, UserItemIDs: history.UserItemIDs(w, 5)}
	for _, it := range w.Items {
		if it.Summary {
			r.SummaryItemID = it.ItemID
			break
		}
	}
	return r
}
