package coordinator

// Local-mode tests of the Service without HTTP: the context answer (slice
// point, orphaned tool results), the boundary of POST …/windows with
// deterministic ids, the thread hint's recovery ids, and off mode.
// Expected values come from testdata/pi-tree/local-basic.jsonl (written by
// the seed extension on real Pi 0.85) and its expected.json, or are
// written out by hand in the hand-built files below.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd"
	"contextd/history"
	"contextd/store"
)

const (
	lbSession = "019f3776-3d33-70c6-baa2-5155ff71613c" // local-basic.expected.json header.id
	lbWin0    = "e636b0b7-d739-4a87-ad1c-80eb5320dfff"
	lbWin1    = "058f6ded-97f5-4969-ade0-fa96ccce6093"
	lbWin2    = "3f758502-0c0f-4460-92e9-45bd32510d50"
)

// localService opens a Service (default mode local) over a temporary
// sessions directory holding files (name → content); ids minted by
// NewID are "id-1", "id-2", ….
func localService(t *testing.T, files map[string][]byte) (*Service, string) {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "sessions")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	idx, err := store.OpenIndex(ctx, dir, filepath.Join(root, "index"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { idx.Close() })
	st, err := store.OpenState(ctx, filepath.Join(root, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	n := 0
	svc := New(idx, st, contextd.ModeLocal, nil, nil, WithIDs(func() string { n++; return fmt.Sprintf("id-%d", n) }))
	return svc, dir
}

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "pi-tree", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fixtureEntry returns the decoded line of entry id in a JSONL file.
func fixtureEntry(t *testing.T, data []byte, id string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(string(data), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) == nil && e["id"] == id {
			return e
		}
	}
	t.Fatalf("no entry %s", id)
	return nil
}

// handLines builds a v3 session file from entry lines written by hand;
// each entry's parentId is the previous entry.
func handLines(sessionID string, entries ...string) []byte {
	var b strings.Builder
	b.WriteString(`{"type":"session","version":3,"id":"` + sessionID + `","timestamp":"2026-08-01T10:00:00.000Z","cwd":"/tmp/hand"}` + "\n")
	parent := "null"
	for i, e := range entries {
		id := fmt.Sprintf("h%07d", i+1)
		b.WriteString(`{` + e + `,"id":"` + id + `","parentId":` + parent + `,"timestamp":"2026-08-01T10:00:0` + fmt.Sprint(i%10) + `.000Z"}` + "\n")
		parent = `"` + id + `"`
	}
	return []byte(b.String())
}

// Entry bodies for handLines.
func hUser(text string) string {
	return `"type":"message","message":{"role":"user","content":` + jsonString(text) + `,"timestamp":1785578400000}`
}
func hAssistant(parts string) string {
	return `"type":"message","message":{"role":"assistant","content":[` + parts + `],"stopReason":"toolUse","timestamp":1785578400000}`
}
func hCall(id, name string) string {
	return `{"type":"toolCall","id":"` + id + `","name":"` + name + `","arguments":{}}`
}
func hResult(callID, name, text string) string {
	return `"type":"message","message":{"role":"toolResult","toolCallId":"` + callID + `","toolName":"` + name + `","content":[{"type":"text","text":` + jsonString(text) + `}],"isError":false,"timestamp":1785578400000}`
}
func hBoundary(n int, first, cur, prev string) string {
	p := ""
	if prev != "" {
		p = `,"previousWindowId":"` + prev + `"`
	}
	return `"type":"custom_message","customType":"codex-context-window","content":"<context_window>\n</context_window>","display":true,"details":{"protocol":1,"id":"m` +
		cur + `","contextManagement":{"protocol":1,"kind":"window","firstWindowId":"` + first + `","currentWindowId":"` + cur + `"` + p + `,"windowNumber":` + fmt.Sprint(n) + `}}`
}
func hBash(command, output string) string {
	return `"type":"message","message":{"role":"bashExecution","command":` + jsonString(command) + `,"output":` + jsonString(output) + `,"exitCode":0,"cancelled":false,"truncated":false,"timestamp":1785578400000}`
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestLocalContextOrphans: when a boundary lands between an assistant's
// tool calls and their results, slicing at the boundary would leave
// toolResults without their toolCall: the answer starts at the assistant,
// moves the boundary after the results and reports the damage (docs/modes.md "Tool-call pairing").
func TestLocalContextOrphans(t *testing.T) {
	note := `"type":"custom","customType":"codex-context-note","data":{"protocol":1,"action":"write","path":"/root/notes/n.md","text":"n","timestamp":1785578400000}`
	file := handLines("hand-ctx",
		hBoundary(0, "wa", "wa", ""),                         // h0000001
		hUser("list and print"),                              // h0000002
		hAssistant(hCall("c1", "ls")+","+hCall("c2", "pwd")), // h0000003
		hBoundary(1, "wa", "wb", "wa"),                       // h0000004: lands before the results
		hResult("c1", "ls", "a.txt"),                         // h0000005: orphaned
		note,                                                 // h0000006
		hResult("c2", "pwd", "/tmp"),                         // h0000007: orphaned
		hAssistant(hCall("c3", "cat")),                       // h0000008: a new turn ends the scan
		hResult("c3", "cat", "x"),                            // h0000009: answers a call after the boundary
		hBoundary(2, "wa", "wc", "wb"),                       // h0000010: clean boundary
		hUser("next"),                                        // h0000011
	)
	svc, _ := localService(t, map[string][]byte{"hand.jsonl": file})
	wb := WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: "wa", CurrentWindowID: "wb", PreviousWindowID: "wa", WindowNumber: 1}
	wc := WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: "wa", CurrentWindowID: "wc", PreviousWindowID: "wb", WindowNumber: 2}
	bwb := MessageKey{Role: "custom", CustomType: "codex-context-window", WindowID: "wb"}
	bwc := MessageKey{Role: "custom", CustomType: "codex-context-window", WindowID: "wc"}
	c1 := MessageKey{Role: "assistant", ToolCallID: "c1"}
	inside := []SessionProblem{{Line: 5, Reason: "boundary_inside_tool_call",
		Detail: "boundary h0000004 is written between the calls of assistant h0000003 and their results; the context starts at the assistant and the boundary follows the results"}}
	for _, tc := range []struct {
		leaf, boundary, slice string
		start                 MessageKey
		move                  []MoveStep
		problems              []SessionProblem
		window                *WindowIdentity
		notes                 int // note writes after the boundary: the note h0000006 in wb
	}{
		// Sent: h3 assistant[c1,c2], h5 result c1, h7 result c2, h4 boundary wb, h8, h9.
		{"h0000009", "h0000004", "h0000003", c1, []MoveStep{{Message: bwb, After: MessageKey{Role: "toolResult", ToolCallID: "c2", Occurrence: 1}}}, inside, &wb, 1},
		{"h0000007", "h0000004", "h0000003", c1, []MoveStep{{Message: bwb, After: MessageKey{Role: "toolResult", ToolCallID: "c2", Occurrence: 1}}}, inside, &wb, 1},
		// Only c1's result is written: the boundary follows it (pi-ai
		// answers c2 synthetically before the boundary).
		{"h0000005", "h0000004", "h0000003", c1, []MoveStep{{Message: bwb, After: MessageKey{Role: "toolResult", ToolCallID: "c1", Occurrence: 1}}}, inside, &wb, 0},
		// No result after the boundary yet: nothing is inside a pair.
		{"h0000004", "h0000004", "h0000004", bwb, nil, nil, &wb, 0},
		{"h0000011", "h0000010", "h0000010", bwc, nil, nil, &wc, 0},
		{"", "h0000010", "h0000010", bwc, nil, nil, &wc, 0},
	} {
		got, err := svc.Context(t.Context(), "hand-ctx", ContextRequest{LeafID: tc.leaf})
		if err != nil {
			t.Fatal(err)
		}
		leaf := tc.leaf
		if leaf == "" {
			leaf = "h0000011"
		}
		start := tc.start
		want := ContextAnswer{Mode: contextd.ModeLocal, LeafID: leaf, Window: tc.window, BoundaryEntryID: tc.boundary, SliceFromEntryID: tc.slice,
			OrphanedToolResults: []string{}, HiddenSummaries: []HiddenSummary{}, Projection: Projection{StartAt: &start, Drop: []MessageKey{}, Move: tc.move},
			Problems: tc.problems, WindowNoteWrites: tc.notes}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("leaf %q (-want +got):\n%s", tc.leaf, diff)
		}
	}
}

