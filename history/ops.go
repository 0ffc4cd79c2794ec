package history

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"contextd"
	"contextd/session"
)

// Source is the `source` field of every Local/Tree history result
// (docs/codex-contract.md "Local history" "Result shapes").
const Source = "pi-session"

// DefaultAgent is the agent name of the root agent (docs/codex-contract.md "Window boundaries", "Local history");
// View.Agent defaults to it.
const DefaultAgent = "/root"

// Bounds of the Local/Tree operations (docs/codex-contract.md "Local history" "Bounds"). Every
// limit-like argument that is absent, null or < 1 takes its default, and one
// above its maximum takes the maximum (the seed clamps to [0, max] and
// treats non-integers as the default; contextd reads 0 and negatives as
// "use the default", since a zero-size answer is never useful).
const (
	DefaultWindowsLimit    = 20   // list_windows.limit default (windows)
	MaxWindowsLimit        = 100  // list_windows.limit maximum (windows)
	DefaultItemsLimit      = 10   // list_items / search_contents limit default (items)
	MaxItemsLimit          = 25   // list_items / search_contents limit maximum (items)
	DefaultMaxCharsPerItem = 1000 // max_chars_per_item default (code points of truncated_content)
	MaxMaxCharsPerItem     = 1000 // max_chars_per_item maximum (code points)
	MaxOutputChars         = 8000 // total list/search output: sum of the items' JSON lengths (code points); the first item is always included
	DefaultReadLimitChars  = 8000 // read_item.limit_chars default (code points)
	MaxReadLimitChars      = 8000 // read_item.limit_chars maximum (code points)
	maxAmbiguousCandidates = 5    // candidates named in an ambiguous item_id error
)

// invalid is the error of a missing or empty argument (contextd.EInvalid,
// HTTP 422). An item that does not exist is not an error: read_item
// answers `item: null` (docs/codex-contract.md "Local history") and an unknown window gives an
// empty list (docs/codex-contract.md "Tool surface").
func invalid(format string, a ...any) *contextd.Error {
	return contextd.Errorf(contextd.EInvalid, format, a...)
}

// ItemRef describes one history item without its text: where it lives
// (WindowID, which must equal the ID of the Window that holds it), its
// opaque ItemID (the Pi entry id, docs/codex-contract.md "Local history" "Item ID"), the rendered
// Role / ToolName / ToolNamespace / Summary (see Render), Chars = the
// length of its text in code points, and Key, an opaque handle the
// TextSource uses to find the text. BashExecution marks a user's `!cmd`
// (a Pi bashExecution message): it renders with role user but is not a
// user message, so the thread hint's user_item_ids leave it out (as the
// seed does: testdata/pi-tree/local-basic.jsonl boundary 1ad99795). It is
// set by LocalWindows.
type ItemRef struct {
	WindowID      string
	ItemID        string
	Role          string
	ToolName      string
	ToolNamespace string
	Summary       bool
	BashExecution bool
	Chars         int
	Key           int64
}

// Window is one history window: its full ID (the boundary's
// currentWindowId, docs/codex-contract.md "Window boundaries") and its items in chronological order.
// For a Tree archive the caller puts the summary item first, then the
// archived raw entries (docs/codex-contract.md "Tree archive", docs/design.md §4).
// Items holds the items of a window built item by item (Tree archives,
// tests); a window of LocalWindows leaves it nil and holds its items
// packed. Read any window's items with Len and At (or All).
// The items are read-only: LocalWindows puts the items of consecutive
// windows back to back in one array, each slice's capacity running past
// its own items, so an append to one window's items would overwrite the
// next's.
type Window struct {
	ID    string
	Items []ItemRef
	// packed and tab, when tab is not nil, are the items of a window of
	// LocalWindows (packedItem).
	packed []packedItem
	tab    *packTable
}

// ItemList is a read-only list of item references: what Search hands the
// TextSource (SearchOrder, or the filtered candidates). At builds the
// ref (no allocation); Key(i) is At(i).Key without building it.
type ItemList interface {
	Len() int
	At(i int) ItemRef
	Key(i int) int64
}

// RefList is an ItemList of refs held whole.
type RefList []ItemRef

// Len implements ItemList.
func (l RefList) Len() int { return len(l) }

// At implements ItemList.
func (l RefList) At(i int) ItemRef { return l[i] }

// Key implements ItemList.
func (l RefList) Key(i int) int64 { return l[i].Key }

