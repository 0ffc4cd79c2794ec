package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestPiExtensionInputDuringSummarization is the closest headless test of
// two interactive-only behaviours of a Tree rollover (RPC mode; Pi's RPC
// docs: getEditorText() returns "" and setEditorText emits an
// extension_ui_request "set_editor_text"):
//   - input sent while the rollover's summarization runs (an RPC prompt,
//     as a user pressing Enter) lands after the new boundary: the session
//     file holds boundary → ... → that user message on one branch, and the
//     request that answers it starts at the new boundary;
//   - the rollover never writes the editor: headless the saved text is ""
//     and the extension restores only non-empty text, so no
//     set_editor_text request is emitted (the save/restore order itself is
//     covered by extension/test/rollover.test.ts with fakes).
func TestPiExtensionInputDuringSummarization(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "tree", []step{tool("new_context", nil), {Text: "new window"}, {Text: "answered the typed input"}})
		hold := r.holdSummary()
		r.startContextd()
		p := r.startPi()
		p.send(map[string]any{"type": "prompt", "message": "roll over"})
		hold.waitStarted(t, p)
		p.send(map[string]any{"type": "prompt", "message": "typed during summary", "streamingBehavior": "followUp"})
		time.Sleep(300 * time.Millisecond)
		hold.release(t)
		p.waitFor("the typed input's answer", 60*time.Second, func([]map[string]any) bool {
			for _, q := range r.requests() {
				if q.Kind == "turn" && q.Step == 2 {
					return true
				}
			}
			return false
		})
		p.waitSettled(count(p.snapshot(), "agent_start"))
		_, _, es := r.session()
		bs := boundaries(es)
		if len(bs) != 2 {
			t.Fatalf("boundaries = %d, want 2", len(bs))
		}
		var typed entry
		for _, e := range es {
			if e.Message != nil && e.Message.Role == "user" && strings.Contains(e.Message.text(), "typed during summary") {
				typed = e
			}
		}
		if typed.ID == "" {
			t.Fatalf("the typed input is not in the session file")
		}
		onBranch := false
		for _, e := range chain(es, typed.ID) {
			if e.ID == bs[1].ID {
				onBranch = true
			}
		}
		if !onBranch {
			t.Errorf("the typed input %s is not after the new boundary %s", typed.ID, bs[1].ID)
		}
		conv := turn(t, r.requests(), 2).conversation()
		if len(conv) == 0 || !strings.Contains(conv[0].text(), "Current context window id: "+windowOf(t, bs[1]).CurrentWindowID) {
			t.Errorf("the request answering the typed input does not start at the new boundary")
		}
		for _, e := range p.snapshot() {
			if e["type"] == "extension_ui_request" && e["method"] == "set_editor_text" {
				t.Errorf("the rollover wrote the editor headless: %v", e)
			}
		}
		checkClean(t, p, r.requests())
	})
}
