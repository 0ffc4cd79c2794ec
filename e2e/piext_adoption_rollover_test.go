package e2e

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestPiExtensionAdoptionTreeRollover: a session written without context
// management (two earlier turns, the first printing adoptionFact) is
// continued in Tree mode, so window 0 adopts the conversation
// (startEntryId); the model then calls new_context. Pi's navigation goes
// to window 0's boundary, so the earlier turns stay on the branch, but
// window 1 starts at its own boundary (docs/modes.md "Windows on a mixed
// branch"): its request holds that boundary alone, and the person is told
// once that the earlier conversation is no longer sent.
func TestPiExtensionAdoptionTreeRollover(t *testing.T) {
	const told = "the conversation from before context management stays above it in /tree but is no longer sent to the model; history reaches it in window 0"
	eachPi(t, func(t *testing.T, v piVersion) {
		before, _ := adoptionScripts(2)
		r := newRig(t, v, "off", before)
		r.startContextd()
		p := r.startPi()
		p.prompt("find the fact and remember it", 1)
		p.prompt("question 2", 2)
		p.stop()
		n := len(r.requests())
		b, _ := json.Marshal([]step{{Text: "resumed answer"}, tool("new_context", nil), {Text: "window one"}})
		if err := os.WriteFile(r.script, b, 0o600); err != nil {
			t.Fatal(err)
		}
		r.env = []string{"CONTEXTD_MODE=tree"}
		p = r.startPi("--continue")
		p.prompt("what was the fact?", 1)
		p.prompt("start a new window", 3)
		reqs := r.requests()[n:]

		_, _, es := r.session()
		bs := boundaries(es)
		if len(bs) != 2 {
			t.Fatalf("boundaries = %d, want 2 (adopted window 0, window 1)", len(bs))
		}
		w1 := windowOf(t, bs[1])
		// Window 0 (steps 0 and 1): the adopted conversation is sent, as
		// before adoption.
		for _, step := range []int{0, 1} {
			if q := turn(t, reqs, step); !anyContains(q, adoptionFact) || !anyContains(q, "find the fact and remember it") {
				t.Errorf("step %d (adopted window 0) lacks the earlier conversation", step)
			}
		}
		// Window 1: its boundary alone.
		ms := turn(t, reqs, 2).conversation()
		if len(ms) != 1 || !strings.Contains(ms[0].text(), "Current context window id: "+w1.CurrentWindowID) {
			var shapes []string
			for _, m := range ms {
				shapes = append(shapes, shape(m))
			}
			t.Errorf("step 2 (window 1): %d messages, want window 1's boundary alone:\n%s", len(ms), strings.Join(shapes, "\n"))
		}
		summaries := 0
		for _, q := range reqs {
			if q.Kind == "summary" {
				summaries++
			} else if q.Step >= 2 && (anyContains(q, adoptionFact) || anyContains(q, "what was the fact?")) {
				t.Errorf("request for step %d holds window 0's conversation", q.Step)
			}
		}
		if summaries != 1 {
			t.Errorf("summary requests = %d, want 1", summaries)
		}
		// The earlier turns are still on the branch Pi holds.
		onBranch := false
		for _, e := range chain(es, es[len(es)-1].ID) {
			if e.Message != nil && strings.Contains(string(e.Message.Content), adoptionFact) {
				onBranch = true
			}
		}
		if !onBranch {
			t.Errorf("the adopted turns left the branch; the notice says they stay")
		}
		got := 0
		for _, m := range p.notices("info") {
			if strings.Contains(m, told) {
				got++
			}
		}
		if got != 1 {
			t.Errorf("notices saying the earlier conversation is no longer sent = %d, want 1; info notices: %q", got, p.notices("info"))
		}
		checkClean(t, p, reqs)
	})
}
