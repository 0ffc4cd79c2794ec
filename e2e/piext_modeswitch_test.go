package e2e

import (
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestPiExtensionModeSwitchLocalToTree: a new session starts in Local
// mode, the model runs `bash echo window-zero-data` and calls new_context
// (Local window 1 starts), the person switches with /contextd mode tree,
// types "after switch" and the model calls new_context again (a Tree
// rollover of window 1). Windows closed before the switch stay out of the
// model's context (docs/modes.md "Windows on a mixed branch"): no request
// after Local window 0 holds its data, the first Tree request starts at
// window 1's boundary, and Tree window 2 starts at its own boundary.
func TestPiExtensionModeSwitchLocalToTree(t *testing.T) {
	const data = "window-zero-data"
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{
			tool("bash", map[string]any{"command": "echo " + data}), // 0: window 0
			tool("new_context", nil),                                // 1: Local, the run goes on
			{Text: "window one"},                                    // 2: Local window 1
			tool("new_context", nil),                                // 3: after the switch: Tree rollover of window 1
			{Text: "window two"},                                    // 4: Tree window 2 (the boundary's turn)
		})
		r.startContextd()
		p := r.startPi()
		p.prompt("go local", 1)
		runCommand(t, p, "/contextd mode tree", "contextd mode: tree in this Pi process")
		p.prompt("after switch", 3)

		_, _, es := r.session()
		bs := boundaries(es)
		if len(bs) != 3 {
			t.Fatalf("boundaries = %d, want 3 (window 0, Local window 1, Tree window 2)", len(bs))
		}
		w := []windowIdentity{windowOf(t, bs[0]), windowOf(t, bs[1]), windowOf(t, bs[2])}
		reqs := r.requests()
		turns := 0
		for _, q := range reqs {
			if q.Kind == "turn" {
				turns++
			}
		}
		if turns != 5 {
			t.Fatalf("model turns = %d, want 5 (steps 0-4)", turns)
		}
		first := func(q request) string {
			ms := q.conversation()
			if len(ms) == 0 {
				return ""
			}
			return ms[0].text()
		}
		current := func(i int) string { return "Current context window id: " + w[i].CurrentWindowID }
		// Window 0: the data is there (it is the window's own).
		if !anyContains(turn(t, reqs, 1), data) {
			t.Errorf("step 1 (window 0) lacks %s", data)
		}
		// Local window 1, before the switch: starts at its boundary.
		for _, c := range []struct {
			step, window int
			has, lacks   []string
		}{
			{2, 1, nil, []string{data, "go local"}},
			// The bug: the first Tree request after the switch sent window 0 again.
			{3, 1, []string{"after switch", "window one"}, []string{data, "go local"}},
			// Tree window 2: the boundary alone; window 1 is archived.
			{4, 2, nil, []string{data, "go local", "after switch", "window one"}},
		} {
			q := turn(t, reqs, c.step)
			if got := first(q); !strings.Contains(got, current(c.window)) {
				t.Errorf("step %d: first message %q, want window %d's boundary", c.step, got, c.window)
			}
			for _, s := range c.has {
				if !anyContains(q, s) {
					t.Errorf("step %d lacks %q", c.step, s)
				}
			}
			for _, s := range c.lacks {
				if anyContains(q, s) {
					t.Errorf("step %d holds %q (%d messages)", c.step, s, len(q.conversation()))
				}
			}
		}
		// Every request: window 0's data only in window 0's own turns
		// (steps 0 and 1); the one summary request (Tree's rollover of
		// window 1) summarizes window 1 only.
		summaries := 0
		for i, q := range reqs {
			if q.Kind == "summary" {
				summaries++
			}
			if (q.Kind == "summary" || q.Step >= 2) && anyContains(q, data) {
				t.Errorf("request %d (%s, step %d) holds %s", i, q.Kind, q.Step, data)
			}
		}
		if summaries != 1 {
			t.Errorf("summary requests = %d, want 1", summaries)
		}
		if !anyContains(turn(t, reqs, 0), "go local") || anyContains(turn(t, reqs, 0), data) {
			t.Errorf("step 0: want the prompt and no tool output yet")
		}
		if n := len(turn(t, reqs, 4).conversation()); n != 1 {
			t.Errorf("step 4: %d messages, want 1 (window 2's boundary)", n)
		}
		checkClean(t, p, reqs)
	})
}

// TestPiExtensionTUIModeSwitchLabel: interactive Pi (tmux) with the steps
// of TestPiExtensionModeSwitchLocalToTree. After the Tree rollover Pi
// draws the new branch again, which holds window 0's Local new_context:
// it must read as the Local call it was, not as a Tree archive. Needs
// tmux.
func TestPiExtensionTUIModeSwitchLabel(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed; the TUI test drives Pi in a tmux pane: apt-get install tmux")
	}
	eachPi(t, func(t *testing.T, v piVersion) {
		r := newRig(t, v, "local", []step{
			tool("bash", map[string]any{"command": "echo window-zero-data"}),
			tool("new_context", nil),
			{Text: "window one here"},
			tool("new_context", nil),
			{Text: "window two here"},
		})
		r.startContextd()
		p := startTUI(t, r)
		p.waitScreen("the status line of window 0", "contextd local · window 0")
		p.submit("go local")
		p.waitScreen("Local window 1's answer", "window one here")
		p.submit("/contextd mode tree")
		p.waitScreen("the mode switch (Pi reloads the extension)", "contextd tree · window 1")
		p.submit("after switch")
		screen := p.waitScreen("Tree window 2's answer", "window two here")
		if !strings.Contains(screen, "contextd tree · window 2") {
			t.Errorf("status line is not Tree window 2:\n%s", screen)
		}
		if !strings.Contains(screen, "context window 1 starts with the next model call") {
			t.Errorf("window 0's Local new_context lacks its Local label:\n%s", screen)
		}
		if strings.Contains(screen, "this window will be summarized and archived as a side branch") {
			t.Errorf("window 0's Local new_context is labelled as a Tree archive:\n%s", screen)
		}
		// Off: Pi reloads the extension and draws the transcript again;
		// the windows' boundaries stay cards, not their raw text.
		p.submit("/contextd mode off")
		for deadline := time.Now().Add(90 * time.Second); strings.Contains(p.screen(), "contextd tree · window"); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("the footer still shows Tree mode 90 s after /contextd mode off:\n%s", p.screen())
			}
		}
		screen = p.waitScreen("the transcript drawn again after the switch to off", "window two here")
		if !strings.Contains(screen, "── window 2 ") {
			t.Errorf("after /contextd mode off window 2's boundary is not drawn as its card:\n%s", screen)
		}
		for _, raw := range []string{"[codex-context-window]", "context_window_guidance"} {
			if strings.Contains(screen, raw) {
				t.Errorf("after /contextd mode off the transcript shows a window boundary's raw text (%s):\n%s", raw, screen)
			}
		}
	})
}
