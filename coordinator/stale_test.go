package coordinator_test

import (
	"testing"

	"contextd"
	"contextd/coordinator"
)

// TestRolloverSuperseded (coordinator/stale.go): a rollover the extension
// gave up on (its commit cut short by a contextd restart) no longer
// refuses every later new_context. Local settled, Local committed with
// no boundary in the file, and Tree settled with no summary: once the
// model has answered after the leaf at settle, a new rollover on that
// branch aborts the old one (SupersededReason) and opens. Without a model
// answer since the settle the new rollover is refused with
// rollover_pending. A Tree rollover whose summary is in the file is
// TestRolloverSupersededOffItsBranch's.
func TestRolloverSuperseded(t *testing.T) {
	ctx := t.Context()
	// answered is an assistant message after the leaf at settle
	// (42a59a75) calling new_context again.
	const answered = `{"type":"message","id":"again-1","parentId":"42a59a75","timestamp":"2026-07-07T16:38:40.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_again","name":"new_context","arguments":{}}],"api":"faux","provider":"faux","model":"faux-1","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1783442320000}}`
	for _, tc := range []struct {
		name      string
		mode      contextd.Mode
		commit    bool // commit before the restart
		answer    bool // the model answered after the settle
		supersede bool
	}{
		{"local settled, model answered", contextd.ModeLocal, false, true, true},
		{"local committed, no boundary, model answered", contextd.ModeLocal, true, true, true},
		{"tree settled, no summary, model answered", contextd.ModeTree, false, true, true},
		{"local settled, no model answer since", contextd.ModeLocal, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.mode, lineCall)
			e.ids = []string{"rollover-1", basicWindow1, basicMarker1}
			ready := tc.mode == contextd.ModeTree
			must[coordinator.RolloverCreated](t)(mustCreate(e, basicCall, ready))
			e.appendFixture(lineOldLeaf)
			must[coordinator.SettleAnswer](t)(e.svc.SettleRollover(ctx, basicID, "rollover-1", coordinator.SettleRequest{LeafID: basicOldLeaf}))
			if tc.commit {
				must[coordinator.CommitAnswer](t)(e.svc.CommitRollover(ctx, basicID, "rollover-1", coordinator.CommitRequest{}))
			}
			leaf := basicOldLeaf
			if tc.answer {
				e.write([]byte(answered), false)
				leaf = "again-1"
			}
			e.ids = []string{"rollover-2"}
			c, isNew, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: leaf, CommandContextReady: ready})
			old := must[coordinator.RolloverInfo](t)(e.svc.GetRollover(ctx, basicID, "rollover-1"))
			if !tc.supersede {
				if contextd.ErrorCode(err) != contextd.ERolloverPending || old.State == "aborted" {
					t.Fatalf("create: %+v %v; old rollover %s; want rollover_pending and the old one open", c, err, old.State)
				}
				return
			}
			if err != nil || !isNew || c.RolloverID != "rollover-2" || c.Rollover.BoundaryEntryID != basicBoundary || c.Rollover.Window.WindowNumber != 0 {
				t.Fatalf("create: %+v new=%v %v; want rollover-2 closing window 0", c, isNew, err)
			}
			if old.State != "aborted" || old.Reason != coordinator.SupersededReason {
				t.Errorf("old rollover %s (%q), want aborted with SupersededReason", old.State, old.Reason)
			}
			e.checkUnchanged()
		})
	}
}

func mustCreate(e *env, leaf string, ready bool) (coordinator.RolloverCreated, error) {
	c, _, err := e.svc.CreateRollover(e.t.Context(), basicID, coordinator.RolloverRequest{LeafID: leaf, CommandContextReady: ready})
	return c, err
}

