package coordinator

import (
	"context"

	"contextd"
	"contextd/history"
	"contextd/notes"
	"contextd/session"
	"contextd/store"
)

// CallContext is the `context` object of a Codex mirror request
// (docs/codex-contract.md "Backend transport"), plus contextd's optional
// leaf_id: the extension's live Pi leaf (default: the last entry of the
// file).
type CallContext struct {
	SessionID        string `json:"session_id" minLength:"1" maxLength:"256" pattern:"^[A-Za-z0-9][A-Za-z0-9._:@+-]*$" patternDescription:"letters, digits and . _ : @ + - (a Pi session id is a UUID)" doc:"Pi session id (the session header's id): starts with a letter or digit, then letters, digits and . _ : @ + - (Pi writes UUIDs)."`
	CurrentAgentName string `json:"current_agent_name,omitempty" maxLength:"1024" doc:"Agent path of the caller; default the registered agent name (/root)."`
	LeafID           string `json:"leaf_id,omitempty" maxLength:"256" doc:"contextd extension: Pi's live leaf entry id. Default: the last entry of the file."`
}

// windowSource is how a mode reads the history of a branch: Local builds
// the windows of the active branch (docs/codex-contract.md "Local history", cached per leaf), Tree
// reads archived windows through valid manifests, then the current window
// (treeArchives). windowsOf chooses one by the target's mode.
type windowSource interface {
	// view is the history view of b's branch for agent. Errors are I/O
	// errors reading manifests from the session file.
	view(b *Branch, agent string) (*history.View, error)
	// searchOrder is history.SearchOrder(view) from a cache, nil when the
	// source keeps none (search then orders the view itself).
	searchOrder(b *Branch, view *history.View) history.ItemList
}

// localSource is the Local windowSource: the Service's window cache.
type localSource struct{ s *Service }

func (l localSource) view(b *Branch, agent string) (*history.View, error) {
	return &history.View{Agent: agent, Windows: l.s.localWindows(b), Texts: b.V.Texts()}, nil
}

func (l localSource) searchOrder(b *Branch, view *history.View) history.ItemList {
	return l.s.localSearchOrder(b, view)
}

// windowsOf is the windowSource of b's target: Tree mode reads archives,
// every other mode the Local windows.
func (s *Service) windowsOf(b *Branch) windowSource {
	if b.Target.Mode == contextd.ModeTree {
		return s.tree
	}
	return localSource{s}
}

// historyView builds the history view of a branch for the target's mode
// (windowsOf).
func (s *Service) historyView(b *Branch, agent string) (*history.View, error) {
	return s.windowsOf(b).view(b, agent)
}

// localWindows returns history.LocalWindows of b's branch. The windows are
// shared, read-only, with other requests: callers must not modify them.
//
// They come from the Service's cache when a request already built them for the
// same state of the session and the same leaf. Otherwise they are built,
// by extending the cached windows of an earlier branch of the same tree
// that is a prefix of this one (the usual case after Pi appended entries),
// else from scratch, and cached.
//
// Context edits (Branch.Refs) change how earlier items read: windows are
// extended only when the new part of the branch holds no context_edit,
// else built again from scratch.
func (s *Service) localWindows(b *Branch) []history.Window {
	k, ok := keyOf(b.Target, b.V, b.Leaf)
	if !ok || s.cache == nil {
		return history.LocalWindows(b.V.Tree, b.Seqs, b.Refs())
	}
	return s.cache.windows(k, b.Seqs, b.tail, b.Cycle, func(base []history.Window, from int) []history.Window {
		ref := b.Refs()
		if len(base) == 0 {
			// The prefix had no boundary: a boundary in the new part may
			// adopt its entries (history.LocalWindows).
			return history.LocalWindows(b.V.Tree, b.Seqs, ref)
		}
		for _, sq := range b.Seqs[from:] {
			if b.V.Tree.Type(sq) == session.TypeContextEdit {
				return history.LocalWindows(b.V.Tree, b.Seqs, ref)
			}
		}
		return history.ExtendLocalWindows(base, b.V.Tree, b.Seqs[from:], ref)
	})
}

