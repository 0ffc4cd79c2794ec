package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestPiExtensionTUI drives real interactive Pi (0.85.1 and 1.6.0) in a
// tmux pane with the faux model, in Local and in Tree mode: the prompt
// "find the deploy port" writes a note, runs bash, calls new_context (a
// Tree rollover's summary is held so its progress can be seen) and in the
// new window searches history; then /contextd. Each screen is checked for
// what a person should see (the status line, the window card collapsed to
// one line, tool output without JSON, the summary's progress, the new
// window's notice instead of "Navigated to selected point", no error) and
// compared with its golden file in testdata/tui/ (ids, times, token counts
// and paths replaced: tuiNormalize). CONTEXTD_UPDATE_GOLDEN=1 rewrites the
// golden files. Needs tmux (apt-get install tmux).
func TestPiExtensionTUI(t *testing.T) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatal("tmux is not installed; the TUI test drives Pi in a tmux pane: apt-get install tmux")
	}
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, mode := range []string{"local", "tree"} {
			t.Run(mode, func(t *testing.T) { tuiSession(t, v, mode) })
		}
	})
}

func tuiSession(t *testing.T, v piVersion, mode string) {
	r := newRig(t, v, mode, []step{
		tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- find the port\n"}),
		tool("bash", map[string]any{"command": "echo port=8443"}),
		tool("new_context", nil),
		tool("history", map[string]any{"action": "search_contents", "query": "port=8443"}),
		{Text: "The port is 8443."},
	})
	var hold summaryHold
	if mode == "tree" {
		hold = r.holdSummary()
	}
	r.startContextd()
	p := startTUI(t, r)
	golden := func(name, screen string) {
		t.Helper()
		tuiCheck(t, mode, name, screen)
		tuiGolden(t, filepath.Join(Dir(), "..", "testdata", "tui", v.Name, mode+"-"+name+".txt"), tuiNormalize(screen, r))
	}

	golden("start", p.waitScreen("the status line of window 0", "contextd "+mode+" · window 0"))
	if !strings.Contains(p.screen(), "[Extensions]") || !regexp.MustCompile(`(?m)^\s+contextd, faux-provider\.ts$`).MatchString(p.screen()) {
		t.Errorf("Pi does not list the extension as contextd:\n%s", p.screen())
	}
	p.submit("find the deploy port")
	if mode == "tree" {
		hold.waitStartedFile(t)
		golden("summarizing", p.waitScreen("the summary's progress", "contextd: summarizing window 0 for its archive…"))
		hold.release(t)
	}
	golden("rollover", p.waitScreen("the answer", "The port is 8443."))
	p.submit("/contextd")
	golden("status", p.waitScreen("the /contextd report", "contextd mode: "+mode))
}

// tuiCheck asserts what a person must (and must not) see on each screen.
func tuiCheck(t *testing.T, mode, name, screen string) {
	t.Helper()
	has := func(s string) {
		t.Helper()
		if !strings.Contains(screen, s) {
			t.Errorf("%s screen lacks %q:\n%s", name, s, screen)
		}
	}
	has("contextd " + mode + " · window ")
	for _, bad := range []string{"<context_window", "Cannot read properties", "Error", "error:", "Navigated to selected point", "codex-context-window]", `{"`} {
		if strings.Contains(screen, bad) {
			t.Errorf("%s screen shows %q:\n%s", name, bad, screen)
		}
	}
	switch name {
	case "start":
		has("── window 0 · no notes carried over ──")
	case "summarizing":
		has("contextd " + mode + " · window 0 · ")
		has("· writing the summary")
		has("this window will be summarized and archived as a side branch")
		has("notes write_file plan.md (16 bytes)")
		has("wrote plan.md (16 bytes)")
	case "rollover":
		has("contextd " + mode + " · window 1 · ")
		if mode == "local" {
			// Tree: window 0 is now a side branch, and Pi shows the new branch.
			has("notes write_file plan.md (16 bytes)")
			has("wrote plan.md (16 bytes)")
		}
		has("── window 1 · notes: plan.md ──")
		has(`history search_contents "port=8443"`)
		has(`2 hits for "port=8443" (this search call not shown)`)
		has("window 0 · tool bash · ")
		if mode == "tree" {
			has("context window 1 started; the previous one is archived with its summary")
		} else {
			has("context window 1 starts with the next model call")
		}
	case "status":
		has("contextd mode: " + mode)
		has(" (healthy)")
		has("rollovers: 1 (last 1):")
		has("  window 0 → 1 " + mode + " completed")
	}
}

