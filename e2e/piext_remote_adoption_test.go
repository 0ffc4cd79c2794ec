package e2e

// Adoption in Remote mode (docs/design.md §4 "Adoption"): a conversation
// held on the Codex transport without context management is continued
// with `pi --continue` in Remote mode. Window 0 is contextd's plan (from the
// file alone: startEntryId, the branch's first entry), so the next
// Responses request still carries the earlier turns; the person is told
// in one sentence.

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestPiExtensionRemoteAdoption(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		codex := newFakeCodex(t)
		resp := newFakeResponses(t, [][]map[string]any{
			{textItem(0, "noted: the port is 8443")}, // without context management
			{textItem(1, "it was 8443")},             // after adoption
		})
		r := codexRig(t, v, resp.srv.URL)
		r.startContextd("--codex-base-url", codex.srv.URL)
		base := len(r.env)
		r.env = append(r.env, "CONTEXTD_MODE=off")
		p := r.startPi()
		p.prompt("remember that the port is 8443", 1)
		p.stop()
		r.env = r.env[:base] // Remote mode, the rig's
		p = r.startPi("--continue")
		defer p.kill()
		p.prompt("which port was it?", 1)

		reqs := resp.requests()
		if len(reqs) != 2 {
			t.Fatalf("Responses requests = %d, want 2; stderr:\n%s", len(reqs), p.stderr.String())
		}
		// The request after adoption: the earlier turn as it was sent
		// before, its answer, window 0's boundary, the new prompt.
		before, after := conversationItems(reqs[0]), conversationItems(reqs[1])
		if len(before) != 1 || len(after) != 4 {
			t.Fatalf("conversation items: before %d %s\nafter %d %s", len(before), mustJSON(before), len(after), mustJSON(after))
		}
		if mustJSON(after[0]) != mustJSON(before[0]) {
			t.Errorf("the earlier prompt changed:\n got %s\nwant %s", mustJSON(after[0]), mustJSON(before[0]))
		}
		if s := mustJSON(after[1]); after[1]["role"] != "assistant" || !strings.Contains(s, "noted: the port is 8443") {
			t.Errorf("item 1 = %s, want the earlier answer", s)
		}
		if s := mustJSON(after[2]); after[2]["role"] != "user" || !strings.Contains(s, "\\u003ccontext_window_guidance\\u003e") && !strings.Contains(s, "<context_window_guidance>") {
			t.Errorf("item 2 = %.300s, want window 0's boundary", s)
		}
		if s := mustJSON(after[3]); !strings.Contains(s, "which port was it?") {
			t.Errorf("item 3 = %s, want the new prompt", s)
		}

		// Window 0 begins at the branch's first entry and holds the
		// backend's thread hint, which contextd rendered.
		_, _, es := r.session()
		bs := boundaries(es)
		if len(bs) != 1 {
			t.Fatalf("boundaries = %d, want 1", len(bs))
		}
		var d struct {
			ContextManagement struct {
				StartEntryID string `json:"startEntryId"`
				WindowNumber int    `json:"windowNumber"`
			} `json:"contextManagement"`
		}
		if err := json.Unmarshal(bs[0].Details, &d); err != nil || d.ContextManagement.StartEntryID != es[0].ID || d.ContextManagement.WindowNumber != 0 {
			t.Errorf("window 0 = %s, want startEntryId %s", bs[0].Details, es[0].ID)
		}
		var content string
		_ = json.Unmarshal(bs[0].Content, &content)
		if !strings.Contains(content, "\n- /root/notes/remote.md (1 lines, 7 UTF-8 bytes)\n</context_window>") {
			t.Errorf("boundary content lacks the backend's hint:\n%s", content)
		}
		told := 0
		for _, n := range p.notices("info") {
			if strings.Contains(n, "earlier turns stay in the model's context as window 0") {
				told++
			}
		}
		if told != 1 {
			t.Errorf("adoption notices = %d, want 1; info: %q", told, p.notices("info"))
		}
		if n := p.notices("error"); len(n) != 0 {
			t.Errorf("UI errors: %q", n)
		}
	})
}