// localSearchOrder returns history.SearchOrder(view) for the Local view of
// b, cached with its windows (built on the first unfiltered search of a
// state of the session). Shared, read-only.
func (s *Service) localSearchOrder(b *Branch, view *history.View) history.ItemList {
	k, ok := keyOf(b.Target, b.V, b.Leaf)
	if !ok || s.cache == nil {
		return nil
	}
	return s.cache.searchOrder(k, func() history.ItemList { return history.SearchOrder(view) })
}

// withCachedBranch is withBranch with the branch taken from the Service's cache
// when a request already computed it for the same state of the session
// and the same leaf: the requests that run before every model call
// (/context) and the history reads then cost no walk of the whole branch.
// b.Seqs is then shared, read-only, with other requests.
func (s *Service) withCachedBranch(t *Target, leafID string, fn func(b *Branch) error) error {
	hit := false
	err := t.read(func(v *store.View) error {
		if err := usable(v); err != nil {
			return err
		}
		leaf := leafID
		if leaf == "" {
			leaf = v.Tree.Leaf()
		}
		k, ok := keyOf(t, v, leaf)
		if !ok || s.cache == nil {
			return nil
		}
		seqs, tail, cycle, ok := s.cache.branch(k)
		if !ok {
			if seqs, tail, ok = s.cache.extendBranch(k, v.Tree); !ok {
				return nil
			}
			s.cache.addBranch(k, seqs, tail, false, seqs[len(seqs)-1])
		}
		hit = true
		return fn(&Branch{V: v, Leaf: leaf, Seqs: seqs, Cycle: cycle, Target: t, tail: tail})
	})
	if hit || err != nil {
		return err
	}
	return s.withBranch(t, leafID, func(b *Branch) error {
		if k, ok := keyOf(t, b.V, b.Leaf); ok && s.cache != nil {
			s.cache.addBranch(k, b.Seqs, b.tail, b.Cycle, -1)
		}
		return fn(b)
	})
}

// agentOf returns the caller's agent: the context's current_agent_name, else
// the registered agent name.
func agentOf(t *Target, cc CallContext) string {
	if cc.CurrentAgentName != "" {
		return cc.CurrentAgentName
	}
	return t.Agent
}

// onHistoryView runs f on the history view of the caller's branch (Local
// or Tree mode: windowsOf chooses); scan says that f searches item text,
// so the view is taken once a scan slot is free (Target.scan). Errors:
// EConflict in off or remote mode; the history operations' own EInvalid
// and EAmbiguous; ctx's error while waiting for a scan slot.
func onHistoryView[R any](ctx context.Context, s *Service, cc CallContext, scan bool, f func(b *Branch, view *history.View) (R, error)) (R, error) {
	var out R
	t, err := s.Resolve(ctx, cc.SessionID)
	if err != nil {
		return out, err
	}
	if err := requireLocal(t); err != nil {
		return out, err
	}
	if scan {
		t.scan = ctx
	}
	defer s.holdLineage(ctx, t)()
	err = s.withCachedBranch(t, cc.LeafID, func(b *Branch) error {
		view, err := s.historyView(b, agentOf(t, cc))
		if err != nil {
			return err
		}
		out, err = f(b, view)
		return err
	})
	return out, err
}

// ListWindows answers history.list_windows for the caller's branch
// (history.View.ListWindows: limit default 20, max 100).
func (s *Service) ListWindows(ctx context.Context, cc CallContext, a history.ListWindowsArgs) (history.WindowsResult, error) {
	return onHistoryView(ctx, s, cc, false, func(_ *Branch, v *history.View) (history.WindowsResult, error) { return v.ListWindows(a) })
}

// ListItems answers history.list_items for the caller's branch
// (history.View.ListItems: limit default 10, max 25; at most 8,000
// characters of item JSON).
func (s *Service) ListItems(ctx context.Context, cc CallContext, a history.ListItemsArgs) (history.ItemsResult, error) {
	return onHistoryView(ctx, s, cc, false, func(_ *Branch, v *history.View) (history.ItemsResult, error) { return v.ListItems(a) })
}

// ReadItem answers history.read_item for the caller's branch
// (history.View.ReadItem: limit_chars default and max 8,000 code points).
func (s *Service) ReadItem(ctx context.Context, cc CallContext, a history.ReadItemArgs) (history.ReadResult, error) {
	return onHistoryView(ctx, s, cc, false, func(_ *Branch, v *history.View) (history.ReadResult, error) { return v.ReadItem(a) })
}

