package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestPiExtensionCommands: /contextd and its subcommands on real Pi (0.85.1
// and 1.6.0, RPC mode), Local and Tree, in a brand-new session (no
// rollover yet: the reset log is empty), after /contextd new started a
// window without a model turn, after contextd restarted, with nothing to
// finish, in a fork of the session, and after /contextd mode switched the
// fork to the other mode; no subcommand ends in an error.
func TestPiExtensionCommands(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, mode := range []string{"local", "tree"} {
			t.Run(mode, func(t *testing.T) {
				r := newRig(t, v, mode, []step{{Text: "ok"}})
				r.startContextd()
				p := r.startPi()
				run := func(cmd, want string) string {
					t.Helper()
					before := len(p.notices("info"))
					p.command(map[string]any{"type": "prompt", "message": cmd})
					var got string
					p.waitFor(cmd+"'s report", 60*time.Second, func([]map[string]any) bool {
						for _, n := range p.notices("info")[before:] {
							if strings.Contains(n, want) {
								got = n
								return true
							}
						}
						return false
					})
					return got
				}
				has := func(report string, wants ...string) {
					t.Helper()
					for _, w := range wants {
						if !strings.Contains(report, w) {
							t.Errorf("report lacks %q:\n%s", w, report)
						}
					}
				}

				// A brand-new session: Pi's window 0, no rollovers.
				st := run("/contextd", "contextd mode: "+mode)
				has(st, "(healthy)", "window 0 (", "no pending rollover", "no rollovers yet")
				has(run("/contextd log", "no rollovers yet"), "no rollovers yet")
				has(run("/contextd help", "/contextd finish"), "/contextd mode local|tree|off: ")
				has(run("/contextd mode cloud", "/contextd mode takes"), `/contextd mode takes one of local, tree, off, not "cloud"`)

				p.prompt("hello", 1)
				turns := len(r.requests())
				// A new window now, without a model turn.
				run("/contextd new", "started")
				_, _, es := r.session()
				bs := boundaries(es)
				if len(bs) != 2 || windowOf(t, bs[1]).WindowNumber != 1 {
					t.Fatalf("boundaries after /contextd new = %d, want windows 0 and 1", len(bs))
				}
				summaries := 0
				for _, e := range es {
					if e.Type == "branch_summary" {
						summaries++
					}
				}
				if want := map[string]int{"local": 0, "tree": 1}[mode]; summaries != want {
					t.Errorf("branch summaries = %d, want %d", summaries, want)
				}
				time.Sleep(500 * time.Millisecond)
				if n := len(r.requests()); n != turns+summaries {
					t.Errorf("model requests after /contextd new = %d, want %d (the summary only: no turn)", n-turns, summaries)
				}
				has(run("/contextd status", "contextd mode: "+mode), "window 1 (", "rollovers: 1 (last 1):", "  window 0 → 1 "+mode+" completed")

				// contextd restarted: the report reads it again.
				r.stopContextd(false)
				r.startContextd()
				has(run("/contextd", "contextd mode: "+mode), "(healthy)", "window 1 (", "rollovers: 1 (last 1):")
				has(run("/contextd finish", "nothing to finish"), "no interrupted rollover on this branch: nothing to finish")

				// A fork from the prompt: a new session holding window 0 only.
				var hello string
				for _, e := range es {
					if e.Message != nil && e.Message.Role == "user" && strings.Contains(e.Message.text(), "hello") {
						hello = e.ID
					}
				}
				if resp := p.command(map[string]any{"type": "fork", "entryId": hello}); resp["success"] != true {
					t.Fatalf("fork: %v", resp)
				}
				has(run("/contextd", "contextd mode: "+mode), "(healthy)", "window 0 (", "no rollovers yet")

				// The other mode for this Pi process: Pi reloads the extension,
				// which registers the session in it.
				other := map[string]string{"local": "tree", "tree": "local"}[mode]
				has(run("/contextd mode "+other, "contextd mode: "+other+" in this Pi process"), "contextd mode: "+other)
				has(run("/contextd", "contextd mode: "+other+"\n"), "(healthy)", "window 0 (")

				if n := p.notices("error"); len(n) != 0 {
					t.Errorf("UI errors: %q", n)
				}
				for _, n := range p.notices("info") {
					if strings.Contains(n, "Cannot read properties") || strings.Contains(n, "TypeError") {
						t.Errorf("a report shows a JavaScript error: %s", n)
					}
				}
			})
		}
	})
}
