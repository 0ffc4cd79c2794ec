package coordinator

// The history operations (docs/codex-contract.md "Local history"):
// list_windows, list_items, read_item and search_contents of the caller's
// branch, read through the window source of the session's mode.

import (
	"context"

	"contextd"
	"contextd/history"
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

// localSource is the Local windowSource: windows from the Service's memo.
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

// agentOf returns the caller's agent: the context's current_agent_name, else
// the registered agent name.
func agentOf(t *Target, cc CallContext) string {
	if cc.CurrentAgentName != "" {
		return cc.CurrentAgentName
	}
	return t.Agent
}

// onHistoryView runs f on the history view of the caller's branch (Local
// or Tree mode: windowsOf chooses); a query ("" for none) says that f
// searches item text for it, so the view is taken once a scan slot (and,
// for a query that reads every frame, a scan core) is free (Target.scan).
// Errors:
// EConflict in off or remote mode; the history operations' own EInvalid
// and EAmbiguous; ctx's error while waiting for a scan slot.
func onHistoryView[R any](ctx context.Context, s *Service, cc CallContext, query string, f func(b *Branch, view *history.View) (R, error)) (R, error) {
	var out R
	t, err := s.Resolve(ctx, cc.SessionID)
	if err != nil {
		return out, err
	}
	if err := requireLocal(t); err != nil {
		return out, err
	}
	if query != "" {
		t.scan, t.scanEveryFrame = ctx, store.UnfilteredQuery(query)
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
	return onHistoryView(ctx, s, cc, "", func(_ *Branch, v *history.View) (history.WindowsResult, error) { return v.ListWindows(a) })
}

// ListItems answers history.list_items for the caller's branch
// (history.View.ListItems: limit default 10, max 25; at most 8,000
// characters of item JSON).
func (s *Service) ListItems(ctx context.Context, cc CallContext, a history.ListItemsArgs) (history.ItemsResult, error) {
	return onHistoryView(ctx, s, cc, "", func(_ *Branch, v *history.View) (history.ItemsResult, error) { return v.ListItems(a) })
}

// ReadItem answers history.read_item for the caller's branch
// (history.View.ReadItem: limit_chars default and max 8,000 code points).
func (s *Service) ReadItem(ctx context.Context, cc CallContext, a history.ReadItemArgs) (history.ReadResult, error) {
	return onHistoryView(ctx, s, cc, "", func(_ *Branch, v *history.View) (history.ReadResult, error) { return v.ReadItem(a) })
}

// SearchHistory answers history.search_contents for the caller's branch
// (history.View.Search). An unfiltered search visits windows in the
// mode's order (Tree: summaries first).
func (s *Service) SearchHistory(ctx context.Context, cc CallContext, a history.SearchArgs) (history.ItemsResult, error) {
	return onHistoryView(ctx, s, cc, a.Query, func(b *Branch, v *history.View) (history.ItemsResult, error) {
		search := func() (history.ItemsResult, error) {
			if a.Unfiltered() {
				v.Ordered = s.windowsOf(b).searchOrder(b, v)
			}
			return v.Search(a)
		}
		if a.Query == "" || len(b.Target.parents) > 0 {
			// A copy's answer also depends on its parent sessions.
			return search()
		}
		return s.cachedSearch(b, searchKeyOf(b.Target.Mode, v.Agent, a), search)
	})
}

// searchKey is what a search_contents answer depends on besides the
// state of the session and the leaf (memoKey): the mode (which windows
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
