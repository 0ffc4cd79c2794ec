package coordinator_test

import (
	"encoding/json"
	"strings"
	"testing"

	"contextd"
	"contextd/coordinator"
)

// batchLine is one Pi message entry of the hand-built batch below.
func batchLine(t *testing.T, id, parent string, msg map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": parent, "timestamp": "2026-07-07T16:38:25.786Z", "message": msg})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// batchCall is a toolCall block of the hand-built batches below.
func batchCall(id, name string) map[string]any {
	return map[string]any{"type": "toolCall", "id": id, "name": name, "arguments": map[string]any{}}
}

// batchResult is a toolResult message of the hand-built batches below.
func batchResult(callID, name, text string) map[string]any {
	return map[string]any{"role": "toolResult", "toolCallId": callID, "toolName": name, "content": []map[string]any{{"type": "text", "text": text}}, "isError": false, "timestamp": 1783442308522}
}

// TestRolloverBatchNamesOtherCalls (docs/design.md §5.3.1 "After the whole
// batch"): a message calls notes, new_context and bash in one batch, and
// the two new_context calls of it join one rollover (Local, as in Tree).
// The rollover is settled after every result is written; the boundary the
// commit plans names the other two calls with the item ids of their
// results in the closed window, after the thread hint. The words are
// written down here by hand.
func TestRolloverBatchNamesOtherCalls(t *testing.T) {
	e := newEnv(t, contextd.ModeLocal, lineCall-1)
	ctx := t.Context()
	e.ids = []string{"rollover-1", basicWindow1, basicMarker1}
	e.write(batchLine(t, "a0000001", "6a739738", map[string]any{"role": "assistant", "content": []map[string]any{
		batchCall("c-notes", "notes"), batchCall("c-new-1", "new_context"), batchCall("c-bash", "bash"), batchCall("c-new-2", "new_context")},
		"api": "openai-codex-responses", "provider": "openai-codex", "model": "gpt-5.5", "stopReason": "toolUse", "timestamp": 1783442305786}), false)
	first, isNew, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: "a0000001"})
	if err != nil || !isNew {
		t.Fatalf("create: %+v %v %v", first, isNew, err)
	}
	var second coordinator.RolloverCreated
	second, isNew, err = e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: "a0000001"})
	if err != nil || isNew || !second.Merged || second.RolloverID != first.RolloverID {
		t.Fatalf("second new_context of the message: %+v new=%v %v, want it merged into %s", second, isNew, err, first.RolloverID)
	}
	// Settling before every result is written is refused (a rollover
	// never separates a call from its result).
	e.write(batchLine(t, "r0000001", "a0000001", batchResult("c-notes", "notes", "ok")), false)
	_, err = e.svc.SettleRollover(ctx, basicID, first.RolloverID, coordinator.SettleRequest{LeafID: "r0000001"})
	wantCode(t, err, contextd.EOpenToolCalls, "c-bash (bash)")
	e.write(batchLine(t, "r0000002", "r0000001", batchResult("c-new-1", "new_context", coordinator.RolloverToolResult)), false)
	e.write(batchLine(t, "r0000003", "r0000002", batchResult("c-bash", "bash", "built")), false)
	e.write(batchLine(t, "r0000004", "r0000003", batchResult("c-new-2", "new_context", coordinator.RolloverToolResult)), false)
	must[coordinator.SettleAnswer](t)(e.svc.SettleRollover(ctx, basicID, first.RolloverID, coordinator.SettleRequest{LeafID: "r0000004"}))
	a := must[coordinator.CommitAnswer](t)(e.svc.CommitRollover(ctx, basicID, first.RolloverID, coordinator.CommitRequest{}))
	if len(a.Append) != 1 {
		t.Fatalf("commit: %+v", a)
	}
	localHint := strings.Replace(basicHint, `"summary_item_id":"bae0cbce",`, "", 1)
	want := coordinator.BoundaryContent("/root", a.Window, localHint+"\n"+
		"The message that called new_context also called 2 other tools; their results are in the previous window ("+basicWindow0+"), read them with history read_item if you need them:\n"+
		"- notes: item r0000001\n"+
		"- bash: item r0000003")
	if a.Append[0].Content != want {
		t.Fatalf("boundary content:\n%s\nwant\n%s", a.Append[0].Content, want)
	}
	e.checkUnchanged()
}

