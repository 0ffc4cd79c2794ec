package e2e

import (
	"strings"
	"testing"
)

// TestPiExtensionTUITypedDuringSummary (docs/design.md §5.3.1 "Input waits
// for the new window"): Tree in Pi's TUI; the person types a message while
// the rollover's branch summary runs. Pi 1.6 queues it itself ("Queued
// message for after compaction") and hands it to the extension only after
// the navigation, when the line of the new window is the last on the
// screen; Pi 0.85 hands it over at once. Either way the person keeps the
// line saying the new window started and the old one is archived (an info
// line right after it would take its place: Pi's showStatus), is told
// that the message goes to the new window, and the message is answered
// there, after the boundary's own run.
func TestPiExtensionTUITypedDuringSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r, p, hold := tuiDuringSummary(t, v)
		p.submit("TYPED-DURING-SUMMARY")
		hold.release(t)
		screen := p.waitScreen("the answer to the typed message", "REPLY-TWO")
		started := "context window 1 started; the previous one is archived with its summary ("
		if !strings.Contains(screen, started) {
			t.Errorf("the screen lacks %q:\n%s", started, screen)
		}
		card := strings.Index(screen, "── window 1 · notes: plan.md ──")
		typed := strings.LastIndex(screen, "TYPED-DURING-SUMMARY")
		if card < 0 || typed < card || !strings.Contains(screen[typed:], "REPLY-TWO") {
			t.Errorf("the typed message and its answer are not after window 1's card:\n%s", screen)
		}
		reqs := r.requests()
		last := reqs[len(reqs)-1]
		// Window 1 starts at its boundary: window 0's note call ("- task") is not sent.
		if conv := last.conversation(); !strings.Contains(conv[0].text(), "<context_window>") || !anyContains(last, "TYPED-DURING-SUMMARY") || anyContains(last, "- task") {
			t.Errorf("the request answering the typed message does not start at window 1's boundary: %s", roles(last))
		}
		checkPairing(t, reqs)
	})
}
