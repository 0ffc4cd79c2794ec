package coordinator_test

// Finishing an interrupted Tree rollover (finish.go): tree-basic.jsonl's
// rollover cut short after its summary, its manifest or its note snapshot,
// with contextd restarted (state kept) or its state directory lost. POST
// …/windows must answer the missing entries so that, appended as Pi
// appends them, they are byte for byte the entries the uninterrupted
// rollover wrote (fixture lines 40-42: manifest, note snapshot, boundary
// with its thread hint), and the session then reports no incomplete
// rollover.

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"contextd"
	"contextd/coordinator"
)

// fixture ids, parents and timestamps of lines 40-42.
var finishLines = []struct {
	line             int
	id, parent, time string
}{
	{lineManifest, basicManifest, basicSummary, "2026-07-07T16:38:47.968Z"},
	{lineSnapshot, basicSnapshot, basicManifest, "2026-07-07T16:38:47.978Z"},
	{lineNext, basicNext, basicSnapshot, "2026-07-07T16:38:48.093Z"},
}

func TestRolloverFinishAfterCrash(t *testing.T) {
	ref := newEnv(t, contextd.ModeTree, len(fixtureLines(t)))
	wantLog := must[coordinator.RolloverLog](t)(ref.svc.Rollovers(t.Context(), basicID, basicNext))
	if len(wantLog.Rollovers) != 1 || wantLog.Rollovers[0].WindowNoteWrites == 0 {
		t.Fatalf("the uninterrupted rollover's log: %+v", wantLog.Rollovers)
	}
	for _, crash := range []int{lineSummary, lineManifest, lineSnapshot} {
		for _, lost := range []bool{false, true} {
			t.Run(fmt.Sprintf("after line %d, state lost %v", crash, lost), func(t *testing.T) {
				e := newEnv(t, contextd.ModeTree, lineOldLeaf)
				ctx := t.Context()
				e.ids = []string{"rollover-1", basicWindow1, basicMarker1}
				if _, _, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: basicCall, CommandContextReady: true}); err != nil {
					t.Fatal(err)
				}
				must[coordinator.SettleAnswer](t)(e.svc.SettleRollover(ctx, basicID, "rollover-1", coordinator.SettleRequest{LeafID: basicOldLeaf}))
				e.appendFixture(lineSummary)
				if crash > lineSummary {
					must[coordinator.CommitAnswer](t)(e.svc.CommitRollover(ctx, basicID, "rollover-1", coordinator.CommitRequest{SummaryEntryID: basicSummary}))
				}
				for n := lineSummary + 1; n <= crash; n++ {
					e.appendFixture(n)
				}
				if crash == lineSummary {
					// Before finishing, the log names the cut-short rollover.
					log := must[coordinator.RolloverLog](t)(e.svc.Rollovers(ctx, basicID, ""))
					if n := len(log.Rollovers); n != 1 || log.Rollovers[0].Mode != "tree" || log.Rollovers[0].State != "failed" ||
						log.Rollovers[0].WindowNoteWrites != wantLog.Rollovers[0].WindowNoteWrites || !strings.Contains(log.Rollovers[0].Reason, "/contextd finish") {
						t.Errorf("reset log before finishing: %+v", log.Rollovers)
					}
				}
				// contextd killed, restarted; its state directory lost or kept.
				e.close()
				if lost {
					if err := os.RemoveAll(filepath.Join(e.dir, "state")); err != nil {
						t.Fatal(err)
					}
				}
				e.open()
				if lost {
					// The extension registers again at session_start.
					if _, _, err := e.svc.Register(ctx, basicID, coordinator.RegisterRequest{SessionFile: e.file, Mode: "tree"}); err != nil {
						t.Fatal(err)
					}
					e.ids = []string{basicWindow1, basicMarker1}
				}
				w := must[coordinator.WindowsAnswer](t)(e.svc.Windows(ctx, basicID, coordinator.WindowsRequest{}))
				if want := map[bool]string{false: "rollover-1", true: ""}[lost]; w.RolloverID != want {
					t.Errorf("rollover_id %q, want %q", w.RolloverID, want)
				}
				var planned []coordinator.PlannedEntry
				planned = append(planned, w.Finish...)
				for _, b := range w.Append {
					display := b.Display
					d := b.Details
					planned = append(planned, coordinator.PlannedEntry{Type: b.Type, CustomType: b.CustomType, Content: b.Content, Display: &display, Details: &d})
				}
				missing := finishLines[crash-lineSummary:]
				if len(planned) != len(missing) || len(w.Append) != 1 {
					t.Fatalf("answered %d entries (%d boundaries), want %d", len(planned), len(w.Append), len(missing))
				}
				for i, m := range missing {
					got := piLine(t, planned[i], m.id, m.parent, m.time)
					if !bytes.Equal(got, e.lines[m.line-1]) {
						t.Errorf("entry for line %d:\n%s\nwant (the uninterrupted rollover's)\n%s", m.line, got, e.lines[m.line-1])
					}
					e.write(got, false)
				}
				st := must[coordinator.SessionState](t)(e.svc.SessionStateOf(ctx, basicID))
				if st.Rollover != nil || st.Incomplete != nil || st.Archives != 1 || st.Window == nil || st.Window.CurrentWindowID != basicWindow1 {
					t.Errorf("after the entries: rollover %+v incomplete %+v archives %d window %+v", st.Rollover, st.Incomplete, st.Archives, st.Window)
				}
				if !lost {
					if info := must[coordinator.RolloverInfo](t)(e.svc.GetRollover(ctx, basicID, "rollover-1")); info.State != "completed" {
						t.Errorf("rollover-1: %+v", info)
					}
				}
				// The reset log tells the same rollover as the uninterrupted
				// file's: Tree, completed, window 0 → 1, the same note counts.
				log := must[coordinator.RolloverLog](t)(e.svc.Rollovers(ctx, basicID, ""))
				if len(log.Rollovers) != 1 {
					t.Fatalf("reset log: %+v", log.Rollovers)
				}
				got, want := log.Rollovers[0], wantLog.Rollovers[0]
				if got.Mode != "tree" || got.State != "completed" || got.From != want.From || *got.To != *want.To || got.WindowNoteWrites != want.WindowNoteWrites ||
					got.NoteFiles != want.NoteFiles || got.NoteBytes != want.NoteBytes || got.ManifestEntryID != want.ManifestEntryID || got.SummaryEntryID != want.SummaryEntryID {
					t.Errorf("reset log entry:\n%+v\nwant as the uninterrupted rollover's:\n%+v", got, want)
				}
				checkArchived(t, e)
				e.checkUnchanged()
			})
		}
	}
}