// TestLocalContextLeaves: the boundary and slice point of local-basic for
// leaves in each window and before the first boundary
// (local-basic.expected.json windows; boundaries are followed by an
// assistant message, so nothing is orphaned).
func TestLocalContextLeaves(t *testing.T) {
	svc, _ := localService(t, map[string][]byte{"local-basic.jsonl": readFixture(t, "local-basic.jsonl")})
	w := []WindowIdentity{
		{Protocol: 1, Kind: "window", FirstWindowID: lbWin0, CurrentWindowID: lbWin0, WindowNumber: 0},
		{Protocol: 1, Kind: "window", FirstWindowID: lbWin0, CurrentWindowID: lbWin1, PreviousWindowID: lbWin0, WindowNumber: 1},
		{Protocol: 1, Kind: "window", FirstWindowID: lbWin0, CurrentWindowID: lbWin2, PreviousWindowID: lbWin1, WindowNumber: 2},
	}
	// notes: codex-context-note entries on the branch after the boundary,
	// counted in local-basic.jsonl (the reminders 82e29e2d and f795cd48
	// are no boundary): 244df0e2, 9b371cc2 before 5aa793bd, and e94001b1
	// too before 311c04e4; c968c743, 2bc664f4 before dc8dd239, and
	// f42c8deb too before 8f24378d; 5aa4ca14, 8a54f746 before 588752ae.
	for _, tc := range []struct {
		leaf, boundary string
		window         int // -1: none
		notes          int
	}{
		{"350a86a9", "", -1, 0},
		{"3807cd16", "", -1, 0},
		{"c96cd189", "c96cd189", 0, 0},
		{"5aa793bd", "c96cd189", 0, 2},
		{"311c04e4", "c96cd189", 0, 3},
		{"1ad99795", "1ad99795", 1, 0},
		{"dc8dd239", "1ad99795", 1, 2},
		{"8f24378d", "1ad99795", 1, 3},
		{"177c1e63", "177c1e63", 2, 0},
		{"588752ae", "177c1e63", 2, 2},
	} {
		got, err := svc.Context(t.Context(), lbSession, ContextRequest{LeafID: tc.leaf})
		if err != nil {
			t.Fatal(err)
		}
		want := ContextAnswer{Mode: contextd.ModeLocal, LeafID: tc.leaf, BoundaryEntryID: tc.boundary, SliceFromEntryID: tc.boundary,
			OrphanedToolResults: []string{}, HiddenSummaries: []HiddenSummary{}, NeedsBoundary: tc.window < 0, WindowNoteWrites: tc.notes, Projection: Projection{Drop: []MessageKey{}}}
		if tc.window >= 0 {
			want.Window = &w[tc.window]
			want.Projection.StartAt = &MessageKey{Role: "custom", CustomType: "codex-context-window", WindowID: w[tc.window].CurrentWindowID}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("leaf %s (-want +got):\n%s", tc.leaf, diff)
		}
	}
	_, err := svc.Context(t.Context(), lbSession, ContextRequest{LeafID: "ffffffff"})
	if contextd.ErrorCode(err) != contextd.ENotFound {
		t.Errorf("unknown leaf: %v", err)
	}
}