// packedList is an ItemList of the packed items of Local windows, all
// read through one table (the newest of their chain: packTable): the
// items of head, then those of tail. head is a slice of the one array
// that the closed windows' items share (packedOrder), so the list of a
// branch one append longer shares it and copies only the last window.
type packedList struct {
	head, tail []packedItem
	tab        *packTable
}

func (l *packedList) Len() int { return len(l.head) + len(l.tail) }

func (l *packedList) item(i int) packedItem {
	if i < len(l.head) {
		return l.head[i]
	}
	return l.tail[i-len(l.head)]
}

func (l *packedList) At(i int) ItemRef { return l.tab.ref(l.item(i)) }
func (l *packedList) Key(i int) int64  { return l.tab.key(l.item(i)) }
func (t *packTable) key(p packedItem) int64 {
	if p.kind&extraItem != 0 {
		return t.extras[p.kind&^extraItem].Key
	}
	return int64(p.key)
}

// SameList reports whether a and b are the same list: the same RefList
// (same first element and length) or the same packed list (identity).
// Callers that cache something per list (store's span cache) use it.
func SameList(a, b ItemList) bool {
	switch x := a.(type) {
	case RefList:
		y, ok := b.(RefList)
		return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
	case *packedList:
		y, ok := b.(*packedList)
		return ok && x == y
	}
	return false
}

// Extends reports whether list b begins with list a: b.Len() >= a.Len()
// and b.Key(i) == a.Key(i) for every i < a.Len(). The store's span cache
// uses it to extend the spans of a branch's items by those of the entries
// appended since, instead of building them again.
//
// Cost: a comparison of every key of a, but for two packed lists whose
// heads are one slice (the same first item and length): then only the
// tails are compared. That shortcut holds because a head is never written
// once its windows are closed (ExtendLocalWindows copies a window before
// it grows, and clips every window's capacity), and every table of a
// chain serves the items of an earlier table the same (packTable), so the
// items of one head have the same keys in every list that holds it.
func Extends(a, b ItemList) bool {
	n := a.Len()
	if b.Len() < n {
		return false
	}
	from := 0
	x, okx := a.(*packedList)
	y, oky := b.(*packedList)
	if okx && oky && len(x.head) > 0 && len(x.head) == len(y.head) && &x.head[0] == &y.head[0] {
		from = len(x.head)
		for i := from; i < n; i++ {
			if x.tab.key(x.item(i)) != y.tab.key(y.item(i)) {
				return false
			}
		}
		return true
	}
	for i := from; i < n; i++ {
		if a.Key(i) != b.Key(i) {
			return false
		}
	}
	return true
}

// View is what the operations run over: the current agent name (""
// means DefaultAgent), the windows in chronological order (Local: the
// windows of the active branch, docs/codex-contract.md "Local history"; Tree: archived windows,
// then the current one, DESIGN §4) and the source of item texts.
type View struct {
	Agent   string
	Windows []Window
	Texts   TextSource
	// Ordered, when not nil, must be SearchOrder(v) (shared, read-only):
	// Search over every item, in that order, then hands it to the
	// TextSource as is instead of collecting the items again. Callers that
	// keep a view for several requests set it (see SearchOrder).
	Ordered ItemList
}

// ListWindowsArgs are the list_windows arguments (docs/codex-contract.md "Tool surface" table,
// Codex field names). nil means absent.
type ListWindowsArgs struct {
	Limit       *int    `json:"limit,omitempty" nullable:"true" minimum:"1" doc:"Maximum number of windows to return: at least 1 (the Codex schema's minimum; 0 or less is refused with 422), default 20 when absent or null, more than 100 means 100."`
	AgentName   *string `json:"agent_name,omitempty" nullable:"true" doc:"Agent whose windows to list. Absent, null, empty or the current agent name (default /root) selects the current agent; any other agent has no local history, so the list is empty."`
	RecentFirst *bool   `json:"recent_first,omitempty" nullable:"true" doc:"When true, newest windows first; otherwise oldest first."`
}

// WindowInfo is one list_windows entry: the full window ID and the number
// of items in the window.
type WindowInfo struct {
	WindowID  string `json:"window_id" doc:"Full window ID; pass it unchanged as window_id. IDs over 256 characters (a damaged or hostile file) are cut to … and their last 255 characters, which still name the item or window."`
	ItemCount int    `json:"item_count" doc:"Number of history items in the window."`
}

