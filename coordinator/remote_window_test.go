package coordinator

import (
	"path/filepath"
	"strings"
	"testing"

	"contextd"
)

// TestRemoteWindowZeroAdoption: in Remote mode POST …/windows plans window 0
// by the adoption rule from the file alone: a branch with earlier turns
// begins at its first entry (h0000001), a session whose file Pi has not
// written yet begins at its boundary; the backend's thread hint the
// extension passes is in the boundary; a branch that has a boundary is
// refused (Remote's next windows are the extension's), and the index
// never holds the Remote file.
func TestRemoteWindowZeroAdoption(t *testing.T) {
	svc, dir := localService(t, map[string][]byte{"adopt.jsonl": adoptedFile()})
	ctx := t.Context()
	reg := func(sid, file string) {
		t.Helper()
		if _, _, err := svc.Register(ctx, sid, RegisterRequest{SessionFile: file, Mode: "remote"}); err != nil {
			t.Fatal(err)
		}
	}
	reg("adopt", "adopt.jsonl")
	const hint = "Recent notes (up to 5, most-recent first):\n- /root/notes/plan.md (1 lines, 4 UTF-8 bytes)"
	w0, err := svc.Windows(ctx, "adopt", WindowsRequest{ThreadHint: hint})
	if err != nil {
		t.Fatal(err)
	}
	want := WindowIdentity{Protocol: 1, Kind: "window", FirstWindowID: "id-1", CurrentWindowID: "id-1", StartEntryID: "h0000001"}
	if !w0.First || w0.Window != want || len(w0.Append) != 1 || w0.Append[0].Details.ContextManagement != want {
		t.Fatalf("window 0: %+v", w0)
	}
	if c := w0.Append[0].Content; c != BoundaryContent("/root", want, hint) || !strings.Contains(c, "\n"+hint+"\n</context_window>") {
		t.Errorf("boundary content:\n%s", c)
	}
	// At a leaf before the first message Pi sends: nothing to adopt.
	if w, err := svc.Windows(ctx, "adopt", WindowsRequest{LeafID: "h0000001"}); err != nil || w.Window.StartEntryID != "" {
		t.Errorf("at the model_change: %+v %v", w.Window, err)
	}
	if _, err := svc.Windows(ctx, "adopt", WindowsRequest{LeafID: "nope"}); contextd.ErrorCode(err) != contextd.ENotFound {
		t.Errorf("unknown leaf: %v, want ENotFound", err)
	}
	// A new session: Pi has not written the file.
	reg("new", "new.jsonl")
	if w, err := svc.Windows(ctx, "new", WindowsRequest{}); err != nil || !w.First || w.Window.StartEntryID != "" || w.Window.WindowNumber != 0 {
		t.Errorf("new session: %+v %v", w, err)
	}
	// With window 0 in the file, the next window is not contextd's.
	appendPlanned(t, filepath.Join(dir, "adopt.jsonl"), "b0", "h0000005", w0.Append[0])
	if _, err := svc.Windows(ctx, "adopt", WindowsRequest{}); contextd.ErrorCode(err) != contextd.EConflict {
		t.Errorf("branch with a boundary: %v, want EConflict", err)
	}
	// The Remote file was parsed, not indexed: the index knows no session.
	if ss := svc.Index.Sessions(); len(ss) != 0 {
		t.Errorf("the index holds %d sessions, want none", len(ss))
	}
}