// TestLocalWindowsAnswer: with deterministic ids, the boundary answered at
// the parent of each fixture boundary is the fixture's boundary with the
// ids swapped (content, details, identity), and a branch with no boundary
// gets window 0.
func TestLocalWindowsAnswer(t *testing.T) {
	data := readFixture(t, "local-basic.jsonl")
	svc, _ := localService(t, map[string][]byte{"local-basic.jsonl": data})
	for _, id := range []string{"c96cd189", "1ad99795", "177c1e63"} {
		fx := fixtureEntry(t, data, id)
		details := fx["details"].(map[string]any)
		cm := details["contextManagement"].(map[string]any)
		var got WindowsAnswer
		var err error
		got, err = svc.Windows(t.Context(), lbSession, WindowsRequest{LeafID: fx["parentId"].(string)})
		if err != nil {
			t.Fatal(err)
		}
		// nextIdentity mints the window id first, NewBoundary the marker id.
		cur, marker := got.Window.CurrentWindowID, got.Append[0].Details.ID
		content := fx["content"].(string)
		if id == "c96cd189" {
			// Window 0 (parent 3807cd16 has no boundary on its branch):
			// first == current == the one id minted, the marker the next.
			content = strings.ReplaceAll(content, lbWin0, cur)
		} else {
			content = strings.ReplaceAll(content, cm["currentWindowId"].(string), cur)
		}
		prev, _ := cm["previousWindowId"].(string)
		first := cm["firstWindowId"].(string)
		if id == "c96cd189" {
			first = cur
		}
		wantID := WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: first, CurrentWindowID: cur, PreviousWindowID: prev, WindowNumber: int(cm["windowNumber"].(float64))}
		want := WindowsAnswer{First: id == "c96cd189", Window: wantID, Append: []Boundary{{Type: "custom_message", CustomType: "codex-context-window",
			Content: content, Display: true, Details: BoundaryDetails{Protocol: 1, ID: marker, ContextManagement: wantID}}}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("before %s (-want +got):\n%s", id, diff)
		}
		if !strings.HasPrefix(cur, "id-") || !strings.HasPrefix(marker, "id-") || cur == marker {
			t.Errorf("ids %q %q", cur, marker)
		}
	}
	// Off mode refuses.
	if _, _, err := svc.Register(t.Context(), lbSession, RegisterRequest{SessionFile: "local-basic.jsonl", Mode: "off"}); err != nil {
		t.Fatal(err)
	}
	_, err := svc.Windows(t.Context(), lbSession, WindowsRequest{})
	if contextd.ErrorCode(err) != contextd.EConflict ||
		contextd.ErrorMessage(err) != `context management is off for session "`+lbSession+`"; register it with mode local, tree or remote to use history and notes` {
		t.Errorf("off mode: %v", err)
	}
}