// WindowsResult is the list_windows result (docs/codex-contract.md "Local history"): source
// "pi-session" and the windows (never null; [] when none).
type WindowsResult struct {
	Source  string       `json:"source" doc:"Always pi-session."`
	Windows []WindowInfo `json:"windows" doc:"Windows in the requested order, at most limit."`
}

// ListItemsArgs are the list_items arguments (docs/codex-contract.md "Tool surface" table, Codex
// field names). nil means absent; for the string filters "" also means no
// filter.
type ListItemsArgs struct {
	Limit           *int    `json:"limit,omitempty" nullable:"true" minimum:"1" doc:"Maximum number of items: at least 1 (the Codex schema's minimum; 0 or less is refused with 422), default 10 when absent or null, more than 25 means 25. The answer also stops before the items' JSON would exceed 8,000 characters (the first item is always included)."`
	RecentFirst     *bool   `json:"recent_first,omitempty" nullable:"true" doc:"When true, newest items first (the whole order is reversed)."`
	ToolNamespace   *string `json:"tool_namespace,omitempty" nullable:"true" doc:"Only items whose tool namespace equals this (exact). When set, non-tool items are excluded. Empty or null means no filter."`
	Role            *string `json:"role,omitempty" nullable:"true" doc:"Only items with this role (user, assistant, tool, system or developer; exact). Empty or null means no filter."`
	AgentName       *string `json:"agent_name,omitempty" nullable:"true" doc:"Agent whose history to list. Absent, null, empty or the current agent name (default /root) selects the current agent; any other agent gives an empty list."`
	ToolName        *string `json:"tool_name,omitempty" nullable:"true" doc:"Only items whose tool name equals this (exact; flat history/notes router calls are listed under their action). When set, non-tool items are excluded. Empty or null means no filter."`
	WindowID        *string `json:"window_id,omitempty" nullable:"true" doc:"Full window ID; only items of that window. Null or empty means all windows; an unknown window gives no items."`
	MaxCharsPerItem *int    `json:"max_chars_per_item,omitempty" nullable:"true" minimum:"1" doc:"Cap on each item's truncated_content, in characters (Unicode code points): at least 1 (the Codex schema's minimum; 0 or less is refused with 422), default 1,000 when absent or null, more than 1,000 means 1,000."`
}

// ItemPreview is one list_items / search_contents entry (docs/codex-contract.md "Local history"):
// the item's window and ID, role, tool fields (omitted when empty),
// summary (omitted unless true: Tree archive summaries, docs/codex-contract.md "Tree archive"), the first
// max_chars_per_item code points of its text and its full length in code
// points.
type ItemPreview struct {
	WindowID         string `json:"window_id" doc:"Full ID of the window that contains the item. IDs over 256 characters (a damaged or hostile file) are cut to … and their last 255 characters, which still name the item or window."`
	ItemID           string `json:"item_id" doc:"Opaque item ID; pass it unchanged to read_item. IDs over 256 characters (a damaged or hostile file) are cut to … and their last 255 characters, which still name the item or window."`
	Role             string `json:"role" doc:"user, assistant, tool or developer."`
	ToolName         string `json:"tool_name,omitempty" doc:"Tool name, for tool calls and results; the action for flat history/notes router calls. Over 256 characters it is cut to its first 255 and \"…\"."`
	ToolNamespace    string `json:"tool_namespace,omitempty" doc:"Tool namespace, when the call had one; history or notes for flat router calls. Over 256 characters it is cut to its first 255 and \"…\"."`
	Summary          bool   `json:"summary,omitempty" doc:"True for the summary of an archived Tree window."`
	TruncatedContent string `json:"truncated_content" doc:"The first max_chars_per_item characters (Unicode code points) of the item's content."`
	ContentChars     int    `json:"content_chars" doc:"Length of the item's full content in characters (Unicode code points)."`
}

// ItemsResult is the list_items and search_contents result (docs/codex-contract.md
// "Local history"): source "pi-session" and the items (never null; [] when none).
type ItemsResult struct {
	Source string        `json:"source" doc:"Always pi-session."`
	Items  []ItemPreview `json:"items" doc:"Matching items in the requested order."`
}