// TestRolloverBatchFromRequest: the boundary names the other calls of the
// message whose new_context asked for the rollover, looked for from the
// last assistant message at or before the leaf of the request. Written
// by hand: a message calls notes, new_context and bash, their results
// follow, then the model answers in text (a0000002).
//   - Asked for at the new_context result r0000002 (the message's calls
//     ran in parallel, notes' result first): the boundary names notes
//     (item r0000001) and bash (item r0000003), although a later
//     assistant message is on the branch when it settles.
//   - Asked for by a command at a0000002 (the new_context call above was
//     not this rollover's; e.g. its rollover was aborted): the boundary
//     names no call.
func TestRolloverBatchFromRequest(t *testing.T) {
	for _, tc := range []struct {
		name, requestLeaf string
		batch             string
	}{
		{"tool request", "r0000002", "\nThe message that called new_context also called 2 other tools; their results are in the previous window (" + basicWindow0 + "), read them with history read_item if you need them:\n" +
			"- notes: item r0000001\n" +
			"- bash: item r0000003"},
		{"command request", "a0000002", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, contextd.ModeLocal, lineCall-1)
			ctx := t.Context()
			e.ids = []string{"rollover-1", basicWindow1, basicMarker1}
			e.write(batchLine(t, "a0000001", "6a739738", map[string]any{"role": "assistant", "content": []map[string]any{
				batchCall("c-notes", "notes"), batchCall("c-new", "new_context"), batchCall("c-bash", "bash")},
				"api": "openai-codex-responses", "provider": "openai-codex", "model": "gpt-5.5", "stopReason": "toolUse", "timestamp": 1783442305786}), false)
			e.write(batchLine(t, "r0000001", "a0000001", batchResult("c-notes", "notes", "ok")), false)
			e.write(batchLine(t, "r0000002", "r0000001", batchResult("c-new", "new_context", coordinator.RolloverToolResult)), false)
			e.write(batchLine(t, "r0000003", "r0000002", batchResult("c-bash", "bash", "built")), false)
			if tc.requestLeaf == "r0000002" {
				must[coordinator.RolloverCreated](t)(func() (coordinator.RolloverCreated, error) {
					c, _, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: tc.requestLeaf})
					return c, err
				}())
			}
			e.write(batchLine(t, "a0000002", "r0000003", map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": "Built."}},
				"api": "openai-codex-responses", "provider": "openai-codex", "model": "gpt-5.5", "stopReason": "stop", "timestamp": 1783442309786}), false)
			if tc.requestLeaf == "a0000002" {
				must[coordinator.RolloverCreated](t)(func() (coordinator.RolloverCreated, error) {
					c, _, err := e.svc.CreateRollover(ctx, basicID, coordinator.RolloverRequest{LeafID: tc.requestLeaf})
					return c, err
				}())
			}
			must[coordinator.SettleAnswer](t)(e.svc.SettleRollover(ctx, basicID, "rollover-1", coordinator.SettleRequest{LeafID: "a0000002"}))
			a := must[coordinator.CommitAnswer](t)(e.svc.CommitRollover(ctx, basicID, "rollover-1", coordinator.CommitRequest{}))
			if len(a.Append) != 1 {
				t.Fatalf("commit: %+v", a)
			}
			localHint := strings.Replace(basicHint, `"summary_item_id":"bae0cbce",`, "", 1)
			if want := coordinator.BoundaryContent("/root", a.Window, localHint+tc.batch); a.Append[0].Content != want {
				t.Fatalf("boundary content:\n%s\nwant\n%s", a.Append[0].Content, want)
			}
			e.checkUnchanged()
		})
	}
}