// TestLocalThreadHintUserItems: the recovery part of the thread hint lists
// user messages only, newest first, at most 5: a bashExecution (rendered
// as a user item) is left out, as the seed wrote it in local-basic's
// boundary 1ad99795 ("user_item_ids":["873ba1dd","4075226e","2623e50c"];
// the bashExecution f7de1fa0 sits between 2623e50c and 4075226e).
func TestLocalThreadHintUserItems(t *testing.T) {
	svc, _ := localService(t, map[string][]byte{
		"local-basic.jsonl": readFixture(t, "local-basic.jsonl"),
		"hand.jsonl": handLines("hand-hint",
			hBoundary(0, "w0", "w0", ""),   // h0000001
			hUser("u1"),                    // h0000002
			hBash("ls", "a"),               // h0000003
			hUser("u2"),                    // h0000004
			hUser("u3"),                    // h0000005
			hBash("pwd", ""),               // h0000006
			hUser("u4"),                    // h0000007
			hUser("u5"),                    // h0000008
			hUser("u6"),                    // h0000009
			hBoundary(1, "w0", "w1", "w0"), // h0000010
			hUser("next"),                  // h0000011
		),
	})
	got, err := svc.ThreadHint(t.Context(), CallContext{SessionID: lbSession, LeafID: "56ee3191"})
	if err != nil {
		t.Fatal(err)
	}
	if want := `Previous window history IDs: {"window_id":"` + lbWin0 + `","user_item_ids":["873ba1dd","4075226e","2623e50c"]}`; !strings.HasSuffix(got.Text, "\n"+want) {
		t.Errorf("local-basic hint %q does not end with %q", got.Text, want)
	}
	got, err = svc.ThreadHint(t.Context(), CallContext{SessionID: "hand-hint"})
	if err != nil {
		t.Fatal(err)
	}
	// Newest first, five of six, no bashExecution.
	if want := `Previous window history IDs: {"window_id":"w0","user_item_ids":["h0000009","h0000008","h0000007","h0000005","h0000004"]}`; got.Text != want {
		t.Errorf("hand hint %q, want %q", got.Text, want)
	}
	// The bashExecution is still a history item (role user).
	w0, role, limit := "w0", "user", 25
	res, err := svc.ListItems(t.Context(), CallContext{SessionID: "hand-hint"}, history.ListItemsArgs{WindowID: &w0, Role: &role, Limit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, it := range res.Items {
		ids = append(ids, it.ItemID)
	}
	if diff := cmp.Diff([]string{"h0000002", "h0000003", "h0000004", "h0000005", "h0000006", "h0000007", "h0000008", "h0000009"}, ids); diff != "" {
		t.Errorf("user items (-want +got):\n%s", diff)
	}
}

// TestLocalHistoryContextEdits: a context_edit appended after the items it
// edits changes how they read on the next request, whether the cached
// windows of the earlier state are extended or not (store.View.Refs,
// Service.localWindows): a replaced item reads and searches as the
// replacement, an omitted one is gone, system and usage entries are never
// items. Registered as Pi 0.85 (which knows no context_edit), the items
// read as written.
func TestLocalHistoryContextEdits(t *testing.T) {
	const sid = "edits-session"
	lines := []string{
		hBoundary(0, "w0", "w0", ""),                           // h0000001
		hUser("my token is sk-SECRET"),                         // h0000002
		hAssistant(`{"type":"text","text":"noted sk-SECRET"}`), // h0000003
		`"type":"message","message":{"role":"system","content":"You are Pi.","timestamp":1785578400000}`,            // h0000004
		`"type":"usage","kind":"summary","provider":"p","model":"m","usage":{"input":1,"output":1,"totalTokens":2}`, // h0000005
		hUser("next"), // h0000006
	}
	data := handLines(sid, lines...)
	svc, dir := localService(t, map[string][]byte{"s.jsonl": data})
	file := filepath.Join(dir, "s.jsonl")
	appendLine := func(body, id, parent string) {
		f, err := os.OpenFile(file, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.WriteString(`{` + body + `,"id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-08-01T10:00:09.000Z"}` + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	ctx := t.Context()
	cc := CallContext{SessionID: sid}
	items := func() []string {
		t.Helper()
		out, err := svc.ListItems(ctx, cc, history.ListItemsArgs{})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range out.Items {
			got = append(got, it.ItemID+"="+it.TruncatedContent)
		}
		return got
	}
	search := func(q string) []string {
		t.Helper()
		out, err := svc.SearchHistory(ctx, cc, history.SearchArgs{Query: q})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range out.Items {
			got = append(got, it.ItemID)
		}
		return got
	}
	want := func(got []string, want ...string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	want(items(), `h0000002=my token is sk-SECRET`, `h0000003=noted sk-SECRET`, `h0000006=next`)
	want(search("sk-SECRET"), "h0000002", "h0000003")

	// An edit of the first user message, appended later.
	appendLine(`"type":"context_edit","targetId":"h0000002","replacement":{"content":"my token is [redacted]"}`, "e1", "h0000006")
	want(items(), `h0000002=my token is [redacted]`, `h0000003=noted sk-SECRET`, `h0000006=next`)
	want(search("sk-SECRET"), "h0000003")
	want(search("redacted"), "h0000002")

	// A plain entry after it (the cached windows are extended), then an
	// omission of the assistant reply (they are built again).
	appendLine(hUser("more"), "u9", "e1")
	want(items(), `h0000002=my token is [redacted]`, `h0000003=noted sk-SECRET`, `h0000006=next`, `u9=more`)
	appendLine(`"type":"context_edit","targetId":"h0000003","replacement":null`, "e2", "u9")
	want(items(), `h0000002=my token is [redacted]`, `h0000006=next`, `u9=more`)
	want(search("sk-SECRET"))

	// At a leaf before the edits, the originals.
	cc.LeafID = "h0000006"
	want(search("sk-SECRET"), "h0000002", "h0000003")
	cc.LeafID = ""

	// Pi 0.85 rules: context_edit is an unknown entry type.
	if _, _, err := svc.Register(ctx, sid, RegisterRequest{SessionFile: "s.jsonl", Mode: "local", PiVersion: "0.85.1"}); err != nil {
		t.Fatal(err)
	}
	want(items(), `h0000002=my token is sk-SECRET`, `h0000003=noted sk-SECRET`, `h0000006=next`, `u9=more`)
}

// TestBranchRules: GET …/branch applies and names the rules of the
// registered pi_version: the newest (pi-1.6) for an unregistered session,
// a registration without pi_version and an untested 1.7.0, pi-0.85 for
// 0.85.1, pi-0.86 for 0.86.1. Under pi-1.6 the replaced user message
// carries its edit's id and the omitted reply and the system message in
// the kept range are gone; under pi-0.85 the context_edit entries are
// unknown types and everything is listed; under pi-0.86 the edits are
// unknown types and the system message in the kept range is gone.
func TestBranchRules(t *testing.T) {
	const sid = "rules-session"
	data := handLines(sid,
		hUser("a"), // h0000001
		`"type":"message","message":{"role":"assistant","content":[],"stopReason":"stop","timestamp":1785578400000}`,                         // h0000002
		`"type":"message","message":{"role":"system","content":"sys","timestamp":1785578400000}`,                                             // h0000003
		`"type":"context_edit","targetId":"h0000001","replacement":{"content":"b"}`,                                                          // h0000004
		`"type":"context_edit","targetId":"h0000002","replacement":null`,                                                                     // h0000005
		`"type":"compaction","summary":"s","firstKeptEntryId":"h0000001","tokensBefore":1,"systemMessage":{"role":"system","content":"sys"}`, // h0000006
	)
	svc, _ := localService(t, map[string][]byte{"s.jsonl": data})
	ctx := t.Context()
	show := func() string {
		t.Helper()
		br, err := svc.BranchOf(ctx, sid, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		sameBranchJSON(t, svc, sid, 0, br)
		out := br.Rules + ":"
		for _, e := range br.Context {
			out += " " + e.EntryID + "/" + e.Role
			if e.EditID != "" {
				out += "<" + e.EditID
			}
		}
		return out
	}
	const v16 = "pi-1.6: h0000006/system h0000006/compactionSummary h0000001/user<h0000004"
	const v085 = "pi-0.85: h0000006/compactionSummary h0000001/user h0000002/assistant h0000003/system"
	const v086 = "pi-0.86: h0000006/system h0000006/compactionSummary h0000001/user h0000002/assistant"
	for _, c := range []struct{ version, want string }{{"-", v16}, {"", v16}, {"0.85.1", v085}, {"0.86.1", v086}, {"0.87.0", v16}, {"1.6.0", v16}, {"1.7.0", v16}} {
		if c.version != "-" {
			if _, _, err := svc.Register(ctx, sid, RegisterRequest{SessionFile: "s.jsonl", Mode: "local", PiVersion: c.version}); err != nil {
				t.Fatal(err)
			}
		}
		if got := show(); got != c.want {
			t.Errorf("pi_version %q: %s\nwant %s", c.version, got, c.want)
		}
	}
}

// sameBranchJSON checks that BranchJSON (what GET …/branch writes) is
// json.Marshal of the BranchOf answer br for the same arguments.
func sameBranchJSON(t *testing.T, svc *Service, sid string, tail int, br BranchAnswer) {
	t.Helper()
	got, err := svc.BranchJSON(t.Context(), sid, "", tail)
	if err != nil {
		t.Fatal(err)
	}
	want, err := json.Marshal(br)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("tail %d: BranchJSON\n%s\nwant json.Marshal(BranchOf)\n%s", tail, got, want)
	}
}

// TestBranchTail: ?tail=N lists the last N branch ids and context
// messages of the whole answer, with the whole lengths (six entries, six
// context messages under pi-1.6 rules with no edits: every entry here is
// a user or assistant message).
func TestBranchTail(t *testing.T) {
	const sid = "tail-session"
	data := handLines(sid, hUser("a"), hUser("b"), hUser("c"), hUser("d"), hUser("e"), hUser("f"))
	svc, _ := localService(t, map[string][]byte{"s.jsonl": data})
	ctx := t.Context()
	full, err := svc.BranchOf(ctx, sid, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(full.EntryIDs) != 6 || len(full.Context) != 6 || full.EntryCount != nil || full.ContextCount != nil {
		t.Fatalf("full answer: %d ids, %d context, counts %v %v", len(full.EntryIDs), len(full.Context), full.EntryCount, full.ContextCount)
	}
	for _, c := range []struct{ tail, n int }{{1, 1}, {4, 4}, {6, 6}, {100, 6}} {
		br, err := svc.BranchOf(ctx, sid, "", c.tail)
		if err != nil {
			t.Fatal(err)
		}
		sameBranchJSON(t, svc, sid, c.tail, br)
		if br.EntryCount == nil || *br.EntryCount != 6 || br.ContextCount == nil || *br.ContextCount != 6 {
			t.Errorf("tail %d: counts %v %v, want 6 6", c.tail, br.EntryCount, br.ContextCount)
		}
		if !slices.Equal(br.EntryIDs, full.EntryIDs[6-c.n:]) || !slices.Equal(br.Context, full.Context[6-c.n:]) || br.LeafID != "h0000006" {
			t.Errorf("tail %d: ids %v context %v leaf %s, want the last %d of %v", c.tail, br.EntryIDs, br.Context, br.LeafID, c.n, full.EntryIDs)
		}
	}
}
