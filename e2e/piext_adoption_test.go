package e2e

// Adoption with real Pi (docs/design.md §4 "Adoption"; case-18 of the bug
// reports, copied as this test): a session written without context
// management (CONTEXTD_MODE=off) is continued with `pi --continue` and the
// extension on. Every resumed request must send the model the messages a
// run without the extension sends (the window-0 boundary aside), and
// history must reach the first turn's fact.

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// adoptionFact is what the first turn's bash call prints.
const adoptionFact = "secret-fact-4711"

// adoptionScripts: before the resume, turn 1 runs bash and answers, turns
// 2..earlier answer with text; after it (a new Pi process, whose faux
// provider counts steps from 0), one answer, then a history
// search_contents call for the fact and a last answer.
func adoptionScripts(earlier int) (before, after []step) {
	before = []step{tool("bash", map[string]any{"command": "printf 'secret-%s\\n' fact-4711"}), {Text: "the fact is noted"}}
	for i := 2; i <= earlier; i++ {
		before = append(before, step{Text: fmt.Sprintf("answer %d", i)})
	}
	return before, []step{{Text: "resumed answer"}, tool("history", map[string]any{"action": "search_contents", "query": adoptionFact}), {Text: "done"}}
}

// adoptionRun runs the scenario on a new rig: earlier prompts with
// CONTEXTD_MODE=off, then `pi --continue` with CONTEXTD_MODE=resumeMode
// ("off": the run without the extension) and two prompts. It returns the
// rig, the resumed Pi and the provider requests it made.
func adoptionRun(t *testing.T, v piVersion, resumeMode string, earlier int) (*rig, *piProc, []request) {
	t.Helper()
	before, after := adoptionScripts(earlier)
	r := newRig(t, v, "off", before)
	r.startContextd()
	p := r.startPi()
	p.prompt("find the fact and remember it", 1)
	for i := 2; i <= earlier; i++ {
		// A text answer starts no further run: wait for this prompt's
		// agent_settled only (prompt's quiet period cost 20 s per run).
		p.send(map[string]any{"type": "prompt", "message": fmt.Sprintf("question %d", i)})
		p.waitFor(fmt.Sprintf("%d agent_settled", i), 60*time.Second, func(evs []map[string]any) bool { return count(evs, "agent_settled") >= i })
	}
	p.stop()
	n := len(r.requests())
	b, _ := json.Marshal(after)
	if err := os.WriteFile(r.script, b, 0o600); err != nil {
		t.Fatal(err)
	}
	r.env = []string{"CONTEXTD_MODE=" + resumeMode}
	p = r.startPi("--continue")
	p.prompt("what was the fact?", 1)
	p.prompt("search for it", 2)
	return r, p, r.requests()[n:]
}

// shape is a provider message without the ids Pi and the faux provider
// mint per run: role, text, tool names and arguments, tool results' text.
func shape(m pmsg) string {
	var b strings.Builder
	b.WriteString(m.Role + ":")
	for _, c := range m.blocks() {
		switch c.Type {
		case "text":
			b.WriteString(" text " + c.Text)
		case "toolCall":
			args, _ := json.Marshal(c.Arguments)
			b.WriteString(" call " + c.Name + string(args))
		default:
			b.WriteString(" " + c.Type)
		}
	}
	return b.String()
}

// isBoundary reports whether m is a window boundary as the model gets it.
func isBoundary(m pmsg) bool {
	return m.Role == "user" && strings.HasPrefix(m.text(), "<context_window_guidance>")
}

// TestPiExtensionAdoption: 50 earlier turns adopted in Local mode (3 in
// Tree mode; both send the whole branch while window 0 is current):
// request by request, the resumed requests
// hold the messages of the run without the extension plus the window-0
// boundary; window 0 begins at the branch's first entry and lists every
// earlier item; the model's history search_contents finds the first
// turn's bash output.
func TestPiExtensionAdoption(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, tc := range []struct {
			mode    string
			earlier int
		}{{"local", 50}, {"tree", 3}} {
			t.Run(tc.mode, func(t *testing.T) {
				_, refPi, refReqs := adoptionRun(t, v, "off", tc.earlier)
				refPi.stop()
				r, p, reqs := adoptionRun(t, v, tc.mode, tc.earlier)
				for step := 0; step <= 1; step++ {
					want, got := turn(t, refReqs, step).conversation(), turn(t, reqs, step).conversation()
					var kept []string
					nb := 0
					for _, m := range got {
						if isBoundary(m) {
							nb++
							continue
						}
						kept = append(kept, shape(m))
					}
					var ws []string
					for _, m := range want {
						ws = append(ws, shape(m))
					}
					if nb != 1 || strings.Join(kept, "\n") != strings.Join(ws, "\n") {
						t.Errorf("step %d: %d boundaries; messages without them:\n%s\nwant (no extension):\n%s", step, nb, strings.Join(kept, "\n"), strings.Join(ws, "\n"))
					}
				}
				// The boundary of window 0 says where its window begins.
				_, sid, es := r.session()
				bs := boundaries(es)
				if len(bs) != 1 {
					t.Fatalf("boundaries = %d, want 1", len(bs))
				}
				var d struct {
					ContextManagement struct {
						StartEntryID string `json:"startEntryId"`
					} `json:"contextManagement"`
				}
				if err := json.Unmarshal(bs[0].Details, &d); err != nil || d.ContextManagement.StartEntryID != es[0].ID {
					t.Errorf("window 0 startEntryId = %q, want the branch's first entry %s", d.ContextManagement.StartEntryID, es[0].ID)
				}
				// The model's search found the first turn's bash output.
				var res string
				for _, e := range es {
					if e.Message != nil && e.Message.Role == "toolResult" && strings.Contains(e.Message.text(), `"tool_name"`) {
						res = e.Message.text()
					}
				}
				if !strings.Contains(res, `"tool_name":"bash"`) || !strings.Contains(res, adoptionFact) {
					t.Errorf("history search_contents result = %s, want the bash item holding %s", res, adoptionFact)
				}
				var lw struct {
					Windows []struct {
						WindowID  string `json:"window_id"`
						ItemCount int    `json:"item_count"`
					} `json:"windows"`
				}
				r.api("POST", "/alpha/history/v2/list_windows", map[string]any{"context": map[string]any{"session_id": sid}}, &lw)
				// Earlier: per turn a user message and an answer, plus
				// turn 1's call and result; resumed: 2 prompts, 3 answers
				// (one a call) and the call's result.
				wantItems := 2*tc.earlier + 2 + 6
				if w, _ := bs[0].window(); len(lw.Windows) != 1 || lw.Windows[0].WindowID != w.CurrentWindowID || lw.Windows[0].ItemCount != wantItems {
					t.Errorf("list_windows = %+v, want one window %s of %d items", lw.Windows, w.CurrentWindowID, wantItems)
				}
				checkClean(t, p, reqs)
			})
		}
	})
}