// ReadItemArgs are the read_item arguments (docs/codex-contract.md "Tool surface" table, Codex
// field names). ItemID and WindowID are required; nil means absent.
type ReadItemArgs struct {
	AgentName   *string `json:"agent_name,omitempty" nullable:"true" doc:"Agent whose history to read. Absent, null, empty or the current agent name (default /root) selects the current agent; any other agent gives item null."`
	ItemID      string  `json:"item_id" doc:"Item ID as returned by list_items or search_contents, or a unique suffix of it."`
	OffsetChars *int    `json:"offset_chars,omitempty" nullable:"true" minimum:"0" doc:"Zero-based start offset in characters (Unicode code points): at least 0 (the Codex schema's minimum; a negative offset is refused with 422), 0 when absent or null; past total_chars reads nothing."`
	LimitChars  *int    `json:"limit_chars,omitempty" nullable:"true" minimum:"1" doc:"Maximum characters (Unicode code points) to return: at least 1 (the Codex schema's minimum; 0 or less is refused with 422), default 8,000 when absent or null, more than 8,000 means 8,000."`
	WindowID    string  `json:"window_id" doc:"Full ID of the window that contains the item."`
}

// ItemBody is the read_item item (docs/codex-contract.md "Local history"): the item's window and
// ID, role, tool fields and summary as in ItemPreview, the requested range
// of its content, its total length, and next_offset_chars = offset_chars +
// the code points returned, present only while content remains after the
// range.
type ItemBody struct {
	WindowID        string `json:"window_id" doc:"Full ID of the window that contains the item. IDs over 256 characters (a damaged or hostile file) are cut to … and their last 255 characters, which still name the item or window."`
	ItemID          string `json:"item_id" doc:"The item's full ID. IDs over 256 characters (a damaged or hostile file) are cut to … and their last 255 characters, which still name the item or window."`
	Role            string `json:"role" doc:"user, assistant, tool or developer."`
	ToolName        string `json:"tool_name,omitempty" doc:"Tool name, for tool calls and results; the action for flat history/notes router calls. Over 256 characters it is cut to its first 255 and \"…\"."`
	ToolNamespace   string `json:"tool_namespace,omitempty" doc:"Tool namespace, when the call had one; history or notes for flat router calls. Over 256 characters it is cut to its first 255 and \"…\"."`
	Summary         bool   `json:"summary,omitempty" doc:"True for the summary of an archived Tree window."`
	Content         string `json:"content" doc:"The requested range of the content: at most limit_chars characters (Unicode code points) from offset_chars."`
	TotalChars      int    `json:"total_chars" doc:"Length of the full content in characters (Unicode code points)."`
	NextOffsetChars *int   `json:"next_offset_chars,omitempty" doc:"Offset to pass as offset_chars for the next range; present only when more content remains."`
}

// ReadResult is the read_item result (docs/codex-contract.md "Local history"): source
// "pi-session" and the item, or item null when no item of the window
// matches (or agent_name names another agent).
type ReadResult struct {
	Source string    `json:"source" doc:"Always pi-session."`
	Item   *ItemBody `json:"item" doc:"The item, or null when the window has no matching item."`
}

// SearchArgs are the search_contents arguments (docs/codex-contract.md "Tool surface" table,
// Codex field names). Query is required; nil means absent; for the string
// filters "" also means no filter.
type SearchArgs struct {
	Query         string  `json:"query" doc:"Case-sensitive literal substring to find in item contents. Must not be empty."`
	Limit         *int    `json:"limit,omitempty" nullable:"true" minimum:"1" doc:"Maximum number of items: at least 1 (the Codex schema's minimum; 0 or less is refused with 422), default 10 when absent or null, more than 25 means 25. The answer also stops before the items' JSON would exceed 8,000 characters (the first item is always included)."`
	RecentFirst   *bool   `json:"recent_first,omitempty" nullable:"true" doc:"When true, newest items first (Tree archive summaries still come before raw items)."`
	ToolNamespace *string `json:"tool_namespace,omitempty" nullable:"true" doc:"Only items whose tool namespace equals this (exact). When set, non-tool items are excluded. Empty or null means no filter."`
	Role          *string `json:"role,omitempty" nullable:"true" doc:"Only items with this role (user, assistant, tool, system or developer; exact). Empty or null means no filter."`
	AgentName     *string `json:"agent_name,omitempty" nullable:"true" doc:"Agent whose history to search. Absent, null, empty or the current agent name (default /root) selects the current agent; any other agent gives an empty list."`
	ToolName      *string `json:"tool_name,omitempty" nullable:"true" doc:"Only items whose tool name equals this (exact; flat history/notes router calls are listed under their action). When set, non-tool items are excluded. Empty or null means no filter."`
	WindowID      *string `json:"window_id,omitempty" nullable:"true" doc:"Full window ID; only items of that window. Null or empty means all windows; an unknown window gives no items."`
}

