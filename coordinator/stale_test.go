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
// answer since the settle, or with the Tree summary in the file (finished,
// not dropped), the new rollover is refused with rollover_pending.
func TestRolloverSuperseded(t *testing.T) {
	ctx := t.Context()
	// answered is an assistant message after the leaf at settle
	// (42a59a75) calling new_context again.
	const answered = `{"type":"message","id":"again-1","parentId":"42a59a75","timestamp":"2026-07-07T16:38:40.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"call_again","name":"new_context","arguments":{}}],"api":"faux","provider":"faux","model":"faux-1","usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}},"stopReason":"toolUse","timestamp":1783442320000}}`
	for _, tc := range []struct {
		name      string
		mode      contextd.Mode
		commit    bool // commit before the restart
		summary   bool // Tree: the branch summary is in the file
		answer    bool // the model answered after the settle
		supersede bool
	}{
		{"local settled, model answered", contextd.ModeLocal, false, false, true, true},
		{"local committed, no boundary, model answered", contextd.ModeLocal, true, false, true, true},
		{"tree settled, no summary, model answered", contextd.ModeTree, false, false, true, true},
		{"local settled, no model answer since", contextd.ModeLocal, false, false, false, false},
		{"tree settled, summary in the file", contextd.ModeTree, false, true, true, false},
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
			if tc.summary {
				e.appendFixture(lineSummary)
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