// tuiProc is Pi running in a tmux pane of its own tmux server.
type tuiProc struct {
	t      *testing.T
	socket string
}

// startTUI starts interactive Pi for r in a 120x60 tmux pane and waits
// for its editor.
func startTUI(t *testing.T, r *rig) *tuiProc {
	t.Helper()
	node := NodeBinary(t)
	conf := filepath.Join(r.dir, "tmux.conf")
	// extended-keys: Pi warns without it (modified Enter keys).
	if err := os.WriteFile(conf, []byte("set -g extended-keys on\nset -g history-limit 5000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + filepath.Join(r.dir, "home"), "PI_CODING_AGENT_DIR=" + r.agent, "PI_OFFLINE=1", "CONTEXTD_MODE=" + r.mode,
		"CONTEXTD_E2E_SCRIPT=" + r.script, "CONTEXTD_E2E_LOG=" + r.logPath, "TERM=xterm-256color"}
	env = append(env, r.env...)
	argv := []string{"env"}
	argv = append(argv, env...)
	argv = append(argv, node, filepath.Join(Dir(), "node_modules", r.v.CLI), "-e", filepath.Join(Dir(), "..", "extension"),
		"-e", filepath.Join(Dir(), "faux", "faux-provider.ts"), "--model", "faux/faux-1")
	p := &tuiProc{t: t, socket: filepath.Join(r.dir, "tmux.sock")}
	// The pane keeps Pi's last screen when Pi exits, for the failure message.
	args := append([]string{"-S", p.socket, "-f", conf, "new-session", "-d", "-s", "pi", "-x", "120", "-y", "60", "-c", r.work}, argv...)
	if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
		t.Fatalf("tmux new-session: %v\n%s", err, out)
	}
	p.tmux("set-option", "-t", "pi", "remain-on-exit", "on")
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", p.socket, "kill-server").Run() })
	return p
}