// SearchHistory answers history.search_contents for the caller's branch
// (history.View.Search). An unfiltered search visits windows in the
// mode's order (Tree: summaries first).
func (s *Service) SearchHistory(ctx context.Context, cc CallContext, a history.SearchArgs) (history.ItemsResult, error) {
	return onHistoryView(ctx, s, cc, a.Query != "", func(b *Branch, v *history.View) (history.ItemsResult, error) {
		search := func() (history.ItemsResult, error) {
			if a.Unfiltered() {
				v.Ordered = s.windowsOf(b).searchOrder(b, v)
			}
			return v.Search(a)
		}
		k, ok := keyOf(b.Target, b.V, b.Leaf)
		if !ok || s.cache == nil || a.Query == "" || len(b.Target.parents) > 0 {
			// A copy's answer also depends on its parent sessions.
			return search()
		}
		return s.cache.search(k, searchKeyOf(b.Target.Mode, v.Agent, a), search)
	})
}

// searchKey is what a search_contents answer depends on besides the
// state of the session and the leaf (windowKey): the mode (which windows
// are searched), the caller's agent and the arguments, nil and "" alike.
type searchKey struct {
	mode                                         contextd.Mode
	agent, query                                 string
	limit                                        int
	recent                                       bool
	namespace, role, agentName, toolName, window string
}

func searchKeyOf(mode contextd.Mode, agent string, a history.SearchArgs) searchKey {
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	limit := 0
	if a.Limit != nil {
		limit = *a.Limit
	}
	return searchKey{mode: mode, agent: agent, query: a.Query, limit: limit, recent: a.RecentFirst != nil && *a.RecentFirst,
		namespace: str(a.ToolNamespace), role: str(a.Role), agentName: str(a.AgentName), toolName: str(a.ToolName), window: str(a.WindowID)}
}

// noteState replays the note entries of a branch (docs/codex-contract.md "Local notes"): the
// latest codex-context-note-snapshot replaces all state, later
// codex-context-note entries apply in order. Entries whose data is malformed
// are skipped (and listed in State.Skipped).
func noteState(b *Branch) (*notes.State, error) {
	tr := b.V.Tree
	start := 0
	for i := len(b.Seqs) - 1; i >= 0; i-- {
		e := tr.Entry(b.Seqs[i])
		if e.Type == session.TypeCustom && e.CustomType == session.CustomTypeNoteSnapshot {
			start = i
			break
		}
	}
	var events []notes.Event
	for _, s := range b.Seqs[start:] {
		e := tr.Entry(s)
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
		st, err := noteState(b)
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

// ThreadHintResult is thread_hint's answer: {text} of at most 4,000 bytes
// (docs/codex-contract.md "Backend transport", "Local notes").
type ThreadHintResult struct {
	Text string `json:"text" doc:"Thread hint: recent notes and previous window history IDs; at most 4,000 UTF-8 bytes."`
}

// ThreadHint answers notes.thread_hint for the branch: the recent notes and
// the recovery ids of the previous window (the window before the current
// one on the branch, when there is one). On a branch without a current
// window whose chain the file holds (resumeOf: a rollover cut short, a
// broken parent chain) it is the hint of the boundary that continues the
// chain: the newest archived window.
func (s *Service) ThreadHint(ctx context.Context, cc CallContext) (ThreadHintResult, error) {
	t, err := s.Resolve(ctx, cc.SessionID)
	if err != nil {
		return ThreadHintResult{}, err
	}
	if err := requireLocal(t); err != nil {
		return ThreadHintResult{}, err
	}
	var out ThreadHintResult
	err = s.withCachedBranch(t, cc.LeafID, func(b *Branch) error {
		if r := s.resumeOf(b); r != nil && r.Recovery != nil {
			// No current window: the hint is the one the next boundary
			// carries, naming the newest archive (resumeOf).
			out.Text, err = resumeHint(b, r)
			return err
		}
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
	return out, err
}

// recoveryOf is the thread hint's "Previous window history IDs" of w: its
// id, its summary item (Tree) and up to five user item ids, newest first.
func recoveryOf(w history.Window) *notes.Recovery {
	r := &notes.Recovery{WindowID: w.ID, UserItemIDs: history.UserItemIDs(w, 5)}
	for i, n := 0, w.Len(); i < n; i++ {
		if it := w.At(i); it.Summary {
			r.SummaryItemID = it.ItemID
			break
		}
	}
	return r
}
