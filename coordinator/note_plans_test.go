package coordinator_test

import (
	"encoding/json"
	"strings"
	"testing"

	"contextd"
	"contextd/coordinator"
	"contextd/notes"
)

// TestNoteWritesPlannedTogether (docs/design.md §5.3.1 "Planned against one
// state"): two appends of one message, planned at the same leaf before
// either entry is in the file, are checked against the state both produce:
// 600,000 + 600,000 bytes exceed the 1,000,000-byte file limit, so the
// second is refused in its own answer (ETooLarge) instead of answering
// success for an entry the replay would drop. Once the first entry is in
// the file it is counted once, from the file, and a third append of
// 400,000 bytes fits exactly; a fourth planned beside the third is refused.
func TestNoteWritesPlannedTogether(t *testing.T) {
	e := newEnv(t, contextd.ModeLocal, lineCall)
	ctx := t.Context()
	cc := coordinator.CallContext{SessionID: basicID, LeafID: basicCall}
	big := strings.Repeat("a", 600_000)
	first, err := e.svc.AppendNote(ctx, cc, notes.AppendArgs{Path: "big.md", Text: big})
	if err != nil || first.File.Bytes != 600_000 {
		t.Fatalf("first append: %+v %v", first.File, err)
	}
	_, err = e.svc.AppendNote(ctx, cc, notes.AppendArgs{Path: "big.md", Text: big})
	wantCode(t, err, contextd.ETooLarge, "1,000,000-byte limit")
	// The first entry lands after the leaf, as pi.appendEntry writes it.
	data, _ := json.Marshal(first.Append[0].Data)
	line, _ := json.Marshal(map[string]any{"type": "custom", "customType": "codex-context-note", "data": json.RawMessage(data),
		"id": "n0000001", "parentId": basicCall, "timestamp": "2026-07-07T16:38:26.000Z"})
	e.write(line, false)
	third, err := e.svc.AppendNote(ctx, coordinator.CallContext{SessionID: basicID, LeafID: "n0000001"}, notes.AppendArgs{Path: "big.md", Text: strings.Repeat("b", 400_000)})
	if err != nil || third.File.Bytes != 1_000_000 {
		t.Fatalf("third append: %+v %v, want 1,000,000 bytes (the first counted once)", third.File, err)
	}
	// A sibling call planned at the same leaf as the third, before the
	// third is in the file: the first (from the file) and the third
	// (planned) both count, and one byte more is refused.
	_, err = e.svc.AppendNote(ctx, coordinator.CallContext{SessionID: basicID, LeafID: "n0000001"}, notes.AppendArgs{Path: "big.md", Text: "c"})
	wantCode(t, err, contextd.ETooLarge, "1,000,000-byte limit")
	e.checkUnchanged()
}

// TestNotePlansLeaveSharedStateAlone: the note state of a leaf is kept
// for the next request (the Service's memo); a write planned while
// another is pending applies that one to its own copy. So a read at the
// same leaf, before Pi has written either entry, lists neither planned
// file, and the second plan still sees the first (600,000 + 600,000
// bytes refused, as in TestNoteWritesPlannedTogether).
func TestNotePlansLeaveSharedStateAlone(t *testing.T) {
	e := newEnv(t, contextd.ModeLocal, lineCall)
	ctx := t.Context()
	cc := coordinator.CallContext{SessionID: basicID, LeafID: basicCall}
	before, err := e.svc.ListNoteFiles(ctx, cc, notes.ListFilesByPrefixArgs{})
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("a", 600_000)
	if _, err := e.svc.AppendNote(ctx, cc, notes.AppendArgs{Path: "big.md", Text: big}); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.AppendNote(ctx, cc, notes.AppendArgs{Path: "big.md", Text: big})
	wantCode(t, err, contextd.ETooLarge, "1,000,000-byte limit")
	after, err := e.svc.ListNoteFiles(ctx, cc, notes.ListFilesByPrefixArgs{})
	if err != nil {
		t.Fatal(err)
	}
	if len(after.Files) != len(before.Files) {
		t.Fatalf("note files at %s after two planned appends: %+v, want the %d written ones only: %+v", basicCall, after.Files, len(before.Files), before.Files)
	}
	for _, f := range after.Files {
		if strings.HasSuffix(f.Path, "/big.md") {
			t.Fatalf("the planned big.md is listed before Pi wrote it: %+v", f)
		}
	}
	e.checkUnchanged()
}