func (p *tuiProc) tmux(args ...string) string {
	p.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", p.socket}, args...)...).CombinedOutput()
	if err != nil {
		p.t.Fatalf("tmux %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// screen is the visible pane, trailing spaces and blank last lines removed.
func (p *tuiProc) screen() string {
	lines := strings.Split(p.tmux("capture-pane", "-p", "-t", "pi"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
}

// waitScreen waits up to 90 s for want on the screen, then for the screen
// to stay the same for 600 ms (Pi draws in steps), and returns it.
func (p *tuiProc) waitScreen(what, want string) string {
	p.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(p.screen(), want) {
		if time.Now().After(deadline) {
			p.t.Fatalf("no %s (%q) on the screen after 90 s:\n%s", what, want, p.screen())
		}
		time.Sleep(200 * time.Millisecond)
	}
	last := p.screen()
	for stable := time.Now(); time.Since(stable) < 600*time.Millisecond; {
		time.Sleep(150 * time.Millisecond)
		if s := p.screen(); s != last {
			last, stable = s, time.Now()
		}
		if time.Now().After(deadline) {
			break
		}
	}
	return last
}

// submit types text into Pi's editor and presses Enter until Pi takes it
// (a key pressed while Pi still starts its session can be lost).
func (p *tuiProc) submit(text string) {
	p.t.Helper()
	p.tmux("send-keys", "-t", "pi", "-l", text)
	for i := 0; i < 5; i++ {
		time.Sleep(300 * time.Millisecond)
		p.tmux("send-keys", "-t", "pi", "Enter")
		time.Sleep(700 * time.Millisecond)
		if !editorHolds(p.screen(), text) {
			return
		}
	}
	p.t.Fatalf("Pi did not take %q:\n%s", text, p.screen())
}

// editorHolds: the line after the editor's top rule is text.
func editorHolds(screen, text string) bool {
	lines := strings.Split(screen, "\n")
	for i := len(lines) - 2; i >= 0; i-- {
		if strings.HasPrefix(lines[i], "────") {
			// the editor sits between the last two rules
			for j := i - 1; j >= 0; j-- {
				if strings.HasPrefix(lines[j], "────") {
					return strings.Contains(strings.Join(lines[j+1:i], "\n"), text)
				}
			}
			return false
		}
	}
	return false
}

// waitStartedFile waits up to 60 s for the held summary to start.
func (h summaryHold) waitStartedFile(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(h.dir, "summary-started")); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("no branch summary started within 60 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

var tuiVolatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b`), "<uuid>"},
	{regexp.MustCompile(`\b[0-9a-f]{8}\b`), "<id>"},
	{regexp.MustCompile(`127\.0\.0\.1:\d+`), "127.0.0.1:<port>"},
	{regexp.MustCompile(`Took \d+(\.\d+)?s`), "Took <t>s"},
	{regexp.MustCompile(`\(\d+(\.\d+)? s\)`), "(<t> s)"},
	{regexp.MustCompile(`… \d+ s`), "… <t> s"},
	{regexp.MustCompile(`\d+ ms\b`), "<t> ms"},
	{regexp.MustCompile(`\((\d+ bytes|\d+\.\d [KMG]iB)\) archived`), "(<size>) archived"},
	{regexp.MustCompile(`\d+% \(\d+ of (\d+) tokens\)`), "<p>% (<n> of $1 tokens)"},
	{regexp.MustCompile(`\d+% used`), "<p>% used"},
	// Pi's footer: token counts and context use, then the model at the right edge.
	{regexp.MustCompile(`(?m)^.*\d%/200k \(auto\) +faux-1$`), "<usage> faux-1"},
	// Present only where fd and ripgrep are not installed.
	{regexp.MustCompile(`(?m)^ Warning: (fd|ripgrep) not found\. Offline mode enabled, skipping download\.\n`), ""},
}

// tuiNormalize replaces what differs from run to run: the rig's paths,
// ids, times, token counts, the port.
func tuiNormalize(screen string, r *rig) string {
	s := strings.ReplaceAll(screen, r.dir, "<tmp>")
	for _, v := range tuiVolatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return s
}

// tuiGolden compares got with the golden file, or writes it when
// CONTEXTD_UPDATE_GOLDEN=1.
func tuiGolden(t *testing.T, path, got string) {
	t.Helper()
	if os.Getenv("CONTEXTD_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; run with CONTEXTD_UPDATE_GOLDEN=1 to write it", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the screen (CONTEXTD_UPDATE_GOLDEN=1 rewrites it after a deliberate change):\n%s", path, lineDiff(string(want), got))
	}
}

// lineDiff lists the lines that differ, by line number.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d\n  golden: %q\n  screen: %q\n", i+1, wl, gl)
		}
	}
	return b.String()
}

// TestPiExtensionTUINewSessionDuringSummary: Tree in Pi's TUI; while the
// rollover's branch summary runs the person types /tree (refused by the
// extension before Pi opens the selector, on both Pis), then /new. When
// the old session's summary ends, interactive Pi puts the old window's
// boundary text into the (shared, empty) editor; the new session takes it
// out (extension/src/handoff.ts), so the next message the provider gets is
// exactly what the person typed.
func TestPiExtensionTUINewSessionDuringSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r, p, hold := tuiDuringSummary(t, v)
		p.submit("/tree")
		p.waitScreen("the refused /tree", treeWaits)
		if strings.Contains(p.screen(), "Session Tree") {
			t.Errorf("Pi opened the tree selector for a refused /tree:\n%s", p.screen())
		}
		p.submit("/new")
		time.Sleep(time.Second)
		hold.release(t)
		time.Sleep(3 * time.Second)
		screen := p.screen()
		if editorHolds(screen, "context_window") {
			t.Errorf("the new session's editor holds the old window's boundary text:\n%s", screen)
		}
		before := len(r.requests())
		p.submit("hello")
		deadline := time.Now().Add(60 * time.Second)
		for len(r.requests()) <= before && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		reqs := r.requests()
		if len(reqs) <= before {
			t.Fatalf("no provider request after hello:\n%s", p.screen())
		}
		var last pmsg
		for _, m := range reqs[len(reqs)-1].conversation() {
			if m.Role == "user" {
				last = m
			}
		}
		if last.text() != "hello" {
			t.Errorf("the new session's user message = %q, want %q\n%s", last.text(), "hello", p.screen())
		}
	})
}

// tuiDuringSummary starts interactive Pi (v) in Tree mode with the branch
// summary held: the prompt "go" writes a note and calls new_context, and
// it returns once the rollover's summary runs (its progress and the status
// line's "writing the summary" on the screen). The model's later replies
// are REPLY-ONE, REPLY-TWO, REPLY-THREE.
func tuiDuringSummary(t *testing.T, v piVersion) (*rig, *tuiProc, summaryHold) {
	t.Helper()
	r := newRig(t, v, "tree", []step{
		tool("notes", map[string]any{"action": "write_file", "path": "plan.md", "text": "- task\n"}),
		tool("new_context", nil),
		{Text: "REPLY-ONE"}, {Text: "REPLY-TWO"}, {Text: "REPLY-THREE"},
	})
	hold := r.holdSummary()
	r.startContextd()
	p := startTUI(t, r)
	p.waitScreen("the status line of window 0", "contextd tree · window 0")
	p.submit("go")
	hold.waitStartedFile(t)
	p.waitScreen("the summary's progress", "contextd: summarizing window 0 for its archive…")
	p.waitScreen("the status line during the summary", "contextd tree · window 0 · ")
	if !strings.Contains(p.screen(), "· writing the summary") {
		t.Errorf("the status line does not say the summary is being written:\n%s", p.screen())
	}
	return r, p, hold
}

// TestPiExtensionTUIReloadDuringSummary (docs/design.md §5.3.1 row
// "/reload during the summary"): Tree in Pi's TUI; the person types
// /reload while the rollover's branch summary runs. Interactive Pi refuses
// a reload while a summary runs (handleReloadCommand: isCompacting, which
// counts the branch summary; 0.85.1 and 1.6.0) and says so on the screen;
// the extension is not reloaded, the rollover completes in the same
// extension and the new window answers.
func TestPiExtensionTUIReloadDuringSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		_, p, hold := tuiDuringSummary(t, v)
		p.submit("/reload")
		p.waitScreen("Pi's refusal of the reload", "Wait for compaction to finish before reloading.")
		hold.release(t)
		p.waitScreen("the new window's notice", "context window 1 started; the previous one is archived with its summary")
		screen := p.waitScreen("the new window's answer", "REPLY-ONE")
		for _, bad := range []string{"the session you left", "was reloaded", "Error", "stale"} {
			if strings.Contains(screen, bad) {
				t.Errorf("the screen shows %q:\n%s", bad, screen)
			}
		}
		if !strings.Contains(screen, "contextd tree · window 1") {
			t.Errorf("the status line is not window 1:\n%s", screen)
		}
	})
}

// switchWaits is what the extension says at once when the person starts
// another session during a Tree summary (extension/src/modes/tree.ts
// SWITCH_WAITS).
const switchWaits = "contextd: the new session opens once Pi has stopped the branch summary; this session keeps its context window"

// TestPiExtensionTUISwitchDuringSummary (docs/design.md §5.3.1 row "/new,
// /resume, /fork, /clone"): Tree in Pi's TUI; the person types /new, or
// /fork and picks their message, while the rollover's branch summary
// runs. Pi stops the summary before it opens the new session and waits for
// the summary's request to end; the extension answers at once
// (SWITCH_WAITS), and once the request ended the new session opens and
// says in one line that the old session's new context did not happen.
func TestPiExtensionTUISwitchDuringSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		for _, cmd := range []string{"/new", "/fork"} {
			t.Run(cmd[1:], func(t *testing.T) {
				_, p, hold := tuiDuringSummary(t, v)
				p.submit(cmd)
				if cmd == "/fork" {
					time.Sleep(time.Second)
					p.tmux("send-keys", "-t", "pi", "Enter") // the selected (latest) user message
				}
				p.waitScreen("the sign that "+cmd+" was taken", switchWaits)
				if strings.Contains(p.screen(), "contextd: new context did not happen") {
					t.Fatalf("%s did not wait for the summary:\n%s", cmd, p.screen())
				}
				hold.release(t)
				screen := p.waitScreen("the new session's line", "contextd: new context did not happen: session ")
				if !strings.Contains(screen, "rollover ran; its branch is kept as it was") {
					t.Errorf("the new session does not say what happened to the old one:\n%s", screen)
				}
				if strings.Contains(screen, "stale") {
					t.Errorf("a stale-context error reached the screen:\n%s", screen)
				}
			})
		}
	})
}

// TestPiExtensionTUIEscapeDuringSummary (docs/design.md §5.3.1 row "Escape
// (abort) during the summary"): Tree in Pi's TUI; the person presses
// Escape while the rollover's branch summary runs. Interactive Pi gives an
// extension's navigation no Escape handler; the extension catches Escape
// and stops the summary (Pi 1.6: ctx.abort(); Pi 0.85: a compaction that
// aborts the summary and is then cancelled, said in one info line). As
// after an RPC abort (TestPiExtensionAbortDuringSummary): the rollover is
// aborted in contextd (navigation cancelled), the branch keeps window 0
// with nothing appended but the model's notice, the person is told in one
// line, and the next prompt is answered in window 0.
func TestPiExtensionTUIEscapeDuringSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r, p, hold := tuiDuringSummary(t, v)
		p.tmux("send-keys", "-t", "pi", "Escape")
		escapedSummary(t, r, p, v, hold)
	})
}

// escapedSummary checks what follows an Escape pressed during the held
// summary of tuiDuringSummary (TestPiExtensionTUIEscapeDuringSummary): Pi
// 0.85's one info line, the aborted rollover's line once the summary's
// request returns, window 0 on the status line and in the file (no branch
// summary, no compaction), the rollover failed in contextd with
// navigation cancelled, and the next prompt answered in window 0 with the
// model's notice, every request paired.
func escapedSummary(t *testing.T, r *rig, p *tuiProc, v piVersion, hold summaryHold) {
	t.Helper()
	if v.before086() {
		p.waitScreen("the stop through a compaction", "contextd: Escape stops the branch summary; on Pi 0.85 that takes a compaction")
	}
	// The held summary's request returns only now; Pi then sees it aborted.
	time.Sleep(500 * time.Millisecond)
	hold.release(t)
	screen := p.waitScreen("the aborted rollover's line", "contextd: new context failed: navigation was cancelled; the old branch is kept")
	if strings.Contains(screen, "Session Tree") || strings.Contains(screen, "context window 1 started") || strings.Contains(screen, "stale") {
		t.Errorf("the screen after Escape:\n%s", screen)
	}
	if !strings.Contains(screen, "contextd tree · window 0") || strings.Contains(screen, "writing the summary") {
		t.Errorf("the status line is not window 0 without a summary:\n%s", screen)
	}
	// The model's notice is drawn as one line saying what it was told,
	// never as Pi's default card with the message's type name.
	noticeLine := "── contextd told the model: the new context window did not open (navigation was cancelled) ──"
	if strings.Contains(screen, "codex-context-notice") || !strings.Contains(screen, noticeLine) {
		t.Errorf("the model's notice on the screen, want the line %q:\n%s", noticeLine, screen)
	}
	// Pi 0.85 reports the compaction that stopped the summary (here
	// "Nothing to compact": the window is small); Pi 1.6 runs none.
	if got := strings.Contains(screen, "Error: Compaction "); got != v.before086() {
		t.Errorf("Pi's compaction error on the screen: %v, want %v:\n%s", got, v.before086(), screen)
	}
	_, id, es := r.session()
	if n := len(boundaries(es)); n != 1 {
		t.Errorf("boundaries = %d, want window 0 only", n)
	}
	for _, e := range es {
		if e.Type == "branch_summary" || e.Type == "compaction" {
			t.Errorf("the session holds a %s after Escape", e.Type)
		}
	}
	var log rolloverLog
	r.api("GET", "/v1/sessions/"+id+"/rollovers", nil, &log)
	if len(log.Rollovers) != 1 || log.Rollovers[0].State != "failed" || !strings.Contains(log.Rollovers[0].Reason, "navigation was cancelled") {
		t.Errorf("reset log %+v, want one rollover aborted, navigation cancelled", log.Rollovers)
	}
	told := "The new context window did not open (navigation was cancelled); you are still in the same context window."
	before := len(r.requests())
	p.submit("after the escape")
	p.waitScreen("the answer in window 0", "REPLY-ONE")
	reqs := r.requests()
	if len(reqs) != before+1 {
		t.Fatalf("%d provider requests after the prompt, want 1", len(reqs)-before)
	}
	last := reqs[len(reqs)-1]
	if !anyContains(last, told) || !anyContains(last, "after the escape") || !anyContains(last, "- task") {
		t.Errorf("the request after Escape (window 0, the notice, the prompt): %s", roles(last))
	}
	checkPairing(t, reqs)
}

// compactWaits begins what the extension says when the person types
// /compact while a rollover's branch summary is written
// (extension/src/modes/tree.ts COMPACT_WAITS; the rest wraps on the screen).
const compactWaits = "contextd: wait for the new context window to start before /compact"

// treeWaits begins what the extension says when the person's /tree comes
// while a rollover's summary runs (extension/src/modes/tree.ts TREE_WAITS).
const treeWaits = "contextd: wait for the new context window to start before navigating the session tree"

// TestPiExtensionTUICompactThenForkDuringSummary (docs/design.md §5.3.1
// row "Auto-compaction (threshold), manual /compact"): Tree in Pi's TUI;
// the person types /compact, then /fork and picks their message, while
// the rollover's branch summary runs. Pi's /compact would abort the
// summary and then compact under the fork (Pi 0.85 then showed "Compacting
// context..." for good: the compaction's end went to the session the fork
// had left). The extension refuses /compact at once in one line; /fork
// goes on as in TestPiExtensionTUISwitchDuringSummary; the new session
// shows no compaction, nothing is compacted, and its next prompt is
// answered with the forked conversation.
func TestPiExtensionTUICompactThenForkDuringSummary(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r, p, hold := tuiDuringSummary(t, v)
		p.submit("/compact")
		p.waitScreen("the refused /compact", compactWaits)
		p.submit("/fork")
		time.Sleep(time.Second)
		p.tmux("send-keys", "-t", "pi", "Enter") // the selected (latest) user message
		p.waitScreen("the sign that /fork was taken", switchWaits)
		hold.release(t)
		p.waitScreen("the new session's line", "contextd: new context did not happen: session ")
		time.Sleep(2 * time.Second)
		screen := p.screen()
		for _, bad := range []string{"Compacting context", "Compaction", "stale"} {
			if strings.Contains(screen, bad) {
				t.Errorf("the screen after /compact and /fork shows %q:\n%s", bad, screen)
			}
		}
		if !editorHolds(screen, "go") {
			t.Fatalf("the forked session's editor does not hold the picked message:\n%s", screen)
		}
		before := len(r.requests())
		p.tmux("send-keys", "-t", "pi", "Enter")
		p.waitScreen("the forked session's answer", "REPLY-ONE")
		reqs := r.requests()
		if len(reqs) != before+1 {
			t.Fatalf("%d provider requests after the prompt, want 1", len(reqs)-before)
		}
		// The fork is window 0's boundary, then "go" typed again: the
		// old session's note write and new_context are not in it.
		var last pmsg
		gos := 0
		for _, m := range reqs[len(reqs)-1].conversation() {
			if m.Role == "user" {
				last = m
				if m.text() == "go" {
					gos++
				}
			}
		}
		if last.text() != "go" || gos != 1 || anyContains(reqs[len(reqs)-1], "- task") || anyContains(reqs[len(reqs)-1], "this window will be summarized") {
			t.Errorf("the forked session's request (window 0's boundary, then go): %s", roles(reqs[len(reqs)-1]))
		}
		checkPairing(t, reqs)
		// Neither the session left nor the fork holds a compaction.
		files, _ := filepath.Glob(filepath.Join(r.sessions, "*", "*.jsonl"))
		if len(files) != 2 {
			t.Errorf("session files %v, want the session and its fork", files)
		}
		for _, f := range files {
			if strings.Contains(r.readFile(f), `"type":"compaction"`) {
				t.Errorf("%s holds a compaction after a refused /compact", f)
			}
		}
	})
}

// TestPiExtensionTUIEscapeAfterRefusedTree (docs/design.md §5.3.1 rows
// "/tree navigation by the person" and "Escape (abort) during the
// summary"): Tree in Pi's TUI; the person types /tree while the rollover's
// branch summary runs, then presses Escape. Pi 0.85's navigateTree
// replaces the session's one branch-summary abort controller with its own
// and clears it when the extension refuses the pick, so Escape then
// stopped nothing. The extension refuses a typed /tree before Pi opens the
// selector (one line), and Escape then stops the summary as in
// TestPiExtensionTUIEscapeDuringSummary.
func TestPiExtensionTUIEscapeAfterRefusedTree(t *testing.T) {
	eachPi(t, func(t *testing.T, v piVersion) {
		r, p, hold := tuiDuringSummary(t, v)
		p.submit("/tree")
		time.Sleep(time.Second)
		if strings.Contains(p.screen(), "Session Tree") {
			// The selector opened: pick as a person would (0.85: "No summary").
			for _, k := range []string{"Up", "Up", "Enter", "Enter"} {
				p.tmux("send-keys", "-t", "pi", k)
				time.Sleep(400 * time.Millisecond)
			}
		}
		p.waitScreen("the refused /tree", treeWaits)
		p.tmux("send-keys", "-t", "pi", "Escape")
		escapedSummary(t, r, p, v, hold)
	})
}
