package coordinator_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"contextd/coordinator"
)

// Windows on a mixed branch (docs/modes.md "Windows on a mixed branch"):
// Local boundaries and Tree rollovers on one branch. The expected slices
// are computed by hand from the crafted files below.

func windowKey(id string) *coordinator.MessageKey {
	return &coordinator.MessageKey{Role: "custom", CustomType: "codex-context-window", WindowID: id}
}

// summaryKey names craftedSummary(id, …, from): its text is "summary " + id.
func summaryKey(id, from string) *coordinator.MessageKey {
	h := sha256.Sum256([]byte("summary " + id))
	return &coordinator.MessageKey{Role: "branchSummary", FromID: from, SummarySHA256: hex.EncodeToString(h[:])}
}

// sliceOf is the part of a /context answer this file checks.
type sliceOf struct {
	Start   *coordinator.MessageKey
	From    string
	Drop    []coordinator.MessageKey
	Hidden  []string
	Needs   bool
	Current string
}

func sliceAnswer(a coordinator.ContextAnswer) sliceOf {
	cur := ""
	if a.Window != nil {
		cur = a.Window.CurrentWindowID
	}
	return sliceOf{a.Projection.StartAt, a.SliceFromEntryID, a.Projection.Drop, hiddenIDs(a), a.NeedsBoundary, cur}
}

// TestContextMixedBranch: a session that ran window 0 in Local mode,
// opened window 1 with a Local new_context (boundary b1 appended
// linearly), switched to Tree and rolled window 1 over (Pi navigated to
// b1: leaf a1, summary s1, manifest m1, snapshot n1, boundary b2). Tree
// and Local both start the provider context at the last boundary of either
// kind: window 0 (r, b0, a1) is never sent again.
func TestContextMixedBranch(t *testing.T) {
	lines := []string{
		craftedHeader,
		craftedMessage("r", "", "user", "go local"),
		craftedBoundary("b0", "r", "w0", "", 0),
		craftedMessage("a1", "b0", "assistant", "window-zero-data"),
		craftedBoundary("b1", "a1", "w1", "w0", 1),
		craftedMessage("a2", "b1", "assistant", "window one"),
		craftedMessage("u3", "a2", "user", "after switch"),
		craftedMessage("a3", "u3", "assistant", "calls new_context"),
		craftedSummary("s1", "a1", "a3"),
		craftedManifest("m1", "s1", "w1", "b1", "s1", "a3", "a1"),
		craftedSnapshot("n1", "m1"),
		craftedBoundary("b2", "n1", "w2", "w1", 2),
		craftedMessage("u4", "b2", "user", "in window two"),
		// The person navigated back into archived window 1 (leaf a2)
		// with /tree; the extension appended a fresh boundary there.
		craftedBoundary("b3", "a2", "w3", "w2", 3),
		craftedMessage("u5", "b3", "user", "continue from window one"),
	}
	for _, c := range []struct {
		name, mode, leaf string
		lines            int // the file as Pi had written it then
		want             sliceOf
	}{
		// Turn 3 of the bug report: the first Tree request after the
		// switch starts at the Local boundary b1, not at window 0.
		{"tree after the switch", "tree", "u3", 8, sliceOf{windowKey("w1"), "b1", []coordinator.MessageKey{}, []string{}, false, "w1"}},
		// Window 2: the walk back from b2 passes n1 and m1 (the cut of
		// window 1) to its summary s1 and stops at a1, a message of window
		// 0: start_at s1, which Tree hides, so drop names it. Sent: b2,
		// u4. Before this rule Tree sent r, b0 and a1 here.
		{"tree window 2", "tree", "u4", len(lines), sliceOf{summaryKey("s1", "a3"), "s1", []coordinator.MessageKey{*summaryKey("s1", "a3")}, []string{"s1"}, false, "w2"}},
		{"local window 2", "local", "u4", len(lines), sliceOf{windowKey("w2"), "b2", []coordinator.MessageKey{}, []string{}, false, "w2"}},
		// The fresh boundary b3 continues archived window 1 the person
		// navigated into: Tree starts at b1 (a2 stays sent), Local at b3.
		{"tree navigated into window 1", "tree", "u5", len(lines), sliceOf{windowKey("w1"), "b1", []coordinator.MessageKey{}, []string{}, false, "w3"}},
		{"local navigated into window 1", "local", "u5", len(lines), sliceOf{windowKey("w3"), "b3", []coordinator.MessageKey{}, []string{}, false, "w3"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openSession(t, []byte(strings.Join(lines[:c.lines], "\n")+"\n"), c.mode)
			if diff := cmp.Diff(c.want, sliceAnswer(s.context(t, c.leaf))); diff != "" {
				t.Errorf("context at %s (-want +got):\n%s", c.leaf, diff)
			}
		})
	}
}

// adoptedBoundary is craftedBoundary for window 0 adopting the conversation
// from start (details.contextManagement.startEntryId).
func adoptedBoundary(id, parent, window, start string) string {
	b, _ := json.Marshal(map[string]any{"type": "custom_message", "customType": "codex-context-window", "content": "<context_window>" + window + "</context_window>",
		"display": true, "details": map[string]any{"protocol": 1, "id": "marker-" + id, "contextManagement": map[string]any{
			"protocol": 1, "kind": "window", "firstWindowId": window, "currentWindowId": window, "windowNumber": 0, "startEntryId": start}},
		"id": id, "parentId": parent, "timestamp": "2026-07-07T10:00:01.000Z"})
	return string(b)
}

// TestContextAdoptedTreeRollover: window 0 adopted the conversation h1, h2
// (startEntryId h1) and was rolled over in Tree mode: Pi navigated to its
// boundary b0, so h1 and h2 stay on the branch before the summary s0. In
// window 0 Tree sends the whole branch (start_at null, as before
// adoption); in window 1 it starts at b1, so the adopted conversation
// leaves the model's context like any archived window (its summary is
// hidden, and history reaches both).
func TestContextAdoptedTreeRollover(t *testing.T) {
	lines := []string{
		craftedHeader,
		craftedMessage("h1", "", "user", "earlier request"),
		craftedMessage("h2", "h1", "assistant", "earlier answer"),
		adoptedBoundary("b0", "h2", "w0", "h1"),
		craftedMessage("u1", "b0", "user", "in window zero"),
		craftedMessage("a1", "u1", "assistant", "calls new_context"),
		craftedSummary("s0", "h2", "a1"),
		craftedManifest("m0", "s0", "w0", "b0", "s0", "a1", "h2"),
		craftedSnapshot("n0", "m0"),
		craftedBoundary("b1", "n0", "w1", "w0", 1),
		craftedMessage("u2", "b1", "user", "in window one"),
	}
	before := openSession(t, []byte(strings.Join(lines[:6], "\n")+"\n"), "tree")
	if diff := cmp.Diff(sliceOf{nil, "", []coordinator.MessageKey{}, []string{}, false, "w0"}, sliceAnswer(before.context(t, "a1"))); diff != "" {
		t.Errorf("window 0 (-want +got):\n%s", diff)
	}
	s := openSession(t, []byte(strings.Join(lines, "\n")+"\n"), "tree")
	// From b1 back over n0 and m0 to s0, stopped by h2: start_at s0,
	// dropped; sent: b1, u2.
	if diff := cmp.Diff(sliceOf{summaryKey("s0", "a1"), "s0", []coordinator.MessageKey{*summaryKey("s0", "a1")}, []string{"s0"}, false, "w1"}, sliceAnswer(s.context(t, "u2"))); diff != "" {
		t.Errorf("window 1 (-want +got):\n%s", diff)
	}
}
