package coordinator

// Adoption (docs/design.md §4 "Adoption"): context management turned on
// for a branch that already holds a conversation keeps that conversation
// in the model's context and makes every earlier entry an item of window
// 0. Expected values are written out by hand from the hand-built file.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"contextd"
	"contextd/history"
)

// adoptedFile is a conversation written before contextd was on: a user
// turn whose bash result holds the fact, then the answer.
func adoptedFile() []byte {
	return handLines("adopt",
		`"type":"model_change","provider":"faux","modelId":"faux-1"`, // h0000001
		hUser("find the fact and remember it"),                       // h0000002
		hAssistant(hCall("c1", "bash")),                              // h0000003
		hResult("c1", "bash", "secret-fact-4711"),                    // h0000004
		`"type":"message","message":{"role":"assistant","content":[{"type":"text","text":"the fact is noted"}],"stopReason":"stop","timestamp":1785578400000}`, // h0000005
	)
}

// appendPlanned appends the planned boundary b to the session file as Pi
// does (id, parentId = parent, a timestamp) and returns its entry id.
func appendPlanned(t *testing.T, path, id, parent string, b Boundary) {
	t.Helper()
	line, err := json.Marshal(map[string]any{"type": b.Type, "customType": b.CustomType, "content": b.Content, "display": b.Display,
		"details": b.Details, "id": id, "parentId": parent, "timestamp": "2026-08-01T11:00:00.000Z"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(line, '\n')); err != nil {
		t.Fatal(err)
	}
}

// TestAdoptionLocal: window 0 of a branch with earlier turns starts at the
// branch's first entry (startEntryId h0000001); Local's context answer then
// sends the whole branch (start_at null), list_windows lists the earlier
// entries as window 0's items and search_contents finds the fact of the
// first turn. A later new_context slices at its own boundary, and window
// 0 keeps every earlier item.
func TestAdoptionLocal(t *testing.T) {
	svc, dir := localService(t, map[string][]byte{"adopt.jsonl": adoptedFile()})
	path := filepath.Join(dir, "adopt.jsonl")
	ctx := t.Context()
	w0, err := svc.Windows(ctx, "adopt", WindowsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: "id-1", CurrentWindowID: "id-1", StartEntryID: "h0000001"}
	if !w0.First || w0.Window != want || w0.Append[0].Details.ContextManagement != want {
		t.Fatalf("window 0: %+v", w0)
	}
	appendPlanned(t, path, "b0", "h0000005", w0.Append[0])

	got, err := svc.Context(ctx, "adopt", ContextRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Projection.StartAt != nil || got.SliceFromEntryID != "" || len(got.Projection.Drop) != 0 || got.NeedsBoundary || got.BoundaryEntryID != "b0" || *got.Window != want {
		t.Errorf("context after adoption: %+v", got)
	}

	cc := CallContext{SessionID: "adopt"}
	lw, err := svc.ListWindows(ctx, cc, history.ListWindowsArgs{})
	if err != nil {
		t.Fatal(err)
	}
	if len(lw.Windows) != 1 || lw.Windows[0].WindowID != "id-1" || lw.Windows[0].ItemCount != 4 {
		t.Errorf("list_windows: %+v", lw.Windows)
	}
	q := "secret-fact-4711"
	sr, err := svc.SearchHistory(ctx, cc, history.SearchArgs{Query: q})
	if err != nil {
		t.Fatal(err)
	}
	if ids := itemIDs(sr.Items); !slices.Equal(ids, []string{"h0000004"}) {
		t.Errorf("search_contents %q: %v", q, ids)
	}
	ri, err := svc.ReadItem(ctx, cc, history.ReadItemArgs{ItemID: "h0000002", WindowID: "id-1"})
	if err != nil {
		t.Fatal(err)
	}
	if ri.Item == nil || ri.Item.Content != "find the fact and remember it" {
		t.Errorf("read_item h0000002: %+v", ri.Item)
	}

	// new_context: window 1 begins at its boundary; window 0 keeps the
	// adopted items.
	w1, err := svc.Windows(ctx, "adopt", WindowsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if w1.First || w1.Window.StartEntryID != "" || w1.Window.WindowNumber != 1 {
		t.Fatalf("window 1: %+v", w1.Window)
	}
	appendPlanned(t, path, "b1", "b0", w1.Append[0])
	got, err = svc.Context(ctx, "adopt", ContextRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Projection.StartAt == nil || got.Projection.StartAt.WindowID != w1.Window.CurrentWindowID || got.SliceFromEntryID != "b1" {
		t.Errorf("context after new_context: %+v", got)
	}
	lw, err = svc.ListWindows(ctx, cc, history.ListWindowsArgs{})
	if err != nil {
		t.Fatal(err)
	}
	if len(lw.Windows) != 2 || lw.Windows[0].WindowID != "id-1" || lw.Windows[0].ItemCount != 4 || lw.Windows[1].ItemCount != 0 {
		t.Errorf("list_windows after new_context: %+v", lw.Windows)
	}
}

// TestAdoptionNewSession: a branch holding no message Pi sends (a new
// session: model_change, thinking_level_change) gets an ordinary window 0,
// without startEntryId.
func TestAdoptionNewSession(t *testing.T) {
	svc, _ := localService(t, map[string][]byte{"new.jsonl": handLines("new",
		`"type":"model_change","provider":"faux","modelId":"faux-1"`, `"type":"thinking_level_change","thinkingLevel":"off"`)})
	w0, err := svc.Windows(t.Context(), "new", WindowsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !w0.First || w0.Window.StartEntryID != "" {
		t.Errorf("window 0 of a new session: %+v", w0.Window)
	}
}

// TestAdoptionTree: in Tree mode the adopted entries are window 0's items
// too (nothing is hidden: Tree never slices).
func TestAdoptionTree(t *testing.T) {
	svc, dir := localService(t, map[string][]byte{"adopt.jsonl": adoptedFile()})
	ctx := t.Context()
	if _, _, err := svc.Register(ctx, "adopt", RegisterRequest{SessionFile: "adopt.jsonl", Mode: "tree"}); err != nil {
		t.Fatal(err)
	}
	w0, err := svc.Windows(ctx, "adopt", WindowsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if w0.Window.StartEntryID != "h0000001" {
		t.Fatalf("window 0: %+v", w0.Window)
	}
	appendPlanned(t, filepath.Join(dir, "adopt.jsonl"), "b0", "h0000005", w0.Append[0])
	got, err := svc.Context(ctx, "adopt", ContextRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode != contextd.ModeTree || got.Projection.StartAt != nil || got.NeedsBoundary {
		t.Errorf("tree context: %+v", got)
	}
	cc := CallContext{SessionID: "adopt"}
	q := "secret-fact-4711"
	sr, err := svc.SearchHistory(ctx, cc, history.SearchArgs{Query: q})
	if err != nil {
		t.Fatal(err)
	}
	if ids := itemIDs(sr.Items); !slices.Equal(ids, []string{"h0000004"}) {
		t.Errorf("tree search_contents %q: %v", q, ids)
	}
}

func itemIDs(items []history.ItemPreview) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.ItemID)
	}
	return out
}

// appendLine appends one raw entry line to the session file.
func appendLine(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}

// appendEntry appends a planned entry as Pi does.
func appendEntry(t *testing.T, path, id, parent string, pe PlannedEntry) {
	t.Helper()
	m := map[string]any{"type": pe.Type, "customType": pe.CustomType, "id": id, "parentId": parent, "timestamp": "2026-08-01T12:00:00.000Z"}
	if pe.Type == "custom" {
		m["data"] = pe.Data
	} else {
		m["content"], m["display"], m["details"] = pe.Content, true, pe.Details
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	appendLine(t, path, string(b))
}

// TestAdoptionTreeRollover: a Tree rollover of an adopted window 0
// navigates to its boundary, so the adopted turns stay on the branch (the
// model's context keeps them, as before adoption); the archived window 0
// holds them too, before the entries after its boundary, and
// search_contents reaches the first turn's fact from window 1.
func TestAdoptionTreeRollover(t *testing.T) {
	svc, dir := localService(t, map[string][]byte{"adopt.jsonl": adoptedFile()})
	path := filepath.Join(dir, "adopt.jsonl")
	ctx := t.Context()
	if _, _, err := svc.Register(ctx, "adopt", RegisterRequest{SessionFile: "adopt.jsonl", Mode: "tree"}); err != nil {
		t.Fatal(err)
	}
	w0, err := svc.Windows(ctx, "adopt", WindowsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	appendPlanned(t, path, "b0", "h0000005", w0.Append[0])
	appendLine(t, path, `{"type":"message","message":{"role":"user","content":"roll over","timestamp":1},"id":"u1","parentId":"b0","timestamp":"2026-08-01T11:01:00.000Z"}`)
	appendLine(t, path, `{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","id":"nc","name":"new_context","arguments":{}}],"stopReason":"toolUse","timestamp":1},"id":"a1","parentId":"u1","timestamp":"2026-08-01T11:02:00.000Z"}`)
	appendLine(t, path, `{"type":"message","message":{"role":"toolResult","toolCallId":"nc","toolName":"new_context","content":[{"type":"text","text":"ok"}],"isError":false,"timestamp":1},"id":"r1","parentId":"a1","timestamp":"2026-08-01T11:03:00.000Z"}`)
	ro, _, err := svc.CreateRollover(ctx, "adopt", RolloverRequest{LeafID: "a1", CommandContextReady: true})
	if err != nil {
		t.Fatal(err)
	}
	st, err := svc.SettleRollover(ctx, "adopt", ro.RolloverID, SettleRequest{LeafID: "r1"})
	if err != nil || st.NavigateTo == nil || *st.NavigateTo != "b0" {
		t.Fatalf("settle: %+v %v", st, err)
	}
	// navigateTree(b0): the summary's parent is b0's parent, the last adopted entry.
	appendLine(t, path, `{"type":"branch_summary","fromId":"r1","summary":"Summary 1: rolled over.","id":"s1","parentId":"h0000005","timestamp":"2026-08-01T11:04:00.000Z"}`)
	c, err := svc.CommitRollover(ctx, "adopt", ro.RolloverID, CommitRequest{SummaryEntryID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	appendEntry(t, path, "m1", "s1", c.Append[0])
	appendEntry(t, path, "n1", "m1", c.Append[1])
	appendEntry(t, path, "b1", "n1", c.Append[2])
	cc := CallContext{SessionID: "adopt"}
	lw, err := svc.ListWindows(ctx, cc, history.ListWindowsArgs{})
	if err != nil {
		t.Fatal(err)
	}
	w0id := w0.Window.CurrentWindowID
	n := 20
	items, err := svc.ListItems(ctx, cc, history.ListItemsArgs{WindowID: &w0id, Limit: &n})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range items.Items {
		ids = append(ids, it.ItemID)
	}
	// Summary first, then the adopted turns, then window 0's own entries.
	if want := []string{"s1", "h0000002", "h0000003", "h0000004", "h0000005", "u1", "a1", "r1"}; len(lw.Windows) != 2 || !slices.Equal(ids, want) {
		t.Errorf("windows %+v, window 0 items %v; want 2 windows, items %v", lw.Windows, ids, want)
	}
	sr, err := svc.SearchHistory(ctx, cc, history.SearchArgs{Query: "secret-fact-4711"})
	if err != nil {
		t.Fatal(err)
	}
	if got := itemIDs(sr.Items); !slices.Equal(got, []string{"h0000004"}) {
		t.Errorf("search_contents from window 1: %v", got)
	}
	got, err := svc.Context(ctx, "adopt", ContextRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.HiddenSummaries) != 1 || got.HiddenSummaries[0].EntryID != "s1" || got.NeedsBoundary {
		t.Errorf("context after the rollover: %+v", got)
	}
}