// ClampLimit returns the effective value of a limit-like argument: def
// when v is nil or < 1, max when *v > max, *v otherwise (docs/codex-contract.md "Local history"
// "Bounds"; see the bound constants for the reading of 0 and negatives).
func ClampLimit(v *int, def, max int) int {
	if v == nil || *v < 1 {
		return def
	}
	if *v > max {
		return max
	}
	return *v
}

func strArg(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func boolArg(p *bool) bool { return p != nil && *p }

// agent returns the view's current agent name.
func (v *View) agent() string {
	if v.Agent == "" {
		return DefaultAgent
	}
	return v.Agent
}

// agentSelected reports whether agent_name selects the current agent
// (docs/codex-contract.md "Local history" "Agent name": absent, null, "" or the current agent;
// anything else selects an agent without local history).
func (v *View) agentSelected(name *string) bool {
	return name == nil || *name == "" || *name == v.agent()
}

func (v *View) texts() (TextSource, error) {
	if v.Texts == nil {
		return nil, errors.New("history: view has no TextSource")
	}
	return v.Texts, nil
}

// ListWindows answers list_windows (docs/codex-contract.md "Tool surface", "Local history"): the windows of
// the view as {window_id, item_count}, oldest first (newest first with
// recent_first), at most limit (default 20, max 100). agent_name naming
// another agent gives an empty list. It never fails.
func (v *View) ListWindows(a ListWindowsArgs) (WindowsResult, error) {
	res := WindowsResult{Source: Source, Windows: []WindowInfo{}}
	if !v.agentSelected(a.AgentName) {
		return res, nil
	}
	limit := ClampLimit(a.Limit, DefaultWindowsLimit, MaxWindowsLimit)
	n := len(v.Windows)
	for i := 0; i < n && len(res.Windows) < limit; i++ {
		w := &v.Windows[i]
		if boolArg(a.RecentFirst) {
			w = &v.Windows[n-1-i]
		}
		res.Windows = append(res.Windows, WindowInfo{WindowID: BoundID(w.ID), ItemCount: w.Len()})
	}
	return res, nil
}

// filter is the item filter shared by list_items and search_contents
// (docs/codex-contract.md "Local history" "Filters").
type filter struct {
	windowID, role, toolName, toolNamespace string
}

func (f filter) match(r *ItemRef) bool {
	if f.windowID != "" && !matchesID(r.WindowID, f.windowID) {
		return false
	}
	if f.role != "" && r.Role != f.role {
		return false
	}
	if (f.toolName != "" || f.toolNamespace != "") && r.ToolName == "" {
		return false // "when set, non-tool messages are excluded" (docs/codex-contract.md "Tool surface")
	}
	if f.toolName != "" && r.ToolName != f.toolName {
		return false
	}
	if f.toolNamespace != "" && r.ToolNamespace != f.toolNamespace {
		return false
	}
	return true
}

// ListItems answers list_items (docs/codex-contract.md "Tool surface", "Local history"). Items are taken in
// view order (windows in order, items in window order; for a Tree archive
// that puts the summary first), or in exactly the reverse order with
// recent_first, keeping those that pass the filters: window_id, role,
// tool_name and tool_namespace match exactly, "" or null means no filter,
// and tool_name or tool_namespace set excludes items without a tool name.
// The answer holds at most limit items (default 10, max 25), each with a
// truncated_content of at most max_chars_per_item code points (default and
// max 1,000), and stops before the sum of the items' JSON lengths would
// exceed 8,000 code points (the first item is always included; see
// MaxOutputChars). agent_name naming another agent, or an unknown
// window_id, gives an empty list. Errors come only from the TextSource.
func (v *View) ListItems(a ListItemsArgs) (ItemsResult, error) {
	res := ItemsResult{Source: Source, Items: []ItemPreview{}}
	if !v.agentSelected(a.AgentName) {
		return res, nil
	}
	limit := ClampLimit(a.Limit, DefaultItemsLimit, MaxItemsLimit)
	maxChars := ClampLimit(a.MaxCharsPerItem, DefaultMaxCharsPerItem, MaxMaxCharsPerItem)
	f := filter{windowID: strArg(a.WindowID), role: strArg(a.Role), toolName: strArg(a.ToolName), toolNamespace: strArg(a.ToolNamespace)}
	recent := boolArg(a.RecentFirst)

	refs := make([]ItemRef, 0, limit)
	nw := len(v.Windows)
walk:
	for i := 0; i < nw; i++ {
		w := &v.Windows[i]
		if recent {
			w = &v.Windows[nw-1-i]
		}
		if f.windowID != "" && !matchesID(w.ID, f.windowID) {
			continue
		}
		ni := w.Len()
		for j := 0; j < ni; j++ {
			k := j
			if recent {
				k = ni - 1 - j
			}
			r := w.At(k)
			if !f.match(&r) {
				continue
			}
			refs = append(refs, r)
			if len(refs) == limit {
				break walk
			}
		}
	}
	return v.previews(refs, maxChars)
}

// Search answers search_contents (docs/codex-contract.md "Tool surface", "Local history"): the items whose
// text contains query (case-sensitive literal substring; an empty query is
// a contextd.EInvalid error), in SearchOrder (Tree archive summaries first, then
// raw items window by window). With recent_first both groups are reversed
// (newest summary first, then the newest raw items first): summaries stay
// first, as the seed's Tree search requires ("summaries first, then raw
// entries", docs/codex-contract.md "Local history"; docs/design.md §4); for a view without
// summaries this is exactly the reversed order. Filters, limit (default
// 10, max 25) and the 8,000-code-point output cap are as in ListItems;
// truncated_content is the first 1,000 code points of the item (search
// takes no max_chars_per_item). agent_name naming another agent gives an
// empty list. Other errors come from the TextSource.
func (v *View) Search(a SearchArgs) (ItemsResult, error) {
	if a.Query == "" {
		return ItemsResult{}, invalid("history search_contents requires a non-empty query.")
	}
	res := ItemsResult{Source: Source, Items: []ItemPreview{}}
	if !v.agentSelected(a.AgentName) {
		return res, nil
	}
	ts, err := v.texts()
	if err != nil {
		return res, err
	}
	limit := ClampLimit(a.Limit, DefaultItemsLimit, MaxItemsLimit)
	f := filter{windowID: strArg(a.WindowID), role: strArg(a.Role), toolName: strArg(a.ToolName), toolNamespace: strArg(a.ToolNamespace)}

	cands := v.searchCandidates(f, boolArg(a.RecentFirst))
	found := make([]ItemRef, 0, limit)
	err = ts.Search(a.Query, cands, limit, func(r ItemRef) bool {
		found = append(found, r)
		return len(found) < limit
	})
	if err != nil {
		return res, err
	}
	return v.previews(found, DefaultMaxCharsPerItem)
}

// Unfiltered reports whether a searches every item of the view in
// SearchOrder: no filter and not recent_first (View.Ordered then serves).
func (a SearchArgs) Unfiltered() bool {
	f := filter{windowID: strArg(a.WindowID), role: strArg(a.Role), toolName: strArg(a.ToolName), toolNamespace: strArg(a.ToolNamespace)}
	return f == (filter{}) && !boolArg(a.RecentFirst)
}

// SearchOrder returns every item of the view in search order (docs/codex-contract.md
// "Local history" "Tree search: summaries first, then raw entries"; docs/design.md §4): first the summary items (Summary true) of all windows, in
// window order, then the other items window by window, each window in item
// order. For a Local view, which has no summaries, it is the view order.
// The result is read-only: for windows of LocalWindows without a summary
// whose packed items lie back to back in one array it is that array, not
// a copy; for other windows of LocalWindows, their packed items copied
// into one array (20 bytes an item); otherwise a RefList.
func SearchOrder(v *View) ItemList {
	if l, ok := packedOrder(v.Windows); ok {
		return l
	}
	s, r := splitOrder(v)
	return RefList(append(s, r...))
}

// packedOrder returns the items of wins, in order, as one packedList,
// when every window is a window of LocalWindows and none holds a summary;
// ok is false otherwise. The head of the list is the items of the first
// windows that lie back to back in one array (within each slice's
// capacity), as a slice of that array; the tail is the items of the other
// windows: the last window's own slice when it is the only one, else a
// copy. After an append only the last window has grown (and been copied,
// ExtendLocalWindows), so the head is the one of the list before it.
func packedOrder(wins []Window) (l *packedList, ok bool) {
	if len(wins) == 0 {
		return nil, false
	}
	var all []packedItem
	nHead, k := 0, 0 // items and windows of the head
	for i := range wins {
		w := &wins[i]
		if w.tab == nil {
			return nil, false
		}
		for _, p := range w.packed {
			if p.kind&extraItem == 0 && w.tab.kinds[p.kind].summary ||
				p.kind&extraItem != 0 && w.tab.extras[p.kind&^extraItem].Summary {
				return nil, false
			}
		}
	}
	for k < len(wins) {
		w := &wins[k]
		if len(w.packed) > 0 {
			if all == nil {
				all = w.packed[:cap(w.packed)]
			} else if nHead >= len(all) || &all[nHead] != &w.packed[0] {
				break
			}
		}
		nHead += len(w.packed)
		k++
	}
	// The last window's table holds every earlier window's as a prefix
	// (packTable).
	l = &packedList{tab: wins[len(wins)-1].tab}
	if nHead > 0 {
		l.head = all[:nHead:nHead]
	}
	switch rest := wins[k:]; len(rest) {
	case 0:
	case 1:
		l.tail = rest[0].packed[:len(rest[0].packed):len(rest[0].packed)]
	default:
		for i := range rest {
			l.tail = append(l.tail, rest[i].packed...)
		}
	}
	return l, true
}

func splitOrder(v *View) (summaries, raw []ItemRef) {
	n := 0
	for i := range v.Windows {
		n += v.Windows[i].Len()
	}
	raw = make([]ItemRef, 0, n)
	for i := range v.Windows {
		w := &v.Windows[i]
		for j, nj := 0, w.Len(); j < nj; j++ {
			r := w.At(j)
			if r.Summary {
				summaries = append(summaries, r)
			} else {
				raw = append(raw, r)
			}
		}
	}
	return summaries, raw
}

// searchCandidates returns the items of SearchOrder that pass f, each
// group (summaries, then raw items) reversed when recent: what Search
// gives the TextSource.
func (v *View) searchCandidates(f filter, recent bool) ItemList {
	if v.Ordered != nil && f == (filter{}) && !recent {
		return v.Ordered
	}
	n, sums := 0, 0
	for i := range v.Windows {
		w := &v.Windows[i]
		if f.windowID != "" && !matchesID(w.ID, f.windowID) {
			continue
		}
		n += w.Len()
		for j, nj := 0, w.Len(); j < nj; j++ {
			if w.At(j).Summary {
				sums++
			}
		}
	}
	cands := make([]ItemRef, 0, n)
	for _, summary := range []bool{true, false} {
		if summary && sums == 0 {
			continue
		}
		nw := len(v.Windows)
		for i := 0; i < nw; i++ {
			w := &v.Windows[i]
			if recent {
				w = &v.Windows[nw-1-i]
			}
			ni := w.Len()
			for j := 0; j < ni; j++ {
				k := j
				if recent {
					k = ni - 1 - j
				}
				r := w.At(k)
				if r.Summary == summary && f.match(&r) {
					cands = append(cands, r)
				}
			}
		}
	}
	return RefList(cands)
}

// previews builds the previews of refs, in order, until the output cap:
// each item's JSON (encoding/json, no HTML escaping) is measured in code
// points, and an item is added only if the running total stays ≤
// MaxOutputChars, except the first, which is always added.
func (v *View) previews(refs []ItemRef, maxChars int) (ItemsResult, error) {
	res := ItemsResult{Source: Source, Items: []ItemPreview{}}
	if len(refs) == 0 {
		return res, nil
	}
	ts, err := v.texts()
	if err != nil {
		return res, err
	}
	total := 0
	for _, r := range refs {
		text, err := ts.Prefix(r, maxChars)
		if err != nil {
			return res, err
		}
		p := ItemPreview{
			WindowID: BoundID(r.WindowID), ItemID: BoundID(r.ItemID), Role: r.Role,
			ToolName: BoundName(r.ToolName), ToolNamespace: BoundName(r.ToolNamespace), Summary: r.Summary,
			TruncatedContent: text, ContentChars: r.Chars,
		}
		size := PreviewJSONChars(p)
		if len(res.Items) > 0 && total+size > MaxOutputChars {
			break
		}
		total += size
		res.Items = append(res.Items, p)
	}
	return res, nil
}

// PreviewJSONChars is the size of p counted against MaxOutputChars: the
// number of code points of its compact JSON encoding (encoding/json field
// order, no HTML escaping, no trailing newline).
// The encoding (ItemPreview.MarshalJSON's) is written into a pooled
// buffer (a search answer measures up to 25 previews of up to 4 KB each).
func PreviewJSONChars(p ItemPreview) int {
	bp := previewBufs.Get().(*[]byte)
	defer previewBufs.Put(bp)
	*bp = p.appendJSON((*bp)[:0])
	return utf8.RuneCount(*bp)
}

var previewBufs = sync.Pool{New: func() any { return new([]byte) }}

// ReadItem answers read_item (docs/codex-contract.md "Tool surface", "Local history"). item_id and window_id
// are required (an empty one is a contextd.EInvalid error). The item is looked
// up in the window whose full ID equals window_id: an item whose ID equals
// item_id wins; otherwise item_id must be a suffix of exactly one item ID
// of that window (several: a CodeAmbiguous error naming up to 5
// candidates; none, an unknown window or another agent: item null). The
// content is the range [offset_chars, offset_chars+limit_chars) in code
// points, offset_chars clamped to [0, total_chars] (absent: 0),
// limit_chars default and max 8,000 (absent, null or < 1: the default);
// next_offset_chars = offset_chars + the code points returned, present only
// when it is less than total_chars. Other errors come from the TextSource.
func (v *View) ReadItem(a ReadItemArgs) (ReadResult, error) {
	res := ReadResult{Source: Source}
	if a.ItemID == "" {
		return res, invalid("history read_item requires item_id: pass an item ID returned by list_items or search_contents.")
	}
	if a.WindowID == "" {
		return res, invalid("history read_item requires window_id: pass the full ID of the window that contains the item.")
	}
	if !v.agentSelected(a.AgentName) {
		return res, nil
	}
	ref, err := v.lookup(a.WindowID, a.ItemID)
	if err != nil || ref == nil {
		return res, err
	}
	ts, err := v.texts()
	if err != nil {
		return res, err
	}
	total := ref.Chars
	offset := 0
	if a.OffsetChars != nil {
		offset = min(max(*a.OffsetChars, 0), total)
	}
	limit := ClampLimit(a.LimitChars, DefaultReadLimitChars, MaxReadLimitChars)
	content := ""
	if offset < total {
		if content, err = ts.Slice(*ref, offset, limit); err != nil {
			return res, err
		}
	}
	body := &ItemBody{
		WindowID: BoundID(ref.WindowID), ItemID: BoundID(ref.ItemID), Role: ref.Role,
		ToolName: BoundName(ref.ToolName), ToolNamespace: BoundName(ref.ToolNamespace), Summary: ref.Summary,
		Content: content, TotalChars: total,
	}
	if next := offset + session.CountChars(content); next < total {
		body.NextOffsetChars = &next
	}
	res.Item = body
	return res, nil
}

// lookup finds item id (exact, else unique suffix) in the window(s) whose
// ID equals windowID. It returns nil, nil when nothing matches.
func (v *View) lookup(windowID, id string) (*ItemRef, error) {
	var cands []*ItemRef
	for i := range v.Windows {
		w := &v.Windows[i]
		if !matchesID(w.ID, windowID) {
			continue
		}
		// A cut ID (BoundID) names the item by its suffix.
		suffix := id
		if rest, ok := strings.CutPrefix(id, CutMarker); ok && rest != "" {
			suffix = rest
		}
		for j, nj := 0, w.Len(); j < nj; j++ {
			r := w.At(j)
			if r.ItemID == id {
				return &r, nil
			}
			if strings.HasSuffix(r.ItemID, suffix) {
				cands = append(cands, &r)
			}
		}
	}
	switch len(cands) {
	case 0:
		return nil, nil
	case 1:
		return cands[0], nil
	}
	names := make([]string, 0, maxAmbiguousCandidates)
	for _, r := range cands[:min(len(cands), maxAmbiguousCandidates)] {
		names = append(names, BoundID(r.ItemID))
	}
	more := ""
	if len(cands) > maxAmbiguousCandidates {
		more = fmt.Sprintf(", and %d more", len(cands)-maxAmbiguousCandidates)
	}
	return nil, contextd.Errorf(contextd.EAmbiguous,
		"history read_item item_id %q is ambiguous in window %s: it is the end of %d item IDs (%s%s); pass the full item ID.",
		id, windowID, len(cands), strings.Join(names, ", "), more)
}