// TestRolloverSupersededOffItsBranch (coordinator/stale.go): a Tree
// rollover whose branch summary is in the file (committed, or settled when
// contextd died before the commit) and whose planned entries never reached
// the summary's branch (the person moved the leaf with /tree while it ran, so Pi wrote
// them, or nothing, on another branch) no longer refuses every later
// new_context. A new rollover requested on a branch that does not hold
// the summary aborts it (SupersededOffBranchReason) and opens; the summary
// stays in the file, where /tree still shows it. On the summary's own
// branch the rollover is still finished, not dropped: rollover_pending.
func TestRolloverSupersededOffItsBranch(t *testing.T) {
	ctx := t.Context()
	// call is an assistant message calling new_context, child of parent.
	call := func(id, parent string) []byte {
		return []byte(`{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-07-07T16:38:50.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_` + id + `","name":"new_context","arguments":{}}],"api":"faux","provider":"faux","model":"faux-1","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1783442330000}}`)
	}
	for _, tc := range []struct {
		name      string
		settled   bool   // contextd died before the commit: the rollover stays settled
		planned   string // parent of the planned entries Pi wrote; "" when none were written
		leaf      string // parent of the new new_context call
		supersede bool
		window    int // the window the new rollover closes
	}{
		// /tree moved the leaf back to the tool result before the
		// extension appended: the manifest, snapshot and boundary are a
		// sibling branch of the summary; the model goes on in window 1 there.
		{"planned entries on a sibling branch", false, basicOldLeaf, "next-off", true, 1},
		// Nothing planned was written; the person went back with /tree
		// and the model called new_context again in window 0.
		{"nothing written, the person moved away", false, "", basicOldLeaf, true, 0},
		// contextd died during the summary (no commit); the person went
		// back with /tree and the model called new_context again.
		{"settled, summary in the file, the person moved away", true, "", basicOldLeaf, true, 0},
		// The person typed under the summary (contextd was down): the
		// rollover is finished there (/contextd finish), not dropped.
		{"nothing written, the leaf under the summary", false, "", basicSummary, false, 0},
		{"settled, the leaf under the summary", true, "", basicSummary, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, contextd.ModeTree, lineCall)
			e.ids = []string{"rollover-1", basicWindow1, basicMarker1}
			must[coordinator.RolloverCreated](t)(mustCreate(e, basicCall, true))
			e.appendFixture(lineOldLeaf)
			must[coordinator.SettleAnswer](t)(e.svc.SettleRollover(ctx, basicID, "rollover-1", coordinator.SettleRequest{LeafID: basicOldLeaf}))
			e.appendFixture(lineSummary)
			want := "committed"
			var commit coordinator.CommitAnswer
			if tc.settled {
				want = "settled"
			} else {
				commit = must[coordinator.CommitAnswer](t)(e.svc.CommitRollover(ctx, basicID, "rollover-1", coordinator.CommitRequest{SummaryEntryID: basicSummary}))
			}
			leaf := tc.leaf
			if tc.planned != "" {
				e.write(piLine(t, commit.Append[0], "man-off", tc.planned, "2026-07-07T16:38:47.968Z"), false)
				e.write(piLine(t, commit.Append[1], "snap-off", "man-off", "2026-07-07T16:38:47.978Z"), false)
				e.write(piLine(t, commit.Append[2], "next-off", "snap-off", "2026-07-07T16:38:48.093Z"), false)
			}
			e.write(call("again-1", leaf), false)
			e.ids = []string{"rollover-2"}
			c, isNew, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: "again-1", CommandContextReady: true})
			old := must[coordinator.RolloverInfo](t)(e.svc.GetRollover(ctx, basicID, "rollover-1"))
			if !tc.supersede {
				if contextd.ErrorCode(err) != contextd.ERolloverPending || old.State != want {
					t.Fatalf("create: %+v %v; old rollover %s; want rollover_pending and the old one %s", c, err, old.State, want)
				}
				e.checkUnchanged()
				return
			}
			if err != nil || !isNew || c.RolloverID != "rollover-2" || c.Rollover.Window.WindowNumber != tc.window {
				t.Fatalf("create: %+v new=%v %v; want rollover-2 closing window %d", c, isNew, err, tc.window)
			}
			if old.State != "aborted" || old.Reason != coordinator.SupersededOffBranchReason {
				t.Errorf("old rollover %s (%q), want aborted with SupersededOffBranchReason", old.State, old.Reason)
			}
			e.checkUnchanged()
		})
	}
}
