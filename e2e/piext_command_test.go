package e2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
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
				run := func(cmd, want string) string { t.Helper(); return runCommand(t, p, cmd, want) }
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
				// Pi writes the file at the first message: that is said as
				// where the session stands, not as a problem.
				if strings.Contains(st, "problem:") {
					t.Errorf("a brand-new session's report names a problem:\n%s", st)
				}
				if v.before086() {
					// Pi 0.85 writes the file at the first assistant message, so it is still to come here.
					has(st, "no session file yet: Pi writes it at the session's first message")
				}
				has(run("/contextd log", "no rollovers yet"), "no rollovers yet")
				has(run("/contextd help", "/contextd finish"), "/contextd mode local|tree|remote|off: ")
				has(run("/contextd mode cloud", "/contextd mode takes"), `/contextd mode takes one of local, tree, remote, off, not "cloud"`)
				// Mode names are lowercase wherever they are read (contextd.ModeAdvice).
				has(run("/contextd mode TREE", `not "TREE"`), `/contextd mode takes one of local, tree, remote, off, not "TREE"; use tree (mode names are lowercase)`)
				// /contextd is the extension's only command: Tree's capture is an argument of it, so autocomplete offers nothing else.
				if got := extensionCommands(t, p); !slices.Equal(got, []string{"contextd"}) {
					t.Errorf("extension commands = %v, want [contextd]", got)
				}

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
				// At once again: window 1 holds nothing yet, so there is
				// nothing to close (a Tree navigation would write no
				// branch summary of it): one line, and nothing appended.
				has(run("/contextd new", "nothing in it yet"), "window 1 has nothing in it yet, so there is no window to close: run /contextd new again once it holds some work")
				if _, _, es := r.session(); len(boundaries(es)) != 2 {
					t.Fatalf("boundaries after /contextd new in an empty window = %d, want still 2", len(boundaries(es)))
				}
				st = run("/contextd status", "contextd mode: "+mode)
				has(st, "window 1 (", "rollovers: 1 (last 1):", "  window 0 → 1 "+mode+" completed")
				// Local's /contextd new appends the boundary itself, so contextd
				// knows that rollover only from the file, whose times are the
				// entries' (the closed window's last entry → the boundary): no
				// duration the person would read as the rollover's. Tree's runs
				// through contextd, which timed each phase.
				if timed := regexp.MustCompile(`window 0 → 1 .*; \d+ ms`).MatchString(st); timed != (mode == "tree") {
					t.Errorf("rollover line shows a duration: %v, want %v:\n%s", timed, mode == "tree", st)
				}

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

				// Remote is switchable too: Pi reloads the extension in Remote mode.
				has(run("/contextd mode remote", "contextd mode: remote in this Pi process"), "contextd mode: remote")
				has(run("/contextd", "contextd mode: remote\n"), "contextd mode: remote")
			})
		}
	})
}

// extensionCommands lists the names starting with "contextd" of the
// commands extensions registered (RPC get_commands, what Pi's autocomplete
// offers besides its own; the faux provider and Pi's bundled extensions add
// others).
func extensionCommands(t *testing.T, p *piProc) []string {
	t.Helper()
	resp := p.command(map[string]any{"type": "get_commands"})
	data, _ := resp["data"].(map[string]any)
	list, _ := data["commands"].([]any)
	var names []string
	for _, c := range list {
		if m, _ := c.(map[string]any); m["source"] == "extension" && strings.HasPrefix(fmt.Sprint(m["name"]), "contextd") {
			names = append(names, fmt.Sprint(m["name"]))
		}
	}
	return names
}

// TestPiExtensionCommandInactive: with mode off, or a mode the extension
// does not know, /contextd is still the extension's (real Pi 0.85.1 and
// 1.6.0, RPC): it answers in one report and is never sent to the model as a
// prompt; /contextd mode turns context management on in the same Pi
// process (Pi reloads the extension), and after /contextd mode off,
// /contextd mode tree turns it on again.
func TestPiExtensionCommandInactive(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, start := range []string{"off", "weird"} {
			t.Run(start, func(t *testing.T) {
				r := newRig(t, v, start, []step{{Text: "ok"}})
				r.startContextd()
				p := r.startPi()
				run := func(cmd, want string) string { t.Helper(); return runCommand(t, p, cmd, want) }
				if got := extensionCommands(t, p); !slices.Equal(got, []string{"contextd"}) {
					t.Errorf("extension commands = %v, want [contextd]", got)
				}
				want := map[string]string{
					"off":   "contextd mode: off\ncontextd is off in this Pi: no context management; /contextd mode local (or tree, remote) turns context management on in this Pi",
					"weird": "contextd mode: unknown (the settings could not be read)\ncontextd: unknown mode \"weird\"; use off, local, tree or remote; the extension is inactive; /contextd mode local",
				}[start]
				if st := run("/contextd", "contextd mode: "); !strings.HasPrefix(st, want) {
					t.Errorf("/contextd = %q, want it to start with %q", st, want)
				}
				run("/contextd new", "/contextd new needs local or tree mode")
				if _, err := os.Stat(r.logPath); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("the faux model's request log exists (%v): /contextd went to the model", err)
				}
				if count(p.snapshot(), "agent_start") != 0 {
					t.Errorf("an agent run started for /contextd")
				}

				run("/contextd mode local", "contextd mode: local in this Pi process")
				if st := run("/contextd", "contextd mode: local\n"); !strings.Contains(st, "(healthy)") {
					t.Errorf("/contextd after mode local = %q, want contextd healthy", st)
				}
				run("/contextd mode off", "contextd mode: off in this Pi process")
				run("/contextd", "contextd is off in this Pi")
				run("/contextd mode tree", "contextd mode: tree in this Pi process")
				if st := run("/contextd", "contextd mode: tree\n"); !strings.Contains(st, "(healthy)") || !strings.Contains(st, "window 0 (") {
					t.Errorf("/contextd after off then tree = %q, want contextd healthy and window 0", st)
				}
				// Tree mode works again: a prompt runs in window 0.
				p.prompt("hello", 1)
				if reqs := r.requests(); len(reqs) != 1 || !anyContains(reqs[0], "Current context window id") {
					t.Errorf("after /contextd mode tree the model got %d requests; want 1 with the window-0 boundary", len(reqs))
				}
			})
		}
	})
}

// runCommand sends cmd as a prompt (a slash command) and returns the first
// info notice after it that contains want, waiting up to 60 s.
func runCommand(t *testing.T, p *piProc, cmd, want string) string {
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
